//! Reference models of the queues: plain ordered maps of deltas per key, written for clarity,
//! not speed, straight from client-go's rules.
//!
//! A model works on [`ModelDelta`]s, projections of real deltas onto keys and resource versions,
//! so a queue's output can be compared with the model's exactly.

use std::collections::VecDeque;
use std::sync::Arc;

use kcache_queue::{Delta, DeltaType};
use kcache_store::{KnownObjects, Object, ObjectOrTombstone, deletion_handling_key};

/// A `(key, resource version)` pair: an object as the models see it.
pub type ModelObject = (String, Option<String>);

/// The known objects at one moment, in the order their `known_keys` lists them.
pub type KnownSnapshot = Vec<ModelObject>;

/// A [`Delta`] reduced to what the models track.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelDelta {
    /// The delta's type.
    pub kind: DeltaType,
    /// The object's key (empty for `ReplacedAll`, `SyncAll` and `Bookmark`).
    pub key: String,
    /// The object's resource version (`None` for a tombstone without a last state); the list's
    /// or bookmark's resource version for `ReplacedAll` and `Bookmark`.
    pub resource_version: Option<String>,
    /// Whether this is a tombstone.
    pub tombstone: bool,
    /// The objects of `ReplacedAll` and `SyncAll`, in order.
    pub objects: Vec<ModelObject>,
}

impl ModelDelta {
    /// A single-object delta.
    #[must_use]
    pub fn single(kind: DeltaType, key: &str, resource_version: Option<&str>) -> Self {
        Self {
            kind,
            key: key.to_owned(),
            resource_version: resource_version.map(str::to_owned),
            tombstone: false,
            objects: Vec::new(),
        }
    }

    /// A tombstone for `key` with the last known resource version.
    #[must_use]
    pub fn tombstone(key: &str, resource_version: Option<&str>) -> Self {
        Self {
            tombstone: true,
            ..Self::single(DeltaType::Deleted, key, resource_version)
        }
    }

    /// A whole-queue delta (`ReplacedAll`, `SyncAll` or `Bookmark`): no key, not a tombstone.
    fn whole(kind: DeltaType, resource_version: Option<String>, objects: Vec<ModelObject>) -> Self {
        Self {
            kind,
            key: String::new(),
            resource_version,
            tombstone: false,
            objects,
        }
    }

    /// The projection of a real delta; keys are computed with `namespace/name`.
    #[must_use]
    pub fn of<T: Object>(delta: &Delta<T>) -> Self {
        let rv = |o: &Arc<T>| o.resource_version().map(str::to_owned);
        let objects = |list: &[Arc<T>]| -> Vec<ModelObject> {
            list.iter().map(|o| (key_of(&**o), rv(o))).collect()
        };
        match delta {
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => Self {
                kind: delta.kind(),
                key: key_of(&**o),
                resource_version: rv(o),
                tombstone: false,
                objects: Vec::new(),
            },
            Delta::Deleted(d) => Self {
                kind: DeltaType::Deleted,
                key: deletion_handling_key(d)
                    .map(|k| k.to_string())
                    .unwrap_or_default(),
                resource_version: d.object().and_then(rv),
                tombstone: matches!(d, ObjectOrTombstone::Tombstone(_)),
                objects: Vec::new(),
            },
            Delta::ReplacedAll {
                objects: list,
                resource_version,
            } => Self::whole(
                DeltaType::ReplacedAll,
                Some(resource_version.clone()),
                objects(list),
            ),
            Delta::SyncAll { objects: list } => {
                Self::whole(DeltaType::SyncAll, None, objects(list))
            }
            Delta::Bookmark { resource_version } => Self::whole(
                DeltaType::Bookmark,
                Some(resource_version.clone()),
                Vec::new(),
            ),
        }
    }

    fn is_single_object(&self) -> bool {
        !matches!(
            self.kind,
            DeltaType::ReplacedAll | DeltaType::SyncAll | DeltaType::Bookmark
        )
    }
}

fn key_of<T: Object>(obj: &T) -> String {
    kcache_store::meta_namespace_key(obj)
        .map(|k| k.to_string())
        .unwrap_or_default()
}

/// The known objects of `known`, as the models see them, in `known_keys` order.
pub fn known_snapshot<T: Object, K: KnownObjects<T> + ?Sized>(known: &K) -> KnownSnapshot {
    known
        .known_keys()
        .iter()
        .filter_map(|k| {
            let obj = known.known_object(k.as_str())?;
            Some((k.to_string(), obj.resource_version().map(str::to_owned)))
        })
        .collect()
}

/// client-go's `populated`, `initialPopulationCount` and the latched `synced`, with the count
/// decremented after processing.
#[derive(Debug, Clone, Default)]
struct SyncState {
    populated: bool,
    initial: usize,
    synced: bool,
}

impl SyncState {
    fn populate(&mut self) {
        self.populated = true;
        self.check();
    }
    fn replaced(&mut self, n: usize) {
        if !self.populated {
            self.populated = true;
            self.initial = n;
        }
        self.check();
    }
    fn processed(&mut self, n: usize) {
        self.initial = self.initial.saturating_sub(n);
        self.check();
    }
    fn check(&mut self) {
        self.synced |= self.populated && self.initial == 0;
    }
}

/// What a model pop produced: the deltas and whether they were in the initial list.
pub type ModelPop = (Vec<ModelDelta>, bool);

/// The pop of a keyed queue: takes the first entry and, with `requeue`, puts it back at the end
/// unless its key was queued again meanwhile; else counts it as processed. Returns the entry's
/// value and whether it was in the initial list; `None` when nothing is queued.
fn pop_keyed<D: Clone>(
    entries: &mut Vec<(String, D)>,
    sync: &mut SyncState,
    requeue: bool,
) -> Option<(D, bool)> {
    if entries.is_empty() {
        return None;
    }
    let (key, value) = entries.remove(0);
    let in_initial = !sync.synced;
    if requeue {
        if entries.iter().all(|(k, _)| *k != key) {
            entries.push((key, value.clone()));
        }
    } else {
        sync.processed(1);
    }
    Some((value, in_initial))
}

/// The model of `DeltaFifo`: keys in queue order, each with its deltas.
#[derive(Debug, Clone, Default)]
pub struct DeltaFifoModel {
    entries: Vec<(String, Vec<ModelDelta>)>,
    emit_replaced: bool,
    sync: SyncState,
    closed: bool,
    transforms: usize,
}

impl DeltaFifoModel {
    /// An empty model; `emit_replaced` as the queue's option.
    #[must_use]
    pub fn new(emit_replaced: bool) -> Self {
        Self {
            emit_replaced,
            ..Self::default()
        }
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.entries.iter().position(|(k, _)| k == key)
    }

    fn enqueue(&mut self, delta: ModelDelta) {
        if let Some(i) = self.position(&delta.key) {
            let deltas = &mut self.entries[i].1;
            deltas.push(delta);
            let n = deltas.len();
            if n >= 2
                && deltas[n - 1].kind == DeltaType::Deleted
                && deltas[n - 2].kind == DeltaType::Deleted
            {
                let newer = deltas.pop();
                if deltas[n - 2].tombstone
                    && let Some(newer) = newer
                {
                    deltas[n - 2] = newer;
                }
            }
        } else {
            self.entries.push((delta.key.clone(), vec![delta]));
        }
    }

    /// `add` (`added`) or `update` of the object `key` at `rv`.
    pub fn add(&mut self, key: &str, rv: &str, added: bool) {
        self.sync.populate();
        self.transforms += 1;
        let kind = if added {
            DeltaType::Added
        } else {
            DeltaType::Updated
        };
        self.enqueue(ModelDelta::single(kind, key, Some(rv)));
    }

    /// `delete` of the object `key` at `rv`, with the known objects if the queue has them.
    pub fn delete(&mut self, key: &str, rv: &str, known: Option<&KnownSnapshot>) {
        self.sync.populate();
        let queued = self.position(key).is_some();
        let is_known = known.is_some_and(|k| k.iter().any(|(kk, _)| kk == key));
        if queued || is_known {
            self.transforms += 1;
            self.enqueue(ModelDelta::single(DeltaType::Deleted, key, Some(rv)));
        }
    }

    /// `replace` with `list`, with the known objects if the queue has them.
    pub fn replace(&mut self, list: &[ModelObject], known: Option<&KnownSnapshot>) {
        let kind = if self.emit_replaced {
            DeltaType::Replaced
        } else {
            DeltaType::Sync
        };
        let mut listed: Vec<&str> = Vec::new();
        for (key, rv) in list {
            self.transforms += 1;
            if !listed.contains(&key.as_str()) {
                listed.push(key);
            }
            self.enqueue(ModelDelta::single(kind, key, rv.as_deref()));
        }
        let mut deletions = 0;
        let missing: Vec<(String, Option<String>)> = self
            .entries
            .iter()
            .filter(|(k, _)| !listed.contains(&k.as_str()))
            .map(|(k, d)| {
                let last_state = d.last().and_then(|d| d.resource_version.clone());
                (k.clone(), last_state)
            })
            .collect();
        for (key, rv) in missing {
            deletions += 1;
            self.enqueue(ModelDelta::tombstone(&key, rv.as_deref()));
        }
        for (key, rv) in known.into_iter().flatten() {
            if listed.contains(&key.as_str()) || self.position(key).is_some() {
                continue;
            }
            deletions += 1;
            self.enqueue(ModelDelta::tombstone(key, rv.as_deref()));
        }
        self.sync.replaced(listed.len() + deletions);
    }

    /// `resync` with the known objects if the queue has them.
    pub fn resync(&mut self, known: Option<&KnownSnapshot>) {
        for (key, rv) in known.into_iter().flatten() {
            if self.position(key).is_none() {
                self.enqueue(ModelDelta::single(DeltaType::Sync, key, rv.as_deref()));
            }
        }
    }

    /// A pop; `requeue` as the process function's answer. `None` when nothing is queued.
    pub fn pop(&mut self, requeue: bool) -> Option<ModelPop> {
        pop_keyed(&mut self.entries, &mut self.sync, requeue)
    }

    /// `close`.
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// Whether the queue has synced.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.sync.synced
    }

    /// Whether the queue is closed.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The queued keys, in order.
    #[must_use]
    pub fn keys(&self) -> Vec<&str> {
        self.entries.iter().map(|(k, _)| k.as_str()).collect()
    }

    /// The deltas queued for `key`.
    #[must_use]
    pub fn deltas(&self, key: &str) -> Option<&[ModelDelta]> {
        self.position(key).map(|i| &*self.entries[i].1)
    }

    /// The resource version of the newest object queued for `key` (`Some(None)` when its newest
    /// delta is a tombstone without a state).
    #[must_use]
    pub fn newest(&self, key: &str) -> Option<Option<String>> {
        let deltas = self.deltas(key)?;
        Some(deltas.last().and_then(|d| d.resource_version.clone()))
    }

    /// How many times the transformer ran.
    #[must_use]
    pub fn transforms(&self) -> usize {
        self.transforms
    }
}

/// The model of `Fifo`: keys in queue order, each with its latest write.
#[derive(Debug, Clone, Default)]
pub struct FifoModel {
    entries: Vec<(String, ModelDelta)>,
    sync: SyncState,
    closed: bool,
}

impl FifoModel {
    /// An empty model.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn put(&mut self, delta: ModelDelta) {
        if let Some(slot) = self.entries.iter_mut().find(|(k, _)| *k == delta.key) {
            slot.1 = delta;
        } else {
            self.entries.push((delta.key.clone(), delta));
        }
    }

    /// `add` (`added`) or `update` of `key` at `rv`.
    pub fn add(&mut self, key: &str, rv: &str, added: bool) {
        self.sync.populate();
        let kind = if added {
            DeltaType::Added
        } else {
            DeltaType::Updated
        };
        self.put(ModelDelta::single(kind, key, Some(rv)));
    }

    /// `delete` of `key`.
    pub fn delete(&mut self, key: &str) {
        self.sync.populate();
        self.entries.retain(|(k, _)| k != key);
    }

    /// `replace` with `list`.
    pub fn replace(&mut self, list: &[ModelObject]) {
        self.entries.clear();
        for (key, rv) in list {
            self.put(ModelDelta::single(DeltaType::Replaced, key, rv.as_deref()));
        }
        self.sync.replaced(self.entries.len());
    }

    /// A pop; `requeue` as the process function's answer.
    pub fn pop(&mut self, requeue: bool) -> Option<ModelPop> {
        let (delta, in_initial) = pop_keyed(&mut self.entries, &mut self.sync, requeue)?;
        Some((vec![delta], in_initial))
    }

    /// `close`.
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// Whether the queue has synced.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.sync.synced
    }

    /// Whether the queue is closed.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The queued keys, in order.
    #[must_use]
    pub fn keys(&self) -> Vec<&str> {
        self.entries.iter().map(|(k, _)| k.as_str()).collect()
    }

    /// The resource version of the latest object of `key`.
    #[must_use]
    pub fn newest(&self, key: &str) -> Option<Option<String>> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, d)| d.resource_version.clone())
    }
}

/// The model of `RealFifo`: every delta, in order.
#[derive(Debug, Clone, Default)]
pub struct RealFifoModel {
    items: VecDeque<ModelDelta>,
    sync: SyncState,
    closed: bool,
    transforms: usize,
}

impl RealFifoModel {
    /// An empty model.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// `add`, `update` or `delete` (`kind`) of `key` at `rv`.
    pub fn write(&mut self, kind: DeltaType, key: &str, rv: &str) {
        self.sync.populate();
        self.transforms += 1;
        self.items
            .push_back(ModelDelta::single(kind, key, Some(rv)));
    }

    /// `replace` with `list` at `rv`.
    pub fn replace(&mut self, list: &[ModelObject], rv: &str) {
        self.transforms += list.len();
        self.items.push_back(ModelDelta::whole(
            DeltaType::ReplacedAll,
            Some(rv.to_owned()),
            list.to_vec(),
        ));
        self.sync.replaced(self.items.len());
    }

    /// `resync`.
    pub fn resync(&mut self) {
        self.items
            .push_back(ModelDelta::whole(DeltaType::SyncAll, None, Vec::new()));
    }

    /// `bookmark` at `rv`.
    pub fn bookmark(&mut self, rv: &str) {
        self.items.push_back(ModelDelta::whole(
            DeltaType::Bookmark,
            Some(rv.to_owned()),
            Vec::new(),
        ));
    }

    /// A pop of up to `max` deltas; a `SyncAll` is filled from `known` (the known objects at
    /// the moment of the pop, if the queue has them).
    pub fn pop(
        &mut self,
        max: usize,
        requeue: bool,
        known: Option<&KnownSnapshot>,
    ) -> Option<ModelPop> {
        let mut first = self.items.pop_front()?;
        let mut batch = Vec::new();
        if first.is_single_object() {
            batch.push(first);
            let limit = match self.sync.initial {
                0 => max.max(1),
                n => max.max(1).min(n),
            };
            while batch.len() < limit
                && self.items.front().is_some_and(ModelDelta::is_single_object)
                && let Some(d) = self.items.pop_front()
            {
                batch.push(d);
            }
        } else {
            if first.kind == DeltaType::SyncAll {
                first.objects = known.cloned().unwrap_or_default();
            }
            batch.push(first);
        }
        let in_initial = !self.sync.synced;
        if requeue {
            for d in batch.iter().rev() {
                self.items.push_front(d.clone());
            }
        } else {
            self.sync.processed(batch.len());
        }
        Some((batch, in_initial))
    }

    /// `close`.
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// Whether the queue has synced.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.sync.synced
    }

    /// Whether the queue is closed.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// How many deltas are queued.
    #[must_use]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// The queued deltas, oldest first.
    #[must_use]
    pub fn deltas(&self) -> Vec<ModelDelta> {
        self.items.iter().cloned().collect()
    }

    /// Whether nothing is queued.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// How many times the transformer ran.
    #[must_use]
    pub fn transforms(&self) -> usize {
        self.transforms
    }
}
