//! [`error_from_kube`]: a [`kube::Error`](kube_client::Error) as the reflector's
//! [`Error`], with its cause kept.

use kcache_reflector::{Error, Status};

/// A failure of kube-rs's client as the reflector's [`Error`]:
///
/// - an API error (`kube::Error::Api`) keeps the server's `Status` ([`Error::Api`]), so a 410
///   still makes the reflector relist and a 429 still carries its `Retry-After`;
/// - anything else (connection refused or reset, TLS, authentication, a request kube-rs could
///   not send) is an [`Error::Transport`] whose [`source`](std::error::Error::source) is the
///   `kube::Error` itself, so the whole chain down to the `io::Error` is kept (and
///   [`Error::is_connection_refused`] still finds a refused connection).
///
/// [`KubeListerWatcher`](crate::KubeListerWatcher) uses it for every failure of
/// `Client::send`; an error answer that kube-rs passes through as a response is read by this
/// crate instead, exactly as [`HttpListerWatcher`](crate::HttpListerWatcher) reads it.
///
/// ```
/// use kcache_client_http::kube::error_from_kube;
///
/// let status = kube_client::core::Status::failure("too old", "Expired").with_code(410);
/// let e = error_from_kube(kube_client::Error::Api(status.boxed()));
/// assert!(e.is_gone() && e.is_expired());
/// ```
pub fn error_from_kube(error: kube_client::Error) -> Error {
    match error {
        kube_client::Error::Api(status) => Error::api(status_of(&status)),
        other => Error::transport(other),
    }
}

/// kube-core's `Status` as the reflector's: both are metav1.Status, so the JSON of one is the
/// JSON of the other; should that ever fail, the code, reason and message are kept.
fn status_of(status: &kube_client::core::Status) -> Status {
    serde_json::to_value(status)
        .and_then(serde_json::from_value::<Status>)
        .unwrap_or_else(|_| Status::failure(status.code, &status.reason, &status.message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_errors_keep_their_status() {
        let mut status =
            kube_client::core::Status::failure("slow down", "TooManyRequests").with_code(429);
        status.details =
            Some(serde_json::from_value(serde_json::json!({"retryAfterSeconds": 3})).unwrap());
        let e = error_from_kube(kube_client::Error::Api(status.boxed()));
        assert!(e.is_too_many_requests() && e.is_watch_retriable());
        assert_eq!(e.retry_after(), Some(std::time::Duration::from_secs(3)));
        assert_eq!(
            e.status().and_then(|s| s.message.as_deref()),
            Some("slow down")
        );
    }

    #[test]
    fn other_errors_are_transport_errors_with_their_cause() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let e = error_from_kube(kube_client::Error::ReadEvents(io));
        assert!(matches!(e, Error::Transport(_)));
        assert!(e.is_connection_refused());
        assert_eq!(
            kcache_reflector::ErrorChain(&e).to_string(),
            "transport error: Error reading events stream: refused"
        );
    }
}
