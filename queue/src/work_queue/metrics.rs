//! The handles of one named work queue's metrics (see [`crate::metrics`]).

use std::time::Duration;

use metrics::{Counter, Gauge, Histogram};

use crate::metrics::{
    NAME_LABEL, QueueMetrics, WORKQUEUE_ADDS_TOTAL, WORKQUEUE_DEPTH,
    WORKQUEUE_LONGEST_RUNNING_PROCESSOR_SECONDS, WORKQUEUE_QUEUE_DURATION_SECONDS,
    WORKQUEUE_RETRIES_TOTAL, WORKQUEUE_UNFINISHED_WORK_SECONDS, WORKQUEUE_WORK_DURATION_SECONDS,
};

/// How often the in-flight gauges are recomputed (client-go's period).
pub(super) const IN_FLIGHT_PERIOD: Duration = Duration::from_millis(500);

/// The metrics of a work queue. A queue without a name records nothing and reads no clock.
#[derive(Debug)]
pub(super) struct WorkQueueMetrics {
    /// Depth and adds, kept as the other queues keep theirs (no-ops without a name).
    queue: QueueMetrics,
    /// The work queue's own; `None` without a name.
    own: Option<Handles>,
}

#[derive(Debug)]
struct Handles {
    queue_duration: Histogram,
    work_duration: Histogram,
    retries: Counter,
    unfinished: Gauge,
    longest: Gauge,
}

impl WorkQueueMetrics {
    /// Registers the metrics of the queue `name` with the recorder in place.
    pub(super) fn new(name: Option<&str>) -> Self {
        Self {
            queue: QueueMetrics::with_names(name, WORKQUEUE_DEPTH, WORKQUEUE_ADDS_TOTAL),
            own: name.map(|name| Handles {
                queue_duration: metrics::histogram!(
                    WORKQUEUE_QUEUE_DURATION_SECONDS,
                    NAME_LABEL => name.to_owned()
                ),
                work_duration: metrics::histogram!(
                    WORKQUEUE_WORK_DURATION_SECONDS,
                    NAME_LABEL => name.to_owned()
                ),
                retries: metrics::counter!(WORKQUEUE_RETRIES_TOTAL, NAME_LABEL => name.to_owned()),
                unfinished: metrics::gauge!(
                    WORKQUEUE_UNFINISHED_WORK_SECONDS,
                    NAME_LABEL => name.to_owned()
                ),
                longest: metrics::gauge!(
                    WORKQUEUE_LONGEST_RUNNING_PROCESSOR_SECONDS,
                    NAME_LABEL => name.to_owned()
                ),
            }),
        }
    }

    /// Whether the queue records (and so times its keys).
    pub(super) fn enabled(&self) -> bool {
        self.own.is_some()
    }

    /// `added` keys were queued; `depth` are waiting.
    pub(super) fn queued(&self, added: usize, depth: usize) {
        self.queue.queued(added, depth);
    }

    /// `depth` keys are waiting.
    pub(super) fn depth(&self, depth: usize) {
        self.queue.depth(depth);
    }

    /// A key was handed out after waiting `waited`.
    pub(super) fn handed_out(&self, waited: Option<Duration>) {
        if let (Some(h), Some(w)) = (&self.own, waited) {
            h.queue_duration.record(w.as_secs_f64());
        }
    }

    /// A key was done after `worked`.
    pub(super) fn done(&self, worked: Option<Duration>) {
        if let (Some(h), Some(w)) = (&self.own, worked) {
            h.work_duration.record(w.as_secs_f64());
        }
    }

    /// An `add_after` call.
    pub(super) fn retried(&self) {
        if let Some(h) = &self.own {
            h.retries.increment(1);
        }
    }

    /// The keys being processed: their summed age and the oldest one's.
    pub(super) fn in_flight(&self, unfinished: Duration, longest: Duration) {
        if let Some(h) = &self.own {
            h.unfinished.set(unfinished.as_secs_f64());
            h.longest.set(longest.as_secs_f64());
        }
    }
}
