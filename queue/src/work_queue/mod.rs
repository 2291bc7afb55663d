//! The controllers' work queue (client-go's `util/workqueue`): [`WorkQueue`], its builder, and
//! the rate limiters behind `add_rate_limited`.
//!
//! - [`WorkQueue`]: keys, deduped while they wait, one worker per key at a time, delays and
//!   rate-limited retries, shutdown with or without drain.
//! - [`RateLimiter`] and client-go's limiters: [`ItemExponentialBackoff`], [`ItemFastSlow`],
//!   [`BucketRateLimiter`], [`MaxOf`], and [`default_rate_limiter`] (a controller's default).

mod backoff;
mod bucket;
mod builder;
mod delayed;
mod failure_counts;
mod fast_slow;
mod in_flight;
mod locked;
mod max_of;
mod metrics;
mod queue;
mod rate_limiter;
mod state;

pub use self::backoff::ItemExponentialBackoff;
pub use self::bucket::BucketRateLimiter;
pub use self::builder::WorkQueueBuilder;
pub use self::fast_slow::ItemFastSlow;
pub use self::max_of::MaxOf;
pub use self::queue::WorkQueue;
pub use self::rate_limiter::{RateLimiter, default_rate_limiter};
