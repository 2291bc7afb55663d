//! [`BucketRateLimiter`]: one token bucket shared by every key.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::RateLimiter;

/// client-go's `TypedBucketRateLimiter` over `golang.org/x/time/rate`: a token bucket of
/// `burst` tokens refilled at `qps` tokens a second, shared by every key.
///
/// Each [`when`](RateLimiter::when) reserves a token: while the bucket has one, the delay is
/// zero; after that, the delay is how long until the token reserved is refilled, so calls made
/// together are spaced `1/qps` apart. The bucket starts full. It is not per key:
/// [`num_requeues`](RateLimiter::num_requeues) is always 0 and
/// [`forget`](RateLimiter::forget) does nothing. The default is client-go's, 10 per second with
/// bursts of 100.
///
/// Time is tokio's [`Instant`], so the bucket refills with paused (and advanced) time in tests.
/// As in Go, an infinite `qps` never delays; a `qps` of zero (or below, or NaN) hands out the
/// `burst` tokens once and then [`Duration::MAX`], which the queue treats as "never"; a `burst`
/// of zero with a finite `qps` is always [`Duration::MAX`].
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// use std::time::Duration;
/// use kcache_queue::{BucketRateLimiter, RateLimiter};
///
/// let bucket = BucketRateLimiter::new(10.0, 2);
/// assert_eq!(bucket.when(&"a"), Duration::ZERO);
/// assert_eq!(bucket.when(&"b"), Duration::ZERO);
/// // The bucket is empty: the next token is 100 ms away, the one after 200 ms.
/// assert_eq!(bucket.when(&"a"), Duration::from_millis(100));
/// assert_eq!(bucket.when(&"c"), Duration::from_millis(200));
/// // Time refills it: 300 ms later one token is left after the two owed.
/// tokio::time::advance(Duration::from_millis(300)).await;
/// assert_eq!(bucket.when(&"d"), Duration::ZERO);
/// assert_eq!(bucket.when(&"d"), Duration::from_millis(100));
/// # });
/// ```
#[derive(Debug)]
pub struct BucketRateLimiter {
    qps: f64,
    burst: u32,
    bucket: Mutex<Bucket>,
}

#[derive(Debug)]
struct Bucket {
    /// Tokens at `last`; negative when tokens are reserved ahead.
    tokens: f64,
    /// When `tokens` was computed; `None` until the first reservation (the bucket is full).
    last: Option<Instant>,
    /// With a zero rate: how many of the burst's tokens are left.
    left: u32,
}

impl BucketRateLimiter {
    /// A bucket of `burst` tokens refilled at `qps` tokens a second, full at first.
    #[must_use]
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            qps,
            burst,
            bucket: Mutex::new(Bucket {
                tokens: f64::from(burst),
                last: None,
                left: burst,
            }),
        }
    }

    fn bucket(&self) -> MutexGuard<'_, Bucket> {
        self.bucket.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `rate.Limiter.Reserve().Delay()`.
    fn reserve(&self) -> Duration {
        if self.qps == f64::INFINITY {
            return Duration::ZERO;
        }
        let mut b = self.bucket();
        if self.qps.is_nan() || self.qps <= 0.0 {
            // Go's limit 0: the burst only, once.
            return if b.left > 0 {
                b.left -= 1;
                Duration::ZERO
            } else {
                Duration::MAX
            };
        }
        if self.burst == 0 {
            return Duration::MAX;
        }
        let now = Instant::now();
        let last = b.last.unwrap_or(now);
        let elapsed = now.saturating_duration_since(last);
        let burst = f64::from(self.burst);
        let tokens = (b.tokens + elapsed.as_secs_f64() * self.qps).min(burst) - 1.0;
        b.tokens = tokens;
        b.last = Some(now.max(last));
        if tokens >= 0.0 {
            Duration::ZERO
        } else {
            nanos(-tokens / self.qps * 1e9)
        }
    }
}

/// A float number of nanoseconds as a duration, truncated as Go's `time.Duration(f)` does,
/// and saturating.
fn nanos(ns: f64) -> Duration {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "float-to-int `as` saturates (and NaN is 0): the truncation Go's conversion does"
    )]
    let ns = ns as u64;
    Duration::from_nanos(ns)
}

impl Default for BucketRateLimiter {
    /// 10 per second, bursts of 100: client-go's controller default.
    fn default() -> Self {
        Self::new(10.0, 100)
    }
}

impl<K> RateLimiter<K> for BucketRateLimiter {
    fn when(&self, _key: &K) -> Duration {
        self.reserve()
    }

    fn forget(&self, _key: &K) {}

    fn num_requeues(&self, _key: &K) -> u32 {
        0
    }
}
