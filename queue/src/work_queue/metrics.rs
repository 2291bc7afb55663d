//! The handles of one named work queue's metrics (see [`crate::metrics`]).

use std::time::Duration;

use metrics::{Counter, Gauge, Histogram};

use crate::metrics::{
    NAME_LABEL, WORKQUEUE_ADDS_TOTAL, WORKQUEUE_DEPTH, WORKQUEUE_LONGEST_RUNNING_PROCESSOR_SECONDS,
    WORKQUEUE_QUEUE_DURATION_SECONDS, WORKQUEUE_RETRIES_TOTAL, WORKQUEUE_UNFINISHED_WORK_SECONDS,
    WORKQUEUE_WORK_DURATION_SECONDS,
};

/// How often the in-flight gauges are recomputed at most (client-go's period).
pub(super) const IN_FLIGHT_PERIOD: Duration = Duration::from_millis(500);

/// The metrics of a work queue; `None` inside for a queue without a name, which records
/// nothing and reads no clock.
#[derive(Debug)]
pub(super) struct WorkQueueMetrics(Option<Handles>);

#[derive(Debug)]
struct Handles {
    depth: Gauge,
    adds: Counter,
    queue_duration: Histogram,
    work_duration: Histogram,
    retries: Counter,
    unfinished: Gauge,
    longest: Gauge,
}

impl WorkQueueMetrics {
    /// Registers the metrics of the queue `name` with the recorder in place.
    pub(super) fn new(name: Option<&str>) -> Self {
        Self(name.filter(|n| !n.is_empty()).map(|name| {
            let label = || (NAME_LABEL, name.to_owned());
            let [l1, l2, l3, l4, l5, l6, l7] = [(); 7].map(|()| [label()]);
            Handles {
                depth: metrics::gauge!(WORKQUEUE_DEPTH, &l1),
                adds: metrics::counter!(WORKQUEUE_ADDS_TOTAL, &l2),
                queue_duration: metrics::histogram!(WORKQUEUE_QUEUE_DURATION_SECONDS, &l3),
                work_duration: metrics::histogram!(WORKQUEUE_WORK_DURATION_SECONDS, &l4),
                retries: metrics::counter!(WORKQUEUE_RETRIES_TOTAL, &l5),
                unfinished: metrics::gauge!(WORKQUEUE_UNFINISHED_WORK_SECONDS, &l6),
                longest: metrics::gauge!(WORKQUEUE_LONGEST_RUNNING_PROCESSOR_SECONDS, &l7),
            }
        }))
    }

    /// Whether the queue records (and so times its keys).
    pub(super) fn enabled(&self) -> bool {
        self.0.is_some()
    }

    /// `added` keys were queued; `depth` are waiting.
    pub(super) fn queued(&self, added: usize, depth: usize) {
        if let Some(h) = &self.0 {
            h.adds.increment(u64::try_from(added).unwrap_or(u64::MAX));
            h.depth.set(as_f64(depth));
        }
    }

    /// `depth` keys are waiting.
    pub(super) fn depth(&self, depth: usize) {
        if let Some(h) = &self.0 {
            h.depth.set(as_f64(depth));
        }
    }

    /// A key was handed out after waiting `waited`.
    pub(super) fn handed_out(&self, waited: Option<Duration>) {
        if let (Some(h), Some(w)) = (&self.0, waited) {
            h.queue_duration.record(w.as_secs_f64());
        }
    }

    /// A key was done after `worked`.
    pub(super) fn done(&self, worked: Option<Duration>) {
        if let (Some(h), Some(w)) = (&self.0, worked) {
            h.work_duration.record(w.as_secs_f64());
        }
    }

    /// An `add_after` call.
    pub(super) fn retried(&self) {
        if let Some(h) = &self.0 {
            h.retries.increment(1);
        }
    }

    /// The keys being processed: their summed age and the oldest one's.
    pub(super) fn in_flight(&self, unfinished: Duration, longest: Duration) {
        if let Some(h) = &self.0 {
            h.unfinished.set(unfinished.as_secs_f64());
            h.longest.set(longest.as_secs_f64());
        }
    }
}

fn as_f64(n: usize) -> f64 {
    #[expect(
        clippy::cast_precision_loss,
        reason = "a queue length, exact below 2^53"
    )]
    let n = n as f64;
    n
}
