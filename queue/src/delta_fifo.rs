//! [`DeltaFifo`]: client-go's classic queue of deltas per key, with every rule of its relist,
//! resync and delete handling.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
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

/// client-go's `DeltaFIFO`: for every key, the deltas accumulated since it was last popped,
/// oldest first; keys pop in the order they were first queued.
///
/// The rules (client-go's `DeltaFIFO`):
/// - `add`/`update` queue `Added`/`Updated`; a later delta for a queued key does not move it.
/// - `delete` queues `Deleted`, unless the key is neither queued nor in the known objects
///   (without known objects: unless it is not queued), in which case it is dropped.
/// - Only two consecutive `Deleted` deltas are merged; the real object wins over a tombstone.
/// - `replace` queues `Replaced` (with [`emit_delta_type_replaced`](DeltaFifoBuilder::emit_delta_type_replaced))
///   or `Sync` for each listed object in list order, then a `Deleted` tombstone
///   ([`DeletedFinalStateUnknown`]) for each queued key missing from the list (in queue order),
///   then for each known key missing from the list and not queued.
/// - `resync` queues `Sync` with the known object for every known key that has no queued delta.
/// - The [transformer](DeltaFifoBuilder::transformer) rewrites the objects of add, update,
///   queued deletes and replace; never tombstones or resyncs.
/// - [`has_synced`](Queue::has_synced) turns true once the keys of the first `replace` (and the
///   deletions it queued) have been popped *and processed*.
///
/// Unlike client-go, a `replace` with an object whose key cannot be computed changes nothing.
///
/// With a [name](DeltaFifoBuilder::name) it records its depth (keys) and the deltas it queues
/// ([metrics](crate::metrics)).
///
/// The process function runs under the queue's lock, as in client-go: while it runs, no
/// `replace` can look at the known objects (usually the cache the process function writes), so
/// no deletion is missed.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use kcache_queue::{DeltaFifo, DeltaType, Queue};
/// use kcache_store::{DynamicObject, Store};
///
/// let fifo = DeltaFifo::<DynamicObject>::new();
/// let a = Arc::new(DynamicObject::new(Some("ns"), "a"));
/// fifo.add(Arc::clone(&a))?;
/// fifo.update(Arc::clone(&a))?;
/// fifo.pop(&mut |deltas| {
///     let kinds: Vec<_> = deltas.iter().map(|d| d.kind()).collect();
///     assert_eq!(kinds, [DeltaType::Added, DeltaType::Updated]);
///     Ok(())
/// }).await?;
/// assert!(fifo.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct DeltaFifo<T> {
    state: Mutex<State<T>>,
    life: Lifecycle,
    key_func: KeyFunc<T>,
    known: Option<SharedKnown<T>>,
    emit_replaced: bool,
    transformer: Option<ArcTransform<T>>,
    name: Option<String>,
    metrics: QueueMetrics,
}

struct State<T> {
    items: HashMap<ObjectKey, Vec<Delta<T>>>,
    queue: VecDeque<ObjectKey>,
    population: Population,
    last_rv: LastResourceVersion,
}

impl<T> State<T> {
    /// Appends `delta` to `key`'s deltas, merging two consecutive deletes.
    fn enqueue(&mut self, key: ObjectKey, delta: Delta<T>) {
        if let Some(deltas) = self.items.get_mut(&key) {
            deltas.push(delta);
            dedup_deletes(deltas);
        } else {
            self.queue.push_back(key.clone());
            self.items.insert(key, vec![delta]);
        }
    }
}

/// client-go's `dedupDeltas`: if the last two deltas are both `Deleted`, keep one: the older,
/// unless it is a tombstone.
fn dedup_deletes<T>(deltas: &mut Vec<Delta<T>>) {
    let n = deltas.len();
    if n < 2 {
        return;
    }
    let both_deleted = matches!(
        (&deltas[n - 2], &deltas[n - 1]),
        (Delta::Deleted(_), Delta::Deleted(_))
    );
    // The newer one is popped either way; it replaces the older only over a tombstone.
    if both_deleted
        && let Some(newer) = deltas.pop()
        && deltas[n - 2].is_tombstone()
    {
        deltas[n - 2] = newer;
    }
}

/// Builds a [`DeltaFifo`] (client-go's `DeltaFIFOOptions`).
#[must_use]
pub struct DeltaFifoBuilder<T> {
    key_func: KeyFunc<T>,
    known: Option<SharedKnown<T>>,
    emit_replaced: bool,
    transformer: Option<ArcTransform<T>>,
    name: Option<String>,
}

impl<T: Object> DeltaFifoBuilder<T> {
    /// The key function (default: `namespace/name`).
    pub fn key_func(mut self, key_func: KeyFunc<T>) -> Self {
        self.key_func = key_func;
        self
    }

    /// The objects the consumer already holds, usually its cache (`Arc<Cache<T>>` or
    /// `Arc<dyn Indexer<T>>`). Used to detect deletions on `replace`, to drop deletes of unknown
    /// keys and to resync. Without them, missed deletions of popped keys go unnoticed.
    pub fn known_objects<K: KnownObjects<T> + ?Sized + 'static>(mut self, known: Arc<K>) -> Self {
        self.known = Some(share(known));
        self
    }

    /// Whether `replace` queues `Replaced` deltas (`true`) or `Sync` ones (`false`, the default,
    /// client-go's backward-compatible choice).
    pub fn emit_delta_type_replaced(mut self, emit: bool) -> Self {
        self.emit_replaced = emit;
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
    pub fn build(self) -> DeltaFifo<T> {
        let metrics = QueueMetrics::new(self.name.as_deref());
        DeltaFifo {
            state: Mutex::new(State {
                items: HashMap::new(),
                queue: VecDeque::new(),
                population: Population::default(),
                last_rv: LastResourceVersion::new(),
            }),
            life: Lifecycle::new(),
            key_func: self.key_func,
            known: self.known,
            emit_replaced: self.emit_replaced,
            transformer: self.transformer,
            name: self.name,
            metrics,
        }
    }
}

impl<T> fmt::Debug for DeltaFifoBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaFifoBuilder")
            .field("name", &self.name)
            .field("known_objects", &self.known.is_some())
            .field("emit_delta_type_replaced", &self.emit_replaced)
            .field("transformer", &self.transformer.is_some())
            .finish_non_exhaustive()
    }
}

impl<T: Object> Default for DeltaFifo<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Object> DeltaFifo<T> {
    /// A queue keyed by `namespace/name`, without known objects, emitting `Sync` on replace.
    #[must_use]
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A builder for the other options.
    pub fn builder() -> DeltaFifoBuilder<T> {
        DeltaFifoBuilder {
            key_func: default_key_func(),
            known: None,
            emit_replaced: false,
            transformer: None,
            name: None,
        }
    }

    /// The queue's name, which labels its [metrics](crate::metrics) (`None`: it records none).
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The deltas queued for `key`, oldest first (a copy of `Arc`s), or `None` if the key is not
    /// queued.
    pub fn deltas_by_key(&self, key: &str) -> Option<Vec<Delta<T>>> {
        self.lock().items.get(key).cloned()
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

    fn record_rv(state: &mut State<T>, obj: &T) {
        if let Some(rv) = obj.resource_version() {
            state.last_rv.note(rv);
        }
    }

    fn add_or_update(&self, obj: Arc<T>, added: bool) -> kcache_store::Result<()> {
        let key = self.key_of(&obj)?;
        let obj = self.transform(obj);
        {
            let mut st = self.lock();
            st.population.mark_populated();
            Self::record_rv(&mut st, &obj);
            st.enqueue(
                key,
                if added {
                    Delta::Added(obj)
                } else {
                    Delta::Updated(obj)
                },
            );
            self.metrics.queued(1, st.queue.len());
            self.life.update_synced(&st.population);
        }
        self.life.wake();
        Ok(())
    }

    /// Takes the head key and processes it; `None` if nothing is queued and the queue is open.
    fn try_pop(&self, process: &mut ProcessFn<'_, T>) -> Option<Result<(), PopError>> {
        let mut st = self.lock();
        loop {
            let Some(key) = st.queue.pop_front() else {
                return self.life.is_closed().then_some(Err(PopError::Closed));
            };
            // I1 makes this always present; skip the key if it ever is not.
            let Some(deltas) = st.items.remove(&key) else {
                continue;
            };
            self.metrics.depth(st.queue.len());
            let in_initial = !self.life.has_synced();
            let result = process(Deltas::new(deltas, in_initial));
            return Some(match result {
                Ok(()) => {
                    st.population.processed(1);
                    self.life.update_synced(&st.population);
                    Ok(())
                }
                Err(ProcessError::Failed(e)) => {
                    st.population.processed(1);
                    self.life.update_synced(&st.population);
                    Err(PopError::Process(e))
                }
                Err(ProcessError::Requeue { deltas, source }) => {
                    // client-go's AddIfNotPresent: newer deltas for the key win.
                    let deltas = deltas.into_vec();
                    if !deltas.is_empty() && !st.items.contains_key(&key) {
                        st.queue.push_back(key.clone());
                        st.items.insert(key, deltas);
                        self.metrics.depth(st.queue.len());
                    }
                    source.map_or(Ok(()), |e| Err(PopError::Process(e)))
                }
            });
        }
    }
}

impl<T: Object> kcache_store::Store<T> for DeltaFifo<T> {
    fn add(&self, obj: Arc<T>) -> kcache_store::Result<()> {
        self.add_or_update(obj, true)
    }

    fn update(&self, obj: Arc<T>) -> kcache_store::Result<()> {
        self.add_or_update(obj, false)
    }

    fn delete(&self, obj: Arc<T>) -> kcache_store::Result<()> {
        let key = self.key_of(&obj)?;
        let mut st = self.lock();
        st.population.mark_populated();
        self.life.update_synced(&st.population);
        let queued = st.items.contains_key(&key);
        let known = match &self.known {
            Some(k) => k.known_object(key.as_str()).is_some(),
            None => false,
        };
        if !queued && !known {
            return Ok(());
        }
        // Transform under the lock: the skip decision and the enqueue must be one step.
        let obj = self.transform(obj);
        Self::record_rv(&mut st, &obj);
        st.enqueue(key, Delta::Deleted(ObjectOrTombstone::Object(obj)));
        self.metrics.queued(1, st.queue.len());
        drop(st);
        self.life.wake();
        Ok(())
    }

    /// Queues a tombstone for `key` with the last state known (queued, else in the known
    /// objects), unless the key is neither queued nor known or its last queued delta is already
    /// a deletion.
    fn delete_key(&self, key: &ObjectKey) -> kcache_store::Result<()> {
        let mut st = self.lock();
        st.population.mark_populated();
        self.life.update_synced(&st.population);
        let last = match st.items.get(key).and_then(|d| d.last()) {
            Some(Delta::Deleted(_)) => return Ok(()),
            Some(d) => d.object().cloned(),
            None => None,
        };
        let last = last.or_else(|| self.known.as_ref()?.known_object(key.as_str()));
        if last.is_none() && !st.items.contains_key(key) {
            return Ok(());
        }
        st.enqueue(
            key.clone(),
            Delta::Deleted(ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
                key: key.clone(),
                obj: last,
            })),
        );
        self.metrics.queued(1, st.queue.len());
        drop(st);
        self.life.wake();
        Ok(())
    }

    fn list(&self) -> Vec<Arc<T>> {
        let st = self.lock();
        st.queue
            .iter()
            .filter_map(|k| st.items.get(k)?.last()?.object().cloned())
            .collect()
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        self.lock().queue.iter().cloned().collect()
    }

    fn get(&self, obj: &T) -> kcache_store::Result<Option<Arc<T>>> {
        let key = self.key_of(obj)?;
        Ok(self.get_by_key(key.as_str()))
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<T>> {
        self.lock().items.get(key)?.last()?.object().cloned()
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
        list: Vec<Arc<T>>,
        resource_version: &str,
    ) -> kcache_store::Result<()> {
        // Every key first: a bad object leaves the queue unchanged.
        let transformed = list
            .into_iter()
            .map(|obj| Ok((self.key_of(&obj)?, obj)))
            .collect::<kcache_store::Result<Vec<_>>>()?;
        let mut st = self.lock();
        let mut listed = HashSet::with_capacity(transformed.len());
        for (key, obj) in transformed {
            listed.insert(key.clone());
            let delta = if self.emit_replaced {
                Delta::Replaced(obj)
            } else {
                Delta::Sync(obj)
            };
            st.enqueue(key, delta);
        }
        // Queued keys the list lacks: deleted while the watch was not looking.
        let missing: Vec<ObjectKey> = st
            .queue
            .iter()
            .filter(|k| !listed.contains(*k))
            .cloned()
            .collect();
        let mut deletions = 0;
        for key in missing {
            let last_state = st
                .items
                .get(&key)
                .and_then(|d| d.last())
                .and_then(|d| d.object().cloned());
            deletions += 1;
            st.enqueue(
                key.clone(),
                Delta::Deleted(ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
                    key,
                    obj: last_state,
                })),
            );
        }
        // Known keys the list lacks and nothing queued for.
        if let Some(known) = &self.known {
            for key in known.known_keys() {
                if listed.contains(&key) || st.items.contains_key(&key) {
                    continue;
                }
                let obj = known.known_object(key.as_str());
                deletions += 1;
                st.enqueue(
                    key.clone(),
                    Delta::Deleted(ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
                        key,
                        obj,
                    })),
                );
            }
        }
        self.metrics
            .queued(listed.len() + deletions, st.queue.len());
        st.population.replaced(listed.len() + deletions);
        st.last_rv.note(resource_version);
        self.life.update_synced(&st.population);
        drop(st);
        self.life.wake();
        Ok(())
    }

    fn resync(&self) -> kcache_store::Result<()> {
        let Some(known) = &self.known else {
            return Ok(());
        };
        let mut st = self.lock();
        let mut queued = 0;
        for key in known.known_keys() {
            // A queued delta is newer than the cache: re-delivering the cached copy would race it.
            if st.items.contains_key(&key) {
                continue;
            }
            if let Some(obj) = known.known_object(key.as_str()) {
                st.enqueue(key, Delta::Sync(obj));
                queued += 1;
            }
        }
        if queued > 0 {
            self.metrics.queued(queued, st.queue.len());
        }
        drop(st);
        if queued > 0 {
            self.life.wake();
        }
        Ok(())
    }

    fn bookmark(&self, resource_version: &str) {
        self.lock().last_rv.note(resource_version);
    }

    fn update_resource_version(&self, resource_version: &str) {
        self.lock().last_rv.note(resource_version);
    }

    fn last_sync_resource_version(&self) -> Option<String> {
        self.lock().last_rv.get().map(str::to_owned)
    }

    fn len(&self) -> usize {
        self.lock().queue.len()
    }
}

impl<T: Object> Queue<T> for DeltaFifo<T> {
    fn pop<'a>(&'a self, process: &'a mut ProcessFn<'a, T>) -> PopFuture<'a> {
        Box::pin(self.life.pop_with(move || self.try_pop(process)))
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

impl<T> fmt::Debug for DeltaFifo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `try_lock`: Debug may be called from a process function, under the lock.
        let len = self.state.try_lock().ok().map(|st| st.queue.len());
        f.debug_struct("DeltaFifo")
            .field("name", &self.name)
            .field("len", &len)
            .field("known_objects", &self.known.is_some())
            .field("emit_delta_type_replaced", &self.emit_replaced)
            .field("closed", &self.life.is_closed())
            .field("synced", &self.life.has_synced())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcache_store::DynamicObject;

    fn live(rv: &str) -> Delta<DynamicObject> {
        let mut o = DynamicObject::new(Some("ns"), "a");
        o.metadata.resource_version = Some(rv.to_owned());
        Delta::Deleted(ObjectOrTombstone::Object(Arc::new(o)))
    }

    fn tombstone() -> Delta<DynamicObject> {
        Delta::Deleted(ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
            key: ObjectKey::explicit("ns/a"),
            obj: None,
        }))
    }

    fn rvs(d: &[Delta<DynamicObject>]) -> Vec<Option<&str>> {
        d.iter()
            .map(|d| d.object().and_then(|o| o.resource_version()))
            .collect()
    }

    #[test]
    fn dedup_keeps_the_older_real_delete() {
        let mut d = vec![live("1"), live("2")];
        dedup_deletes(&mut d);
        assert_eq!(rvs(&d), [Some("1")]);
    }

    #[test]
    fn dedup_replaces_a_tombstone_with_a_real_delete() {
        let mut d = vec![tombstone(), live("2")];
        dedup_deletes(&mut d);
        assert_eq!(rvs(&d), [Some("2")]);
        let mut d = vec![live("1"), tombstone()];
        dedup_deletes(&mut d);
        assert_eq!(rvs(&d), [Some("1")]);
        assert!(!d[0].is_tombstone());
    }

    #[test]
    fn dedup_leaves_other_pairs_alone() {
        let o = Arc::new(DynamicObject::new(Some("ns"), "a"));
        let mut d = vec![live("1"), Delta::Added(o), live("3")];
        dedup_deletes(&mut d);
        assert_eq!(d.len(), 3);
    }
}
