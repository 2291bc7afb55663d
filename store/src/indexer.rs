//! The [`Indexer`] trait, index functions and the namespace index.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::{BoxError, Object, ObjectKey, Result, Store, Transaction, TransactionError};

/// An index function: the values under which an object is indexed (any number, including none).
///
/// Must be deterministic: the store recomputes the old values of an object when it changes.
pub type IndexFunc<T> = Arc<dyn Fn(&T) -> Result<Vec<String>, BoxError> + Send + Sync>;

/// The name of the index by namespace that listers use when it is present.
pub const NAMESPACE_INDEX: &str = "namespace";

/// Indexes an object by its namespace (`""` for cluster-scoped objects), client-go's
/// `MetaNamespaceIndexFunc`.
///
/// # Errors
///
/// Never fails; the signature is that of an [`IndexFunc`].
pub fn namespace_index_func<T: Object>(obj: &T) -> Result<Vec<String>, BoxError> {
    Ok(vec![obj.namespace().unwrap_or_default().to_owned()])
}

/// A set of named index functions.
///
/// ```
/// use kcache_store::{DynamicObject, Indexers, Object};
///
/// let indexers = Indexers::<DynamicObject>::new()
///     .with_namespace()
///     .with("by-app", |o: &DynamicObject| {
///         Ok(o.labels().and_then(|l| l.get("app")).cloned().into_iter().collect())
///     });
/// assert_eq!(indexers.names().collect::<Vec<_>>(), ["by-app", "namespace"]);
/// ```
pub struct Indexers<T>(BTreeMap<String, IndexFunc<T>>);

impl<T: Object> Indexers<T> {
    /// No indexes.
    #[must_use]
    pub fn new() -> Self {
        Self(BTreeMap::new())
    }

    /// Adds (or replaces) the index `name`.
    #[must_use]
    pub fn with<F>(mut self, name: impl Into<String>, f: F) -> Self
    where
        F: Fn(&T) -> Result<Vec<String>, BoxError> + Send + Sync + 'static,
    {
        self.0.insert(name.into(), Arc::new(f));
        self
    }

    /// Adds the [`NAMESPACE_INDEX`].
    #[must_use]
    pub fn with_namespace(self) -> Self {
        self.with(NAMESPACE_INDEX, namespace_index_func::<T>)
    }

    /// Adds (or replaces) the index `name` with an already shared function.
    pub fn insert(&mut self, name: impl Into<String>, f: IndexFunc<T>) {
        self.0.insert(name.into(), f);
    }
}

impl<T> Indexers<T> {
    /// The index names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.keys().map(String::as_str)
    }

    /// The function of index `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&IndexFunc<T>> {
        self.0.get(name)
    }

    /// Whether index `name` exists.
    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// How many indexes there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no indexes.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every (name, function) pair, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &IndexFunc<T>)> + '_ {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }
}

impl<T: Object> Default for Indexers<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for Indexers<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> fmt::Debug for Indexers<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl<T> IntoIterator for Indexers<T> {
    type Item = (String, IndexFunc<T>);
    type IntoIter = std::collections::btree_map::IntoIter<String, IndexFunc<T>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// A [`Store`] with secondary indexes, as client-go's `cache.Indexer`.
///
/// Index functions map an object to many values; each index maps a value to the keys of the
/// objects that produced it. Values whose key set becomes empty are removed.
pub trait Indexer<T: Object>: Store<T> {
    /// The objects that share at least one value of index `index_name` with `obj`.
    ///
    /// # Errors
    ///
    /// [`Error::IndexNotFound`](crate::Error::IndexNotFound) for an unknown index;
    /// [`Error::IndexFunc`](crate::Error::IndexFunc) when the function fails on `obj`.
    fn index(&self, index_name: &str, obj: &T) -> Result<Vec<Arc<T>>>;
    /// The keys under `value` in index `index_name`, sorted.
    ///
    /// # Errors
    ///
    /// [`Error::IndexNotFound`](crate::Error::IndexNotFound) for an unknown index.
    fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<ObjectKey>>;
    /// Every value that index `index_name` currently holds; empty for an unknown index.
    fn list_index_func_values(&self, index_name: &str) -> Vec<String>;
    /// The objects under `value` in index `index_name`.
    ///
    /// # Errors
    ///
    /// [`Error::IndexNotFound`](crate::Error::IndexNotFound) for an unknown index.
    fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<T>>>;
    /// The registered index functions.
    fn indexers(&self) -> Indexers<T>;
    /// Registers more indexes and indexes the objects already stored.
    ///
    /// # Errors
    ///
    /// [`Error::IndexerConflict`](crate::Error::IndexerConflict) if a name is taken;
    /// [`Error::IndexFunc`](crate::Error::IndexFunc) if a new function fails on a stored object.
    /// Either way nothing changes.
    fn add_indexers(&self, indexers: Indexers<T>) -> Result<()>;
    /// Removes the object under `key`, for deletions known only by key (tombstones).
    ///
    /// # Errors
    ///
    /// [`Error::IndexFunc`](crate::Error::IndexFunc) if an index function fails on the stored
    /// object; nothing changes then.
    fn delete_by_key(&self, key: &str) -> Result<()>;
    /// Applies a batch of writes, skipping those that fail and applying the others (client-go's
    /// `TransactionStore`, with which an informer applies a popped batch). [`Cache`](crate::Cache)
    /// applies the whole batch under one lock, so readers see all of it or none; the default
    /// applies the writes one by one with the methods above.
    ///
    /// # Errors
    ///
    /// A [`TransactionError`](crate::TransactionError) naming the writes that failed (a key
    /// that cannot be computed, an index function's error) and why.
    fn transaction(&self, batch: Vec<Transaction<T>>) -> Result<(), TransactionError> {
        let total = batch.len();
        let failed = batch
            .into_iter()
            .enumerate()
            .filter_map(|(i, write)| {
                let applied = match write {
                    Transaction::Add(obj) => self.add(obj),
                    Transaction::Update(obj) => self.update(obj),
                    Transaction::Delete(obj) => self.delete(obj),
                    Transaction::DeleteKey(key) => self.delete_by_key(key.as_str()),
                };
                applied.err().map(|e| (i, e))
            })
            .collect();
        TransactionError::from_failures(total, failed).map_or(Ok(()), Err)
    }
}
