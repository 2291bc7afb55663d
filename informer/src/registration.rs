//! [`Registration`]: the handle of an added handler, with its own `has_synced`.

use std::fmt;
use std::sync::Arc;

use crate::listener::Shared;

/// The handle [`SharedIndexInformer::add_event_handler`](crate::SharedIndexInformer::add_event_handler)
/// returns: remove the handler with it, and ask whether the handler has seen the initial list.
pub struct Registration<T> {
    pub(crate) id: u64,
    pub(crate) informer: usize,
    pub(crate) shared: Arc<Shared<T>>,
}

impl<T> Registration<T> {
    /// True once the informer has synced and this handler has returned from every initial-list
    /// add (client-go's per-registration `HasSynced`). Latched.
    ///
    /// A handler that panics on an initial add still counts that add as delivered, so it does
    /// not keep the registration unsynced forever.
    pub fn has_synced(&self) -> bool {
        self.shared.has_synced()
    }

    /// Resolves with `true` once [`has_synced`](Self::has_synced), `false` if the handler is
    /// removed or the informer stops first. Woken by the informer, never polled; the future
    /// owns what it needs, so it can be spawned or joined with others.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use kcache_informer::{HandlerFuncs, SharedIndexInformer};
    /// # use kcache_store::DynamicObject;
    /// # use tokio_util::sync::CancellationToken;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let api = kcache_testing::FakeListerWatcher::<DynamicObject>::new();
    /// api.handle().add(DynamicObject::new(Some("shop"), "web"));
    /// let informer = SharedIndexInformer::builder(Arc::new(api)).build();
    /// let registration = informer.add_event_handler(HandlerFuncs::new())?;
    /// let cancel = CancellationToken::new();
    /// let running = tokio::spawn({
    ///     let (informer, cancel) = (informer.clone(), cancel.clone());
    ///     async move { informer.run(cancel).await }
    /// });
    /// assert!(registration.synced().await); // the handler has seen "shop/web"
    /// cancel.cancel();
    /// running.await??;
    /// # Ok(())
    /// # }
    /// ```
    pub fn synced(&self) -> impl Future<Output = bool> + Send + 'static
    where
        T: Send + Sync + 'static,
    {
        self.shared.owned_synced()
    }

    /// Events waiting in this handler's buffer: how far behind the handler is.
    pub fn buffer_depth(&self) -> usize {
        self.shared.depth()
    }

    /// Whether the handler was removed or the informer stopped.
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }
}

impl<T> fmt::Debug for Registration<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.id)
            .field("has_synced", &self.has_synced())
            .field("buffer_depth", &self.buffer_depth())
            .finish_non_exhaustive()
    }
}
