//! The queue crate's errors: what `pop` and a process function can fail with. (The `Store`
//! methods a queue implements return [`kcache_store::Error`].)

use std::fmt;

use kcache_store::BoxError;

use crate::Deltas;

/// Why `pop` returned without processing an item successfully.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PopError {
    /// The queue is closed and holds nothing more: the consumer should stop.
    #[error("queue is closed")]
    Closed,
    /// The process function failed; the item was dropped or requeued as it asked.
    #[error("processing a popped item failed")]
    Process(#[source] BoxError),
}

impl PopError {
    /// Whether this is [`PopError::Closed`].
    #[must_use]
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Closed)
    }
}

/// What a process function returns when it could not handle the item it was given.
pub enum ProcessError<T> {
    /// The item is dropped; `pop` returns the error as [`PopError::Process`].
    Failed(BoxError),
    /// Hand the item back to the queue to be popped again.
    ///
    /// [`Fifo`](crate::Fifo) and [`DeltaFifo`](crate::DeltaFifo) put it back at the tail unless
    /// the key is queued again (client-go's `AddIfNotPresent`: newer deltas win);
    /// [`RealFifo`](crate::RealFifo) puts it back at the head, so the order of events is kept.
    /// `pop` returns `source` as [`PopError::Process`], or `Ok(())` when it is `None`.
    Requeue {
        /// The deltas that were popped, given back.
        deltas: Deltas<T>,
        /// Why, if it should be reported.
        source: Option<BoxError>,
    },
}

impl<T> ProcessError<T> {
    /// A failure that drops the item.
    pub fn failed(err: impl Into<BoxError>) -> Self {
        Self::Failed(err.into())
    }

    /// Asks for `deltas` to be requeued, reporting nothing.
    pub fn requeue(deltas: Deltas<T>) -> Self {
        Self::Requeue {
            deltas,
            source: None,
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for ProcessError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Failed(e) => f.debug_tuple("Failed").field(e).finish(),
            Self::Requeue { deltas, source } => f
                .debug_struct("Requeue")
                .field("deltas", deltas)
                .field("source", source)
                .finish(),
        }
    }
}

impl<T> fmt::Display for ProcessError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Failed(_) => f.write_str("processing failed"),
            Self::Requeue { .. } => f.write_str("processing failed, item requeued"),
        }
    }
}

impl<T: fmt::Debug> std::error::Error for ProcessError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Failed(e) => Some(&**e),
            Self::Requeue { source, .. } => source
                .as_deref()
                .map(|e| e as &(dyn std::error::Error + 'static)),
        }
    }
}

/// Why [`WorkQueue::try_get`](crate::WorkQueue::try_get) handed out no key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TryGetError {
    /// No key is waiting now; one may come later (delayed keys may be pending).
    #[error("no key is waiting")]
    Empty,
    /// No key is waiting and the queue is shut down: none will come.
    #[error("work queue is shut down")]
    ShutDown,
}
