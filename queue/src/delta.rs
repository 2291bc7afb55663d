//! [`Delta`], [`DeltaType`] and [`Deltas`]: what a queue hands to its consumer.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use kcache_store::ObjectOrTombstone;

/// The kind of a [`Delta`], as client-go's `DeltaType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeltaType {
    /// The object was created (a watch `ADDED`).
    Added,
    /// The object changed (a watch `MODIFIED`).
    Updated,
    /// The object was deleted: by a watch event, or found missing by a relist (a tombstone).
    Deleted,
    /// The object is part of a relist (`DeltaFifo` with `emit_delta_type_replaced`).
    Replaced,
    /// The object is re-delivered by a resync, or part of a relist without `Replaced`.
    Sync,
    /// A whole relist as one atomic delta (`RealFifo`).
    ReplacedAll,
    /// A whole resync as one atomic delta (`RealFifo`).
    SyncAll,
    /// A resource version reached without any object change (`RealFifo`).
    Bookmark,
}

impl DeltaType {
    /// The name client-go gives this type (`"Added"`, `"ReplacedAll"`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "Added",
            Self::Updated => "Updated",
            Self::Deleted => "Deleted",
            Self::Replaced => "Replaced",
            Self::Sync => "Sync",
            Self::ReplacedAll => "ReplacedAll",
            Self::SyncAll => "SyncAll",
            Self::Bookmark => "Bookmark",
        }
    }
}

impl fmt::Display for DeltaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change, as client-go's `Delta { Type, Object }`, with the payload each type carries.
///
/// Objects are `Arc<T>`: the queue never copies one.
pub enum Delta<T> {
    /// The object was created.
    Added(Arc<T>),
    /// The object changed.
    Updated(Arc<T>),
    /// The object was deleted: the last state the watch saw, or a tombstone.
    Deleted(ObjectOrTombstone<T>),
    /// The object is part of a relist.
    Replaced(Arc<T>),
    /// The object is re-delivered (resync, or a relist without `Replaced`).
    Sync(Arc<T>),
    /// A relist, atomically: the full list and its resource version. The consumer computes the
    /// deletions against its own store.
    ReplacedAll {
        /// Every object of the list, already transformed.
        objects: Vec<Arc<T>>,
        /// The list's resource version.
        resource_version: String,
    },
    /// A resync, atomically.
    ///
    /// [`RealFifo`](crate::RealFifo) fills `objects` from its known objects when the delta is
    /// popped (so they are current for a consumer that processes in order); without known objects
    /// it is empty and the consumer resyncs from its own store.
    SyncAll {
        /// The objects to re-deliver.
        objects: Vec<Arc<T>>,
    },
    /// A bookmark: the watch reached `resource_version` with no object change.
    Bookmark {
        /// The resource version reached.
        resource_version: String,
    },
}

impl<T> Delta<T> {
    /// This delta's type.
    #[must_use]
    pub fn kind(&self) -> DeltaType {
        match self {
            Self::Added(_) => DeltaType::Added,
            Self::Updated(_) => DeltaType::Updated,
            Self::Deleted(_) => DeltaType::Deleted,
            Self::Replaced(_) => DeltaType::Replaced,
            Self::Sync(_) => DeltaType::Sync,
            Self::ReplacedAll { .. } => DeltaType::ReplacedAll,
            Self::SyncAll { .. } => DeltaType::SyncAll,
            Self::Bookmark { .. } => DeltaType::Bookmark,
        }
    }

    /// The object of a single-object delta; for `Deleted`, the deleted object or the tombstone's
    /// last known state. `None` for the atomic types and for a tombstone without a state.
    #[must_use]
    pub fn object(&self) -> Option<&Arc<T>> {
        match self {
            Self::Added(o) | Self::Updated(o) | Self::Replaced(o) | Self::Sync(o) => Some(o),
            Self::Deleted(d) => d.object(),
            Self::ReplacedAll { .. } | Self::SyncAll { .. } | Self::Bookmark { .. } => None,
        }
    }

    /// Whether this is a `Deleted` delta carrying a tombstone.
    #[must_use]
    pub fn is_tombstone(&self) -> bool {
        matches!(self, Self::Deleted(d) if d.is_tombstone())
    }

    /// Whether this delta concerns one object (every type but the atomic `ReplacedAll`,
    /// `SyncAll` and `Bookmark`).
    #[must_use]
    pub fn is_single_object(&self) -> bool {
        !matches!(
            self,
            Self::ReplacedAll { .. } | Self::SyncAll { .. } | Self::Bookmark { .. }
        )
    }
}

impl<T> Clone for Delta<T> {
    fn clone(&self) -> Self {
        match self {
            Self::Added(o) => Self::Added(Arc::clone(o)),
            Self::Updated(o) => Self::Updated(Arc::clone(o)),
            Self::Deleted(d) => Self::Deleted(d.clone()),
            Self::Replaced(o) => Self::Replaced(Arc::clone(o)),
            Self::Sync(o) => Self::Sync(Arc::clone(o)),
            Self::ReplacedAll {
                objects,
                resource_version,
            } => Self::ReplacedAll {
                objects: objects.clone(),
                resource_version: resource_version.clone(),
            },
            Self::SyncAll { objects } => Self::SyncAll {
                objects: objects.clone(),
            },
            Self::Bookmark { resource_version } => Self::Bookmark {
                resource_version: resource_version.clone(),
            },
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Delta<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Added(o) => f.debug_tuple("Added").field(o).finish(),
            Self::Updated(o) => f.debug_tuple("Updated").field(o).finish(),
            Self::Deleted(d) => f.debug_tuple("Deleted").field(d).finish(),
            Self::Replaced(o) => f.debug_tuple("Replaced").field(o).finish(),
            Self::Sync(o) => f.debug_tuple("Sync").field(o).finish(),
            Self::ReplacedAll {
                objects,
                resource_version,
            } => f
                .debug_struct("ReplacedAll")
                .field("objects", objects)
                .field("resource_version", resource_version)
                .finish(),
            Self::SyncAll { objects } => {
                f.debug_struct("SyncAll").field("objects", objects).finish()
            }
            Self::Bookmark { resource_version } => f
                .debug_struct("Bookmark")
                .field("resource_version", resource_version)
                .finish(),
        }
    }
}

/// What one pop hands to the process function: the deltas of one key, oldest first
/// ([`DeltaFifo`](crate::DeltaFifo)), one delta ([`Fifo`](crate::Fifo), [`RealFifo`](crate::RealFifo)'s
/// `pop`) or a batch in arrival order, each key at most once (`RealFifo::pop_batch`).
///
/// Dereferences to a slice of [`Delta`]s.
pub struct Deltas<T> {
    items: Vec<Delta<T>>,
    is_in_initial_list: bool,
    distinct: bool,
}

impl<T> Deltas<T> {
    /// Deltas as a queue hands them out. They make no promise about their objects' keys
    /// ([`of_distinct_objects`](Self::of_distinct_objects) is false).
    #[must_use]
    pub fn new(deltas: Vec<Delta<T>>, is_in_initial_list: bool) -> Self {
        Self {
            items: deltas,
            is_in_initial_list,
            distinct: false,
        }
    }

    /// Single-object deltas that the queue knows to be of distinct objects: no two of them
    /// speak of the same key ([`of_distinct_objects`](Self::of_distinct_objects) is true), so a
    /// consumer may apply them in any order, or at once, without computing their keys again to
    /// find out. [`RealFifo`](crate::RealFifo)'s pops hand out their single-object deltas with
    /// it; a queue that cannot promise it uses [`new`](Self::new).
    #[must_use]
    pub fn batch(deltas: Vec<Delta<T>>, is_in_initial_list: bool) -> Self {
        Self {
            items: deltas,
            is_in_initial_list,
            distinct: true,
        }
    }

    /// Whether the queue promised that no two of these deltas are of the same object (built
    /// with [`batch`](Self::batch)). False says nothing: the deltas may still be distinct.
    #[must_use]
    pub fn of_distinct_objects(&self) -> bool {
        self.distinct
    }

    /// The newest delta (client-go's `Newest`).
    #[must_use]
    pub fn newest(&self) -> Option<&Delta<T>> {
        self.items.last()
    }

    /// The oldest delta (client-go's `Oldest`).
    #[must_use]
    pub fn oldest(&self) -> Option<&Delta<T>> {
        self.items.first()
    }

    /// Whether these deltas were popped before the queue had synced: they belong to the initial
    /// list (client-go's `isInInitialList`).
    #[must_use]
    pub fn is_in_initial_list(&self) -> bool {
        self.is_in_initial_list
    }

    /// The deltas, oldest first.
    #[must_use]
    pub fn into_vec(self) -> Vec<Delta<T>> {
        self.items
    }
}

impl<T> Deref for Deltas<T> {
    type Target = [Delta<T>];
    fn deref(&self) -> &[Delta<T>] {
        &self.items
    }
}

impl<T> IntoIterator for Deltas<T> {
    type Item = Delta<T>;
    type IntoIter = std::vec::IntoIter<Delta<T>>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a, T> IntoIterator for &'a Deltas<T> {
    type Item = &'a Delta<T>;
    type IntoIter = std::slice::Iter<'a, Delta<T>>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<T> Clone for Deltas<T> {
    fn clone(&self) -> Self {
        Self {
            items: self.items.clone(),
            is_in_initial_list: self.is_in_initial_list,
            distinct: self.distinct,
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Deltas<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deltas")
            .field("deltas", &self.items)
            .field("is_in_initial_list", &self.is_in_initial_list)
            .field("of_distinct_objects", &self.distinct)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcache_store::{DeletedFinalStateUnknown, DynamicObject, ObjectKey};

    #[test]
    fn accessors() {
        let o = Arc::new(DynamicObject::new(Some("ns"), "a"));
        let tomb = Delta::Deleted(ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
            key: ObjectKey::explicit("ns/a"),
            obj: None,
        }));
        assert!(tomb.is_tombstone());
        assert!(tomb.object().is_none());
        let d = Deltas::new(vec![Delta::Added(Arc::clone(&o)), tomb], true);
        assert_eq!(d.oldest().map(Delta::kind), Some(DeltaType::Added));
        assert_eq!(d.newest().map(Delta::kind), Some(DeltaType::Deleted));
        assert!(Arc::ptr_eq(d[0].object().unwrap(), &o));
        assert!(d.is_in_initial_list());
        assert!(!d.of_distinct_objects(), "new promises nothing");
        let batch = Deltas::batch(vec![Delta::Added(Arc::clone(&o))], false);
        assert!(batch.of_distinct_objects() && batch.clone().of_distinct_objects());
        assert_eq!(DeltaType::ReplacedAll.to_string(), "ReplacedAll");
        let b: Delta<DynamicObject> = Delta::Bookmark {
            resource_version: "5".into(),
        };
        assert!(!b.is_single_object());
        assert_eq!(b.kind(), DeltaType::Bookmark);
    }
}
