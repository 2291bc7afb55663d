//! The one runner: plays a scenario against a queue and its [`QueueModel`] in lockstep, with a
//! consumer whose process function applies every pop to its cache, and compares them after
//! every step. What differs from one queue to another is data: [`Rules`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::FutureExt;
use kcache_queue::{Delta, DeltaType, Deltas, PopError, ProcessError, Queue, TransformFn};
use kcache_store::{Cache, DynamicObject, Store, deletion_handling_key};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use super::scenario::{World, key, rv};
use super::{QueueOp, QueueSetup, Rules};
use crate::queue_model::{KnownSnapshot, ModelDelta, ModelPop, QueueModel, known_snapshot};

/// How many pops the final drain may take before the check gives up.
const DRAIN_LIMIT: usize = 10_000;

/// Plays `ops` against the queue `new_queue` builds and `model`, under `rules`: every step,
/// then the ending (the final relist if the rules say so, close, and a drain).
pub(super) fn run_against_model<Q: Queue<DynamicObject>, M: QueueModel>(
    ops: &[QueueOp],
    new_queue: impl FnOnce(QueueSetup) -> Q,
    model: M,
    rules: Rules<'_, Q, M>,
) -> Result<(), TestCaseError> {
    let cache = Arc::new(Cache::new());
    let transforms = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&transforms);
    let transformer: TransformFn<DynamicObject> = Arc::new(move |o| {
        counter.fetch_add(1, Ordering::Relaxed);
        o
    });
    let q = new_queue(QueueSetup {
        known_objects: rules.known_objects.then(|| Arc::clone(&cache)),
        transformer,
    });
    let mut run = Run {
        q,
        model,
        cache,
        world: World::default(),
        transforms,
        rules,
    };
    for op in ops {
        run.step(op)?;
        run.check()?;
    }
    run.finish()
}

/// A scenario under way.
struct Run<'a, Q, M> {
    q: Q,
    model: M,
    /// The consumer's cache (the queue's known objects if the rules say so).
    cache: Arc<Cache<DynamicObject>>,
    world: World,
    /// How many times the installed transformer ran.
    transforms: Arc<AtomicUsize>,
    rules: Rules<'a, Q, M>,
}

impl<Q: Queue<DynamicObject>, M: QueueModel> Run<'_, Q, M> {
    /// Plays one step on the server, the queue and the model.
    fn step(&mut self, op: &QueueOp) -> Result<(), TestCaseError> {
        match *op {
            QueueOp::Add(n) => self.write(DeltaType::Added, n)?,
            QueueOp::Update(n) => self.write(DeltaType::Updated, n)?,
            QueueOp::Delete(n) => self.write(DeltaType::Deleted, n)?,
            QueueOp::UpdateUnseen(n) => {
                self.world.write(n);
            }
            QueueOp::DeleteUnseen(n) => {
                self.world.server.remove(&key(n));
            }
            QueueOp::Relist => self.relist(false)?,
            QueueOp::StreamedRelist => self.relist(true)?,
            QueueOp::ReachVersion => {
                let r = self.world.bump();
                self.q.update_resource_version(&r);
                prop_assert_eq!(self.q.last_sync_resource_version(), Some(r));
            }
            QueueOp::Resync => {
                let known = self.known();
                self.q.resync()?;
                self.model.resync(known.as_ref());
            }
            QueueOp::Bookmark => {
                let r = self.world.bump();
                self.q.bookmark(&r);
                self.model.bookmark(&r);
                if self.rules.bookmark_sets_rv {
                    prop_assert_eq!(self.q.last_sync_resource_version(), Some(r));
                }
            }
            QueueOp::Pop { requeue, batch } => {
                self.pop(batch, requeue)?;
            }
            QueueOp::Close => {
                self.q.close();
                self.model.close();
            }
        }
        Ok(())
    }

    /// The known objects just before an operation, if the queue has them.
    fn known(&self) -> Option<KnownSnapshot> {
        self.rules
            .known_objects
            .then(|| known_snapshot(&*self.cache))
    }

    /// A watch event: `add`, `update` or `delete` (`kind`) of object `n`.
    fn write(&mut self, kind: DeltaType, n: usize) -> Result<(), TestCaseError> {
        let o = if kind == DeltaType::Deleted {
            self.world.remove(n)
        } else {
            self.world.write(n)
        };
        let r = rv(&o).unwrap_or_default();
        let known = self.known();
        match kind {
            DeltaType::Added => self.q.add(o)?,
            DeltaType::Updated => self.q.update(o)?,
            _ => self.q.delete(o)?,
        }
        self.model.write(kind, &key(n), &r, known.as_ref());
        Ok(())
    }

    /// `replace` with the server's objects at a new resource version (`streamed`: as a reflector
    /// does, transforming each object as it arrives, then `replace_transformed`).
    fn relist(&mut self, streamed: bool) -> Result<(), TestCaseError> {
        let r = self.world.bump();
        let known = self.known();
        if streamed {
            let list = self.world.list();
            let list = list
                .into_iter()
                .map(|o| self.q.transform_incoming(o))
                .collect();
            self.q.replace_transformed(list, &r)?;
        } else {
            self.q.replace(self.world.list(), &r)?;
        }
        self.model
            .replace(&self.world.model_list(), &r, known.as_ref());
        Ok(())
    }

    /// One pop of the queue and the model: the same deltas, or, with nothing queued, a pop
    /// that waits (or returns `Closed` once closed). Returns whether the queue answered `Closed`.
    fn pop(&mut self, batch: usize, requeue: bool) -> Result<bool, TestCaseError> {
        let known = self.known();
        let closed = self.model.is_closed();
        let initial_left = self.model.initial_left();
        let (result, got) = self.pop_queue(batch, requeue)?;
        if let Some((deltas, _)) = &got
            && self.rules.delta_items
        {
            check_batch(deltas, initial_left)?;
        }
        let expected = self.model.pop(batch, requeue, known.as_ref());
        let (answered, rule) = match (&expected, closed) {
            (Some(_), _) => (matches!(result, Some(Ok(()))), "pop should succeed"),
            (None, true) => (
                matches!(result, Some(Err(PopError::Closed))),
                "pop on a closed empty queue returns Closed",
            ),
            (None, false) => (result.is_none(), "pop on an empty queue waits"),
        };
        prop_assert!(answered, "{}, got {:?}", rule, result);
        prop_assert_eq!(got, expected);
        Ok(matches!(result, Some(Err(PopError::Closed))))
    }

    /// Pops the queue once without waiting (`batch` > 1: `pop_batch`); the consumer applies
    /// what comes to its cache, unless `requeue`.
    fn pop_queue(&self, batch: usize, requeue: bool) -> Result<Popped, TestCaseError> {
        let (cache, strict_deletes) = (&*self.cache, self.rules.strict_deletes);
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
                self.q.pop_batch(batch, &mut process).now_or_never()
            } else {
                self.q.pop(&mut process).now_or_never()
            }
        };
        violation.map_or(Ok((result, got)), Err)
    }

    /// Compares the queue with its model.
    fn check(&self) -> Result<(), TestCaseError> {
        let (q, model) = (&self.q, &self.model);
        if let Some(model_keys) = model.keys() {
            let keys: Vec<String> = q.list_keys().iter().map(ToString::to_string).collect();
            prop_assert_eq!(&keys, &model_keys, "queued keys, in order");
            for k in &keys {
                let newest = q.get_by_key(k).and_then(|o| rv(&o));
                prop_assert_eq!(newest, model.newest(k).flatten(), "newest object of {}", k);
            }
        }
        prop_assert_eq!(q.len(), model.len(), "queue length");
        if let Some(inspect) = self.rules.inspect {
            inspect(q, model)?;
        }
        prop_assert_eq!(q.has_synced(), model.has_synced(), "has_synced");
        prop_assert_eq!(q.is_closed(), model.is_closed(), "is_closed");
        if let Some(expected) = model.transforms() {
            let transforms = self.transforms.load(Ordering::Relaxed);
            prop_assert_eq!(transforms, expected, "transformer calls");
        }
        Ok(())
    }

    /// The ending: the final relist if the rules say so, close, a drain checked after every pop.
    fn finish(mut self) -> Result<(), TestCaseError> {
        if self.rules.final_relist {
            self.relist(false)?;
        }
        self.q.close();
        self.model.close();
        for _ in 0..DRAIN_LIMIT {
            let done = self.pop(self.rules.drain_batch, false)?;
            self.check()?;
            if done {
                break;
            }
        }
        prop_assert!(self.q.is_empty(), "the queue drains after close");
        if self.rules.synced_after_drain {
            prop_assert!(self.q.has_synced(), "a drained queue has synced");
        }
        if self.rules.cache_equals_server {
            let mut held = known_snapshot(&*self.cache);
            held.sort();
            prop_assert_eq!(
                held,
                self.world.model_list(),
                "the consumer's cache converges to the server"
            );
        }
        Ok(())
    }
}

/// What every pop of a queue whose items are deltas must hand over (client-go's `PopBatch` rules): at least
/// one delta; a whole-queue delta (`ReplacedAll`, `SyncAll`, `Bookmark`) alone; a delta without
/// a key alone; no key twice; and, while `initial_left` items of the initial list remain, no
/// more than them (a batch never straddles the end of the initial list).
fn check_batch(deltas: &[ModelDelta], initial_left: usize) -> Result<(), TestCaseError> {
    prop_assert!(!deltas.is_empty(), "a pop hands over at least one delta");
    if deltas.len() > 1 {
        let singles = deltas.iter().all(ModelDelta::is_single_object);
        prop_assert!(singles, "a whole-queue delta is popped alone: {:?}", deltas);
        let keyed = deltas.iter().all(|d| !d.key.is_empty());
        prop_assert!(keyed, "a delta without a key is popped alone: {:?}", deltas);
    }
    for (i, d) in deltas.iter().enumerate() {
        let repeated = deltas[..i].iter().any(|p| p.key == d.key);
        prop_assert!(
            !repeated,
            "key {:?} twice in one batch: {:?}",
            d.key,
            deltas
        );
    }
    prop_assert!(
        initial_left == 0 || deltas.len() <= initial_left,
        "a batch of {} straddles the end of the initial list ({} initial items left): {:?}",
        deltas.len(),
        initial_left,
        deltas
    );
    Ok(())
}

/// What one pop did: `None` if it would have waited, else its answer; and what the process
/// function was handed, if it ran.
type Popped = (Option<Result<(), PopError>>, Option<ModelPop>);

/// Applies popped deltas to the consumer's cache. With `strict_deletes`, a `Deleted` for an
/// object the cache does not hold is a violation: the deletion was already reported.
fn apply(
    cache: &Cache<DynamicObject>,
    deltas: &Deltas<DynamicObject>,
    strict_deletes: bool,
) -> Result<(), TestCaseError> {
    for delta in deltas {
        match delta {
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => {
                cache.add(Arc::clone(o))?;
            }
            Delta::Deleted(d) => {
                let k = deletion_handling_key(d)?;
                match cache.get_by_key(k.as_str()) {
                    Some(held) => cache.delete(held)?,
                    None => prop_assert!(
                        !strict_deletes,
                        "deletion of {} reported but the consumer does not hold it \
                         (reported twice, or never added)",
                        k
                    ),
                }
            }
            Delta::ReplacedAll {
                objects,
                resource_version,
            } => cache.replace(objects.clone(), resource_version)?,
            Delta::SyncAll { .. } | Delta::Bookmark { .. } => {}
        }
    }
    Ok(())
}
