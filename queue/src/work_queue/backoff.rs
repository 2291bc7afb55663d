//! [`ItemExponentialBackoff`]: a delay per key that doubles with each failure.

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use super::RateLimiter;
use super::failure_counts::FailureCounts;

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
    failures: FailureCounts<K>,
}

impl<K> ItemExponentialBackoff<K> {
    /// A backoff starting at `base` and doubling up to `max`.
    #[must_use]
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: FailureCounts::new(),
        }
    }
}

impl<K> Default for ItemExponentialBackoff<K> {
    /// 5 ms doubling to 1000 s, as client-go's `DefaultTypedControllerRateLimiter`.
    fn default() -> Self {
        Self::new(Duration::from_millis(5), Duration::from_secs(1000))
    }
}

/// `min(max, base * 2^exp)`, saturating, computed in nanoseconds on 128 bits: exact for every
/// `exp` whose product fits, however large `max / base` is.
fn exponential(base: Duration, max: Duration, exp: u32) -> Duration {
    const PER_SEC: u128 = 1_000_000_000;
    if base.is_zero() {
        return Duration::ZERO;
    }
    let nanos = 1_u128
        .checked_shl(exp)
        .and_then(|factor| base.as_nanos().checked_mul(factor));
    match nanos {
        // Below `max`, so it fits a `Duration`.
        Some(nanos) if nanos < max.as_nanos() => {
            match (
                u64::try_from(nanos / PER_SEC),
                u32::try_from(nanos % PER_SEC),
            ) {
                (Ok(secs), Ok(sub)) => Duration::new(secs, sub),
                _ => max,
            }
        }
        _ => max,
    }
}

impl<K: Clone + Eq + Hash + Send + Sync> RateLimiter<K> for ItemExponentialBackoff<K> {
    fn when(&self, key: &K) -> Duration {
        exponential(self.base, self.max, self.failures.bump(key))
    }

    fn forget(&self, key: &K) {
        self.failures.forget(key);
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.failures.get(key)
    }
}

impl<K> fmt::Debug for ItemExponentialBackoff<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialBackoff")
            .field("base", &self.base)
            .field("max", &self.max)
            .field("tracked", &self.failures.try_len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ratio `max / base` above 2^32 still doubles past the 32nd failure, up to `max`.
    #[test]
    fn doubles_past_two_to_the_32() {
        let (base, max) = (Duration::from_nanos(1), Duration::from_secs(100_000));
        assert_eq!(exponential(base, max, 33), Duration::from_nanos(1 << 33));
        assert_eq!(exponential(base, max, 46), Duration::from_nanos(1 << 46));
        assert_eq!(exponential(base, max, 47), max, "2^47 ns is past 100000 s");
        assert_eq!(exponential(base, max, 127), max);
        assert_eq!(exponential(base, max, 128), max);
        assert_eq!(exponential(base, max, u32::MAX), max);
        assert_eq!(exponential(Duration::ZERO, max, 200), Duration::ZERO);
        assert_eq!(exponential(Duration::MAX, max, 0), max, "base above max");
        assert_eq!(
            exponential(Duration::MAX, Duration::MAX, 1),
            Duration::MAX,
            "saturates"
        );
    }
}
