//! [`Action`]: what a reconcile asks of the runner once it returns, and [`TerminalError`], an
//! error not worth retrying.

use std::fmt;
use std::time::Duration;

use crate::BoxError;

/// What to do with a key once its reconcile succeeded (controller-runtime's `Result`).
///
/// A reconcile that fails returns `Err` instead: the key is requeued with the runner's rate
/// limiter (its per-key backoff grows with each failure), unless the error is a
/// [`TerminalError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Action {
    /// Done: the key's backoff is forgotten; it runs again on its next event.
    #[default]
    Done,
    /// Run again after the rate limiter's delay for this key, without forgetting its backoff.
    Requeue,
    /// Run again after this delay; the key's backoff is forgotten (a planned recheck, not a
    /// failure).
    RequeueAfter(Duration),
}

/// An error a reconcile returns when retrying cannot help (a spec that can never be
/// satisfied): the runner logs it and does not requeue the key, which runs again only on its
/// next event (controller-runtime's `TerminalError`).
///
/// ```
/// use kcache_informer::{BoxError, TerminalError};
///
/// fn check(replicas: i64) -> Result<(), BoxError> {
///     if replicas < 0 {
///         return Err(TerminalError::new("replicas must not be negative").into());
///     }
///     Ok(())
/// }
/// let err = check(-1).unwrap_err();
/// assert!(err.downcast_ref::<TerminalError>().is_some());
/// ```
#[derive(Debug)]
pub struct TerminalError(BoxError);

impl TerminalError {
    /// Marks `cause` as terminal.
    pub fn new(cause: impl Into<BoxError>) -> Self {
        Self(cause.into())
    }
}

impl fmt::Display for TerminalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "terminal error: {}", self.0)
    }
}

impl std::error::Error for TerminalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}
