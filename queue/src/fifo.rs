//! [`Fifo`]: the latest object per key, keys in the order they were first queued.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kcache_store::{KeyFunc, LastResourceVersion, Object, ObjectKey, default_key_func};

use crate::lifecycle::{Lifecycle, Population};
use crate::metrics::QueueMetrics;
use crate::{Delta, Deltas, PopError, PopFuture, ProcessError, ProcessFn, Queue};

/// client-go's `FIFO`: only the latest object of each key is kept, and keys pop in the order
/// they were first queued since they last popped.
///
/// Each pop hands over one delta with the latest object; its type is that of the latest write
/// (`Added`, `Updated`, or `Replaced` for a `replace`). `delete` forgets a queued key; `replace`
/// swaps the whole content for the list, in list order; `resync` does nothing. With a
/// [name](FifoBuilder::name) it records its depth (keys) and the writes it queues
/// ([metrics](crate::metrics)).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use kcache_queue::{Fifo, Queue};
/// use kcache_store::{DynamicObject, Object, Store};
///
/// let fifo = Fifo::<DynamicObject>::new();
/// let mut v1 = DynamicObject::new(Some("ns"), "a");
/// v1.metadata.resource_version = Some("1".into());
/// let mut v2 = v1.clone();
/// v2.metadata.resource_version = Some("2".into());
/// fifo.add(Arc::new(v1))?;
/// fifo.update(Arc::new(v2))?;
/// fifo.pop(&mut |deltas| {
///     assert_eq!(deltas.len(), 1);
///     assert_eq!(deltas[0].object().and_then(|o| o.resource_version()), Some("2"));
///     Ok(())
/// }).await?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct Fifo<T> {
    state: Mutex<State<T>>,
    life: Lifecycle,
    key_func: KeyFunc<T>,
    name: Option<String>,
    metrics: QueueMetrics,
}

/// Builds a [`Fifo`]: its key function and name.
#[must_use]
pub struct FifoBuilder<T> {
    key_func: KeyFunc<T>,
    name: Option<String>,
}

impl<T: Object> FifoBuilder<T> {
    /// The key function (default: `namespace/name`).
    pub fn key_func(mut self, key_func: KeyFunc<T>) -> Self {
        self.key_func = key_func;
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
    pub fn build(self) -> Fifo<T> {
        let metrics = QueueMetrics::new(self.name.as_deref());
        Fifo {
            state: Mutex::new(State {
                items: HashMap::new(),
                queue: VecDeque::new(),
                next_seq: 0,
                population: Population::default(),
                last_rv: LastResourceVersion::new(),
            }),
            life: Lifecycle::new(),
            key_func: self.key_func,
            name: self.name,
            metrics,
        }
    }
}

impl<T> fmt::Debug for FifoBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FifoBuilder")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

struct State<T> {
    /// key -> (sequence number of its queue entry, latest delta).
    items: HashMap<ObjectKey, (u64, Delta<T>)>,
    /// Queue entries; an entry is stale (skipped) when its sequence number is not the item's.
    queue: VecDeque<(u64, ObjectKey)>,
    next_seq: u64,
    population: Population,
    last_rv: LastResourceVersion,
}

impl<T> State<T> {
    fn put(&mut self, key: ObjectKey, delta: Delta<T>) {
        if let Some(slot) = self.items.get_mut(&key) {
            slot.1 = delta;
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.queue.push_back((seq, key.clone()));
        self.items.insert(key, (seq, delta));
    }

    fn is_live(&self, seq: u64, key: &ObjectKey) -> bool {
        self.items.get(key).is_some_and(|(s, _)| *s == seq)
    }

    /// Drops stale entries once they outnumber live ones.
    fn compact(&mut self) {
        if self.queue.len() > 2 * self.items.len() + 64 {
            let items = &self.items;
            self.queue
                .retain(|(seq, key)| items.get(key).is_some_and(|(s, _)| s == seq));
        }
    }

    fn live_keys(&self) -> impl Iterator<Item = &ObjectKey> + '_ {
        self.queue
            .iter()
            .filter(|(seq, key)| self.is_live(*seq, key))
            .map(|(_, key)| key)
    }
}

impl<T: Object> Default for Fifo<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Object> Fifo<T> {
    /// A queue keyed by `namespace/name`.
    #[must_use]
    pub fn new() -> Self {
        Self::with_key_func(default_key_func())
    }

    /// A queue with a custom key function.
    #[must_use]
    pub fn with_key_func(key_func: KeyFunc<T>) -> Self {
        Self::builder().key_func(key_func).build()
    }

    /// A builder for the other options (the key function, a name).
    pub fn builder() -> FifoBuilder<T> {
        FifoBuilder {
            key_func: default_key_func(),
            name: None,
        }
    }

    /// The queue's name, which labels its [metrics](crate::metrics) (`None`: it records none).
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn key_of(&self, obj: &T) -> kcache_store::Result<ObjectKey> {
        Ok((self.key_func)(obj)?)
    }

    fn write(&self, obj: Arc<T>, added: bool) -> kcache_store::Result<()> {
        let key = self.key_of(&obj)?;
        let mut st = self.lock();
        st.population.mark_populated();
        if let Some(rv) = obj.resource_version() {
            st.last_rv.note(rv);
        }
        st.put(
            key,
            if added {
                Delta::Added(obj)
            } else {
                Delta::Updated(obj)
            },
        );
        self.metrics.queued(1, st.items.len());
        self.life.update_synced(&st.population);
        drop(st);
        self.life.wake();
        Ok(())
    }

    fn try_pop(&self, process: &mut ProcessFn<'_, T>) -> Option<Result<(), PopError>> {
        let mut st = self.lock();
        loop {
            let Some((seq, key)) = st.queue.pop_front() else {
                return self.life.is_closed().then_some(Err(PopError::Closed));
            };
            if !st.is_live(seq, &key) {
                continue;
            }
            let Some((_, delta)) = st.items.remove(&key) else {
                continue;
            };
            self.metrics.depth(st.items.len());
            let in_initial = !self.life.has_synced();
            let result = process(Deltas::new(vec![delta], in_initial));
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
                    if !st.items.contains_key(&key)
                        && let Some(delta) = deltas.into_vec().pop()
                    {
                        st.put(key, delta);
                        self.metrics.depth(st.items.len());
                    }
                    source.map_or(Ok(()), |e| Err(PopError::Process(e)))
                }
            });
        }
    }
}

impl<T: Object> kcache_store::Store<T> for Fifo<T> {
    fn add(&self, obj: Arc<T>) -> kcache_store::Result<()> {
        self.write(obj, true)
    }

    fn update(&self, obj: Arc<T>) -> kcache_store::Result<()> {
        self.write(obj, false)
    }

    fn delete(&self, obj: Arc<T>) -> kcache_store::Result<()> {
        let key = self.key_of(&obj)?;
        let mut st = self.lock();
        st.population.mark_populated();
        st.items.remove(&key);
        self.metrics.depth(st.items.len());
        st.compact();
        self.life.update_synced(&st.population);
        Ok(())
    }

    fn list(&self) -> Vec<Arc<T>> {
        let st = self.lock();
        st.live_keys()
            .filter_map(|k| st.items.get(k)?.1.object().cloned())
            .collect()
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        self.lock().live_keys().cloned().collect()
    }

    fn get(&self, obj: &T) -> kcache_store::Result<Option<Arc<T>>> {
        let key = self.key_of(obj)?;
        Ok(self.get_by_key(key.as_str()))
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<T>> {
        self.lock().items.get(key)?.1.object().cloned()
    }

    fn replace(&self, list: Vec<Arc<T>>, resource_version: &str) -> kcache_store::Result<()> {
        let keyed = list
            .into_iter()
            .map(|obj| Ok((self.key_of(&obj)?, obj)))
            .collect::<kcache_store::Result<Vec<_>>>()?;
        let mut st = self.lock();
        st.items.clear();
        st.queue.clear();
        for (key, obj) in keyed {
            st.put(key, Delta::Replaced(obj));
        }
        let distinct = st.items.len();
        self.metrics.queued(distinct, distinct);
        st.population.replaced(distinct);
        st.last_rv.note(resource_version);
        self.life.update_synced(&st.population);
        drop(st);
        self.life.wake();
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
        self.lock().items.len()
    }
}

impl<T: Object> Queue<T> for Fifo<T> {
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

impl<T> fmt::Debug for Fifo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `try_lock`: Debug may be called from a process function, under the lock.
        let len = self.state.try_lock().ok().map(|st| st.items.len());
        f.debug_struct("Fifo")
            .field("name", &self.name)
            .field("len", &len)
            .field("closed", &self.life.is_closed())
            .field("synced", &self.life.has_synced())
            .finish_non_exhaustive()
    }
}
