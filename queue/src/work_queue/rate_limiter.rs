//! [`RateLimiter`]: how long a key waits before it is retried, and the default limiter of
//! controllers.

use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use super::{BucketRateLimiter, ItemExponentialBackoff, MaxOf};

/// client-go's `TypedRateLimiter`: decides how long a key waits before
/// [`WorkQueue::add_rate_limited`](super::WorkQueue::add_rate_limited) queues it.
///
/// Implementations are shared between the queue and its users, so they take `&self` and keep
/// their own state behind a lock. Each call to [`when`](Self::when) counts as one failure of
/// `key` (or, for a global limiter such as [`BucketRateLimiter`], consumes one token).
///
/// ```
/// use std::time::Duration;
/// use kcache_queue::{ItemExponentialBackoff, RateLimiter};
///
/// let limiter = ItemExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1000));
/// assert_eq!(limiter.when(&"ns/a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"ns/a"), Duration::from_millis(10));
/// assert_eq!(limiter.num_requeues(&"ns/a"), 2);
/// limiter.forget(&"ns/a");
/// assert_eq!(limiter.when(&"ns/a"), Duration::from_millis(5));
/// ```
pub trait RateLimiter<K>: Send + Sync {
    /// How long `key` should wait before it is retried; records one more failure of `key`.
    fn when(&self, key: &K) -> Duration;
    /// Stops tracking `key`: its failures are forgotten (and its state freed), whether it
    /// succeeded or was given up on.
    fn forget(&self, key: &K);
    /// How many failures of `key` are recorded.
    fn num_requeues(&self, key: &K) -> u32;
}

/// client-go's `DefaultTypedControllerRateLimiter`: the longer of a per-key exponential
/// backoff (5 ms doubling up to 1000 s) and an overall token bucket (10 per second, bursts of
/// 100), both taken by [`MaxOf`].
///
/// ```
/// use std::time::Duration;
/// use kcache_queue::default_rate_limiter;
///
/// let limiter = default_rate_limiter::<String>();
/// let key = "ns/a".to_owned();
/// assert_eq!(limiter.when(&key), Duration::from_millis(5));
/// assert_eq!(limiter.when(&key), Duration::from_millis(10));
/// ```
#[must_use]
pub fn default_rate_limiter<K>() -> Arc<dyn RateLimiter<K>>
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    Arc::new(MaxOf::new(vec![
        Arc::new(ItemExponentialBackoff::<K>::default()),
        Arc::new(BucketRateLimiter::default()),
    ]))
}
