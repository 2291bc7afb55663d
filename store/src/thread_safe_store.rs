//! [`ThreadSafeStore`]: the indexed map of keys to `Arc<T>` under one reader/writer lock.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::{
    Error, Indexers, LastResourceVersion, Object, ObjectKey, Result, Transaction, TransactionError,
};

/// One index: indexed value -> keys of the objects that produced it (sorted, never empty).
type Index = HashMap<String, BTreeSet<ObjectKey>>;

/// A thread-safe map of keys to shared objects with secondary indexes (client-go's
/// `threadSafeMap`).
///
/// It works on keys; [`Cache`](crate::Cache) adds the key function and implements
/// [`Store`](crate::Store) and [`Indexer`](crate::Indexer) on top. One `RwLock` guards objects and
/// indexes together, so readers never see an object without its index entries. Every write
/// computes all index values before it changes anything: when an index function fails, the
/// write returns the error and the store is unchanged.
pub struct ThreadSafeStore<T> {
    inner: RwLock<Inner<T>>,
}

struct Inner<T> {
    items: HashMap<ObjectKey, Arc<T>>,
    indexers: Indexers<T>,
    indices: HashMap<String, Index>,
    resource_version: LastResourceVersion,
}

/// The values of every index for one object, in the order of `Indexers::iter`.
type Values = Vec<Vec<String>>;

/// One keyed write of a transaction, as [`ThreadSafeStore::apply`] takes it.
pub(crate) enum Write<T> {
    /// Store the object under the key.
    Put(ObjectKey, Arc<T>),
    /// Remove the key, recording the resource version of the deleted state when given.
    Remove(ObjectKey, Option<Arc<T>>),
}

impl<T> Write<T> {
    /// `write` under `key` (a `DeleteKey`'s own key is not read: `key` is the one removed).
    fn keyed(key: ObjectKey, write: Transaction<T>) -> Self {
        match write {
            Transaction::Add(obj) | Transaction::Update(obj) => Self::Put(key, obj),
            Transaction::Delete(obj) => Self::Remove(key, Some(obj)),
            Transaction::DeleteKey(_) => Self::Remove(key, None),
        }
    }
}

impl<T: Object> Inner<T> {
    /// Records `obj`'s resource version as the last synced one. An object without one (or a
    /// transform that dropped it) leaves the previous value, as client-go's store does
    /// (`TestThreadSafeStoreRV`): it says nothing about how fresh the store is.
    fn note_resource_version(&mut self, obj: &T) {
        if let Some(rv) = obj.resource_version() {
            self.resource_version.note(rv);
        }
    }

    fn values_of(&self, key: &ObjectKey, obj: &T) -> Result<Values> {
        self.indexers
            .iter()
            .map(|(name, f)| {
                f(obj).map_err(|source| Error::IndexFunc {
                    index: name.to_owned(),
                    key: key.to_string(),
                    source,
                })
            })
            .collect()
    }

    /// Moves `key` from `old` values to `new` values in every index.
    fn reindex(&mut self, key: &ObjectKey, old: Option<&Values>, new: Option<&Values>) {
        let empty = Vec::new();
        for (i, (name, _)) in self.indexers.iter().enumerate() {
            let old = old.map_or(&empty, |v| &v[i]);
            let new = new.map_or(&empty, |v| &v[i]);
            if old.len() == 1 && new.len() == 1 && old[0] == new[0] {
                continue;
            }
            let Some(index) = self.indices.get_mut(name) else {
                continue;
            };
            for value in old {
                if let Some(keys) = index.get_mut(value.as_str()) {
                    keys.remove(key);
                    if keys.is_empty() {
                        index.remove(value.as_str());
                    }
                }
            }
            for value in new {
                index.entry(value.clone()).or_default().insert(key.clone());
            }
        }
    }

    /// Inserts or replaces `obj` under `key`, its index entries and its resource version; on an
    /// index function's error nothing changes.
    fn put(&mut self, key: ObjectKey, obj: Arc<T>) -> Result<()> {
        let new = self.values_of(&key, &obj)?;
        let old = match self.items.get(&key) {
            Some(old) => Some(self.values_of(&key, old)?),
            None => None,
        };
        self.reindex(&key, old.as_ref(), Some(&new));
        self.note_resource_version(&*obj);
        self.items.insert(key, obj);
        Ok(())
    }

    /// Removes `key` and its index entries, and records the resource version of `obj` (the
    /// deleted state) when given; on an index function's error nothing changes.
    fn remove(&mut self, key: &str, obj: Option<&T>) -> Result<()> {
        if let Some((k, old)) = self.items.get_key_value(key) {
            let k = k.clone();
            let old = self.values_of(&k, old)?;
            self.reindex(&k, Some(&old), None);
            self.items.remove(key);
        }
        if let Some(obj) = obj {
            self.note_resource_version(obj);
        }
        Ok(())
    }

    /// Every registered index has an entry in `indices`, possibly empty.
    fn index(&self, name: &str) -> Result<&Index> {
        self.indices
            .get(name)
            .ok_or_else(|| Error::IndexNotFound(name.to_owned()))
    }
}

impl<T: Object> ThreadSafeStore<T> {
    /// An empty store with the given indexes.
    #[must_use]
    pub fn new(indexers: Indexers<T>) -> Self {
        Self {
            inner: RwLock::new(Inner {
                items: HashMap::new(),
                indices: indexers
                    .names()
                    .map(|n| (n.to_owned(), Index::new()))
                    .collect(),
                indexers,
                resource_version: LastResourceVersion::new(),
            }),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner<T>> {
        // Writes never leave the maps half-changed, so a poisoned lock holds consistent data.
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner<T>> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Inserts or replaces `obj` under `key` and records its resource version.
    ///
    /// # Errors
    ///
    /// [`Error::IndexFunc`] when an index function fails; the store is unchanged.
    pub fn add(&self, key: ObjectKey, obj: Arc<T>) -> Result<()> {
        self.write().put(key, obj)
    }

    /// Same as [`add`](Self::add).
    ///
    /// # Errors
    ///
    /// As [`add`](Self::add).
    pub fn update(&self, key: ObjectKey, obj: Arc<T>) -> Result<()> {
        self.add(key, obj)
    }

    /// Removes `key`. When `obj` (the deleted state) is given, its resource version is recorded.
    ///
    /// # Errors
    ///
    /// [`Error::IndexFunc`] when an index function fails on the stored object; the store is
    /// unchanged.
    pub fn delete(&self, key: &str, obj: Option<&T>) -> Result<()> {
        self.write().remove(key, obj)
    }

    /// Applies every write of `batch`, each under its key, under one acquisition of the lock:
    /// readers see all of the batch or none of it. A write that fails (an index function's
    /// error) is skipped, leaving its key as it was, and the others are applied. The resource
    /// version recorded is the last applied object's that has one (client-go's
    /// `threadSafeMap.Transaction`).
    ///
    /// # Errors
    ///
    /// A [`TransactionError`] naming the writes that failed, by position in `batch`.
    pub fn transaction(
        &self,
        batch: Vec<(ObjectKey, Transaction<T>)>,
    ) -> Result<(), TransactionError> {
        let total = batch.len();
        let mut failed = Vec::new();
        let writes = batch
            .into_iter()
            .enumerate()
            .map(|(i, (key, write))| (i, Write::keyed(key, write)));
        self.apply(writes, &mut failed);
        TransactionError::from_failures(total, failed).map_or(Ok(()), Err)
    }

    /// Applies `writes` under one acquisition of the lock, each tagged with the position the
    /// caller reports it at; the failures are pushed to `failed` with their positions.
    pub(crate) fn apply(
        &self,
        writes: impl IntoIterator<Item = (usize, Write<T>)>,
        failed: &mut Vec<(usize, Error)>,
    ) {
        let mut inner = self.write();
        for (i, write) in writes {
            let applied = match write {
                Write::Put(key, obj) => inner.put(key, obj),
                Write::Remove(key, obj) => inner.remove(key.as_str(), obj.as_deref()),
            };
            if let Err(e) = applied {
                failed.push((i, e));
            }
        }
    }

    /// The object under `key`.
    pub fn get(&self, key: &str) -> Option<Arc<T>> {
        self.read().items.get(key).cloned()
    }

    /// Every object.
    pub fn list(&self) -> Vec<Arc<T>> {
        self.read().items.values().cloned().collect()
    }

    /// Every key.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.read().items.keys().cloned().collect()
    }

    /// How many objects are stored.
    pub fn len(&self) -> usize {
        self.read().items.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Swaps in `items` wholesale, rebuilds every index and records `resource_version` (an
    /// empty one leaves the last one recorded).
    ///
    /// # Errors
    ///
    /// [`Error::IndexFunc`] when an index function fails on any object; the store is unchanged.
    pub fn replace(&self, items: HashMap<ObjectKey, Arc<T>>, resource_version: &str) -> Result<()> {
        let mut inner = self.write();
        let mut indices: HashMap<String, Index> = HashMap::new();
        for (name, f) in inner.indexers.iter() {
            let mut index = Index::new();
            for (key, obj) in &items {
                let values = f(obj).map_err(|source| Error::IndexFunc {
                    index: name.to_owned(),
                    key: key.to_string(),
                    source,
                })?;
                for v in values {
                    index.entry(v).or_default().insert(key.clone());
                }
            }
            indices.insert(name.to_owned(), index);
        }
        inner.items = items;
        inner.indices = indices;
        inner.resource_version.note(resource_version);
        Ok(())
    }

    /// Records a resource version reached without an object change (an empty one is ignored).
    /// The version held is read under the read lock first: the write lock is taken only for a
    /// new version (a reflector reports most versions twice, with the object and after it).
    pub fn bookmark(&self, resource_version: &str) {
        if self.read().resource_version.is_new(resource_version) {
            self.write().resource_version.note(resource_version);
        }
    }

    /// The resource version of the last write, replace or bookmark.
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.read().resource_version.get().map(str::to_owned)
    }

    /// The objects sharing a value of index `name` with `obj`.
    ///
    /// # Errors
    ///
    /// [`Error::IndexNotFound`] or [`Error::IndexFunc`].
    pub fn index(&self, name: &str, obj: &T) -> Result<Vec<Arc<T>>> {
        let inner = self.read();
        let index = inner.index(name)?;
        let f = inner
            .indexers
            .get(name)
            .ok_or_else(|| Error::IndexNotFound(name.to_owned()))?;
        let values = f(obj).map_err(|source| Error::IndexFunc {
            index: name.to_owned(),
            key: String::new(),
            source,
        })?;
        let keys: BTreeSet<&ObjectKey> = values
            .iter()
            .filter_map(|v| index.get(v.as_str()))
            .flatten()
            .collect();
        Ok(keys
            .into_iter()
            .filter_map(|k| inner.items.get(k).cloned())
            .collect())
    }

    /// The keys under `value` in index `name`, sorted.
    ///
    /// # Errors
    ///
    /// [`Error::IndexNotFound`].
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>> {
        let inner = self.read();
        Ok(inner
            .index(name)?
            .get(value)
            .map(|keys| keys.iter().cloned().collect())
            .unwrap_or_default())
    }

    /// Every value index `name` holds; empty for an unknown index.
    pub fn list_index_func_values(&self, name: &str) -> Vec<String> {
        let inner = self.read();
        inner
            .indices
            .get(name)
            .map(|index| index.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The objects under `value` in index `name`.
    ///
    /// # Errors
    ///
    /// [`Error::IndexNotFound`].
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<T>>> {
        let inner = self.read();
        Ok(inner
            .index(name)?
            .get(value)
            .map(|keys| {
                keys.iter()
                    .filter_map(|k| inner.items.get(k).cloned())
                    .collect()
            })
            .unwrap_or_default())
    }

    /// The registered index functions.
    pub fn indexers(&self) -> Indexers<T> {
        self.read().indexers.clone()
    }

    /// Registers `new` indexes and indexes every stored object with them.
    ///
    /// # Errors
    ///
    /// [`Error::IndexerConflict`] or [`Error::IndexFunc`]; the store is unchanged.
    pub fn add_indexers(&self, new: Indexers<T>) -> Result<()> {
        let mut inner = self.write();
        if let Some(name) = new.names().find(|n| inner.indexers.contains(n)) {
            return Err(Error::IndexerConflict(name.to_owned()));
        }
        let mut built = Vec::with_capacity(new.len());
        for (name, f) in new.iter() {
            let mut index = Index::new();
            for (key, obj) in &inner.items {
                for v in f(obj).map_err(|source| Error::IndexFunc {
                    index: name.to_owned(),
                    key: key.to_string(),
                    source,
                })? {
                    index.entry(v).or_default().insert(key.clone());
                }
            }
            built.push((name.to_owned(), index));
        }
        for (name, f) in new {
            inner.indexers.insert(name, f);
        }
        inner.indices.extend(built);
        Ok(())
    }
}

impl<T: Object> Default for ThreadSafeStore<T> {
    fn default() -> Self {
        Self::new(Indexers::new())
    }
}

impl<T> fmt::Debug for ThreadSafeStore<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("ThreadSafeStore")
            .field("len", &inner.items.len())
            .field("indexers", &inner.indexers)
            .field("resource_version", &inner.resource_version)
            .finish_non_exhaustive()
    }
}
