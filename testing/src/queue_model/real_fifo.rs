//! The model of `RealFifo`: every delta, in order; a relist is one `ReplacedAll`, a resync one
//! `SyncAll` filled at pop time, and a batched pop takes consecutive single-object deltas of
//! distinct keys, never past the end of the initial list (client-go's `PopBatch`).

use std::collections::VecDeque;

use kcache_queue::DeltaType;

use super::{KnownSnapshot, ModelDelta, ModelObject, ModelPop, QueueModel, SyncState};

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

    /// The queued deltas, oldest first.
    #[must_use]
    pub fn deltas(&self) -> Vec<ModelDelta> {
        self.items.iter().cloned().collect()
    }
}

impl QueueModel for RealFifoModel {
    fn write(&mut self, kind: DeltaType, key: &str, rv: &str, _: Option<&KnownSnapshot>) {
        self.sync.populate();
        self.transforms += 1;
        self.items
            .push_back(ModelDelta::single(kind, key, Some(rv)));
    }

    fn replace(&mut self, list: &[ModelObject], rv: &str, _: Option<&KnownSnapshot>) {
        self.transforms += list.len();
        self.items.push_back(ModelDelta::whole(
            DeltaType::ReplacedAll,
            Some(rv.to_owned()),
            list.to_vec(),
        ));
        self.sync.replaced(self.items.len());
    }

    /// Queues an empty `SyncAll`: the pop fills it from the known objects of its moment.
    fn resync(&mut self, _: Option<&KnownSnapshot>) {
        self.items
            .push_back(ModelDelta::whole(DeltaType::SyncAll, None, Vec::new()));
    }

    fn bookmark(&mut self, rv: &str) {
        self.items.push_back(ModelDelta::whole(
            DeltaType::Bookmark,
            Some(rv.to_owned()),
            Vec::new(),
        ));
    }

    /// A pop of up to `batch` consecutive single-object deltas, or of one whole-queue delta; a
    /// `SyncAll` is filled from `known`. As client-go's `PopBatch`, a batch stops before a
    /// whole-queue delta, before a key it already holds, before a delta without a key (one
    /// at the head is popped alone), and at the end of the initial list (never taking more
    /// than the initial items left).
    fn pop(
        &mut self,
        batch: usize,
        requeue: bool,
        known: Option<&KnownSnapshot>,
    ) -> Option<ModelPop> {
        let mut first = self.items.pop_front()?;
        let mut popped = Vec::new();
        if first.is_single_object() {
            let limit = match self.sync.initial {
                _ if first.key.is_empty() => 1,
                0 => batch.max(1),
                n => batch.max(1).min(n),
            };
            popped.push(first);
            while popped.len() < limit
                && self.items.front().is_some_and(|d| {
                    d.is_single_object()
                        && !d.key.is_empty()
                        && popped.iter().all(|p: &ModelDelta| p.key != d.key)
                })
                && let Some(d) = self.items.pop_front()
            {
                popped.push(d);
            }
        } else {
            if first.kind == DeltaType::SyncAll {
                first.objects = known.cloned().unwrap_or_default();
            }
            popped.push(first);
        }
        let in_initial = !self.sync.synced;
        if requeue {
            for d in popped.iter().rev() {
                self.items.push_front(d.clone());
            }
        } else {
            self.sync.processed(popped.len());
        }
        Some((popped, in_initial))
    }

    lifecycle!();

    /// How many deltas are queued.
    fn len(&self) -> usize {
        self.items.len()
    }

    fn transforms(&self) -> Option<usize> {
        Some(self.transforms)
    }
}
