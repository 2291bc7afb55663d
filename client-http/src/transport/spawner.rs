//! Where a transport's connections run: with
//! [`Config::connections_on_client_runtime`](crate::Config::connections_on_client_runtime), on
//! the multi-threaded runtime the transport was made on (its home), not on whichever runtime
//! sends the request that opens them; without it, in place.
//!
//! An informer in its default run mode runs on a thread of its own with a current-thread
//! runtime. If its first request opened the connection there, the socket's I/O, TLS and the
//! HTTP/2 or HTTP/1.1 framing would be driven on that thread, in turn with the informer's
//! decoding, and an HTTP/2 connection every informer of the client multiplexes over would end
//! with the runtime of the informer that opened it. So the connector runs its connects, and
//! hyper runs its connection tasks, on the home runtime ([`Spawner`]); a transport made outside
//! any runtime, or on a current-thread one, keeps everything on the runtime of the request.
//!
//! If the home runtime has shut down, the first connect that finds it so fails with an error
//! saying so, and connections are opened on the request's runtime from then on.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use http::Uri;
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::task::JoinHandle;
use tower_service::Service;

use crate::error::BoxError;

/// Spawns connection work on the transport's home runtime (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct Spawner {
    home: Option<Handle>,
    /// Set once the home runtime was found shut down.
    gone: Arc<AtomicBool>,
}

impl Spawner {
    /// A spawner whose home is the current runtime, if it is a multi-threaded one.
    pub(crate) fn current() -> Self {
        let home = Handle::try_current()
            .ok()
            .filter(|h| h.runtime_flavor() != RuntimeFlavor::CurrentThread);
        Self {
            home,
            gone: Arc::default(),
        }
    }

    /// A spawner with no home: everything runs on the runtime of the request.
    pub(crate) fn in_place() -> Self {
        Self {
            home: None,
            gone: Arc::default(),
        }
    }

    /// The home runtime, unless there is none or it has shut down.
    fn home(&self) -> Option<&Handle> {
        self.home
            .as_ref()
            .filter(|_| !self.gone.load(Ordering::Relaxed))
    }

    /// Spawns `future` at home, or on the current runtime.
    fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self.home() {
            Some(home) => home.spawn(future),
            None => tokio::spawn(future),
        }
    }

    /// Runs `future` at home and waits for it (aborting it if this wait is dropped); with no
    /// home, runs it in place.
    ///
    /// # Errors
    ///
    /// `future`'s error, or that the home runtime shut down or the task panicked.
    pub(crate) async fn run<F, T>(&self, future: F) -> Result<T, BoxError>
    where
        F: Future<Output = Result<T, BoxError>> + Send + 'static,
        T: Send + 'static,
    {
        let Some(home) = self.home() else {
            return future.await;
        };
        let task = Aborting(home.spawn(future));
        match task.await {
            Ok(output) => output,
            Err(e) if e.is_cancelled() => {
                // Nothing else aborts it: the runtime shut down and dropped the task.
                self.gone.store(true, Ordering::Relaxed);
                tracing::warn!(
                    "the runtime the transport was made on has shut down; \
                     connections now open on the runtime of their request"
                );
                Err("the runtime the transport was made on has shut down".into())
            }
            Err(e) => Err(format!("opening a connection panicked: {e}").into()),
        }
    }
}

impl<F> hyper::rt::Executor<F> for Spawner
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        drop(self.spawn(future));
    }
}

/// A task handle that aborts its task when dropped.
struct Aborting<T>(JoinHandle<T>);

impl<T> Future for Aborting<T> {
    type Output = Result<T, tokio::task::JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl<T> Drop for Aborting<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A connector whose connects run at home, so that the socket is registered with the
/// runtime that drives the connection.
#[derive(Clone, Debug)]
pub(crate) struct HomeConnector<C> {
    inner: C,
    spawner: Spawner,
}

impl<C> HomeConnector<C> {
    pub(crate) fn new(inner: C, spawner: Spawner) -> Self {
        Self { inner, spawner }
    }
}

impl<C> Service<Uri> for HomeConnector<C>
where
    C: Service<Uri> + Clone + Send + 'static,
    C::Response: Send + 'static,
    C::Error: Into<BoxError>,
    C::Future: Send + 'static,
{
    type Response = C::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<C::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connect = self.inner.call(uri);
        let spawner = self.spawner.clone();
        Box::pin(async move {
            spawner
                .run(async move { connect.await.map_err(Into::into) })
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_any_runtime_there_is_no_home() {
        assert!(Spawner::current().home().is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn in_place_has_no_home_even_on_a_multi_threaded_runtime() {
        assert!(Spawner::in_place().home().is_none());
        assert!(Spawner::current().home().is_some());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_current_thread_runtime_is_no_home() {
        let spawner = Spawner::current();
        assert!(spawner.home().is_none());
        assert_eq!(spawner.run(async { Ok(7) }).await.ok(), Some(7));
    }

    #[test]
    fn work_runs_at_home_from_another_runtime() -> Result<(), BoxError> {
        let home = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("home")
            .enable_all()
            .build()?;
        let spawner = home.block_on(async { Spawner::current() });
        let other = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let ran_on = other.block_on(
            spawner.run(async { Ok(std::thread::current().name().map(str::to_owned)) }),
        )?;
        assert_eq!(ran_on.as_deref(), Some("home"));
        Ok(())
    }

    #[test]
    fn a_home_that_shut_down_fails_once_then_work_runs_in_place() -> Result<(), BoxError> {
        let home = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let spawner = home.block_on(async { Spawner::current() });
        drop(home);
        let other = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let first = other.block_on(spawner.run(async { Ok(1) }));
        assert!(first.is_err_and(|e| e.to_string().contains("shut down")));
        assert_eq!(other.block_on(spawner.run(async { Ok(2) })).ok(), Some(2));
        Ok(())
    }
}
