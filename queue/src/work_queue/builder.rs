//! [`WorkQueueBuilder`]: a work queue's rate limiter and name.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use super::{RateLimiter, WorkQueue};

/// Builds a [`WorkQueue`]: client-go's `TypedRateLimitingQueueConfig`.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use kcache_queue::{ItemExponentialBackoff, WorkQueue};
///
/// let queue = WorkQueue::<String>::builder()
///     .rate_limiter(Arc::new(ItemExponentialBackoff::new(
///         Duration::from_millis(1),
///         Duration::from_secs(60),
///     )))
///     .name("pods")
///     .build();
/// assert_eq!(queue.name(), Some("pods"));
/// ```
#[must_use]
pub struct WorkQueueBuilder<K> {
    limiter: Option<Arc<dyn RateLimiter<K>>>,
    name: Option<String>,
}

impl<K> WorkQueueBuilder<K> {
    pub(super) fn new() -> Self {
        Self {
            limiter: None,
            name: None,
        }
    }

    /// The rate limiter behind `add_rate_limited`, `forget` and `num_requeues` (default:
    /// [`default_rate_limiter`](super::default_rate_limiter)).
    pub fn rate_limiter(mut self, limiter: Arc<dyn RateLimiter<K>>) -> Self {
        self.limiter = Some(limiter);
        self
    }

    /// The queue's name (client-go names a controller's queue after the controller), shown in
    /// `Debug` and by [`WorkQueue::name`]. With one (not empty) the queue records client-go's
    /// work-queue [metrics](crate::metrics), labelled with it; without one it records none.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into()).filter(|n| !n.is_empty());
        self
    }
}

impl<K: Clone + Eq + Hash + Send + Sync + 'static> WorkQueueBuilder<K> {
    /// The queue. Its [metrics](crate::metrics), if it has a name, are registered now, with the
    /// recorder in place.
    ///
    /// A named queue's in-flight gauges stay current while workers are stuck only if the
    /// application spawns [`WorkQueue::in_flight_metrics`]; the queue starts no task itself.
    pub fn build(self) -> WorkQueue<K> {
        WorkQueue::from_parts(self.limiter, self.name)
    }
}

impl<K> fmt::Debug for WorkQueueBuilder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkQueueBuilder")
            .field("rate_limiter", &self.limiter.is_some())
            .field("name", &self.name)
            .finish()
    }
}
