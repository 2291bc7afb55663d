//! Listers: read-only queries over an [`Indexer`] by selector, namespace and name.

use std::fmt;
use std::sync::Arc;

use crate::{Indexer, NAMESPACE_INDEX, Object, ObjectKey, Selector};

/// Read-only queries over a cache, as client-go's generated listers.
///
/// Uses the [`NAMESPACE_INDEX`] for per-namespace lists when the indexer has it and scans
/// otherwise.
///
/// ```
/// use std::sync::Arc;
/// use kcache_store::{Cache, DynamicObject, Indexers, Lister, Selector, Store};
///
/// let cache = Arc::new(Cache::with_indexers(Indexers::new().with_namespace()));
/// let mut web = DynamicObject::new(Some("prod"), "web");
/// web.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
/// cache.add(Arc::new(web))?;
/// cache.add(Arc::new(DynamicObject::new(Some("prod"), "db")))?;
///
/// let lister = Lister::new(cache);
/// let sel: Selector = "app=web".parse()?;
/// assert_eq!(lister.list(&sel).len(), 1);
/// assert_eq!(lister.namespace("prod").list(&Selector::everything()).len(), 2);
/// assert!(lister.namespace("prod").get("db").is_some());
/// assert!(lister.get_by_key("prod/db").is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Lister<T> {
    indexer: Arc<dyn Indexer<T>>,
}

impl<T: Object> Lister<T> {
    /// A lister over `indexer`.
    pub fn new(indexer: Arc<dyn Indexer<T>>) -> Self {
        Self { indexer }
    }

    /// Every object matching `selector`.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<T>> {
        let mut all = self.indexer.list();
        if !selector.is_empty() {
            all.retain(|o| selector.matches(o.labels()));
        }
        all
    }

    /// A cluster-scoped object by name.
    pub fn get(&self, name: &str) -> Option<Arc<T>> {
        self.indexer.get_by_key(name)
    }

    /// The object under `key` (`namespace/name`, or `name`): what a reconcile handed a key
    /// looks up.
    pub fn get_by_key(&self, key: &str) -> Option<Arc<T>> {
        self.indexer.get_by_key(key)
    }

    /// Queries limited to `namespace` (`""` means every namespace).
    pub fn namespace(&self, namespace: &str) -> NamespaceLister<T> {
        NamespaceLister {
            indexer: Arc::clone(&self.indexer),
            namespace: namespace.to_owned(),
        }
    }
}

impl<T> Clone for Lister<T> {
    fn clone(&self) -> Self {
        Self {
            indexer: Arc::clone(&self.indexer),
        }
    }
}

impl<T> fmt::Debug for Lister<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister").finish_non_exhaustive()
    }
}

/// A [`Lister`] limited to one namespace.
pub struct NamespaceLister<T> {
    indexer: Arc<dyn Indexer<T>>,
    namespace: String,
}

impl<T: Object> NamespaceLister<T> {
    /// The objects of this namespace matching `selector`.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<T>> {
        let ns = self.namespace.as_str();
        let mut found = if ns.is_empty() {
            self.indexer.list()
        } else if let Ok(objs) = self.indexer.by_index(NAMESPACE_INDEX, ns) {
            objs
        } else {
            let mut all = self.indexer.list();
            all.retain(|o| o.namespace().unwrap_or_default() == ns);
            all
        };
        if !selector.is_empty() {
            found.retain(|o| selector.matches(o.labels()));
        }
        found
    }

    /// The object `name` in this namespace.
    pub fn get(&self, name: &str) -> Option<Arc<T>> {
        let key = ObjectKey::new(Some(&self.namespace), name);
        self.indexer.get_by_key(key.as_str())
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }
}

impl<T> fmt::Debug for NamespaceLister<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceLister")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}
