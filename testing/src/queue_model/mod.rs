//! Reference models of the queues: plain ordered maps of deltas per key, written for clarity,
//! not speed, straight from client-go's rules.
//!
//! Every model implements [`QueueModel`], one method per queue operation, so that one runner
//! plays a scenario against any queue and its model. A model works on [`ModelDelta`]s,
//! projections of real deltas onto keys and resource versions, so a queue's output can be
//! compared with the model's exactly. What the models share lives here: the trait, the
//! population count behind `has_synced` ([`SyncState`]) and the pop of a keyed queue.

/// The [`QueueModel`] methods every model implements alike, from its `sync: SyncState` and
/// `closed: bool` fields.
macro_rules! lifecycle {
    () => {
        fn close(&mut self) {
            self.closed = true;
        }
        fn is_closed(&self) -> bool {
            self.closed
        }
        fn has_synced(&self) -> bool {
            self.sync.synced
        }
        fn initial_left(&self) -> usize {
            self.sync.initial
        }
    };
}

mod delta_fifo;
mod fifo;
mod real_fifo;

use std::sync::Arc;

use kcache_queue::{Delta, DeltaType};
use kcache_store::{KnownObjects, Object, ObjectOrTombstone, deletion_handling_key};

pub use self::delta_fifo::DeltaFifoModel;
pub use self::fifo::FifoModel;
pub use self::real_fifo::RealFifoModel;

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
        let whole = |kind, resource_version: Option<&String>, list: &[Arc<T>]| {
            let objects = list.iter().map(|o| (key_of(&**o), rv(o))).collect();
            Self::whole(kind, resource_version.cloned(), objects)
        };
        match delta {
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => {
                Self::single(delta.kind(), &key_of(&**o), o.resource_version())
            }
            Delta::Deleted(d) => Self {
                tombstone: matches!(d, ObjectOrTombstone::Tombstone(_)),
                ..Self::single(
                    DeltaType::Deleted,
                    &deletion_handling_key(d)
                        .map(|k| k.to_string())
                        .unwrap_or_default(),
                    d.object().and_then(|o| o.resource_version()),
                )
            },
            Delta::ReplacedAll {
                objects: list,
                resource_version: r,
            } => whole(DeltaType::ReplacedAll, Some(r), list),
            Delta::SyncAll { objects: list } => whole(DeltaType::SyncAll, None, list),
            Delta::Bookmark {
                resource_version: r,
            } => whole(DeltaType::Bookmark, Some(r), &[]),
        }
    }

    /// Whether the delta is about one object (not `ReplacedAll`, `SyncAll` or `Bookmark`).
    #[must_use]
    pub fn is_single_object(&self) -> bool {
        !matches!(
            self.kind,
            DeltaType::ReplacedAll | DeltaType::SyncAll | DeltaType::Bookmark
        )
    }
}

/// The `namespace/name` key of `obj` (empty if it has none).
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

/// What a model pop produced: the deltas and whether they were in the initial list.
pub type ModelPop = (Vec<ModelDelta>, bool);

/// A reference model of a queue: one method per queue operation, and the views a runner
/// compares with the queue after every step.
///
/// `known` is the queue's known objects (the consumer's cache) just before the operation, for a
/// queue that has them; a model whose queue ignores them for an operation ignores them too.
pub trait QueueModel {
    /// `add` (`Added`), `update` (`Updated`) or `delete` (`Deleted`) of the object `key` at `rv`.
    fn write(&mut self, kind: DeltaType, key: &str, rv: &str, known: Option<&KnownSnapshot>);
    /// `replace` with `list`, the server's objects at the resource version `rv`.
    fn replace(&mut self, list: &[ModelObject], rv: &str, known: Option<&KnownSnapshot>);
    /// `resync`.
    fn resync(&mut self, known: Option<&KnownSnapshot>);
    /// `bookmark` at `rv`.
    fn bookmark(&mut self, rv: &str);
    /// A pop of up to `batch` items (`pop_batch` when above 1); `requeue` as the process
    /// function's answer. `None` when nothing is queued.
    fn pop(
        &mut self,
        batch: usize,
        requeue: bool,
        known: Option<&KnownSnapshot>,
    ) -> Option<ModelPop>;
    /// `close`.
    fn close(&mut self);
    /// Whether the queue is closed.
    fn is_closed(&self) -> bool;
    /// Whether the queue has synced.
    fn has_synced(&self) -> bool;
    /// How many items of the initial list (those queued up to and including the first
    /// `replace`) are left to process; 0 once synced, or if the first write was not a `replace`.
    fn initial_left(&self) -> usize;
    /// How many items are queued: by default the keys, for a keyed queue.
    fn len(&self) -> usize {
        self.keys().map_or(0, |keys| keys.len())
    }
    /// Whether nothing is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The queued keys, in order; `None` for a queue that does not queue by key.
    fn keys(&self) -> Option<Vec<&str>> {
        None
    }
    /// The resource version of the newest object queued for `key` (`Some(None)` when its newest
    /// delta is a tombstone without a state); `None` when `key` is not queued, or the queue does
    /// not queue by key.
    fn newest(&self, _key: &str) -> Option<Option<String>> {
        None
    }
    /// How many times the transformer ran; `None` for a queue that takes no transformer.
    fn transforms(&self) -> Option<usize> {
        None
    }
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
