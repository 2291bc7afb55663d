//! The model of `DeltaFifo`: keys in queue order, each with its deltas; adjacent deletes merge,
//! and a relist reports what vanished (from the queue or the known objects) as tombstones.

use kcache_queue::DeltaType;

use super::{KnownSnapshot, ModelDelta, ModelObject, ModelPop, QueueModel, SyncState, pop_keyed};

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

    /// The deltas queued for `key`.
    #[must_use]
    pub fn deltas(&self, key: &str) -> Option<&[ModelDelta]> {
        self.position(key).map(|i| &*self.entries[i].1)
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.entries.iter().position(|(k, _)| k == key)
    }

    /// Appends `delta` to its key's deltas (a new key goes last). Two deletes in a row merge:
    /// the newer replaces the older only if that one is a tombstone.
    fn enqueue(&mut self, delta: ModelDelta) {
        let Some(i) = self.position(&delta.key) else {
            self.entries.push((delta.key.clone(), vec![delta]));
            return;
        };
        let deltas = &mut self.entries[i].1;
        match deltas.last_mut() {
            Some(last) if last.kind == DeltaType::Deleted && delta.kind == DeltaType::Deleted => {
                if last.tombstone {
                    *last = delta;
                }
            }
            _ => deltas.push(delta),
        }
    }
}

impl QueueModel for DeltaFifoModel {
    /// A delete is queued only for a key that is queued or known.
    fn write(&mut self, kind: DeltaType, key: &str, rv: &str, known: Option<&KnownSnapshot>) {
        self.sync.populate();
        let is_known = || known.is_some_and(|k| k.iter().any(|(kk, _)| kk == key));
        if kind != DeltaType::Deleted || self.position(key).is_some() || is_known() {
            self.transforms += 1;
            self.enqueue(ModelDelta::single(kind, key, Some(rv)));
        }
    }

    fn replace(&mut self, list: &[ModelObject], _rv: &str, known: Option<&KnownSnapshot>) {
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
        let missing: Vec<ModelObject> = self
            .entries
            .iter()
            .filter(|(k, _)| !listed.contains(&k.as_str()))
            .map(|(k, d)| (k.clone(), d.last().and_then(|d| d.resource_version.clone())))
            .collect();
        let mut deletions = missing.len();
        for (key, rv) in missing {
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

    fn resync(&mut self, known: Option<&KnownSnapshot>) {
        for (key, rv) in known.into_iter().flatten() {
            if self.position(key).is_none() {
                self.enqueue(ModelDelta::single(DeltaType::Sync, key, rv.as_deref()));
            }
        }
    }

    /// Queues nothing: only the queue's last synced resource version moves.
    fn bookmark(&mut self, _rv: &str) {}

    /// Pops one key's deltas, whatever the batch size.
    fn pop(&mut self, _batch: usize, requeue: bool, _: Option<&KnownSnapshot>) -> Option<ModelPop> {
        pop_keyed(&mut self.entries, &mut self.sync, requeue)
    }

    fn keys(&self) -> Option<Vec<&str>> {
        Some(self.entries.iter().map(|(k, _)| k.as_str()).collect())
    }

    fn newest(&self, key: &str) -> Option<Option<String>> {
        let deltas = self.deltas(key)?;
        Some(deltas.last().and_then(|d| d.resource_version.clone()))
    }

    fn transforms(&self) -> Option<usize> {
        Some(self.transforms)
    }

    lifecycle!();
}
