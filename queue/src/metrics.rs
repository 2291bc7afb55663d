//! The queues' metrics, recorded through the [`metrics`] facade.
//!
//! A queue records metrics only when it has a name (`RealFifo::builder().name("pods")`,
//! `DeltaFifoBuilder::name`, `FifoBuilder::name`), as client-go's queues do ("metrics exist only
//! if Name != \"\""); the name is the [`NAME_LABEL`] (`name`) label of each. An informer names
//! its queue after itself (its resource, e.g. `pods`).
//!
//! | name | kind | meaning |
//! |---|---|---|
//! | [`DEPTH`] | gauge | what the queue holds now ([`len`](kcache_store::Store::len)): deltas for a `RealFifo`, keys for a `DeltaFifo` or a `Fifo` |
//! | [`ADDS_TOTAL`] | counter | deltas queued: each write, tombstone, resync and bookmark; a `RealFifo` relist is one delta (`ReplacedAll`), a `DeltaFifo` relist one per listed object and per tombstone, a `Fifo` relist one per object. A requeued delta is not counted again |
//!
//! A named [`WorkQueue`](crate::WorkQueue) (`WorkQueue::builder().name(..)`) records client-go's
//! work-queue metrics:
//!
//! | name | kind | meaning |
//! |---|---|---|
//! | [`WORKQUEUE_DEPTH`] | gauge | keys waiting to be handed out ([`len`](crate::WorkQueue::len)) |
//! | [`WORKQUEUE_ADDS_TOTAL`] | counter | keys queued; an add of a key already waiting is not counted |
//! | [`WORKQUEUE_QUEUE_DURATION_SECONDS`] | histogram | from a key's queuing to its hand-out |
//! | [`WORKQUEUE_WORK_DURATION_SECONDS`] | histogram | from a key's hand-out to its `done` |
//! | [`WORKQUEUE_RETRIES_TOTAL`] | counter | `add_after` calls, rate-limited requeues included |
//! | [`WORKQUEUE_UNFINISHED_WORK_SECONDS`] | gauge | the summed age of the keys being processed |
//! | [`WORKQUEUE_LONGEST_RUNNING_PROCESSOR_SECONDS`] | gauge | the age of the oldest key being processed |
//!
//! The last two are recomputed every 500 ms (client-go's period) by the future
//! [`WorkQueue::in_flight_metrics`](crate::WorkQueue::in_flight_metrics) returns, which the
//! application spawns (a `ReconcileRunner` does for its queue), so they keep rising while every
//! worker is stuck; they freeze once the queue shuts down, as client-go's. Until it runs the
//! queue's operations (`get`, `done`) recompute them.
//!
//! The handles are registered with the recorder in place when the queue is built: install the
//! application's recorder first. With no recorder (or no name) every update is a no-op.

use metrics::{Counter, Gauge};

/// The label every kcache metric carries: here the queue's name.
pub const NAME_LABEL: &str = "name";

/// Gauge: what the queue holds now.
pub const DEPTH: &str = "kcache_queue_depth";
/// Counter: deltas queued.
pub const ADDS_TOTAL: &str = "kcache_queue_adds_total";

/// Gauge: keys of a named [`WorkQueue`](crate::WorkQueue) waiting to be handed out.
pub const WORKQUEUE_DEPTH: &str = "kcache_workqueue_depth";
/// Counter: keys a named work queue queued (an add of a key already waiting is not counted).
pub const WORKQUEUE_ADDS_TOTAL: &str = "kcache_workqueue_adds_total";
/// Histogram: how long a key waited, from being queued to being handed out.
pub const WORKQUEUE_QUEUE_DURATION_SECONDS: &str = "kcache_workqueue_queue_duration_seconds";
/// Histogram: how long a key was processed, from being handed out to `done`.
pub const WORKQUEUE_WORK_DURATION_SECONDS: &str = "kcache_workqueue_work_duration_seconds";
/// Counter: `add_after` calls (rate-limited requeues included).
pub const WORKQUEUE_RETRIES_TOTAL: &str = "kcache_workqueue_retries_total";
/// Gauge: the summed age of the keys being processed.
pub const WORKQUEUE_UNFINISHED_WORK_SECONDS: &str = "kcache_workqueue_unfinished_work_seconds";
/// Gauge: the age of the key processed the longest.
pub const WORKQUEUE_LONGEST_RUNNING_PROCESSOR_SECONDS: &str =
    "kcache_workqueue_longest_running_processor_seconds";

/// Every metric name of this module.
pub const ALL: &[&str] = &[
    DEPTH,
    ADDS_TOTAL,
    WORKQUEUE_DEPTH,
    WORKQUEUE_ADDS_TOTAL,
    WORKQUEUE_QUEUE_DURATION_SECONDS,
    WORKQUEUE_WORK_DURATION_SECONDS,
    WORKQUEUE_RETRIES_TOTAL,
    WORKQUEUE_UNFINISHED_WORK_SECONDS,
    WORKQUEUE_LONGEST_RUNNING_PROCESSOR_SECONDS,
];

/// Describes every queue metric (its help text) to the installed recorder, for exporters that
/// show them. Optional: metrics are recorded without it.
pub fn describe() {
    metrics::describe_gauge!(
        DEPTH,
        "What the queue holds: deltas (RealFifo) or keys (DeltaFifo, Fifo)."
    );
    metrics::describe_counter!(ADDS_TOTAL, "Deltas queued.");
    metrics::describe_gauge!(WORKQUEUE_DEPTH, "Keys waiting to be handed out.");
    metrics::describe_counter!(
        WORKQUEUE_ADDS_TOTAL,
        "Keys queued (not counting adds of waiting keys)."
    );
    metrics::describe_histogram!(
        WORKQUEUE_QUEUE_DURATION_SECONDS,
        metrics::Unit::Seconds,
        "How long a key waited before being handed out."
    );
    metrics::describe_histogram!(
        WORKQUEUE_WORK_DURATION_SECONDS,
        metrics::Unit::Seconds,
        "How long a key was processed."
    );
    metrics::describe_counter!(WORKQUEUE_RETRIES_TOTAL, "add_after calls (requeues).");
    metrics::describe_gauge!(
        WORKQUEUE_UNFINISHED_WORK_SECONDS,
        "Summed age of the keys being processed."
    );
    metrics::describe_gauge!(
        WORKQUEUE_LONGEST_RUNNING_PROCESSOR_SECONDS,
        "Age of the key processed the longest."
    );
}

/// The handles of one queue's metrics: no-ops for a queue without a name.
#[derive(Debug, Clone)]
pub(crate) struct QueueMetrics {
    depth: Gauge,
    adds: Counter,
}

impl QueueMetrics {
    /// Registers the metrics of the queue `name` with the recorder in place; no-ops without a
    /// name.
    pub(crate) fn new(name: Option<&str>) -> Self {
        Self::with_names(name, DEPTH, ADDS_TOTAL)
    }

    /// [`new`](Self::new), under other metric names (the work queue's).
    pub(crate) fn with_names(name: Option<&str>, depth: &'static str, adds: &'static str) -> Self {
        match name {
            Some(name) => Self {
                depth: metrics::gauge!(depth, NAME_LABEL => name.to_owned()),
                adds: metrics::counter!(adds, NAME_LABEL => name.to_owned()),
            },
            None => Self {
                depth: Gauge::noop(),
                adds: Counter::noop(),
            },
        }
    }

    /// `added` deltas were queued; the queue now holds `depth`.
    pub(crate) fn queued(&self, added: usize, depth: usize) {
        self.adds
            .increment(u64::try_from(added).unwrap_or(u64::MAX));
        self.depth(depth);
    }

    /// The queue now holds `depth`.
    pub(crate) fn depth(&self, depth: usize) {
        #[expect(
            clippy::cast_precision_loss,
            reason = "a queue length, exact below 2^53"
        )]
        let depth = depth as f64;
        self.depth.set(depth);
    }
}
