//! [`RecorderStats`]: what an [`EventRecorder`](crate::EventRecorder) did with the events it
//! was given (written, folded into series, dropped and why) and how full its bounded queue
//! and caches are.

use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of an [`EventRecorder`](crate::EventRecorder)'s counters (since it was built)
/// and of its bounded queue and caches (now).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RecorderStats {
    /// Events created on the server (series re-created after their Event expired included).
    pub created: u64,
    /// Series updates written (patches of `series.count` and `series.lastObservedTime`).
    pub series_written: u64,
    /// Events folded into the series of an earlier one rather than written as new Events.
    pub repeats: u64,
    /// Events dropped because the queue was full (the server slow or down), with the
    /// series updates dropped so.
    pub queue_full: u64,
    /// Events dropped by the per-object rate limit.
    pub rate_limited: u64,
    /// Writes given up: rejected by the server (an invalid Event), out of retries, or left
    /// unwritten when a shutdown's flush ran out of time.
    pub failed: u64,
    /// Events recorded after the recorder shut down.
    pub closed: u64,
    /// Writes waiting in the queue.
    pub queued: usize,
    /// The queue's capacity.
    pub queue_capacity: usize,
    /// Events remembered for their series.
    pub series: usize,
    /// Objects with a rate-limit bucket.
    pub rate_limited_objects: usize,
}

impl RecorderStats {
    /// Events (and series updates) lost: `queue_full + rate_limited + failed + closed`.
    pub fn dropped(&self) -> u64 {
        self.queue_full + self.rate_limited + self.failed + self.closed
    }
}

/// The recorder's counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) created: AtomicU64,
    pub(crate) series_written: AtomicU64,
    pub(crate) repeats: AtomicU64,
    pub(crate) queue_full: AtomicU64,
    pub(crate) rate_limited: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) closed: AtomicU64,
}

impl Counters {
    /// Adds one to `counter`.
    pub(crate) fn bump(counter: &AtomicU64) {
        Self::add(counter, 1);
    }

    /// Adds `n` to `counter`.
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The counters, in a snapshot whose other fields are left at zero.
    pub(crate) fn snapshot(&self) -> RecorderStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        RecorderStats {
            created: get(&self.created),
            series_written: get(&self.series_written),
            repeats: get(&self.repeats),
            queue_full: get(&self.queue_full),
            rate_limited: get(&self.rate_limited),
            failed: get(&self.failed),
            closed: get(&self.closed),
            ..RecorderStats::default()
        }
    }
}
