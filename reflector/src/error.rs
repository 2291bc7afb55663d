//! The reflector crate's [`Error`]: what a [`ListerWatcher`](crate::ListerWatcher) call or a watch
//! stream can fail with, and what the reflector reports to its hooks.

use std::time::Duration;

use crate::{DecodeError, Status};

pub use kcache_store::BoxError;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a list, a watch or one watch event failed.
///
/// A concrete type (not an associated one) so that `Arc<dyn ListerWatcher<T>>` works: every
/// backend maps its failures onto these variants. The helpers ([`is_gone`](Self::is_gone),
/// [`retry_after`](Self::retry_after), ...) are what the reflector's rules key on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with a `Status`: an HTTP error code, or a watch `ERROR` event.
    #[error("the server answered: {0}")]
    Api(Box<Status>),
    /// One object or one watch event could not be decoded. Inside a watch stream the reflector
    /// removes the object's key when its identity could be read
    /// ([`DecodeError::identity`]) and ends the watch (to relist) when it could not.
    #[error(transparent)]
    Decode(Box<DecodeError>),
    /// The connection failed or broke (refused, reset, TLS, HTTP framing). Inside a watch stream
    /// it ends the watch like a clean close. The cause is in the source chain
    /// ([`ErrorChain`](crate::ErrorChain) prints it on one line).
    #[error("transport error")]
    Transport(#[source] BoxError),
    /// A server's answer broke one of the reflector's bounds (a repeated continue token, too many
    /// pages, a body over its size limit).
    #[error("{0}")]
    Limit(String),
    /// The request or the stream took too long.
    #[error("request timed out")]
    Timeout,
    /// A watch closed less than a second after it started without delivering anything.
    #[error(
        "very short watch: {name}: unexpected watch close - watch lasted less than a second and no items received"
    )]
    VeryShortWatch {
        /// The reflector's name.
        name: String,
    },
    /// A streaming list ended before the bookmark that closes its initial events.
    #[error("the streaming list ended after {events} events without its initial-events bookmark")]
    InitialEventsIncomplete {
        /// How many events it delivered.
        events: usize,
    },
    /// A watch delivered nothing (not even a bookmark) for this long and was ended.
    #[error("watch delivered nothing for {0:?}")]
    WatchIdle(Duration),
    /// Writing into the store failed (only a resync error ends a watch; event writes are logged).
    #[error("store operation failed")]
    Store(#[source] kcache_store::Error),
}

impl Error {
    /// An [`Error::Api`] for `status`.
    #[must_use]
    pub fn api(status: Status) -> Self {
        Self::Api(Box::new(status))
    }

    /// An [`Error::Decode`].
    #[must_use]
    pub fn decode(error: DecodeError) -> Self {
        Self::Decode(Box::new(error))
    }

    /// The [`DecodeError`], for an [`Error::Decode`].
    pub fn as_decode(&self) -> Option<&DecodeError> {
        match self {
            Self::Decode(d) => Some(d),
            _ => None,
        }
    }

    /// An [`Error::Transport`].
    #[must_use]
    pub fn transport(source: impl Into<BoxError>) -> Self {
        Self::Transport(source.into())
    }

    /// The server's `Status`, when it sent one.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Self::Api(s) => Some(s),
            _ => None,
        }
    }

    /// A 410: the resource version or continue token is too old ([`Status::is_gone`]).
    pub fn is_gone(&self) -> bool {
        self.status().is_some_and(Status::is_gone)
    }

    /// A 409 `Conflict`: the object changed since it was read, an optimistic write lost
    /// ([`Status::is_conflict`]). A create whose name is taken is
    /// [`is_already_exists`](Self::is_already_exists) instead.
    pub fn is_conflict(&self) -> bool {
        self.status().is_some_and(Status::is_conflict)
    }

    /// A 409 `AlreadyExists`: a create found the name taken ([`Status::is_already_exists`]).
    pub fn is_already_exists(&self) -> bool {
        self.status().is_some_and(Status::is_already_exists)
    }

    /// A 404: the object does not exist ([`Status::is_not_found`]).
    pub fn is_not_found(&self) -> bool {
        self.status().is_some_and(Status::is_not_found)
    }

    /// Reason `Expired` exactly ([`Status::is_expired`]).
    pub fn is_expired(&self) -> bool {
        self.status().is_some_and(Status::is_expired)
    }

    /// The resource version is newer than the server has seen ([`Status::is_too_large_rv`]).
    pub fn is_too_large_rv(&self) -> bool {
        self.status().is_some_and(Status::is_too_large_rv)
    }

    /// Invalid options or object: a 422 `Invalid` ([`Status::is_invalid`]).
    pub fn is_invalid(&self) -> bool {
        self.status().is_some_and(Status::is_invalid)
    }

    /// A 400 `BadRequest` ([`Status::is_bad_request`]).
    pub fn is_bad_request(&self) -> bool {
        self.status().is_some_and(Status::is_bad_request)
    }

    /// A 429 ([`Status::is_too_many_requests`]).
    pub fn is_too_many_requests(&self) -> bool {
        self.status().is_some_and(Status::is_too_many_requests)
    }

    /// A 500 `InternalError` ([`Status::is_internal_error`]).
    pub fn is_internal_error(&self) -> bool {
        self.status().is_some_and(Status::is_internal_error)
    }

    /// How long the server asked us to wait ([`Status::retry_after`]).
    pub fn retry_after(&self) -> Option<Duration> {
        self.status().and_then(Status::retry_after)
    }

    /// A transport error caused by a refused connection (an `io::Error` of kind
    /// `ConnectionRefused` anywhere in the source chain).
    pub fn is_connection_refused(&self) -> bool {
        let Self::Transport(source) = self else {
            return false;
        };
        let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(source.as_ref());
        while let Some(e) = cur {
            if let Some(io) = e.downcast_ref::<std::io::Error>()
                && io.kind() == std::io::ErrorKind::ConnectionRefused
            {
                return true;
            }
            cur = e.source();
        }
        false
    }

    /// Whether a failed watch request is retried after a backoff without a relist: a refused
    /// connection or a 429 (client-go's `isWatchErrorRetriable`).
    pub fn is_watch_retriable(&self) -> bool {
        self.is_connection_refused() || self.is_too_many_requests()
    }
}

impl From<DecodeError> for Error {
    fn from(error: DecodeError) -> Self {
        Self::decode(error)
    }
}

impl From<Status> for Error {
    fn from(status: Status) -> Self {
        Self::api(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn helpers_read_the_status() {
        let e = Error::api(Status::expired("old"));
        assert!(e.is_gone());
        assert!(!e.is_too_large_rv());
        let e = Error::from(Status::too_many_requests(Some(4)));
        assert!(e.is_watch_retriable());
        assert_eq!(e.retry_after(), Some(Duration::from_secs(4)));
        assert!(Error::Timeout.status().is_none());
    }

    #[test]
    fn connection_refused_is_found_in_the_chain() {
        let io = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(Error::transport(io).is_watch_retriable());
        let io = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(!Error::transport(io).is_watch_retriable());
    }

    #[test]
    fn source_is_not_printed_twice() {
        let e = Error::transport(std::io::Error::other("reset"));
        assert_eq!(e.to_string(), "transport error");
        assert_eq!(e.source().unwrap().to_string(), "reset");
        let e = Error::decode(DecodeError::new("watch event", "bad json"));
        assert_eq!(e.to_string(), "could not decode watch event: bad json");
    }
}
