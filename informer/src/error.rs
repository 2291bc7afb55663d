//! The informer crate's errors.

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of informers and their registrations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `run` was called a second time.
    #[error("informer has already started")]
    AlreadyStarted,
    /// The informer has stopped: no handler or index can be added any more.
    #[error("informer has stopped")]
    Stopped,
    /// The indexer refused new indexes.
    #[error("indexer error")]
    Store(#[from] kcache_store::Error),
    /// [`shut_down_event_handler`](crate::SharedIndexInformer::shut_down_event_handler)'s
    /// future was polled on the handler's own thread, from inside one of its callbacks, where
    /// it would wait for itself forever (client-go's `ShutDownEventHandler` deadlocks there).
    /// The handler is removed all the same; its thread exits once the callback returns.
    #[error("an event handler cannot wait for its own shutdown from inside its callback")]
    ShutdownFromHandler,
    /// A [`ReconcileRunner`](crate::ReconcileRunner)'s informers did not sync in time.
    #[error("the caches of {runner} did not sync within {after:?}")]
    CacheSyncTimeout {
        /// The runner's name.
        runner: String,
        /// The timeout.
        after: std::time::Duration,
    },
    /// A [`LeaderElector`](crate::LeaderElector)'s timing or identity is invalid.
    #[error("invalid leader election configuration: {0}")]
    LeaderElectionConfig(String),
    /// The operating system refused a thread (for a handler, or for an informer that runs on
    /// its own thread, with its runtime), or the informer's own thread died.
    #[error("informer thread failure")]
    Thread(#[source] std::io::Error),
}
