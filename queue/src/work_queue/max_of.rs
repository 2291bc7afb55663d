//! [`MaxOf`]: the longest delay of several rate limiters.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::RateLimiter;

/// client-go's `MaxOfRateLimiter`: asks every limiter and waits the longest delay.
///
/// [`when`](RateLimiter::when) calls *every* limiter, so each records the failure (a token
/// bucket spends a token) even when another one's delay wins. `num_requeues` is the largest
/// count, and `forget` goes to all of them. With no limiters, every delay is zero.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use kcache_queue::{ItemExponentialBackoff, ItemFastSlow, MaxOf, RateLimiter};
///
/// let ms = Duration::from_millis;
/// let limiter = MaxOf::new(vec![
///     Arc::new(ItemFastSlow::new(ms(5), Duration::from_secs(3), 3)),
///     Arc::new(ItemExponentialBackoff::new(ms(1), Duration::from_secs(1))),
/// ]);
/// let delays: Vec<_> = (0..4).map(|_| limiter.when(&"a")).collect();
/// assert_eq!(delays, [ms(5), ms(5), ms(5), Duration::from_secs(3)]);
/// ```
pub struct MaxOf<K> {
    limiters: Vec<Arc<dyn RateLimiter<K>>>,
}

impl<K> MaxOf<K> {
    /// The longest delay of `limiters`.
    #[must_use]
    pub fn new(limiters: Vec<Arc<dyn RateLimiter<K>>>) -> Self {
        Self { limiters }
    }
}

impl<K> RateLimiter<K> for MaxOf<K> {
    fn when(&self, key: &K) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(key))
            .fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, key: &K) {
        for l in &self.limiters {
            l.forget(key);
        }
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(key))
            .max()
            .unwrap_or(0)
    }
}

impl<K> fmt::Debug for MaxOf<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOf")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}
