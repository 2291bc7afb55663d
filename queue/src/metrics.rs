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
//! The handles are registered with the recorder in place when the queue is built: install the
//! application's recorder first. With no recorder (or no name) every update is a no-op.

use metrics::{Counter, Gauge};

/// The label every kcache metric carries: here the queue's name.
pub const NAME_LABEL: &str = "name";

/// Gauge: what the queue holds now.
pub const DEPTH: &str = "kcache_queue_depth";
/// Counter: deltas queued.
pub const ADDS_TOTAL: &str = "kcache_queue_adds_total";

/// Every metric name of this module.
pub const ALL: &[&str] = &[DEPTH, ADDS_TOTAL];

/// Describes every queue metric (its help text) to the installed recorder, for exporters that
/// show them. Optional: metrics are recorded without it.
pub fn describe() {
    metrics::describe_gauge!(
        DEPTH,
        "What the queue holds: deltas (RealFifo) or keys (DeltaFifo, Fifo)."
    );
    metrics::describe_counter!(ADDS_TOTAL, "Deltas queued.");
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
        match name {
            Some(name) => Self {
                depth: metrics::gauge!(DEPTH, NAME_LABEL => name.to_owned()),
                adds: metrics::counter!(ADDS_TOTAL, NAME_LABEL => name.to_owned()),
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
