//! [`ItemFastSlow`]: a short delay for a key's first few failures, a long one after.

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use super::RateLimiter;
use super::failure_counts::FailureCounts;

/// client-go's `ItemFastSlowRateLimiter`: the first `max_fast_attempts` failures of a key in a
/// row wait `fast`, the later ones `slow`.
///
/// [`when`](RateLimiter::when) increments the key's count first, then compares it;
/// [`forget`](RateLimiter::forget) removes the key's entry.
///
/// ```
/// use std::time::Duration;
/// use kcache_queue::{ItemFastSlow, RateLimiter};
///
/// let limiter = ItemFastSlow::new(Duration::from_millis(5), Duration::from_secs(10), 3);
/// let delays: Vec<_> = (0..5).map(|_| limiter.when(&"a")).collect();
/// let (fast, slow) = (Duration::from_millis(5), Duration::from_secs(10));
/// assert_eq!(delays, [fast, fast, fast, slow, slow]);
/// ```
pub struct ItemFastSlow<K> {
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
    attempts: FailureCounts<K>,
}

impl<K> ItemFastSlow<K> {
    /// `fast` for the first `max_fast_attempts` failures of a key, `slow` after.
    #[must_use]
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        Self {
            fast,
            slow,
            max_fast_attempts,
            attempts: FailureCounts::new(),
        }
    }
}

impl<K: Clone + Eq + Hash + Send + Sync> RateLimiter<K> for ItemFastSlow<K> {
    fn when(&self, key: &K) -> Duration {
        // The count after this failure.
        let n = self.attempts.bump(key).saturating_add(1);
        if n <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }

    fn forget(&self, key: &K) {
        self.attempts.forget(key);
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.attempts.get(key)
    }
}

impl<K> fmt::Debug for ItemFastSlow<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlow")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .field("tracked", &self.attempts.try_len())
            .finish()
    }
}
