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
