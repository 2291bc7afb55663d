//! [`ReplaceSignal`]: the store a controller's reflector writes to: its queue, with a
//! notification after each replace.

use std::fmt;
use std::sync::Arc;

use kcache_queue::Queue;
use kcache_store::{Object, ObjectKey, Result, Store};
use tokio::sync::Notify;

/// A queue seen as the reflector's store, telling the controller's process loop of every
/// replace, so that an initial list with nothing in it marks the informer synced at once
/// (nothing is popped for it) rather than at a poll.
pub(crate) struct ReplaceSignal<T: Object> {
    queue: Arc<dyn Queue<T>>,
    replaced: Arc<Notify>,
}

impl<T: Object> ReplaceSignal<T> {
    pub(crate) fn new(queue: Arc<dyn Queue<T>>, replaced: Arc<Notify>) -> Self {
        Self { queue, replaced }
    }
}

impl<T: Object> Store<T> for ReplaceSignal<T> {
    fn add(&self, obj: Arc<T>) -> Result<()> {
        self.queue.add(obj)
    }

    fn update(&self, obj: Arc<T>) -> Result<()> {
        self.queue.update(obj)
    }

    fn delete(&self, obj: Arc<T>) -> Result<()> {
        self.queue.delete(obj)
    }

    fn delete_key(&self, key: &ObjectKey) -> Result<()> {
        self.queue.delete_key(key)
    }

    fn list(&self) -> Vec<Arc<T>> {
        self.queue.list()
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        self.queue.list_keys()
    }

    fn get(&self, obj: &T) -> Result<Option<Arc<T>>> {
        self.queue.get(obj)
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<T>> {
        self.queue.get_by_key(key)
    }

    fn replace(&self, list: Vec<Arc<T>>, resource_version: &str) -> Result<()> {
        let result = self.queue.replace(list, resource_version);
        self.replaced.notify_one();
        result
    }

    fn transform_incoming(&self, obj: Arc<T>) -> Arc<T> {
        self.queue.transform_incoming(obj)
    }

    fn replace_transformed(&self, list: Vec<Arc<T>>, resource_version: &str) -> Result<()> {
        let result = self.queue.replace_transformed(list, resource_version);
        self.replaced.notify_one();
        result
    }

    fn update_resource_version(&self, resource_version: &str) {
        self.queue.update_resource_version(resource_version);
    }

    fn resync(&self) -> Result<()> {
        self.queue.resync()
    }

    fn bookmark(&self, resource_version: &str) {
        self.queue.bookmark(resource_version);
    }

    fn last_sync_resource_version(&self) -> Option<String> {
        self.queue.last_sync_resource_version()
    }

    fn len(&self) -> usize {
        self.queue.len()
    }

    fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

impl<T: Object> fmt::Debug for ReplaceSignal<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplaceSignal").finish_non_exhaustive()
    }
}
