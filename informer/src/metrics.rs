//! Every metric kcache records, in one place: names, kinds, labels and meanings, with the
//! informer's own.
//!
//! kcache records metrics through the [`metrics`] facade, the Rust counterpart of client-go's
//! `MetricsProvider`: the libraries register counters, gauges and histograms and update them;
//! the application installs a recorder (a Prometheus exporter, a statsd client, an in-process
//! collector...) with `metrics::set_global_recorder` or the exporter's own `install`. Without
//! one, every update is a no-op costing a branch.
//!
//! # Naming
//!
//! - Names start with `kcache_`, then the component (`reflector`, `queue`, `informer`; the work
//!   queue and reconcile runner follow with `workqueue` and `reconcile`), then what is measured;
//!   counters end in `_total`, durations are in seconds and end in `_seconds` (Prometheus'
//!   conventions, which most exporters expect).
//! - Every metric carries the label [`NAME_LABEL`] (`name`): the name of the informer,
//!   reflector or queue, by default the resource it serves (`pods`, `deployments.apps`: what
//!   [`ListerWatcher::resource`](kcache_reflector::ListerWatcher::resource) says), the
//!   `resource` of the span `reflector{resource=pods}`. An informer passes its name to its
//!   reflector and its queue, so one informer's metrics share one `name`.
//! - Further labels say which part: [`HANDLER_LABEL`] (a handler's
//!   [`ResourceEventHandler::name`](crate::ResourceEventHandler::name)) and [`EVENT_LABEL`]
//!   (`add`, `update`, `delete`).
//! - Handles are registered with the recorder in place when their owner is made: a reflector
//!   or queue when built, an informer (its reflector and queue too) when it starts to
//!   [run](crate::SharedIndexInformer::run), a handler when it is added. Install the recorder
//!   before (client-go's `SetProvider` also applies only to what is created after it).
//!
//! # The metrics
//!
//! | name | kind | labels | meaning |
//! |---|---|---|---|
//! | `kcache_reflector_lists_total` | counter | `name` | lists started: each paginated list and each streaming-list attempt |
//! | `kcache_reflector_list_errors_total` | counter | `name` | lists (and streaming-list attempts) that failed, a streaming list the server does not serve (answered 400 or 422) included |
//! | `kcache_reflector_list_duration_seconds` | histogram | `name` | each successful list, from its first request to the store's replace |
//! | `kcache_reflector_relists_total` | counter | `name` | rounds of list-and-watch after the store was first filled (after a 410, an unreadable event, a failed watch...) |
//! | `kcache_reflector_watches_total` | counter | `name` | watches started (a streaming list that goes on as the watch included) |
//! | `kcache_reflector_watch_errors_total` | counter | `name` | every list and watch failure reported to the watch-error hook |
//! | `kcache_reflector_events_total` | counter | `name` | watch events received (initial events, bookmarks, undecodable events included) |
//! | `kcache_reflector_decode_errors_total` | counter | `name` | object versions that could not be decoded, left out of the cache (the informer's decode errors) |
//! | `kcache_reflector_last_resource_version` | gauge | `name` | the last synced resource version: its last 15 characters parsed as an integer (client-go's rule) |
//! | `kcache_queue_depth` | gauge | `name` | what a named queue holds: deltas (`RealFifo`) or keys (`DeltaFifo`, `Fifo`) |
//! | `kcache_queue_adds_total` | counter | `name` | deltas a named queue queued (a `RealFifo` relist is one) |
//! | `kcache_informer_cache_objects` | gauge | `name` | objects in the informer's cache, set after each processed batch |
//! | `kcache_informer_events_distributed_total` | counter | `name`, `event` | events the cache's changes raised for the handlers, each counted once however many handlers hear it (a late handler's replay is not counted) |
//! | `kcache_informer_handler_buffer_depth` | gauge | `name`, `handler` | events waiting in a handler's buffer, the one being handled included ([`Registration::buffer_depth`](crate::Registration::buffer_depth)); handlers of one name add up |
//! | `kcache_informer_handler_panics_total` | counter | `name`, `handler` | callbacks that panicked (each event skipped) |
//! | `kcache_workqueue_depth` | gauge | `name` | keys of a named work queue waiting to be handed out |
//! | `kcache_workqueue_adds_total` | counter | `name` | keys queued (an add of a waiting key is not counted) |
//! | `kcache_workqueue_queue_duration_seconds` | histogram | `name` | from a key's queuing to its hand-out |
//! | `kcache_workqueue_work_duration_seconds` | histogram | `name` | from a key's hand-out to its `done` |
//! | `kcache_workqueue_retries_total` | counter | `name` | `add_after` calls, rate-limited requeues included |
//! | `kcache_workqueue_unfinished_work_seconds` | gauge | `name` | summed age of the keys being processed (recomputed every 500 ms by `WorkQueue::in_flight_metrics`, which a runner spawns) |
//! | `kcache_workqueue_longest_running_processor_seconds` | gauge | `name` | age of the oldest key being processed (likewise) |
//! | `kcache_reconcile_total` | counter | `name`, `result` | reconciles of a [`ReconcileRunner`](crate::ReconcileRunner) by outcome: `success`, `requeue`, `requeue_after`, `error`, `terminal`, `panic` |
//! | `kcache_reconcile_duration_seconds` | histogram | `name` | how long each reconcile took |
//! | `kcache_reconcile_active_workers` | gauge | `name` | workers reconciling now |
//!
//! The reflector's and the queues' names are also constants of [`reflector`] and [`queue`]
//! (`kcache_reflector::metrics`, `kcache_queue::metrics`, re-exported here); [`ALL`] lists
//! every name. Event streams ([`subscribe`](crate::SharedIndexInformer::subscribe)) have no
//! handler name and record no handler metrics.
//!
//! A runner's work queue and its reconciles carry the runner's name
//! ([`ReconcileRunnerBuilder::name`](crate::ReconcileRunnerBuilder::name)).
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use kcache_informer::{SharedIndexInformer, metrics};
//! use kcache_store::DynamicObject;
//!
//! // The application installs its recorder first (none here: every update is a no-op), then
//! // may describe the metrics to it.
//! metrics::describe();
//! let api = kcache_testing::FakeListerWatcher::<DynamicObject>::new();
//! let informer = SharedIndexInformer::builder(Arc::new(api)).name("pods").build();
//! assert_eq!(informer.name(), "pods");
//! assert!(metrics::ALL.contains(&metrics::reflector::LISTS_TOTAL));
//! ```

use metrics::{Counter, Gauge};

pub use kcache_queue::metrics as queue;
pub use kcache_reflector::metrics as reflector;

/// The label every kcache metric carries: the informer's (reflector's, queue's) name.
pub const NAME_LABEL: &str = "name";
/// The label naming a handler ([`ResourceEventHandler::name`](crate::ResourceEventHandler::name)).
pub const HANDLER_LABEL: &str = "handler";
/// The label naming an event's kind: `add`, `update` or `delete`.
pub const EVENT_LABEL: &str = "event";

/// Gauge: objects in the informer's cache.
pub const CACHE_OBJECTS: &str = "kcache_informer_cache_objects";
/// Counter (`name`, `event`): events distributed to the handlers.
pub const EVENTS_DISTRIBUTED_TOTAL: &str = "kcache_informer_events_distributed_total";
/// Gauge (`name`, `handler`): events waiting in a handler's buffer.
pub const HANDLER_BUFFER_DEPTH: &str = "kcache_informer_handler_buffer_depth";
/// Counter (`name`, `handler`): callbacks that panicked.
pub const HANDLER_PANICS_TOTAL: &str = "kcache_informer_handler_panics_total";

/// The label of a reconcile's outcome: `success`, `requeue`, `requeue_after`, `error`,
/// `terminal` or `panic`.
pub const RESULT_LABEL: &str = "result";
/// Counter (`name`, `result`): reconciles of a [`ReconcileRunner`](crate::ReconcileRunner), by
/// outcome.
pub const RECONCILE_TOTAL: &str = "kcache_reconcile_total";
/// Histogram (`name`): how long each reconcile took.
pub const RECONCILE_DURATION_SECONDS: &str = "kcache_reconcile_duration_seconds";
/// Gauge (`name`): workers reconciling now.
pub const RECONCILE_ACTIVE_WORKERS: &str = "kcache_reconcile_active_workers";

/// Every metric kcache records (reflector, queues, informer, reconcile runner), in the order of
/// the table.
pub const ALL: &[&str] = &[
    reflector::LISTS_TOTAL,
    reflector::LIST_ERRORS_TOTAL,
    reflector::LIST_DURATION_SECONDS,
    reflector::RELISTS_TOTAL,
    reflector::WATCHES_TOTAL,
    reflector::WATCH_ERRORS_TOTAL,
    reflector::EVENTS_TOTAL,
    reflector::DECODE_ERRORS_TOTAL,
    reflector::LAST_RESOURCE_VERSION,
    queue::DEPTH,
    queue::ADDS_TOTAL,
    CACHE_OBJECTS,
    EVENTS_DISTRIBUTED_TOTAL,
    HANDLER_BUFFER_DEPTH,
    HANDLER_PANICS_TOTAL,
    queue::WORKQUEUE_DEPTH,
    queue::WORKQUEUE_ADDS_TOTAL,
    queue::WORKQUEUE_QUEUE_DURATION_SECONDS,
    queue::WORKQUEUE_WORK_DURATION_SECONDS,
    queue::WORKQUEUE_RETRIES_TOTAL,
    queue::WORKQUEUE_UNFINISHED_WORK_SECONDS,
    queue::WORKQUEUE_LONGEST_RUNNING_PROCESSOR_SECONDS,
    RECONCILE_TOTAL,
    RECONCILE_DURATION_SECONDS,
    RECONCILE_ACTIVE_WORKERS,
];

/// Describes every kcache metric (help text, unit) to the installed recorder, for exporters
/// that show them. Optional: metrics are recorded without it.
pub fn describe() {
    reflector::describe();
    queue::describe();
    metrics::describe_gauge!(CACHE_OBJECTS, "Objects in the informer's cache.");
    metrics::describe_counter!(
        EVENTS_DISTRIBUTED_TOTAL,
        "Events the cache's changes raised for the handlers, each counted once."
    );
    metrics::describe_gauge!(
        HANDLER_BUFFER_DEPTH,
        "Events waiting in a handler's buffer, the one being handled included."
    );
    metrics::describe_counter!(
        HANDLER_PANICS_TOTAL,
        "Handler callbacks that panicked (each event skipped)."
    );
    metrics::describe_counter!(RECONCILE_TOTAL, "Reconciles, by outcome.");
    metrics::describe_histogram!(
        RECONCILE_DURATION_SECONDS,
        metrics::Unit::Seconds,
        "How long each reconcile took."
    );
    metrics::describe_gauge!(RECONCILE_ACTIVE_WORKERS, "Workers reconciling now.");
}

/// The handles of a reconcile runner's metrics, registered when it runs.
#[derive(Debug)]
pub(crate) struct ReconcileMetrics {
    outcomes: [Counter; 6],
    duration: metrics::Histogram,
    active: Gauge,
}

/// How a reconcile ended: the values of [`RESULT_LABEL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Success,
    Requeue,
    RequeueAfter,
    Error,
    Terminal,
    Panic,
}

impl Outcome {
    /// Every outcome, in declaration order (so `outcome as usize` indexes it).
    const ALL: [Self; 6] = [
        Self::Success,
        Self::Requeue,
        Self::RequeueAfter,
        Self::Error,
        Self::Terminal,
        Self::Panic,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Requeue => "requeue",
            Self::RequeueAfter => "requeue_after",
            Self::Error => "error",
            Self::Terminal => "terminal",
            Self::Panic => "panic",
        }
    }
}

impl ReconcileMetrics {
    /// Registers the metrics of runner `name` with the recorder in place.
    pub(crate) fn new(name: &str) -> Self {
        Self {
            outcomes: Outcome::ALL.map(|outcome| {
                metrics::counter!(
                    RECONCILE_TOTAL,
                    NAME_LABEL => name.to_owned(),
                    RESULT_LABEL => outcome.as_str()
                )
            }),
            duration: metrics::histogram!(RECONCILE_DURATION_SECONDS, NAME_LABEL => name.to_owned()),
            active: metrics::gauge!(RECONCILE_ACTIVE_WORKERS, NAME_LABEL => name.to_owned()),
        }
    }

    /// A worker started a reconcile.
    pub(crate) fn started(&self) {
        self.active.increment(1.0);
    }

    /// A reconcile ended with `outcome` after `took`.
    pub(crate) fn ended(&self, outcome: Outcome, took: std::time::Duration) {
        self.active.decrement(1.0);
        self.duration.record(took.as_secs_f64());
        self.outcomes[outcome as usize].increment(1);
    }
}

/// The handles of an informer's own metrics, registered when it starts.
#[derive(Debug)]
pub(crate) struct InformerMetrics {
    cache_objects: Gauge,
    added: Counter,
    updated: Counter,
    deleted: Counter,
}

/// Events of each kind raised by one processed batch.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct EventCounts {
    pub(crate) added: u64,
    pub(crate) updated: u64,
    pub(crate) deleted: u64,
}

impl InformerMetrics {
    /// Registers the metrics of the informer `name` with the recorder in place.
    pub(crate) fn new(name: &str) -> Self {
        let events = |kind: &'static str| {
            metrics::counter!(
                EVENTS_DISTRIBUTED_TOTAL,
                NAME_LABEL => name.to_owned(),
                EVENT_LABEL => kind
            )
        };
        Self {
            cache_objects: metrics::gauge!(CACHE_OBJECTS, NAME_LABEL => name.to_owned()),
            added: events("add"),
            updated: events("update"),
            deleted: events("delete"),
        }
    }

    /// A batch was processed: it raised `events`, and the cache now holds `objects`.
    pub(crate) fn processed(&self, events: EventCounts, objects: usize) {
        for (counter, n) in [
            (&self.added, events.added),
            (&self.updated, events.updated),
            (&self.deleted, events.deleted),
        ] {
            if n > 0 {
                counter.increment(n);
            }
        }
        #[expect(
            clippy::cast_precision_loss,
            reason = "an object count, exact below 2^53"
        )]
        let objects = objects as f64;
        self.cache_objects.set(objects);
    }
}

/// The handles of one handler's metrics, registered when it is added; no-ops for a stream.
#[derive(Debug, Clone)]
pub(crate) struct HandlerMetrics {
    pub(crate) buffer_depth: Gauge,
    pub(crate) panics: Counter,
}

impl HandlerMetrics {
    /// Registers the metrics of handler `handler` of informer `informer` with the recorder in
    /// place.
    pub(crate) fn new(informer: &str, handler: &str) -> Self {
        Self {
            buffer_depth: metrics::gauge!(
                HANDLER_BUFFER_DEPTH,
                NAME_LABEL => informer.to_owned(),
                HANDLER_LABEL => handler.to_owned()
            ),
            panics: metrics::counter!(
                HANDLER_PANICS_TOTAL,
                NAME_LABEL => informer.to_owned(),
                HANDLER_LABEL => handler.to_owned()
            ),
        }
    }

    /// Handles that record nothing (a stream's).
    pub(crate) fn noop() -> Self {
        Self {
            buffer_depth: Gauge::noop(),
            panics: Counter::noop(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_kcache_prefixed_and_distinct() {
        let mut names = ALL.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert!(ALL.iter().all(|n| n.starts_with("kcache_")));
        assert_eq!(reflector::NAME_LABEL, NAME_LABEL);
        assert_eq!(queue::NAME_LABEL, NAME_LABEL);
    }
}
