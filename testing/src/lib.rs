//! Fakes, workloads, reference models and proptest invariants for kcache, and for your own
//! controllers: the light test support, with no HTTP stack, that every crate's tests can use.
//!
//! - [`FakeListerWatcher`]: an in-memory, scriptable `ListerWatcher` (push events, fail a list,
//!   410 at watch start or mid-stream, drop or stall a watch) that records every request, for
//!   testing reflectors and informers without HTTP.
//! - [`workload`]: realistic pods (about 5 KB of JSON with managedFields), seeded; [`generated`]:
//!   the UIDs, name suffixes and timestamps they (and the fake API server) carry.
//! - Queue reference models and invariants: each model implements [`QueueModel`]; with the
//!   `invariants` feature (on by default), `check_delta_fifo_against_model` and friends run a
//!   random operation sequence (proptest) against a queue and its model; the `*_like` variants
//!   take your own `Queue` implementation.
//! - With `invariants`, the work queue's reference model, `WorkQueueModel`, and
//!   `check_work_queue_against_model`: random interleavings of adds, delays, rate limiting,
//!   gets by several workers, done, forget, time and shutdown, checked step by step under
//!   paused tokio time.
//! - [`wait_until`] and [`poll_until`]: poll a condition with a deadline; [`LogCapture`]: what a
//!   test logged; [`ReconcileLedger`]: who reconciled which key across replicas, and whether a
//!   key ever ran on two at once.
//!
//! The fake API server, the fake proxies and the scripted server (hyper, rustls) are in
//! `kcache-testing-server` (`testing/server/`), so tests that need no HTTP never build it.
//!
//! kcache's own crates use these from their tests; they are public so users can too.

mod fake_lease;
mod fake_lister_watcher;
mod log_capture;
#[cfg(feature = "invariants")]
mod queue_invariants;
mod queue_model;
mod reconcile_ledger;
#[cfg(feature = "invariants")]
mod work_queue_model;

pub mod generated;
pub mod workload;

pub use self::fake_lease::FakeLease;
pub use self::fake_lister_watcher::{
    FakeHandle, FakeListerWatcher, FakeObject, FakeRequest, Undecodable, WatchListSupport,
    poll_until, wait_until,
};
pub use self::log_capture::LogCapture;
#[cfg(feature = "invariants")]
pub use self::queue_invariants::{
    DeltaFifoConfig, QueueOp, QueueSetup, check_delta_fifo_against_model, check_delta_fifo_like,
    check_fifo_against_model, check_fifo_like, check_real_fifo_against_model, check_real_fifo_like,
    queue_op, queue_ops,
};
pub use self::queue_model::{
    DeltaFifoModel, FifoModel, KnownSnapshot, ModelDelta, ModelObject, ModelPop, QueueModel,
    RealFifoModel, known_snapshot,
};
pub use self::reconcile_ledger::ReconcileLedger;
#[cfg(feature = "invariants")]
pub use self::work_queue_model::{
    WorkQueueModel, WorkQueueOp, check_work_queue_against_model, work_queue_op, work_queue_ops,
};
