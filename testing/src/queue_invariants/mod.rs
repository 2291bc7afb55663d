//! Proptest invariants for queues: random operation sequences run against a queue and its
//! reference model in lockstep.
//!
//! Each `check_*` function plays [`QueueOp`]s against a small simulated API server: watch
//! events, changes the watch misses, relists, resyncs, bookmarks, pops (with and without
//! requeue, single and batched) and close. A consumer applies every popped delta to a
//! [`Cache`], which is also the queue's known objects when the configuration says so. One
//! runner plays every queue against its [`QueueModel`](crate::QueueModel); what differs
//! between queues is data, their [`Rules`]. After every step it checks that the queue and its
//! model agree: queued keys in order and the newest object of every key (for keyed queues), the
//! length, `has_synced`, `is_closed`, the transformer's call count, each pop's deltas and
//! `is_in_initial_list`, that a `RealFifo` batch holds no key twice and does not straddle the end
//! of the initial list, and what only the real queue shows (a `DeltaFifo`'s deltas per key, a
//! `RealFifo`'s deltas). At the end (a last relist where the rules call for one, close, drain)
//! the queue is empty and, where the consumer sees every deletion, its cache equals the server:
//! every object deleted behind the watcher's back was reported, exactly once.

mod runner;
mod scenario;

use std::fmt;
use std::sync::Arc;

use kcache_queue::{DeltaFifo, DeltaType, Fifo, Queue, RealFifo, TransformFn};
use kcache_store::{Cache, DynamicObject, Store};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestCaseResult};

use self::runner::run_against_model;
pub use self::scenario::{QueueOp, queue_op, queue_ops};
use crate::queue_model::{DeltaFifoModel, FifoModel, ModelDelta, RealFifoModel};

/// What a `check_*_like` function hands to the queue constructor.
pub struct QueueSetup {
    /// The consumer's cache, to be used as the queue's known objects (`None`: no known objects).
    pub known_objects: Option<Arc<Cache<DynamicObject>>>,
    /// A transformer to install; it counts its calls.
    pub transformer: TransformFn<DynamicObject>,
}

impl fmt::Debug for QueueSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueSetup")
            .field("known_objects", &self.known_objects.is_some())
            .finish_non_exhaustive()
    }
}

/// The options of a `DeltaFifo`-like queue under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeltaFifoConfig {
    /// Whether the queue consults known objects (the consumer's cache).
    pub known_objects: bool,
    /// Whether `replace` emits `Replaced` (else `Sync`).
    pub emit_delta_type_replaced: bool,
}

/// The queues the rules tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QueueKind {
    DeltaFifo,
    RealFifo,
    Fifo,
}

/// A check of what only a concrete queue shows, against its model, after every step.
type Inspect<'a, Q, M> = &'a dyn Fn(&Q, &M) -> Result<(), TestCaseError>;

/// What differs from one queue to another under the runner, as data.
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent rules, one switch each"
)]
struct Rules<'a, Q, M> {
    /// Whether the queue consults the consumer's cache as its known objects.
    known_objects: bool,
    /// Whether a popped `Deleted` of an object the consumer does not hold fails the scenario
    /// (the deletion was reported twice).
    strict_deletes: bool,
    /// Whether the scenario ends with a relist of the server's objects, before closing.
    final_relist: bool,
    /// The batch size of the final drain.
    drain_batch: usize,
    /// Whether each delta is an item of its own, so that a pop must follow client-go's
    /// `PopBatch` rules (no key twice, no straddling the end of the initial list), as a
    /// `RealFifo`'s does; a `DeltaFifo` pops one key's deltas as one item.
    delta_items: bool,
    /// Whether a `bookmark` must show in `last_sync_resource_version`.
    bookmark_sets_rv: bool,
    /// Whether the queue must have synced once drained.
    synced_after_drain: bool,
    /// Whether the consumer's cache must equal the server at the end.
    cache_equals_server: bool,
    /// An extra check after every step.
    inspect: Option<Inspect<'a, Q, M>>,
}

impl<Q, M> Rules<'_, Q, M> {
    /// The rules of `queue`, with or without known objects, and no extra check. Only a
    /// `DeltaFifo` reports every deletion exactly once and records bookmarks; a `RealFifo`
    /// batches its pops and replaces the consumer's cache whole, so it always converges to the
    /// server after a final relist; a `DeltaFifo` does only with known objects.
    fn of(queue: QueueKind, known_objects: bool) -> Self {
        let delta_fifo = queue == QueueKind::DeltaFifo;
        let real_fifo = queue == QueueKind::RealFifo;
        let converges = real_fifo || (delta_fifo && known_objects);
        Self {
            known_objects,
            strict_deletes: delta_fifo,
            final_relist: converges,
            drain_batch: if real_fifo { 3 } else { 1 },
            delta_items: real_fifo,
            bookmark_sets_rv: delta_fifo,
            synced_after_drain: real_fifo,
            cache_equals_server: converges,
            inspect: None,
        }
    }
}

/// Runs `ops` against a queue of yours that promises `DeltaFifo`'s semantics, built by
/// `new_queue` (which must install the given known objects and transformer), checking it
/// against [`DeltaFifoModel`] after every step.
pub fn check_delta_fifo_like<Q: Queue<DynamicObject>>(
    ops: &[QueueOp],
    config: DeltaFifoConfig,
    new_queue: impl FnOnce(QueueSetup) -> Q,
) -> Result<(), TestCaseError> {
    let rules = Rules::of(QueueKind::DeltaFifo, config.known_objects);
    let model = DeltaFifoModel::new(config.emit_delta_type_replaced);
    run_against_model(ops, new_queue, model, rules)
}

/// Runs `ops` against `DeltaFifo` in all four configurations (with and without known objects,
/// with and without `Replaced`), checking it against [`DeltaFifoModel`] after every step.
pub fn check_delta_fifo_against_model(ops: &[QueueOp]) -> Result<(), TestCaseError> {
    for known_objects in [false, true] {
        for emit_delta_type_replaced in [false, true] {
            let mut rules = Rules::of(QueueKind::DeltaFifo, known_objects);
            rules.inspect = Some(&inspect_delta_fifo);
            let model = DeltaFifoModel::new(emit_delta_type_replaced);
            let new_queue = |setup: QueueSetup| {
                let mut b = DeltaFifo::builder()
                    .emit_delta_type_replaced(emit_delta_type_replaced)
                    .transformer(setup.transformer);
                if let Some(k) = setup.known_objects {
                    b = b.known_objects(k);
                }
                b.build()
            };
            run_against_model(ops, new_queue, model, rules)?;
        }
    }
    Ok(())
}

/// What only a real `DeltaFifo` shows: every queued key has deltas, all of its key, with no two
/// adjacent deletes, and they are the model's.
fn inspect_delta_fifo(q: &DeltaFifo<DynamicObject>, model: &DeltaFifoModel) -> TestCaseResult {
    for k in q.list_keys() {
        let k = k.as_str();
        let deltas = q.deltas_by_key(k).unwrap_or_default();
        let deltas: Vec<ModelDelta> = deltas.iter().map(ModelDelta::of).collect();
        prop_assert!(!deltas.is_empty(), "{} is queued but has no deltas", k);
        let keyed = deltas.iter().all(|d| d.key == *k);
        prop_assert!(keyed, "every delta of {} has its key", k);
        let deletes = |w: &[ModelDelta]| w.iter().all(|d| d.kind == DeltaType::Deleted);
        let adjacent = deltas.windows(2).any(deletes);
        prop_assert!(!adjacent, "no adjacent deletes for {}: {:?}", k, deltas);
        prop_assert_eq!(Some(&*deltas), model.deltas(k), "deltas of {}", k);
    }
    Ok(())
}

/// Runs `ops` against `RealFifo`, with and without known objects, checking it against
/// [`RealFifoModel`] after every step.
pub fn check_real_fifo_against_model(ops: &[QueueOp]) -> Result<(), TestCaseError> {
    for known_objects in [false, true] {
        let mut rules = Rules::of(QueueKind::RealFifo, known_objects);
        rules.inspect = Some(&inspect_real_fifo);
        let new_queue = |setup: QueueSetup| {
            let mut b = RealFifo::builder().transformer(setup.transformer);
            if let Some(k) = setup.known_objects {
                b = b.known_objects(k);
            }
            b.build()
        };
        run_against_model(ops, new_queue, RealFifoModel::new(), rules)?;
    }
    Ok(())
}

/// Runs `ops` against a queue of yours that promises `RealFifo`'s semantics, built by
/// `new_queue` (which must install the given known objects and transformer), checking it
/// against [`RealFifoModel`] after every step.
pub fn check_real_fifo_like<Q: Queue<DynamicObject>>(
    ops: &[QueueOp],
    known_objects: bool,
    new_queue: impl FnOnce(QueueSetup) -> Q,
) -> Result<(), TestCaseError> {
    let rules = Rules::of(QueueKind::RealFifo, known_objects);
    run_against_model(ops, new_queue, RealFifoModel::new(), rules)
}

/// What only a real `RealFifo` shows: its deltas are the model's, in order.
fn inspect_real_fifo(q: &RealFifo<DynamicObject>, model: &RealFifoModel) -> TestCaseResult {
    let deltas: Vec<ModelDelta> = q.deltas().iter().map(ModelDelta::of).collect();
    prop_assert_eq!(deltas, model.deltas(), "queued deltas, in order");
    Ok(())
}

/// Runs `ops` against `Fifo`, checking it against [`FifoModel`] after every step.
pub fn check_fifo_against_model(ops: &[QueueOp]) -> Result<(), TestCaseError> {
    check_fifo_like(ops, |_| Fifo::new())
}

/// Runs `ops` against a queue of yours that promises `Fifo`'s semantics, checking it against
/// [`FifoModel`] after every step. Known objects and the transformer do not apply to a `Fifo`.
pub fn check_fifo_like<Q: Queue<DynamicObject>>(
    ops: &[QueueOp],
    new_queue: impl FnOnce(QueueSetup) -> Q,
) -> Result<(), TestCaseError> {
    run_against_model(
        ops,
        new_queue,
        FifoModel::new(),
        Rules::of(QueueKind::Fifo, false),
    )
}
