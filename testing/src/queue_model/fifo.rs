//! The model of `Fifo`: keys in queue order, each with its latest write; a delete drops the key
//! and a relist replaces everything.

use kcache_queue::DeltaType;

use super::{KnownSnapshot, ModelDelta, ModelObject, ModelPop, QueueModel, SyncState, pop_keyed};

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
}

/// A `Fifo` has no known objects: every `known` is ignored.
impl QueueModel for FifoModel {
    fn write(&mut self, kind: DeltaType, key: &str, rv: &str, _: Option<&KnownSnapshot>) {
        self.sync.populate();
        if kind == DeltaType::Deleted {
            self.entries.retain(|(k, _)| k != key);
        } else {
            self.put(ModelDelta::single(kind, key, Some(rv)));
        }
    }

    fn replace(&mut self, list: &[ModelObject], _rv: &str, _: Option<&KnownSnapshot>) {
        self.entries.clear();
        for (key, rv) in list {
            self.put(ModelDelta::single(DeltaType::Replaced, key, rv.as_deref()));
        }
        self.sync.replaced(self.entries.len());
    }

    /// Does nothing: a `Fifo` has nothing to re-deliver.
    fn resync(&mut self, _: Option<&KnownSnapshot>) {}

    /// Queues nothing.
    fn bookmark(&mut self, _rv: &str) {}

    /// Pops one key's latest write, whatever the batch size.
    fn pop(&mut self, _batch: usize, requeue: bool, _: Option<&KnownSnapshot>) -> Option<ModelPop> {
        let (delta, in_initial) = pop_keyed(&mut self.entries, &mut self.sync, requeue)?;
        Some((vec![delta], in_initial))
    }

    fn keys(&self) -> Option<Vec<&str>> {
        Some(self.entries.iter().map(|(k, _)| k.as_str()).collect())
    }

    fn newest(&self, key: &str) -> Option<Option<String>> {
        let (_, latest) = self.entries.iter().find(|(k, _)| k == key)?;
        Some(latest.resource_version.clone())
    }

    lifecycle!();
}
