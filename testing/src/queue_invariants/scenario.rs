//! The scenarios: [`QueueOp`], one step against a simulated API server ([`World`]) and the
//! queue fed by its watch, and the proptest strategies that draw them.

use std::collections::BTreeMap;
use std::sync::Arc;

use kcache_store::{DynamicObject, Object};
use proptest::prelude::*;

use crate::queue_model::ModelObject;

/// How many distinct object names the operations use.
const NAMES: usize = 6;

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
    /// A relist as a reflector does it: each object through `transform_incoming` as it
    /// arrives, then `replace_transformed`; the transformer still runs once per object.
    StreamedRelist,
    /// `update_resource_version` with a new resource version: nothing is queued, and the
    /// queue's last synced resource version is the new one.
    ReachVersion,
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
        1 => Just(QueueOp::StreamedRelist),
        1 => Just(QueueOp::ReachVersion),
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

/// The simulated API server.
#[derive(Default)]
pub(super) struct World {
    /// The server's objects, by key.
    pub(super) server: BTreeMap<String, Arc<DynamicObject>>,
    rv: u64,
}

impl World {
    /// The next resource version.
    pub(super) fn bump(&mut self) -> String {
        self.rv += 1;
        self.rv.to_string()
    }

    /// A new version of object `n`, stored on the server.
    pub(super) fn write(&mut self, n: usize) -> Arc<DynamicObject> {
        let o = self.fresh(n);
        self.server.insert(key(n), Arc::clone(&o));
        o
    }

    /// Removes object `n` from the server; its last state, or a fresh object if it never was.
    pub(super) fn remove(&mut self, n: usize) -> Arc<DynamicObject> {
        self.server.remove(&key(n)).unwrap_or_else(|| self.fresh(n))
    }

    /// Object `n` at the next resource version.
    fn fresh(&mut self, n: usize) -> Arc<DynamicObject> {
        let mut o = DynamicObject::new(Some("ns"), &format!("o{n}"));
        o.metadata.resource_version = Some(self.bump());
        Arc::new(o)
    }

    /// The server's objects, in key order.
    pub(super) fn list(&self) -> Vec<Arc<DynamicObject>> {
        self.server.values().cloned().collect()
    }

    /// The server's objects as the models see them, in key order.
    pub(super) fn model_list(&self) -> Vec<ModelObject> {
        self.server
            .iter()
            .map(|(k, o)| (k.clone(), rv(o)))
            .collect()
    }
}

/// The key of object `n`.
pub(super) fn key(n: usize) -> String {
    format!("ns/o{n}")
}

/// The resource version of `o`.
pub(super) fn rv(o: &DynamicObject) -> Option<String> {
    o.resource_version().map(str::to_owned)
}
