//! [`Cache`]: a key function over a [`ThreadSafeStore`], implementing `Store` and `Indexer`.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::thread_safe_store::Write;
use crate::{
    Indexer, Indexers, KeyFunc, Object, ObjectKey, Result, Store, ThreadSafeStore, Transaction,
    TransactionError, default_key_func,
};

/// The standard [`Store`] and [`Indexer`]: client-go's `NewStore`/`NewIndexer`.
///
/// ```
/// use std::sync::Arc;
/// use kcache_store::{Cache, DynamicObject, Indexer, Indexers, Store, NAMESPACE_INDEX};
///
/// let cache = Cache::<DynamicObject>::with_indexers(Indexers::new().with_namespace());
/// cache.add(Arc::new(DynamicObject::new(Some("prod"), "web")))?;
/// cache.add(Arc::new(DynamicObject::new(Some("dev"), "web")))?;
///
/// let web = cache.get_by_key("prod/web").expect("stored");
/// assert_eq!(web.metadata.namespace.as_deref(), Some("prod"));
/// assert_eq!(cache.by_index(NAMESPACE_INDEX, "dev")?.len(), 1);
/// assert_eq!(cache.index_keys(NAMESPACE_INDEX, "prod")?, ["prod/web"]);
/// # Ok::<(), kcache_store::Error>(())
/// ```
pub struct Cache<T> {
    key_func: KeyFunc<T>,
    store: ThreadSafeStore<T>,
}

impl<T: Object> Cache<T> {
    /// A store keyed by `namespace/name`, without indexes.
    #[must_use]
    pub fn new() -> Self {
        Self::with_indexers(Indexers::new())
    }

    /// A store keyed by `namespace/name`, with `indexers`.
    #[must_use]
    pub fn with_indexers(indexers: Indexers<T>) -> Self {
        Self::with_key_func(default_key_func(), indexers)
    }

    /// A store with a custom key function and `indexers`.
    #[must_use]
    pub fn with_key_func(key_func: KeyFunc<T>, indexers: Indexers<T>) -> Self {
        Self {
            key_func,
            store: ThreadSafeStore::new(indexers),
        }
    }

    /// The key `obj` has in this store.
    ///
    /// # Errors
    ///
    /// The key function's error.
    pub fn key_of(&self, obj: &T) -> Result<ObjectKey> {
        Ok((self.key_func)(obj)?)
    }

    /// The thread-safe map underneath.
    pub fn thread_safe_store(&self) -> &ThreadSafeStore<T> {
        &self.store
    }
}

impl<T: Object> Default for Cache<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Object> Store<T> for Cache<T> {
    fn add(&self, obj: Arc<T>) -> Result<()> {
        let key = self.key_of(&obj)?;
        self.store.add(key, obj)
    }

    fn update(&self, obj: Arc<T>) -> Result<()> {
        let key = self.key_of(&obj)?;
        self.store.update(key, obj)
    }

    fn delete(&self, obj: Arc<T>) -> Result<()> {
        let key = self.key_of(&obj)?;
        self.store.delete(key.as_str(), Some(&obj))
    }

    fn list(&self) -> Vec<Arc<T>> {
        self.store.list()
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        self.store.list_keys()
    }

    fn get(&self, obj: &T) -> Result<Option<Arc<T>>> {
        let key = self.key_of(obj)?;
        Ok(self.store.get(key.as_str()))
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<T>> {
        self.store.get(key)
    }

    fn replace(&self, list: Vec<Arc<T>>, resource_version: &str) -> Result<()> {
        let mut items = HashMap::with_capacity(list.len());
        for obj in list {
            items.insert(self.key_of(&obj)?, obj);
        }
        self.store.replace(items, resource_version)
    }

    fn bookmark(&self, resource_version: &str) {
        self.store.bookmark(resource_version);
    }

    fn update_resource_version(&self, resource_version: &str) {
        self.store.bookmark(resource_version);
    }

    fn last_sync_resource_version(&self) -> Option<String> {
        self.store.last_sync_resource_version()
    }

    fn len(&self) -> usize {
        self.store.len()
    }
}

impl<T: Object> Indexer<T> for Cache<T> {
    fn index(&self, index_name: &str, obj: &T) -> Result<Vec<Arc<T>>> {
        self.store.index(index_name, obj)
    }

    fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<ObjectKey>> {
        self.store.index_keys(index_name, value)
    }

    fn list_index_func_values(&self, index_name: &str) -> Vec<String> {
        self.store.list_index_func_values(index_name)
    }

    fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<T>>> {
        self.store.by_index(index_name, value)
    }

    fn indexers(&self) -> Indexers<T> {
        self.store.indexers()
    }

    fn add_indexers(&self, indexers: Indexers<T>) -> Result<()> {
        self.store.add_indexers(indexers)
    }

    fn delete_by_key(&self, key: &str) -> Result<()> {
        self.store.delete(key, None)
    }

    /// Keys every write first (a write whose key cannot be computed fails alone), then applies
    /// the rest under one lock, as [`ThreadSafeStore::transaction`] does.
    fn transaction(&self, batch: Vec<Transaction<T>>) -> Result<(), TransactionError> {
        let total = batch.len();
        let mut failed = Vec::new();
        let mut writes = Vec::with_capacity(total);
        for (i, write) in batch.into_iter().enumerate() {
            let keyed = match write {
                Transaction::Add(obj) | Transaction::Update(obj) => {
                    self.key_of(&obj).map(|key| Write::Put(key, obj))
                }
                Transaction::Delete(obj) => {
                    self.key_of(&obj).map(|key| Write::Remove(key, Some(obj)))
                }
                Transaction::DeleteKey(key) => Ok(Write::Remove(key, None)),
            };
            match keyed {
                Ok(write) => writes.push((i, write)),
                Err(e) => failed.push((i, e)),
            }
        }
        self.store.apply(writes, &mut failed);
        TransactionError::from_failures(total, failed).map_or(Ok(()), Err)
    }
}

impl<T> fmt::Debug for Cache<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DynamicObject, Error, KeyError, NAMESPACE_INDEX};

    fn obj(ns: &str, name: &str, rv: &str, app: &str) -> Arc<DynamicObject> {
        let mut o = DynamicObject::new(Some(ns), name);
        o.metadata.resource_version = Some(rv.to_owned());
        if !app.is_empty() {
            o.metadata.labels = Some([("app".to_owned(), app.to_owned())].into());
        }
        Arc::new(o)
    }

    fn by_app() -> Indexers<DynamicObject> {
        Indexers::new()
            .with_namespace()
            .with("app", |o: &DynamicObject| {
                Ok(o.metadata
                    .labels
                    .iter()
                    .filter_map(|l| l.get("app").cloned())
                    .collect())
            })
    }

    fn boom_on(app: &'static str) -> Indexers<DynamicObject> {
        Indexers::new().with("app", move |o: &DynamicObject| {
            let apps: Vec<String> = o
                .metadata
                .labels
                .iter()
                .filter_map(|l| l.get("app").cloned())
                .collect();
            if apps.iter().any(|a| a == app) {
                return Err(format!("no index for {app}").into());
            }
            Ok(apps)
        })
    }

    /// client-go 1.36's `Transaction` on its thread-safe store (batch processing): the writes
    /// that can be applied are, the one an index function refuses is skipped and leaves its
    /// key as it was, and the error says how many of how many failed, which, and why.
    #[test]
    fn a_transaction_applies_what_it_can_and_names_what_failed() {
        let c = Cache::with_indexers(boom_on("boom"));
        c.add(obj("a", "c", "1", "web")).unwrap();
        c.add(obj("a", "d", "2", "web")).unwrap();
        let err = c
            .transaction(vec![
                Transaction::Add(obj("a", "x", "3", "api")),
                Transaction::Update(obj("a", "c", "4", "boom")),
                Transaction::DeleteKey(ObjectKey::explicit("a/d")),
            ])
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to execute (1/3) transactions: #1: unable to calculate an index entry for \
             key \"a/c\" on index \"app\": no index for boom"
        );
        assert_eq!(err.successful(), [0, 2]);
        assert_eq!((err.total(), err.failed().len()), (3, 1));
        assert!(matches!(err.failed()[0], (1, Error::IndexFunc { .. })));
        assert!(c.get_by_key("a/x").is_some());
        assert!(c.get_by_key("a/d").is_none());
        let kept = c.get_by_key("a/c").unwrap();
        assert_eq!(kept.metadata.resource_version.as_deref(), Some("1"));
        assert_eq!(c.index_keys("app", "web").unwrap(), ["a/c"]);
        assert_eq!(c.index_keys("app", "api").unwrap(), ["a/x"]);
        assert_eq!(
            c.last_sync_resource_version().as_deref(),
            Some("3"),
            "the last applied object's version"
        );
        c.transaction(vec![Transaction::Delete(obj("a", "x", "5", "api"))])
            .unwrap();
        assert_eq!(c.last_sync_resource_version().as_deref(), Some("5"));
        assert!(c.index_keys("app", "api").unwrap().is_empty());
    }

    /// A write whose key cannot be computed fails alone, at its own position.
    #[test]
    fn a_transaction_write_without_a_key_fails_alone() {
        let c = Cache::<DynamicObject>::new();
        let err = c
            .transaction(vec![
                Transaction::Add(Arc::new(DynamicObject::new(Some("a"), ""))),
                Transaction::Add(obj("a", "y", "1", "")),
            ])
            .unwrap_err();
        assert_eq!(err.successful(), [1]);
        assert!(matches!(
            err.failed()[0],
            (0, Error::Key(KeyError::MissingName { .. }))
        ));
        assert_eq!(c.list_keys(), [ObjectKey::explicit("a/y")]);
    }

    /// The batch is applied under one acquisition of the lock: a reader never sees half of it.
    /// The reader looks until the writer is done, and half-way through the writer waits for it
    /// to look twice, so the two overlap however the threads are scheduled.
    #[test]
    fn readers_see_all_of_a_transaction_or_none_of_it() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

        let c = Arc::new(Cache::<DynamicObject>::new());
        let writer_done = Arc::new(AtomicBool::new(false));
        let looks = Arc::new(AtomicUsize::new(0));
        let reader = {
            let (c, writer_done, looks) =
                (Arc::clone(&c), Arc::clone(&writer_done), Arc::clone(&looks));
            std::thread::spawn(move || {
                let mut mid_way = 0_usize;
                loop {
                    // The flag first: a look after it was set sees every batch.
                    let done = writer_done.load(Ordering::Acquire);
                    let n = c.len();
                    assert_eq!(n % 2, 0, "half a batch seen: {n} objects");
                    mid_way += usize::from(n > 0 && n < 4000);
                    looks.fetch_add(1, Ordering::AcqRel);
                    if done {
                        assert_eq!(n, 4000);
                        return mid_way;
                    }
                    std::thread::yield_now();
                }
            })
        };
        for i in 0..2000 {
            c.transaction(vec![
                Transaction::Add(obj("a", &format!("x{i}"), "1", "")),
                Transaction::Add(obj("a", &format!("y{i}"), "1", "")),
            ])
            .unwrap();
            if i == 1000 {
                // Two more looks: at least one of them wholly after this batch (unless the
                // reader failed, which its join reports).
                let seen = looks.load(Ordering::Acquire);
                while looks.load(Ordering::Acquire) < seen + 2 && !reader.is_finished() {
                    std::thread::yield_now();
                }
            }
        }
        writer_done.store(true, Ordering::Release);
        let mid_way = reader.join().unwrap();
        assert!(
            mid_way > 0,
            "the reader looked while the batches were written"
        );
        assert_eq!(c.len(), 4000);
    }

    /// client-go's `TestThreadSafeStoreRV` and `TestStoreResourceVersionWithNonMetaTransform`:
    /// an object without a resource version (or whose transform dropped it) keeps the last
    /// synced one; the next object that has one moves it on.
    #[test]
    fn an_object_without_a_resource_version_keeps_the_last_synced_one() {
        let c = Cache::with_indexers(by_app());
        c.add(obj("a", "x", "5", "web")).unwrap();
        c.add(obj("a", "y", "", "web")).unwrap();
        assert_eq!(c.last_sync_resource_version().as_deref(), Some("5"));
        let no_rv = Arc::new(DynamicObject::new(Some("a"), "z"));
        assert!(no_rv.metadata.resource_version.is_none());
        c.update(Arc::clone(&no_rv)).unwrap();
        c.delete(no_rv).unwrap();
        assert_eq!(c.last_sync_resource_version().as_deref(), Some("5"));
        c.add(obj("a", "w", "6", "web")).unwrap();
        assert_eq!(c.last_sync_resource_version().as_deref(), Some("6"));
    }

    #[test]
    fn add_get_delete_and_rv_tracking() {
        let c = Cache::with_indexers(by_app());
        c.add(obj("a", "x", "1", "web")).unwrap();
        c.add(obj("a", "y", "2", "web")).unwrap();
        assert_eq!(c.last_sync_resource_version().as_deref(), Some("2"));
        assert_eq!(c.len(), 2);
        let got = c.get(&obj("a", "x", "9", "")).unwrap().unwrap();
        assert_eq!(got.metadata.resource_version.as_deref(), Some("1"));
        c.delete(obj("a", "x", "3", "")).unwrap();
        assert_eq!(c.last_sync_resource_version().as_deref(), Some("3"));
        assert!(c.get_by_key("a/x").is_none());
        assert_eq!(c.index_keys("app", "web").unwrap(), ["a/y"]);
        c.delete_by_key("a/y").unwrap();
        assert!(
            c.list_index_func_values("app").is_empty(),
            "empty sets removed"
        );
        assert!(c.list_index_func_values(NAMESPACE_INDEX).is_empty());
        // Deleting what is not there is not an error.
        c.delete(obj("a", "zzz", "4", "")).unwrap();
    }

    #[test]
    fn update_moves_index_entries() {
        let c = Cache::with_indexers(by_app());
        c.add(obj("a", "x", "1", "web")).unwrap();
        c.update(obj("a", "x", "2", "db")).unwrap();
        assert!(c.index_keys("app", "web").unwrap().is_empty());
        assert_eq!(c.by_index("app", "db").unwrap().len(), 1);
        assert_eq!(c.list_index_func_values("app"), ["db"]);
        let same = c.index("app", &obj("b", "q", "1", "db")).unwrap();
        assert_eq!(same.len(), 1);
    }

    #[test]
    fn unknown_index_and_conflicts() {
        let c = Cache::with_indexers(by_app());
        assert!(matches!(
            c.by_index("nope", "v"),
            Err(Error::IndexNotFound(_))
        ));
        assert!(matches!(
            c.index_keys("nope", "v"),
            Err(Error::IndexNotFound(_))
        ));
        assert!(c.list_index_func_values("nope").is_empty());
        let err = c
            .add_indexers(Indexers::new().with_namespace())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "indexer conflict: \"namespace\" is already registered"
        );
    }

    #[test]
    fn add_indexers_indexes_existing_objects() {
        let c = Cache::new();
        c.add(obj("a", "x", "1", "web")).unwrap();
        c.add(obj("b", "y", "2", "")).unwrap();
        c.add_indexers(by_app()).unwrap();
        assert_eq!(c.index_keys(NAMESPACE_INDEX, "b").unwrap(), ["b/y"]);
        assert_eq!(c.index_keys("app", "web").unwrap(), ["a/x"]);
        assert_eq!(c.indexers().len(), 2);
    }

    #[test]
    fn failures_leave_the_store_unchanged() {
        let c = Cache::with_indexers(Indexers::new().with("strict", |o: &DynamicObject| {
            if o.metadata.name.as_deref() == Some("bad") {
                Err("bad object".into())
            } else {
                Ok(vec!["ok".to_owned()])
            }
        }));
        c.add(obj("a", "x", "1", "")).unwrap();
        let err = c.add(obj("a", "bad", "2", "")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unable to calculate an index entry for key \"a/bad\" on index \"strict\""
        );
        assert_eq!(
            std::error::Error::source(&err).unwrap().to_string(),
            "bad object"
        );
        assert!(c.get_by_key("a/bad").is_none());
        assert_eq!(c.last_sync_resource_version().as_deref(), Some("1"));

        let err = c
            .replace(vec![obj("a", "y", "1", ""), obj("a", "bad", "1", "")], "10")
            .unwrap_err();
        assert!(matches!(err, Error::IndexFunc { .. }));
        assert_eq!(c.list_keys(), ["a/x"]);

        let nameless = Arc::new(DynamicObject::default());
        assert!(matches!(
            c.add(nameless.clone()),
            Err(Error::Key(KeyError::MissingName { .. }))
        ));
        assert!(
            c.replace(vec![obj("a", "z", "1", ""), nameless], "11")
                .is_err()
        );
        assert_eq!(c.list_keys(), ["a/x"]);
        assert_eq!(c.index_keys("strict", "ok").unwrap(), ["a/x"]);

        let c2 = Cache::new();
        c2.add(obj("a", "bad", "1", "")).unwrap();
        let failing = Indexers::new().with("strict", |_: &DynamicObject| Err("no".into()));
        assert!(c2.add_indexers(failing).is_err());
        assert!(c2.indexers().is_empty());
    }

    #[test]
    fn replace_later_duplicates_win_and_sets_rv() {
        let c = Cache::with_indexers(by_app());
        c.add(obj("a", "old", "1", "web")).unwrap();
        c.replace(
            vec![obj("a", "x", "1", "web"), obj("a", "x", "2", "db")],
            "50",
        )
        .unwrap();
        assert_eq!(c.list_keys(), ["a/x"]);
        assert_eq!(c.list_index_func_values("app"), ["db"]);
        assert_eq!(c.last_sync_resource_version().as_deref(), Some("50"));
        c.bookmark("60");
        assert_eq!(c.last_sync_resource_version().as_deref(), Some("60"));
    }
}
