//! [`ItemExponentialBackoff`]: a delay per key that doubles with each failure.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::RateLimiter;

/// client-go's `ItemExponentialFailureRateLimiter`: the `n`th failure of a key in a row waits
/// `base * 2^(n-1)`, capped at `max`.
///
/// [`when`](RateLimiter::when) reads the key's failure count, then increments it.
/// [`forget`](RateLimiter::forget) removes the key's entry, so a key that is forgotten after
/// it succeeds holds no memory. The arithmetic saturates: a key that failed billions of times
/// waits `max`, never an overflow. The default is client-go's controller backoff, 5 ms doubling
/// to 1000 s (the 19th failure in a row and later wait 1000 s).
///
/// ```
/// use std::time::Duration;
/// use kcache_queue::{ItemExponentialBackoff, RateLimiter};
///
/// let limiter = ItemExponentialBackoff::new(Duration::from_millis(1), Duration::from_secs(1));
/// let delays: Vec<_> = (0..5).map(|_| limiter.when(&"a")).collect();
/// assert_eq!(delays, [1, 2, 4, 8, 16].map(Duration::from_millis));
/// assert_eq!(limiter.when(&"b"), Duration::from_millis(1), "keys are independent");
/// assert_eq!(limiter.num_requeues(&"a"), 5);
/// ```
pub struct ItemExponentialBackoff<K> {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<K, u32>>,
}

impl<K> ItemExponentialBackoff<K> {
    /// A backoff starting at `base` and doubling up to `max`.
    #[must_use]
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }

    fn failures(&self) -> MutexGuard<'_, HashMap<K, u32>> {
        self.failures.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<K> Default for ItemExponentialBackoff<K> {
    /// 5 ms doubling to 1000 s, as client-go's `DefaultTypedControllerRateLimiter`.
    fn default() -> Self {
        Self::new(Duration::from_millis(5), Duration::from_secs(1000))
    }
}

/// `min(max, base * 2^exp)`, saturating.
pub(super) fn exponential(base: Duration, max: Duration, exp: u32) -> Duration {
    if base.is_zero() {
        return Duration::ZERO;
    }
    1_u32
        .checked_shl(exp)
        .and_then(|factor| base.checked_mul(factor))
        .map_or(max, |d| d.min(max))
}

impl<K: Clone + Eq + Hash + Send + Sync> RateLimiter<K> for ItemExponentialBackoff<K> {
    fn when(&self, key: &K) -> Duration {
        let exp = {
            let mut failures = self.failures();
            if let Some(n) = failures.get_mut(key) {
                let exp = *n;
                *n = n.saturating_add(1);
                exp
            } else {
                failures.insert(key.clone(), 1);
                0
            }
        };
        exponential(self.base, self.max, exp)
    }

    fn forget(&self, key: &K) {
        self.failures().remove(key);
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.failures().get(key).copied().unwrap_or(0)
    }
}

impl<K> fmt::Debug for ItemExponentialBackoff<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tracked = self.failures.try_lock().ok().map(|m| m.len());
        f.debug_struct("ItemExponentialBackoff")
            .field("base", &self.base)
            .field("max", &self.max)
            .field("tracked", &tracked)
            .finish()
    }
}
