//! [`within`]: one request bounded by a timeout, its expiry the reflector's
//! [`Error::Timeout`], for every call site (client-http's own client and the kube-rs one).

use std::future::Future;
use std::time::Duration;

use kcache_reflector::Error;

/// `work`'s result if it ends within `timeout`, else [`Error::Timeout`] (and `work` is
/// dropped, which cancels it).
///
/// # Errors
///
/// `work`'s, or [`Error::Timeout`].
pub(crate) async fn within<T>(
    timeout: Duration,
    work: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| Error::Timeout)?
}
