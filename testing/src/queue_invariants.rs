//! Proptest invariants for queues: random operation sequences run against a queue and its
//! reference model in lockstep.
//!
//! Each `check_*` function plays [`QueueOp`]s against a small simulated API server: watch
//! events (`Add`, `Update`, `Delete`), changes the watch misses (`UpdateUnseen`,
//! `DeleteUnseen`), relists of the server's state, resyncs, bookmarks, pops (with and without
//! requeue, single and batched) and close. A consumer applies every popped delta to a
//! [`Cache`], which is also the queue's known objects when the configuration says so. After
//! every step it checks:
//!
//! - the queue and its model agree: queued keys in order, the newest object of every key, the
//!   length, `has_synced`, `is_closed`, the transformer's call count, and each pop's deltas and
//!   `is_in_initial_list`;
//! - for `DeltaFifo` (whose deltas per key can be inspected): no key is both queued and missing
//!   from the index of deltas, no delta list is empty, every delta has its key, and no two
//!   adjacent deltas are deletes;
//! - a popped `Deleted` always removes an object the consumer holds: no deletion is reported
//!   twice;
//! - at the end (a last relist, close, drain), with known objects, the consumer's cache equals
//!   the server: every object deleted behind the watcher's back was reported (exactly once, by
//!   the previous point).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::FutureExt;
use kcache_queue::{
    Delta, DeltaFifo, DeltaType, Deltas, Fifo, PopError, ProcessError, Queue, RealFifo,
    TransformFunc,
};
use kcache_store::{Cache, DynamicObject, Object, Store, deletion_handling_key};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::queue_model::{
    DeltaFifoModel, FifoModel, KnownSnapshot, ModelDelta, ModelObject, ModelPop, RealFifoModel,
    known_snapshot,
};

/// How many distinct object names the operations use.
const NAMES: usize = 6;

/// How many pops the final drain may take before the check gives up.
const DRAIN_LIMIT: usize = 10_000;

/// One step of a random queue scenario. Object `n` is `ns/o{n}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueOp {
    /// The server creates (or re-creates) object `n`; the watch delivers it: `add`.
    Add(usize),
    /// The server changes object `n`; the watch delivers it: `update`.
    Update(usize),
    /// The server deletes object `n`; the watch delivers it: `delete` (of an object never
    /// created, a spurious delete).
    Delete(usize),
    /// The server changes object `n`; the watch misses it.
    UpdateUnseen(usize),
    /// The server deletes object `n`; the watch misses it.
    DeleteUnseen(usize),
    /// A relist: `replace` with the server's objects.
    Relist,
    /// `resync`.
    Resync,
    /// `bookmark` with a new resource version.
    Bookmark,
    /// A pop (`batch` > 1: `pop_batch`); the process function asks for a requeue if `requeue`.
    Pop {
        /// Whether the process function asks for the item to be requeued.
        requeue: bool,
        /// The batch size; 1 is a plain `pop`.
        batch: usize,
    },
    /// `close`.
    Close,
}

/// One random [`QueueOp`], pops and writes weighted to keep queues short but busy.
pub fn queue_op() -> impl Strategy<Value = QueueOp> {
    let name = 0..NAMES;
    prop_oneof![
        4 => name.clone().prop_map(QueueOp::Add),
        3 => name.clone().prop_map(QueueOp::Update),
        2 => name.clone().prop_map(QueueOp::Delete),
        1 => name.clone().prop_map(QueueOp::UpdateUnseen),
        2 => name.prop_map(QueueOp::DeleteUnseen),
        2 => Just(QueueOp::Relist),
        1 => Just(QueueOp::Resync),
        1 => Just(QueueOp::Bookmark),
        5 => (any::<bool>(), prop_oneof![3 => Just(1_usize), 1 => 2..5_usize])
            .prop_map(|(requeue, batch)| QueueOp::Pop { requeue: requeue && batch == 1, batch }),
        1 => Just(QueueOp::Close),
    ]
}

/// A random scenario of up to 48 operations.
pub fn queue_ops() -> impl Strategy<Value = Vec<QueueOp>> {
    prop::collection::vec(queue_op(), 0..48)
}

/// What a `check_*_like` function hands to the queue constructor.
pub struct QueueSetup {
    /// The consumer's cache, to be used as the queue's known objects (`None`: no known objects).
    pub known_objects: Option<Arc<Cache<DynamicObject>>>,
    /// A transformer to install; it counts its calls.
    pub transformer: TransformFunc<DynamicObject>,
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

/// The simulated API server.
#[derive(Default)]
struct World {
    server: BTreeMap<String, Arc<DynamicObject>>,
    rv: u64,
}

impl World {
    fn bump(&mut self) -> String {
        self.rv += 1;
        self.rv.to_string()
    }

    /// A new version of object `n`, stored on the server.
    fn write(&mut self, n: usize) -> Arc<DynamicObject> {
        let rv = self.bump();
        let mut o = DynamicObject::new(Some("ns"), &format!("o{n}"));
        o.metadata.resource_version = Some(rv);
        let o = Arc::new(o);
        self.server.insert(key(n), Arc::clone(&o));
        o
    }

    /// Removes object `n` from the server; its last state, or a fresh object if it never was.
    fn remove(&mut self, n: usize) -> Arc<DynamicObject> {
        if let Some(o) = self.server.remove(&key(n)) {
            return o;
        }
        let rv = self.bump();
        let mut o = DynamicObject::new(Some("ns"), &format!("o{n}"));
        o.metadata.resource_version = Some(rv);
        Arc::new(o)
    }

    fn list(&self) -> Vec<Arc<DynamicObject>> {
        self.server.values().cloned().collect()
    }

    fn model_list(&self) -> Vec<ModelObject> {
        self.server
            .iter()
            .map(|(k, o)| (k.clone(), rv(o)))
            .collect()
    }
}

fn key(n: usize) -> String {
    format!("ns/o{n}")
}

fn rv(o: &DynamicObject) -> Option<String> {
    o.resource_version().map(str::to_owned)
}

fn counting_transformer() -> (TransformFunc<DynamicObject>, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&count);
    let f: TransformFunc<DynamicObject> = Arc::new(move |o| {
        counter.fetch_add(1, Ordering::Relaxed);
        o
    });
    (f, count)
}

/// Applies popped deltas to the consumer's cache. With `strict_deletes`, a `Deleted` for an
/// object the cache does not hold is a violation: the deletion was already reported.
fn apply(
    cache: &Cache<DynamicObject>,
    deltas: &Deltas<DynamicObject>,
    strict_deletes: bool,
) -> Result<(), String> {
    for delta in deltas {
        match delta {
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => {
                cache.add(Arc::clone(o)).map_err(|e| e.to_string())?;
            }
            Delta::Deleted(d) => {
                let k = deletion_handling_key(d).map_err(|e| e.to_string())?;
                match cache.get_by_key(k.as_str()) {
                    Some(held) => cache.delete(held).map_err(|e| e.to_string())?,
                    None if strict_deletes => {
                        return Err(format!(
                            "deletion of {k} reported but the consumer does not hold it \
                             (reported twice, or never added)"
                        ));
                    }
                    None => {}
                }
            }
            Delta::ReplacedAll {
                objects,
                resource_version,
            } => cache
                .replace(objects.clone(), resource_version)
                .map_err(|e| e.to_string())?,
            Delta::SyncAll { .. } | Delta::Bookmark { .. } => {}
        }
    }
    Ok(())
}

/// The outcome of one non-blocking pop.
struct Popped {
    /// `None`: the pop would have waited.
    result: Option<Result<(), PopError>>,
    got: Option<ModelPop>,
}

fn pop_once<Q: Queue<DynamicObject> + ?Sized>(
    q: &Q,
    batch: usize,
    requeue: bool,
    cache: &Cache<DynamicObject>,
    strict_deletes: bool,
) -> Result<Popped, TestCaseError> {
    let mut got = None;
    let mut violation = None;
    let result = {
        let mut process = |deltas: Deltas<DynamicObject>| {
            got = Some((
                deltas.iter().map(ModelDelta::of).collect(),
                deltas.is_in_initial_list(),
            ));
            if requeue {
                return Err(ProcessError::requeue(deltas));
            }
            if let Err(e) = apply(cache, &deltas, strict_deletes) {
                violation = Some(e);
            }
            Ok(())
        };
        if batch > 1 {
            q.pop_batch(batch, &mut process).now_or_never()
        } else {
            q.pop(&mut process).now_or_never()
        }
    };
    if let Some(v) = violation {
        return Err(TestCaseError::fail(v));
    }
    Ok(Popped { result, got })
}

fn expect_pop(
    popped: Popped,
    expected: Option<ModelPop>,
    closed: bool,
) -> Result<(), TestCaseError> {
    if let Some(exp) = expected {
        prop_assert!(
            matches!(popped.result, Some(Ok(()))),
            "pop should succeed, got {:?}",
            popped.result
        );
        prop_assert_eq!(popped.got, Some(exp));
    } else {
        if closed {
            prop_assert!(
                matches!(popped.result, Some(Err(PopError::Closed))),
                "pop on a closed empty queue returns Closed, got {:?}",
                popped.result
            );
        } else {
            prop_assert!(
                popped.result.is_none(),
                "pop on an empty queue waits, got {:?}",
                popped.result
            );
        }
        prop_assert_eq!(popped.got, None);
    }
    Ok(())
}

fn cache_matches_server(cache: &Cache<DynamicObject>, world: &World) -> Result<(), TestCaseError> {
    let mut held: Vec<ModelObject> = cache
        .list()
        .iter()
        .map(|o| {
            (
                kcache_store::meta_namespace_key(&**o)
                    .map(|k| k.to_string())
                    .unwrap_or_default(),
                rv(o),
            )
        })
        .collect();
    held.sort();
    prop_assert_eq!(
        held,
        world.model_list(),
        "the consumer's cache converges to the server"
    );
    Ok(())
}

/// Inspects the deltas a queue holds for a key, when it can.
type Inspect<'a, Q> = Option<&'a dyn Fn(&Q, &str) -> Option<Vec<ModelDelta>>>;

/// Lists the deltas a queue holds, when it can.
type InspectAll<'a, Q> = Option<&'a dyn Fn(&Q) -> Vec<ModelDelta>>;

/// Runs `ops` against `DeltaFifo` in all four configurations (with and without known objects,
/// with and without `Replaced`), checking it against [`DeltaFifoModel`] after every step.
pub fn check_delta_fifo_against_model(ops: &[QueueOp]) -> Result<(), TestCaseError> {
    let inspect = |q: &DeltaFifo<DynamicObject>, k: &str| {
        q.deltas_by_key(k)
            .map(|d| d.iter().map(ModelDelta::of).collect())
    };
    for known_objects in [false, true] {
        for emit_delta_type_replaced in [false, true] {
            let config = DeltaFifoConfig {
                known_objects,
                emit_delta_type_replaced,
            };
            let q_for = |setup: QueueSetup| {
                let mut b = DeltaFifo::builder()
                    .emit_delta_type_replaced(emit_delta_type_replaced)
                    .transformer(setup.transformer);
                if let Some(k) = setup.known_objects {
                    b = b.known_objects(k);
                }
                b.build()
            };
            check_delta_fifo_inner(ops, config, q_for, Some(&inspect))?;
        }
    }
    Ok(())
}

/// Runs `ops` against a queue of yours that promises `DeltaFifo`'s semantics, built by
/// `new_queue` (which must install the given known objects and transformer), checking it
/// against [`DeltaFifoModel`] after every step.
pub fn check_delta_fifo_like<Q: Queue<DynamicObject>>(
    ops: &[QueueOp],
    config: DeltaFifoConfig,
    new_queue: impl FnOnce(QueueSetup) -> Q,
) -> Result<(), TestCaseError> {
    check_delta_fifo_inner(ops, config, new_queue, None)
}

fn check_delta_fifo_inner<Q: Queue<DynamicObject>>(
    ops: &[QueueOp],
    config: DeltaFifoConfig,
    new_queue: impl FnOnce(QueueSetup) -> Q,
    inspect: Inspect<'_, Q>,
) -> Result<(), TestCaseError> {
    let cache = Arc::new(Cache::<DynamicObject>::new());
    let (transformer, count) = counting_transformer();
    let q = new_queue(QueueSetup {
        known_objects: config.known_objects.then(|| Arc::clone(&cache)),
        transformer,
    });
    let mut model = DeltaFifoModel::new(config.emit_delta_type_replaced);
    let mut world = World::default();
    let known = |cache: &Cache<DynamicObject>| -> Option<KnownSnapshot> {
        config.known_objects.then(|| known_snapshot(cache))
    };
    let check = |q: &Q, model: &DeltaFifoModel| {
        check_delta_fifo_state(q, model, inspect, count.load(Ordering::Relaxed))
    };
    for op in ops {
        match *op {
            QueueOp::Add(n) | QueueOp::Update(n) => {
                let added = matches!(op, QueueOp::Add(_));
                let o = world.write(n);
                let r = rv(&o).unwrap_or_default();
                if added {
                    q.add(o)?;
                } else {
                    q.update(o)?;
                }
                model.add(&key(n), &r, added);
            }
            QueueOp::Delete(n) => {
                let o = world.remove(n);
                let r = rv(&o).unwrap_or_default();
                let snapshot = known(&cache);
                q.delete(o)?;
                model.delete(&key(n), &r, snapshot.as_ref());
            }
            QueueOp::UpdateUnseen(n) => {
                world.write(n);
            }
            QueueOp::DeleteUnseen(n) => {
                world.server.remove(&key(n));
            }
            QueueOp::Relist => {
                let r = world.bump();
                let snapshot = known(&cache);
                q.replace(world.list(), &r)?;
                model.replace(&world.model_list(), snapshot.as_ref());
            }
            QueueOp::Resync => {
                let snapshot = known(&cache);
                q.resync()?;
                model.resync(snapshot.as_ref());
            }
            QueueOp::Bookmark => {
                let r = world.bump();
                q.bookmark(&r);
                prop_assert_eq!(q.last_sync_resource_version(), Some(r));
            }
            QueueOp::Pop { requeue, batch } => {
                let popped = pop_once(&q, batch, requeue, &cache, true)?;
                expect_pop(popped, model.pop(requeue), model.is_closed())?;
            }
            QueueOp::Close => {
                q.close();
                model.close();
            }
        }
        check(&q, &model)?;
    }
    if config.known_objects {
        let r = world.bump();
        let snapshot = known(&cache);
        q.replace(world.list(), &r)?;
        model.replace(&world.model_list(), snapshot.as_ref());
    }
    q.close();
    model.close();
    for _ in 0..DRAIN_LIMIT {
        let popped = pop_once(&q, 1, false, &cache, true)?;
        let done = matches!(popped.result, Some(Err(PopError::Closed)));
        expect_pop(popped, model.pop(false), true)?;
        check(&q, &model)?;
        if done {
            break;
        }
    }
    prop_assert!(q.is_empty(), "the queue drains after close");
    if config.known_objects {
        cache_matches_server(&cache, &world)?;
    }
    Ok(())
}

/// Compares a `DeltaFifo`-like queue with its model after a step.
fn check_delta_fifo_state<Q: Queue<DynamicObject>>(
    q: &Q,
    model: &DeltaFifoModel,
    inspect: Inspect<'_, Q>,
    transforms: usize,
) -> Result<(), TestCaseError> {
    let keys: Vec<String> = q.list_keys().iter().map(ToString::to_string).collect();
    prop_assert_eq!(&keys, &model.keys(), "queued keys, in order");
    prop_assert_eq!(q.len(), keys.len());
    for k in &keys {
        let newest = q.get_by_key(k).and_then(|o| rv(&o));
        prop_assert_eq!(newest, model.newest(k).flatten(), "newest object of {}", k);
        if let Some(inspect) = inspect {
            let deltas = inspect(q, k);
            prop_assert!(
                deltas.as_ref().is_some_and(|d| !d.is_empty()),
                "{} is queued but has no deltas",
                k
            );
            let deltas = deltas.unwrap_or_default();
            prop_assert!(
                deltas.iter().all(|d| d.key == *k),
                "every delta of {} has its key",
                k
            );
            prop_assert!(
                deltas
                    .windows(2)
                    .all(|w| !(w[0].kind == DeltaType::Deleted && w[1].kind == DeltaType::Deleted)),
                "no adjacent deletes for {}: {:?}",
                k,
                deltas
            );
            prop_assert_eq!(Some(&*deltas), model.deltas(k), "deltas of {}", k);
        }
    }
    prop_assert_eq!(q.has_synced(), model.has_synced(), "has_synced");
    prop_assert_eq!(q.is_closed(), model.is_closed(), "is_closed");
    prop_assert_eq!(transforms, model.transforms(), "transformer calls");
    Ok(())
}

/// Runs `ops` against `RealFifo`, with and without known objects, checking it against
/// [`RealFifoModel`] after every step.
pub fn check_real_fifo_against_model(ops: &[QueueOp]) -> Result<(), TestCaseError> {
    let inspect = |q: &RealFifo<DynamicObject>| -> Vec<ModelDelta> {
        q.deltas().iter().map(ModelDelta::of).collect()
    };
    for known_objects in [false, true] {
        let q_for = |setup: QueueSetup| {
            let mut b = RealFifo::builder().transformer(setup.transformer);
            if let Some(k) = setup.known_objects {
                b = b.known_objects(k);
            }
            b.build()
        };
        check_real_fifo_inner(ops, known_objects, q_for, Some(&inspect))?;
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
    check_real_fifo_inner(ops, known_objects, new_queue, None)
}

fn check_real_fifo_inner<Q: Queue<DynamicObject>>(
    ops: &[QueueOp],
    known_objects: bool,
    new_queue: impl FnOnce(QueueSetup) -> Q,
    inspect: InspectAll<'_, Q>,
) -> Result<(), TestCaseError> {
    let cache = Arc::new(Cache::<DynamicObject>::new());
    let (transformer, count) = counting_transformer();
    let q = new_queue(QueueSetup {
        known_objects: known_objects.then(|| Arc::clone(&cache)),
        transformer,
    });
    let mut model = RealFifoModel::new();
    let mut world = World::default();
    let check = |q: &Q, model: &RealFifoModel| -> Result<(), TestCaseError> {
        prop_assert_eq!(q.len(), model.len(), "queued deltas");
        if let Some(inspect) = inspect {
            prop_assert_eq!(inspect(q), model.deltas(), "queued deltas, in order");
        }
        prop_assert_eq!(q.has_synced(), model.has_synced(), "has_synced");
        prop_assert_eq!(q.is_closed(), model.is_closed(), "is_closed");
        prop_assert_eq!(
            count.load(Ordering::Relaxed),
            model.transforms(),
            "transformer calls"
        );
        Ok(())
    };
    let pop = |q: &Q, model: &mut RealFifoModel, batch: usize, requeue: bool| {
        let snapshot = known_objects.then(|| known_snapshot(&*cache));
        let popped = pop_once(q, batch, requeue, &cache, false)?;
        let done = matches!(popped.result, Some(Err(PopError::Closed)));
        let closed = model.is_closed();
        expect_pop(popped, model.pop(batch, requeue, snapshot.as_ref()), closed)?;
        Ok::<bool, TestCaseError>(done)
    };
    for op in ops {
        match *op {
            QueueOp::Add(n) => {
                let o = world.write(n);
                model.write(DeltaType::Added, &key(n), &rv(&o).unwrap_or_default());
                q.add(o)?;
            }
            QueueOp::Update(n) => {
                let o = world.write(n);
                model.write(DeltaType::Updated, &key(n), &rv(&o).unwrap_or_default());
                q.update(o)?;
            }
            QueueOp::Delete(n) => {
                let o = world.remove(n);
                model.write(DeltaType::Deleted, &key(n), &rv(&o).unwrap_or_default());
                q.delete(o)?;
            }
            QueueOp::UpdateUnseen(n) => {
                world.write(n);
            }
            QueueOp::DeleteUnseen(n) => {
                world.server.remove(&key(n));
            }
            QueueOp::Relist => {
                let r = world.bump();
                q.replace(world.list(), &r)?;
                model.replace(&world.model_list(), &r);
            }
            QueueOp::Resync => {
                q.resync()?;
                model.resync();
            }
            QueueOp::Bookmark => {
                let r = world.bump();
                q.bookmark(&r);
                model.bookmark(&r);
            }
            QueueOp::Pop { requeue, batch } => {
                pop(&q, &mut model, batch, requeue)?;
            }
            QueueOp::Close => {
                q.close();
                model.close();
            }
        }
        check(&q, &model)?;
    }
    let r = world.bump();
    q.replace(world.list(), &r)?;
    model.replace(&world.model_list(), &r);
    q.close();
    model.close();
    for _ in 0..DRAIN_LIMIT {
        let done = pop(&q, &mut model, 3, false)?;
        check(&q, &model)?;
        if done {
            break;
        }
    }
    prop_assert!(q.is_empty(), "the queue drains after close");
    prop_assert!(q.has_synced(), "a drained queue has synced");
    cache_matches_server(&cache, &world)?;
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
    let cache = Cache::<DynamicObject>::new();
    let (transformer, _) = counting_transformer();
    let q = new_queue(QueueSetup {
        known_objects: None,
        transformer,
    });
    let mut model = FifoModel::new();
    let mut world = World::default();
    let check = |q: &Q, model: &FifoModel| -> Result<(), TestCaseError> {
        let keys: Vec<String> = q.list_keys().iter().map(ToString::to_string).collect();
        prop_assert_eq!(&keys, &model.keys(), "queued keys, in order");
        prop_assert_eq!(q.len(), keys.len());
        for k in &keys {
            let newest = q.get_by_key(k).and_then(|o| rv(&o));
            prop_assert_eq!(newest, model.newest(k).flatten(), "latest object of {}", k);
        }
        prop_assert_eq!(q.has_synced(), model.has_synced(), "has_synced");
        prop_assert_eq!(q.is_closed(), model.is_closed(), "is_closed");
        Ok(())
    };
    for op in ops {
        match *op {
            QueueOp::Add(n) | QueueOp::Update(n) => {
                let added = matches!(op, QueueOp::Add(_));
                let o = world.write(n);
                model.add(&key(n), &rv(&o).unwrap_or_default(), added);
                if added {
                    q.add(o)?;
                } else {
                    q.update(o)?;
                }
            }
            QueueOp::Delete(n) => {
                let o = world.remove(n);
                q.delete(o)?;
                model.delete(&key(n));
            }
            QueueOp::UpdateUnseen(n) => {
                world.write(n);
            }
            QueueOp::DeleteUnseen(n) => {
                world.server.remove(&key(n));
            }
            QueueOp::Relist => {
                let r = world.bump();
                q.replace(world.list(), &r)?;
                model.replace(&world.model_list());
            }
            QueueOp::Resync => q.resync()?,
            QueueOp::Bookmark => q.bookmark(&world.bump()),
            QueueOp::Pop { requeue, batch } => {
                let popped = pop_once(&q, batch, requeue, &cache, false)?;
                expect_pop(popped, model.pop(requeue), model.is_closed())?;
            }
            QueueOp::Close => {
                q.close();
                model.close();
            }
        }
        check(&q, &model)?;
    }
    q.close();
    model.close();
    for _ in 0..DRAIN_LIMIT {
        let popped = pop_once(&q, 1, false, &cache, false)?;
        let done = matches!(popped.result, Some(Err(PopError::Closed)));
        expect_pop(popped, model.pop(false), true)?;
        if done {
            break;
        }
    }
    prop_assert!(q.is_empty(), "the queue drains after close");
    Ok(())
}
