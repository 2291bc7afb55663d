//! [`Event`]: one notification to a handler or a stream subscriber.

use std::fmt;
use std::sync::Arc;

use kcache_store::ObjectOrTombstone;

/// What changed in the cache, as delivered to a handler or an event stream.
pub enum Event<T> {
    /// An object appeared. `is_in_initial_list` is true for objects of the first list and for
    /// the replay a handler added late receives.
    Add {
        /// The object.
        obj: Arc<T>,
        /// Whether this add belongs to the initial state rather than a live change.
        is_in_initial_list: bool,
    },
    /// An object changed; on a resync `old` and `new` are the same object.
    Update {
        /// The previous state.
        old: Arc<T>,
        /// The new state.
        new: Arc<T>,
    },
    /// An object went away; a tombstone when the deletion was only seen by relisting.
    Delete(ObjectOrTombstone<T>),
}

impl<T> Event<T> {
    /// Whether this is an initial-list add (the events a registration's `has_synced` waits for).
    pub fn is_initial(&self) -> bool {
        matches!(
            self,
            Self::Add {
                is_in_initial_list: true,
                ..
            }
        )
    }
}

impl<T> Clone for Event<T> {
    fn clone(&self) -> Self {
        match self {
            Self::Add {
                obj,
                is_in_initial_list,
            } => Self::Add {
                obj: Arc::clone(obj),
                is_in_initial_list: *is_in_initial_list,
            },
            Self::Update { old, new } => Self::Update {
                old: Arc::clone(old),
                new: Arc::clone(new),
            },
            Self::Delete(o) => Self::Delete(o.clone()),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Event<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Add {
                obj,
                is_in_initial_list,
            } => f
                .debug_struct("Add")
                .field("obj", obj)
                .field("is_in_initial_list", is_in_initial_list)
                .finish(),
            Self::Update { old, new } => f
                .debug_struct("Update")
                .field("old", old)
                .field("new", new)
                .finish(),
            Self::Delete(o) => f.debug_tuple("Delete").field(o).finish(),
        }
    }
}
