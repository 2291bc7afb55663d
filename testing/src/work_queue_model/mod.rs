//! The work queue against its reference model: random interleavings of adds, delays, rate
//! limiting, gets by several workers, done, forget, time and shutdown, played against
//! [`WorkQueue`](kcache_queue::WorkQueue) and [`WorkQueueModel`] in lockstep under paused tokio
//! time.
//!
//! After every step [`check_work_queue_against_model`] checks that no key is held by two
//! workers at once; that the waiting keys are the model's, in order, with no key twice (so the
//! length is the model's too), and so are the numbers of delayed and processing keys; that a
//! get hands out exactly the key the model says (or waits, or reports shutdown, as the model
//! does); that a getter left waiting is waiting only while nothing is ready and the queue is not
//! shutting down (no lost wake-up: keys added, delays passing, done re-queueing and shutdown all
//! wake it); that a `shut_down_with_drain` returns exactly when nothing is processing (or a
//! `shut_down` released it); and that the rate limiter's counts are the model's, so
//! rate-limited delays follow the limiter. At the end, time runs past every delay, the workers
//! drain the queue, and every key that was added (directly, or by a delay that passed before
//! shutdown) was handed out after its last add.

mod model;
mod runner;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

pub use self::model::WorkQueueModel;

/// How many distinct keys the operations use.
const KEYS: u32 = 5;
/// How many workers get keys.
const WORKERS: usize = 3;

/// One step of a random work-queue scenario. Keys are `0..5`; workers `0..3`, each holding at
/// most one key (or waiting in a get).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkQueueOp {
    /// `add(key)`.
    Add(u32),
    /// `add_after(key, ms milliseconds)`.
    AddAfter(u32, u64),
    /// `add_rate_limited(key)`.
    AddRateLimited(u32),
    /// `forget(key)`.
    Forget(u32),
    /// An idle worker calls `try_get`.
    TryGet(usize),
    /// An idle worker polls a `get` once and drops it if it would wait (a cancelled get).
    PollGet(usize),
    /// An idle worker starts a `get` and keeps waiting in it across steps.
    ParkGet(usize),
    /// A worker holding a key calls `done` (after `forget`, as a reconcile that succeeded).
    Done(usize),
    /// A worker holding a key calls `add_rate_limited` then `done` (a reconcile that failed).
    Fail(usize),
    /// Time moves on by this many milliseconds.
    Advance(u64),
    /// `shut_down`.
    ShutDown,
    /// `shut_down_with_drain`, left waiting across steps until it returns.
    ShutDownWithDrain,
}

/// One random [`WorkQueueOp`]: mostly adds, gets and done, with delays of up to 6 ms (the
/// model's limiter delays 1 to 32 ms) and time steps of up to 12 ms; shutdowns are rare, so
/// that most scenarios run a while before one.
pub fn work_queue_op() -> impl Strategy<Value = WorkQueueOp> {
    let key = 0..KEYS;
    let worker = 0..WORKERS;
    prop_oneof![
        16 => key.clone().prop_map(WorkQueueOp::Add),
        12 => (key.clone(), 0..=6_u64).prop_map(|(k, ms)| WorkQueueOp::AddAfter(k, ms)),
        8 => key.clone().prop_map(WorkQueueOp::AddRateLimited),
        4 => key.prop_map(WorkQueueOp::Forget),
        12 => worker.clone().prop_map(WorkQueueOp::TryGet),
        6 => worker.clone().prop_map(WorkQueueOp::PollGet),
        8 => worker.clone().prop_map(WorkQueueOp::ParkGet),
        16 => worker.clone().prop_map(WorkQueueOp::Done),
        8 => worker.prop_map(WorkQueueOp::Fail),
        12 => (1..=12_u64).prop_map(WorkQueueOp::Advance),
        1 => Just(WorkQueueOp::ShutDown),
        1 => Just(WorkQueueOp::ShutDownWithDrain),
    ]
}

/// A random scenario of up to 64 operations.
pub fn work_queue_ops() -> impl Strategy<Value = Vec<WorkQueueOp>> {
    prop::collection::vec(work_queue_op(), 0..64)
}

/// Plays `ops` against a [`WorkQueue<u32>`](kcache_queue::WorkQueue) built with
/// [`WorkQueueModel::rate_limiter`] and against the model, then drains both.
///
/// After every step it checks that no key is held by two workers at once; that the waiting
/// keys are the model's, in order, with no key twice (so the length is the model's too), and
/// so are the numbers of delayed and processing keys; that a get hands out exactly the key the
/// model says (or waits, or reports shutdown, as the model does); that a getter left waiting
/// waits only while nothing is ready and the queue is not shutting down (no lost wake-up); that
/// a `shut_down_with_drain` returns exactly when nothing is processing (or a `shut_down`
/// released it); and that the rate limiter's counts are the model's. At the end, every key that
/// was added (directly, or by a delay that passed before shutdown) was handed out after its
/// last add.
///
/// Run it on a current-thread tokio runtime with paused time (`start_paused`): time moves only
/// through the scenario's `Advance` steps (it fails otherwise).
///
/// ```
/// use proptest::test_runner::{Config, RngSeed, TestRunner};
/// use kcache_testing::{check_work_queue_against_model, work_queue_ops};
///
/// let mut runner = TestRunner::new(Config {
///     cases: 16,
///     rng_seed: RngSeed::Fixed(7),
///     failure_persistence: None,
///     ..Config::default()
/// });
/// runner.run(&work_queue_ops(), |ops| {
///     let rt = tokio::runtime::Builder::new_current_thread()
///         .enable_time()
///         .start_paused(true)
///         .build()?;
///     rt.block_on(check_work_queue_against_model(&ops))
/// })?;
/// # Ok::<(), proptest::test_runner::TestError<Vec<kcache_testing::WorkQueueOp>>>(())
/// ```
///
/// # Errors
///
/// The first difference between the queue and the model, or broken rule, as a failed case.
pub async fn check_work_queue_against_model(ops: &[WorkQueueOp]) -> Result<(), TestCaseError> {
    runner::run(ops).await
}
