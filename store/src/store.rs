//! The [`Store`] trait: client-go's key/object storage interface, and [`KnownObjects`].

use std::sync::Arc;

use crate::{Object, ObjectKey, Result};

/// A key/object store, as client-go's `cache.Store`.
///
/// Synchronous and dyn-compatible: memory operations never pay for futures, and an
/// `Arc<dyn Store<T>>` can stand for any implementation. The store computes keys with its key
/// function; objects go in and come out as `Arc<T>`, shared and never copied.
///
/// Queues implement this trait too: it is the write interface a reflector drives.
pub trait Store<T: Object>: Send + Sync {
    /// Inserts or replaces the object under its key.
    fn add(&self, obj: Arc<T>) -> Result<()>;
    /// Same as [`add`](Self::add): client-go makes no difference.
    fn update(&self, obj: Arc<T>) -> Result<()>;
    /// Removes the object's key; deleting a key that is not present does nothing.
    fn delete(&self, obj: Arc<T>) -> Result<()>;
    /// Removes `key`, whose current state the caller could not read (an event that did not
    /// decode): the store must no longer hold the version it has. A queue passes the removal on
    /// as a tombstone ([`DeletedFinalStateUnknown`](crate::DeletedFinalStateUnknown)) carrying
    /// the last state it knew. Removing a key that is not present does nothing.
    ///
    /// The default looks the key up with [`get_by_key`](Self::get_by_key) and
    /// [`delete`](Self::delete)s what it finds.
    fn delete_key(&self, key: &ObjectKey) -> Result<()> {
        match self.get_by_key(key.as_str()) {
            Some(obj) => self.delete(obj),
            None => Ok(()),
        }
    }
    /// Every object, in no particular order.
    fn list(&self) -> Vec<Arc<T>>;
    /// Every key, in no particular order.
    fn list_keys(&self) -> Vec<ObjectKey>;
    /// The stored object with the same key as `obj`.
    fn get(&self, obj: &T) -> Result<Option<Arc<T>>>;
    /// The stored object under `key`.
    fn get_by_key(&self, key: &str) -> Option<Arc<T>>;
    /// Replaces the whole content with `list` (later duplicates win) and records
    /// `resource_version` as the last synced one. On error nothing changes.
    fn replace(&self, list: Vec<Arc<T>>, resource_version: &str) -> Result<()>;
    /// Applies the store's own transform (a queue's transformer) to an object about to be
    /// written; a store without one returns `obj`. A reflector calls it on each listed object as
    /// it arrives (each page of a paginated list, each initial event of a streaming list) and
    /// hands the list to [`replace_transformed`](Self::replace_transformed), so that every
    /// object is transformed exactly once and none waits untransformed for the end of the list
    /// (as client-go's reflector fills its temporary store through the queue's transformer).
    fn transform_incoming(&self, obj: Arc<T>) -> Arc<T> {
        obj
    }
    /// [`replace`](Self::replace) with objects that already went through
    /// [`transform_incoming`](Self::transform_incoming). A store that overrides one must
    /// override the other; the default is `replace`.
    ///
    /// # Errors
    ///
    /// As [`replace`](Self::replace).
    fn replace_transformed(&self, list: Vec<Arc<T>>, resource_version: &str) -> Result<()> {
        self.replace(list, resource_version)
    }
    /// Records the resource version the reflector reached with an event it applied (client-go's
    /// `ResourceVersionUpdater`; a bookmark goes to [`bookmark`](Self::bookmark)): called
    /// after every such event, with the version read before any transform, so that
    /// [`last_sync_resource_version`](Self::last_sync_resource_version) says how fresh the store
    /// is even when no object changed or a transform drops resource versions. Unlike
    /// [`bookmark`](Self::bookmark) it queues nothing. The default does nothing.
    fn update_resource_version(&self, resource_version: &str) {
        let _ = resource_version;
    }
    /// Asks a queue to re-deliver what it knows; a plain store does nothing.
    fn resync(&self) -> Result<()> {
        Ok(())
    }
    /// Records a resource version reached without an object change (a watch bookmark): the
    /// version must then be what [`last_sync_resource_version`](Self::last_sync_resource_version)
    /// says (a reflector does not also call
    /// [`update_resource_version`](Self::update_resource_version) for a bookmark).
    fn bookmark(&self, resource_version: &str);
    /// The resource version of the last write, replace or bookmark, if known.
    fn last_sync_resource_version(&self) -> Option<String>;
    /// How many objects are stored.
    fn len(&self) -> usize {
        self.list_keys().len()
    }
    /// Whether the store holds nothing.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a queue needs of the cache behind it: the keys it holds and the object under a key
/// (client-go's `KeyListerGetter`). Every [`Store`] is one.
pub trait KnownObjects<T>: Send + Sync {
    /// Every key the cache holds.
    fn known_keys(&self) -> Vec<ObjectKey>;
    /// The object the cache holds under `key`.
    fn known_object(&self, key: &str) -> Option<Arc<T>>;
}

impl<T: Object, S: Store<T> + ?Sized> KnownObjects<T> for S {
    fn known_keys(&self) -> Vec<ObjectKey> {
        self.list_keys()
    }
    fn known_object(&self, key: &str) -> Option<Arc<T>> {
        self.get_by_key(key)
    }
}
