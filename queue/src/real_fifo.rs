//! [`RealFifo`]: every event in arrival order, relists and resyncs as single atomic deltas.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kcache_store::{
    DeletedFinalStateUnknown, KeyFunc, KnownObjects, LastResourceVersion, Object, ObjectKey,
    ObjectOrTombstone, TransformFn, default_key_func,
};

use crate::known_objects::{SharedKnown, share};
use crate::lifecycle::{Lifecycle, Population};
use crate::metrics::QueueMetrics;
use crate::transform::{ArcTransform, on_arcs};
use crate::{Delta, Deltas, PopError, PopFuture, ProcessError, ProcessFn, Queue};

/// client-go's `RealFIFO` with atomic events (its default since 1.36): a plain FIFO of every
/// notification, no merging per key, no dropped deletes.
///
/// - `add`/`update`/`delete` queue one `Added`/`Updated`/`Deleted` each, even a delete of a key
///   never seen.
/// - `replace` queues one [`Delta::ReplacedAll`] with the full (transformed) list and its resource
///   version; the consumer computes the deletions against its own store.
/// - `resync` queues one [`Delta::SyncAll`], filled with the known objects when popped.
/// - `bookmark` queues a [`Delta::Bookmark`].
/// - [`pop`](Queue::pop) hands over one delta; [`pop_batch`](Queue::pop_batch) hands over a run of
///   single-object deltas of distinct keys, never crossing the end of the initial list, as
///   client-go's `PopBatch`; an atomic delta is always popped alone.
/// - [`has_synced`](Queue::has_synced) turns true once every delta queued up to and including
///   the first `ReplacedAll` has been processed.
/// - With a [name](RealFifoBuilder::name) it records its depth and the deltas it queues
///   ([metrics](crate::metrics)).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use kcache_queue::{Delta, DeltaType, Queue, RealFifo};
/// use kcache_store::{DynamicObject, Store};
///
/// let fifo = RealFifo::<DynamicObject>::new();
/// let a = Arc::new(DynamicObject::new(Some("ns"), "a"));
/// fifo.add(Arc::clone(&a))?;
/// fifo.replace(vec![Arc::clone(&a)], "10")?;
/// fifo.bookmark("11");
/// let mut seen = Vec::new();
/// for _ in 0..3 {
///     fifo.pop(&mut |deltas| {
///         seen.push(deltas[0].kind());
///         if let Delta::ReplacedAll { objects, resource_version } = &deltas[0] {
///             assert!(Arc::ptr_eq(&objects[0], &a));
///             assert_eq!(resource_version, "10");
///         }
///         Ok(())
///     }).await?;
/// }
/// assert_eq!(seen, [DeltaType::Added, DeltaType::ReplacedAll, DeltaType::Bookmark]);
/// assert!(fifo.has_synced());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct RealFifo<T> {
    state: Mutex<State<T>>,
    life: Lifecycle,
    key_func: KeyFunc<T>,
    known: Option<SharedKnown<T>>,
    transformer: Option<ArcTransform<T>>,
    /// The hasher of [`Queued::key_hash`], randomly seeded per queue.
    hasher: RandomState,
    name: Option<String>,
    metrics: QueueMetrics,
}

struct State<T> {
    items: VecDeque<Queued<T>>,
    population: Population,
    last_rv: LastResourceVersion,
    /// The key hashes of the batch being gathered; empty between pops, kept for its capacity.
    batch_keys: HashSet<u64, BuildHasherDefault<PassThrough>>,
}

/// A queued delta and the hash of its object's key, computed as it was queued, so that a batch
/// pop compares keys without hashing them under the lock (`None` for an atomic delta, or a
/// requeued delta whose key can no longer be computed).
///
/// The hash is std's (`SipHash`, seeded per queue), so keys a server chose cannot be made to
/// collide on purpose; and it only decides where batches close: two keys with the same hash
/// close a batch early, which is always allowed (batches are an optimisation, never a
/// guarantee), never wrong.
struct Queued<T> {
    key_hash: Option<u64>,
    delta: Delta<T>,
}

/// A hasher for values that are already hashes: it passes the `u64` through.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64`s are hashed with it; fold anything else rather than lose it.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

impl<T> State<T> {
    /// How many deltas from the head make the next batch of at most `max` (at least one, if
    /// anything is queued), by client-go's `PopBatch` rules: an atomic delta at the head goes
    /// alone; a batch stops before an atomic delta, before a key already in it, and at the end
    /// of the initial list; a delta without a key goes alone at the head, and elsewhere closes
    /// the batch before it.
    fn batch_len(&mut self, max: usize) -> usize {
        let Self {
            items,
            population,
            batch_keys,
            ..
        } = self;
        let Some(first) = items.front() else {
            return 0;
        };
        if max <= 1 || !first.delta.is_single_object() {
            return 1;
        }
        let initial = population.remaining();
        let limit = if initial > 0 { max.min(initial) } else { max };
        let mut n = 0;
        for q in items.iter().take(limit) {
            if !q.delta.is_single_object() {
                break;
            }
            let Some(hash) = q.key_hash else {
                n = n.max(1);
                break;
            };
            if !batch_keys.insert(hash) {
                break;
            }
            n += 1;
        }
        batch_keys.clear();
        n
    }
}

/// Builds a [`RealFifo`].
#[must_use]
pub struct RealFifoBuilder<T> {
    key_func: KeyFunc<T>,
    known: Option<SharedKnown<T>>,
    transformer: Option<ArcTransform<T>>,
    name: Option<String>,
}

impl<T: Object> RealFifoBuilder<T> {
    /// The key function (default: `namespace/name`). Keys are checked, not stored.
    pub fn key_func(mut self, key_func: KeyFunc<T>) -> Self {
        self.key_func = key_func;
        self
    }

    /// The objects the consumer holds, used to fill [`Delta::SyncAll`] when it is popped.
    pub fn known_objects<K: KnownObjects<T> + ?Sized + 'static>(mut self, known: Arc<K>) -> Self {
        self.known = Some(share(known));
        self
    }

    /// The transform applied to objects entering the queue. It is given each object by value:
    /// moved out of its `Arc` when the queue holds the only reference, cloned otherwise, and
    /// the result is put in a new `Arc` (one allocation per transformed object; an informer's
    /// transform runs in its reflector, before the first `Arc`, without it).
    pub fn transformer(mut self, transformer: TransformFn<T>) -> Self
    where
        T: Clone,
    {
        self.transformer = Some(on_arcs(transformer));
        self
    }

    /// The queue's name: with one (not empty) it records its [metrics](crate::metrics),
    /// labelled with it; without one it records none (client-go's rule).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into()).filter(|n| !n.is_empty());
        self
    }

    /// The queue. Its [metrics](crate::metrics), if it has a name, are registered now, with
    /// the recorder in place.
    pub fn build(self) -> RealFifo<T> {
        let metrics = QueueMetrics::new(self.name.as_deref());
        RealFifo {
            state: Mutex::new(State {
                items: VecDeque::new(),
                population: Population::default(),
                last_rv: LastResourceVersion::new(),
                batch_keys: HashSet::default(),
            }),
            life: Lifecycle::new(),
            key_func: self.key_func,
            known: self.known,
            transformer: self.transformer,
            hasher: RandomState::new(),
            name: self.name,
            metrics,
        }
    }
}

impl<T> fmt::Debug for RealFifoBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RealFifoBuilder")
            .field("name", &self.name)
            .field("known_objects", &self.known.is_some())
            .field("transformer", &self.transformer.is_some())
            .finish_non_exhaustive()
    }
}

impl<T: Object> Default for RealFifo<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Object> RealFifo<T> {
    /// A queue keyed by `namespace/name`, without known objects or transformer.
    #[must_use]
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A builder for the other options.
    pub fn builder() -> RealFifoBuilder<T> {
        RealFifoBuilder {
            key_func: default_key_func(),
            known: None,
            transformer: None,
            name: None,
        }
    }

    /// The queue's name, which labels its [metrics](crate::metrics) (`None`: it records none).
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// A copy (of `Arc`s) of every queued delta, oldest first.
    pub fn deltas(&self) -> Vec<Delta<T>> {
        self.lock().items.iter().map(|q| q.delta.clone()).collect()
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn key_of(&self, obj: &T) -> kcache_store::Result<ObjectKey> {
        Ok((self.key_func)(obj)?)
    }

    fn transform(&self, obj: Arc<T>) -> Arc<T> {
        match &self.transformer {
            Some(t) => t(obj),
            None => obj,
        }
    }

    fn hash_key(&self, key: &ObjectKey) -> u64 {
        self.hasher.hash_one(key.as_str())
    }

    /// `delta` with the hash of its object's key, if it has one.
    fn keyed(&self, delta: Delta<T>) -> Queued<T> {
        let key_hash = match &delta {
            Delta::Deleted(ObjectOrTombstone::Tombstone(t)) => Some(self.hash_key(&t.key)),
            d => d
                .object()
                .and_then(|o| (self.key_func)(o).ok())
                .map(|k| self.hash_key(&k)),
        };
        Queued { key_hash, delta }
    }

    fn push(&self, obj: Arc<T>, make: fn(Arc<T>) -> Delta<T>) -> kcache_store::Result<()> {
        let key_hash = self.hash_key(&self.key_of(&obj)?);
        let obj = self.transform(obj);
        let mut st = self.lock();
        st.population.mark_populated();
        if let Some(rv) = obj.resource_version() {
            st.last_rv.note(rv);
        }
        st.items.push_back(Queued {
            key_hash: Some(key_hash),
            delta: make(obj),
        });
        self.metrics.queued(1, st.items.len());
        self.life.update_synced(&st.population);
        drop(st);
        self.life.wake();
        Ok(())
    }

    /// Fills a `SyncAll` with the current known objects.
    fn fill(&self, delta: &mut Delta<T>) {
        if let (Delta::SyncAll { objects }, Some(known)) = (delta, &self.known) {
            *objects = known
                .known_keys()
                .iter()
                .filter_map(|k| known.known_object(k.as_str()))
                .collect();
        }
    }

    fn try_pop(&self, max: usize, process: &mut ProcessFn<'_, T>) -> Option<Result<(), PopError>> {
        let mut st = self.lock();
        let n = st.batch_len(max);
        if n == 0 {
            return self.life.is_closed().then_some(Err(PopError::Closed));
        }
        let mut batch: Vec<Delta<T>> = st.items.drain(..n).map(|q| q.delta).collect();
        self.metrics.depth(st.items.len());
        if let [single] = batch.as_mut_slice() {
            self.fill(single);
        }
        let in_initial = !self.life.has_synced();
        // A batch of single-object deltas holds each key at most once (`batch_len`).
        let deltas = if batch.iter().all(Delta::is_single_object) {
            Deltas::batch(batch, in_initial)
        } else {
            Deltas::new(batch, in_initial)
        };
        let result = process(deltas);
        Some(match result {
            Ok(()) => {
                st.population.processed(n);
                self.life.update_synced(&st.population);
                Ok(())
            }
            Err(ProcessError::Failed(e)) => {
                st.population.processed(n);
                self.life.update_synced(&st.population);
                Err(PopError::Process(e))
            }
            Err(ProcessError::Requeue { deltas, source }) => {
                // Back at the head, in order: nothing overtakes a requeued event.
                for d in deltas.into_vec().into_iter().rev() {
                    st.items.push_front(self.keyed(d));
                }
                self.metrics.depth(st.items.len());
                source.map_or(Ok(()), |e| Err(PopError::Process(e)))
            }
        })
    }
}

impl<T: Object> kcache_store::Store<T> for RealFifo<T> {
    fn add(&self, obj: Arc<T>) -> kcache_store::Result<()> {
        self.push(obj, Delta::Added)
    }

    fn update(&self, obj: Arc<T>) -> kcache_store::Result<()> {
        self.push(obj, Delta::Updated)
    }

    fn delete(&self, obj: Arc<T>) -> kcache_store::Result<()> {
        self.push(obj, |o| Delta::Deleted(ObjectOrTombstone::Object(o)))
    }

    /// Queues a tombstone for `key` carrying its last state: that of the newest queued delta
    /// that speaks of the key (a single-object delta of it, or a queued relist, which is the
    /// whole state: holding the key, or removing it), else the known object. Nothing when the
    /// key is unknown or already on its way out.
    fn delete_key(&self, key: &ObjectKey) -> kcache_store::Result<()> {
        let mut st = self.lock();
        let is_key = |o: &Arc<T>| (self.key_func)(o).is_ok_and(|k| k == *key);
        let mut last = None;
        let mut decided = false;
        for d in st.items.iter().rev().map(|q| &q.delta) {
            match d {
                Delta::Deleted(_) if d.object().is_some_and(is_key) => return Ok(()),
                Delta::ReplacedAll { objects, .. } => {
                    // A relist not holding the key removes it when processed.
                    let Some(o) = objects.iter().find(|o| is_key(o)) else {
                        return Ok(());
                    };
                    last = Some(Arc::clone(o));
                }
                _ => match d.object() {
                    Some(o) if is_key(o) => last = Some(Arc::clone(o)),
                    _ => continue,
                },
            }
            decided = true;
            break;
        }
        if !decided {
            last = self
                .known
                .as_ref()
                .and_then(|k| k.known_object(key.as_str()));
        }
        let Some(last) = last else {
            return Ok(());
        };
        st.population.mark_populated();
        st.items.push_back(Queued {
            key_hash: Some(self.hash_key(key)),
            delta: Delta::Deleted(ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
                key: key.clone(),
                obj: Some(last),
            })),
        });
        self.metrics.queued(1, st.items.len());
        self.life.update_synced(&st.population);
        drop(st);
        self.life.wake();
        Ok(())
    }

    /// The newest object of every queued single-object delta's key, in queue order of first
    /// appearance.
    fn list(&self) -> Vec<Arc<T>> {
        self.list_keys()
            .iter()
            .filter_map(|k| self.get_by_key(k.as_str()))
            .collect()
    }

    /// The keys of the queued single-object deltas, in order of first appearance.
    fn list_keys(&self) -> Vec<ObjectKey> {
        let st = self.lock();
        let mut seen = std::collections::HashSet::new();
        st.items
            .iter()
            .filter_map(|q| (self.key_func)(q.delta.object()?).ok())
            .filter(|k| seen.insert(k.clone()))
            .collect()
    }

    fn get(&self, obj: &T) -> kcache_store::Result<Option<Arc<T>>> {
        let key = self.key_of(obj)?;
        Ok(self.get_by_key(key.as_str()))
    }

    /// The object of the newest queued single-object delta for `key`.
    fn get_by_key(&self, key: &str) -> Option<Arc<T>> {
        let st = self.lock();
        st.items
            .iter()
            .rev()
            .filter_map(|q| q.delta.object())
            .find(|o| (self.key_func)(o).is_ok_and(|k| k.as_str() == key))
            .cloned()
    }

    fn transform_incoming(&self, obj: Arc<T>) -> Arc<T> {
        self.transform(obj)
    }

    fn replace(&self, list: Vec<Arc<T>>, resource_version: &str) -> kcache_store::Result<()> {
        let list = list.into_iter().map(|o| self.transform(o)).collect();
        self.replace_transformed(list, resource_version)
    }

    fn replace_transformed(
        &self,
        objects: Vec<Arc<T>>,
        resource_version: &str,
    ) -> kcache_store::Result<()> {
        for obj in &objects {
            self.key_of(obj)?;
        }
        let mut st = self.lock();
        st.items.push_back(Queued {
            key_hash: None,
            delta: Delta::ReplacedAll {
                objects,
                resource_version: resource_version.to_owned(),
            },
        });
        let queued = st.items.len();
        self.metrics.queued(1, queued);
        st.population.replaced(queued);
        st.last_rv.note(resource_version);
        self.life.update_synced(&st.population);
        drop(st);
        self.life.wake();
        Ok(())
    }

    fn resync(&self) -> kcache_store::Result<()> {
        let mut st = self.lock();
        st.items.push_back(Queued {
            key_hash: None,
            delta: Delta::SyncAll {
                objects: Vec::new(),
            },
        });
        self.metrics.queued(1, st.items.len());
        drop(st);
        self.life.wake();
        Ok(())
    }

    fn bookmark(&self, resource_version: &str) {
        let mut st = self.lock();
        st.items.push_back(Queued {
            key_hash: None,
            delta: Delta::Bookmark {
                resource_version: resource_version.to_owned(),
            },
        });
        self.metrics.queued(1, st.items.len());
        st.last_rv.note(resource_version);
        drop(st);
        self.life.wake();
    }

    /// Records the version without queuing anything: a [`Delta::Bookmark`] comes only from
    /// [`bookmark`](kcache_store::Store::bookmark).
    fn update_resource_version(&self, resource_version: &str) {
        self.lock().last_rv.note(resource_version);
    }

    fn last_sync_resource_version(&self) -> Option<String> {
        self.lock().last_rv.get().map(str::to_owned)
    }

    /// The number of queued deltas.
    fn len(&self) -> usize {
        self.lock().items.len()
    }
}

impl<T: Object> Queue<T> for RealFifo<T> {
    fn pop<'a>(&'a self, process: &'a mut ProcessFn<'a, T>) -> PopFuture<'a> {
        Box::pin(self.life.pop_with(move || self.try_pop(1, process)))
    }

    /// Pops up to `max` (at least one) consecutive single-object deltas in one [`Deltas`], in
    /// arrival order, as client-go's `PopBatch`:
    ///
    /// - a batch holds each key at most once: it closes before a key already in it;
    /// - a batch never crosses the end of the initial list (the deltas queued up to and
    ///   including the first `replace`), whose last delta flips `has_synced`;
    /// - an atomic delta (`ReplacedAll`, `SyncAll`, `Bookmark`) closes a batch, and at the head
    ///   is popped alone;
    /// - a delta whose key can no longer be computed (one requeued by the process function)
    ///   is popped alone: at the head it makes a batch of one, elsewhere it closes the batch
    ///   before it;
    /// - the batch's [`Deltas`] is [of distinct objects](Deltas::of_distinct_objects), as is a
    ///   single-object delta popped alone; a requeued batch goes back delta by delta, as it
    ///   came.
    fn pop_batch<'a>(&'a self, max: usize, process: &'a mut ProcessFn<'a, T>) -> PopFuture<'a> {
        let max = max.max(1);
        Box::pin(self.life.pop_with(move || self.try_pop(max, process)))
    }

    fn has_synced(&self) -> bool {
        self.life.has_synced()
    }

    fn close(&self) {
        self.life.close();
    }

    fn is_closed(&self) -> bool {
        self.life.is_closed()
    }
}

impl<T> fmt::Debug for RealFifo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `try_lock`: Debug may be called from a process function, under the lock.
        let len = self.state.try_lock().ok().map(|st| st.items.len());
        f.debug_struct("RealFifo")
            .field("name", &self.name)
            .field("len", &len)
            .field("known_objects", &self.known.is_some())
            .field("closed", &self.life.is_closed())
            .field("synced", &self.life.has_synced())
            .finish_non_exhaustive()
    }
}
