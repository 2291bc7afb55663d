//! Running a [`SharedIndexInformer`]: [`run`](SharedIndexInformer::run), where it runs
//! ([`RunMode`]), and the start that builds its queue and controller.

use std::sync::{Arc, PoisonError};

use kcache_queue::{DeltaFifo, Deltas, ProcessError, Queue, RealFifo};
use kcache_store::Object;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::controller::{Controller, ControllerConfig};
use crate::metrics::{EventCounts, InformerMetrics};
use crate::process::process_deltas;
use crate::{Error, Event, Result};

use super::{Inner, QueueKind, SharedIndexInformer};

/// Where [`SharedIndexInformer::run`] lists, watches, decodes and updates the cache (handlers
/// always run on threads of their own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunMode {
    /// On a thread of its own on a multi-threaded tokio runtime (the fast way there), on the
    /// caller's task on a current-thread runtime (tokio's default for `#[tokio::test]`, whose
    /// clock tests can pause).
    #[default]
    Auto,
    /// On a thread of its own with a single-threaded tokio runtime, whatever the caller's
    /// runtime: decoding, cache updates and the freeing of replaced objects all happen on
    /// that one thread. Glibc's malloc frees memory allocated on another thread far more
    /// slowly (it locks the other thread's arena for every chunk), so this takes in watch
    /// events markedly faster than a future that moves between worker threads (`cargo xtask
    /// bench` compares both). Connections the lister-watcher opens from that thread are
    /// served by it; when the informer stops they close, and other users of a shared client
    /// reconnect and resume from their last resource version. The lister-watcher's futures
    /// must not depend on the caller's runtime (client-http's and kcache-testing's do not),
    /// and tokio's paused test clock does not reach the thread.
    OwnThread,
    /// On the caller's task: `run` is one future that drives everything. Use it to keep the
    /// informer on a runtime or task of your choosing, or under a paused test clock.
    CallersTask,
}

impl<T: Object> SharedIndexInformer<T> {
    /// Lists, watches and dispatches until `cancel` fires, then stops every handler; where it
    /// runs is the builder's [`RunMode`] ([`Auto`](RunMode::Auto) by default).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use kcache_informer::SharedIndexInformer;
    /// # use kcache_store::DynamicObject;
    /// # use tokio_util::sync::CancellationToken;
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let api = kcache_testing::FakeListerWatcher::<DynamicObject>::new();
    /// let informer = SharedIndexInformer::builder(Arc::new(api)).build();
    /// let cancel = CancellationToken::new();
    /// let running = tokio::spawn({
    ///     let (informer, cancel) = (informer.clone(), cancel.clone());
    ///     async move { informer.run(cancel).await }
    /// });
    /// assert!(informer.synced().await);
    /// cancel.cancel();
    /// running.await??;
    /// assert!(informer.is_stopped());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] on a second call; [`Error::Thread`] if the informer's own
    /// thread or its runtime cannot be made, or the thread dies.
    ///
    /// # Cancel safety
    ///
    /// On the caller's task, dropping the future stops the informer as cancelling does,
    /// except that handler threads finish their current event on their own. On its own
    /// thread, dropping the future leaves the thread running until `cancel` fires.
    pub async fn run(&self, cancel: CancellationToken) -> Result<()> {
        let (controller, mode) = self.start()?;
        let own_thread = match mode {
            RunMode::OwnThread => true,
            RunMode::CallersTask => false,
            RunMode::Auto => tokio::runtime::Handle::try_current()
                .is_ok_and(|h| h.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread),
        };
        let inner = Arc::clone(&self.inner);
        let run = async move {
            controller.run(cancel).await;
            inner
                .settings
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .stopped = true;
            inner.processor.shutdown();
            inner.sync.set_stopped();
        };
        if !own_thread {
            run.await;
            return Ok(());
        }
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("kcache-informer".into())
            .spawn(move || {
                // `enable_all`: timers, and the I/O driver whenever tokio is built with it (as it
                // is wherever a network lister-watcher such as client-http is linked in).
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let _ = done_tx.send(runtime.map(|runtime| runtime.block_on(run)));
            })
            .map_err(Error::Thread)?;
        match done_rx.await {
            Ok(result) => result.map_err(Error::Thread),
            Err(_) => Err(Error::Thread(std::io::Error::other(
                "the informer thread died",
            ))),
        }
    }

    /// Marks the informer started and builds its queue and controller.
    fn start(&self) -> Result<(Arc<Controller<T>>, RunMode)> {
        let controller = {
            let mut s = self.settings();
            if s.started {
                return Err(Error::AlreadyStarted);
            }
            if s.stopped {
                return Err(Error::Stopped);
            }
            s.started = true;
            let name = self.inner.name.clone();
            let _ = self.inner.metrics.set(InformerMetrics::new(&name));
            let known = Arc::clone(&self.inner.indexer);
            let queue: Arc<dyn Queue<T>> = match s.queue {
                QueueKind::RealFifo => {
                    let mut b = RealFifo::builder().known_objects(known).name(name.clone());
                    if let Some(f) = s.key_func.clone() {
                        b = b.key_func(f);
                    }
                    Arc::new(b.build())
                }
                QueueKind::DeltaFifo => {
                    let mut b = DeltaFifo::builder()
                        .known_objects(known)
                        .emit_delta_type_replaced(true)
                        .name(name.clone());
                    if let Some(f) = s.key_func.clone() {
                        b = b.key_func(f);
                    }
                    Arc::new(b.build())
                }
            };
            let weak = Arc::downgrade(&self.inner);
            let process = move |deltas| match weak.upgrade() {
                Some(inner) => inner.handle_deltas(deltas),
                None => Ok(()),
            };
            let weak = Arc::downgrade(&self.inner);
            let mut config =
                ControllerConfig::new(queue, Arc::clone(&self.inner.lw), Arc::new(process));
            config.full_resync_period = s.resync_check;
            config.should_resync = Some(Arc::new(move || {
                weak.upgrade()
                    .is_some_and(|i| i.processor.should_resync(Instant::now()))
            }));
            config.watch_error_hook.clone_from(&s.watch_error_hook);
            config.decode_error_hook.clone_from(&s.decode_error_hook);
            config.transform.clone_from(&s.transform);
            config.list_options = s.list_options.clone();
            // The informer's name first; the user's options may still rename the reflector.
            let user_options = s.reflector_options.take();
            config.reflector_options = Some(Box::new(move |b| {
                let b = b.name(name);
                match user_options {
                    Some(f) => f(b),
                    None => b,
                }
            }));
            let weak = Arc::downgrade(&self.inner);
            config.after_batch = Some(Arc::new(move || {
                if let Some(inner) = weak.upgrade() {
                    inner.processor.flush();
                }
            }));
            let sync = Arc::clone(&self.inner.sync);
            config.on_synced = Some(Arc::new(move || sync.set_synced()));
            let controller = Arc::new(Controller::new(config));
            s.controller = Some(Arc::clone(&controller));
            let now = Instant::now();
            for l in self.inner.processor.listeners() {
                let mut r = l.resync.lock().unwrap_or_else(PoisonError::into_inner);
                if !r.effective.is_zero() {
                    r.next = Some(now + r.effective);
                }
            }
            (controller, s.run_mode)
        };
        Ok(controller)
    }
}

impl<T: Object> Inner<T> {
    /// client-go's `HandleDeltas`: update the cache, fan the events out; then count them and
    /// the cache's objects.
    fn handle_deltas(&self, deltas: Deltas<T>) -> Result<(), ProcessError<T>> {
        let _block = self
            .block_deltas
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut counts = EventCounts::default();
        let result = process_deltas(&*self.indexer, deltas, |event, sync| {
            match &event {
                Event::Add { .. } => counts.added += 1,
                Event::Update { .. } => counts.updated += 1,
                Event::Delete(_) => counts.deleted += 1,
            }
            self.processor.distribute(&event, sync);
        });
        if let Some(metrics) = self.metrics.get() {
            metrics.processed(counts, kcache_store::Store::len(&*self.indexer));
        }
        // The controller's pop loop logs the failure, with its causes.
        result.map_err(ProcessError::failed)
    }
}
