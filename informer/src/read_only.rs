//! [`ReadOnlyIndexer`]: the informer's cache, without the means to change it.

use std::fmt;
use std::sync::Arc;

use kcache_store::{Cache, Indexer, Object, ObjectKey, Store};

/// A read-only view of an informer's cache: lookups and indexes, no writes.
///
/// Only the informer writes its cache; handing out this view instead of the cache keeps it that
/// way. Objects come out as shared `Arc`s.
pub struct ReadOnlyIndexer<T> {
    cache: Arc<Cache<T>>,
}

impl<T: Object> ReadOnlyIndexer<T> {
    pub(crate) fn new(cache: Arc<Cache<T>>) -> Self {
        Self { cache }
    }

    /// Every cached object.
    pub fn list(&self) -> Vec<Arc<T>> {
        self.cache.list()
    }

    /// Every cached key.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.cache.list_keys()
    }

    /// The object under `key` (`namespace/name` or `name`).
    pub fn get_by_key(&self, key: &str) -> Option<Arc<T>> {
        self.cache.get_by_key(key)
    }

    /// How many objects are cached.
    pub fn len(&self) -> usize {
        Store::len(&*self.cache)
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The objects under `value` in index `index_name`.
    ///
    /// # Errors
    ///
    /// The indexer's error for an unknown index.
    pub fn by_index(&self, index_name: &str, value: &str) -> kcache_store::Result<Vec<Arc<T>>> {
        self.cache.by_index(index_name, value)
    }

    /// The keys under `value` in index `index_name`, sorted.
    ///
    /// # Errors
    ///
    /// The indexer's error for an unknown index.
    pub fn index_keys(
        &self,
        index_name: &str,
        value: &str,
    ) -> kcache_store::Result<Vec<ObjectKey>> {
        self.cache.index_keys(index_name, value)
    }

    /// Every value index `index_name` holds.
    pub fn list_index_func_values(&self, index_name: &str) -> Vec<String> {
        self.cache.list_index_func_values(index_name)
    }

    /// The resource version of the last change the cache applied.
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.cache.last_sync_resource_version()
    }
}

impl<T> Clone for ReadOnlyIndexer<T> {
    fn clone(&self) -> Self {
        Self {
            cache: Arc::clone(&self.cache),
        }
    }
}

impl<T> fmt::Debug for ReadOnlyIndexer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadOnlyIndexer")
            .field("cache", &self.cache)
            .finish()
    }
}
