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
    /// The operating system refused a thread (for a handler, or for an informer that runs on
    /// its own thread, with its runtime), or the informer's own thread died.
    #[error("informer thread failure")]
    Thread(#[source] std::io::Error),
}
