//! [`RateLimits`]: a token bucket per object and event type, as client-go's old event library
//! spam filter keeps them: each new Event about an object takes a token, `burst` of them at
//! first and one more every `refill` period; the buckets of the objects seen least recently
//! are forgotten past a bound.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::event_type::EventType;
use super::lru::Lru;
use super::reference::ObjectReference;

/// An object and event type, the unit of the limit: a flood of `Normal` events about an
/// object leaves its `Warning`s their own tokens (client-go's spam key has the type too).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct BucketKey {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: String,
    uid: Option<String>,
    event_type: EventType,
}

impl BucketKey {
    fn new(regarding: &ObjectReference, event_type: EventType) -> Self {
        Self {
            api_version: regarding.api_version.clone(),
            kind: regarding.kind.clone(),
            namespace: regarding.namespace.clone(),
            name: regarding.name.clone(),
            uid: regarding.uid.clone(),
            event_type,
        }
    }
}

/// The tokens left in one bucket, as of `updated`.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

/// A limit of `burst` new Events per object and type, refilled by one each `refill`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limit {
    /// Tokens in a full bucket (at least 1).
    pub(crate) burst: u32,
    /// How long one token takes to come back.
    pub(crate) refill: Duration,
}

/// The buckets of the objects seen, at most `capacity` of them.
pub(crate) struct RateLimits {
    limit: Option<Limit>,
    buckets: Lru<Arc<BucketKey>, Bucket>,
}

impl RateLimits {
    /// Buckets for `limit` (none: every Event is let through), at most `capacity` of them.
    pub(crate) fn new(limit: Option<Limit>, capacity: usize) -> Self {
        Self {
            limit,
            buckets: Lru::new(capacity),
        }
    }

    /// The number of buckets kept.
    pub(crate) fn len(&self) -> usize {
        self.buckets.len()
    }

    /// Takes a token for a new Event of `event_type` about `regarding` at `now`; `false` when
    /// its bucket is empty.
    pub(crate) fn try_take(
        &mut self,
        regarding: &ObjectReference,
        event_type: EventType,
        now: Instant,
    ) -> bool {
        let Some(limit) = self.limit else {
            return true;
        };
        let key = BucketKey::new(regarding, event_type);
        let burst = f64::from(limit.burst.max(1));
        let Some((_, bucket)) = self.buckets.get_mut(&key) else {
            let bucket = Bucket {
                tokens: burst - 1.0,
                updated: now,
            };
            self.buckets.insert(Arc::new(key), bucket);
            return true;
        };
        let elapsed = now.saturating_duration_since(bucket.updated);
        let refilled = if limit.refill.is_zero() {
            burst
        } else {
            elapsed.as_secs_f64() / limit.refill.as_secs_f64()
        };
        bucket.tokens = (bucket.tokens + refilled).min(burst);
        bucket.updated = now;
        if bucket.tokens < 1.0 {
            return false;
        }
        bucket.tokens -= 1.0;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_one_per_refill_per_object_and_type() {
        let refill = Duration::from_secs(300);
        let mut limits = RateLimits::new(Some(Limit { burst: 3, refill }), 16);
        let pod = ObjectReference::new("v1", "Pod", Some("ns"), "a");
        let other = ObjectReference::new("v1", "Pod", Some("ns"), "b");
        let t0 = Instant::now();
        let taken = (0..5)
            .filter(|_| limits.try_take(&pod, EventType::Normal, t0))
            .count();
        assert_eq!(taken, 3);
        assert!(limits.try_take(&other, EventType::Normal, t0));
        assert!(limits.try_take(&pod, EventType::Warning, t0));
        // One token a refill, never more than the burst.
        assert!(!limits.try_take(&pod, EventType::Normal, t0 + refill / 2));
        assert!(limits.try_take(&pod, EventType::Normal, t0 + refill));
        assert!(!limits.try_take(&pod, EventType::Normal, t0 + refill));
        let much_later = t0 + refill * 100;
        let taken = (0..5)
            .filter(|_| limits.try_take(&pod, EventType::Normal, much_later))
            .count();
        assert_eq!(taken, 3);
        assert_eq!(limits.len(), 3);
    }

    #[test]
    fn no_limit_lets_everything_through_and_keeps_nothing() {
        let mut limits = RateLimits::new(None, 16);
        let pod = ObjectReference::new("v1", "Pod", Some("ns"), "a");
        assert!((0..100).all(|_| limits.try_take(&pod, EventType::Normal, Instant::now())));
        assert_eq!(limits.len(), 0);
    }

    #[test]
    fn buckets_are_bounded() {
        let mut limits = RateLimits::new(
            Some(Limit {
                burst: 1,
                refill: Duration::from_secs(60),
            }),
            2,
        );
        let now = Instant::now();
        for name in ["a", "b", "c"] {
            let r = ObjectReference::new("v1", "Pod", Some("ns"), name);
            assert!(limits.try_take(&r, EventType::Normal, now));
        }
        assert_eq!(limits.len(), 2);
        // `a`'s bucket was forgotten: it starts full again, as with client-go's LRU.
        let a = ObjectReference::new("v1", "Pod", Some("ns"), "a");
        assert!(limits.try_take(&a, EventType::Normal, now));
    }
}
