//! Shared helpers: small objects and the index functions the tests use.

use std::sync::Arc;

use kcache_store::{DynamicObject, Indexers, Object};

/// A namespaced object with an optional `app` label and a resource version.
pub(crate) fn obj(ns: &str, name: &str, app: Option<&str>, rv: u64) -> Arc<DynamicObject> {
    let mut o = DynamicObject::new(Some(ns), name);
    o.metadata.resource_version = Some(rv.to_string());
    o.metadata.labels = app.map(|a| [("app".to_owned(), a.to_owned())].into());
    Arc::new(o)
}

/// Index by the `app` label: zero or one value.
pub(crate) fn app_values(o: &DynamicObject) -> Vec<String> {
    o.labels()
        .and_then(|l| l.get("app"))
        .cloned()
        .into_iter()
        .collect()
}

/// Index by every distinct letter of the name: many values per object.
pub(crate) fn letter_values(o: &DynamicObject) -> Vec<String> {
    let mut v: Vec<String> = o
        .name()
        .unwrap_or_default()
        .chars()
        .map(String::from)
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The indexes by name, in a fixed order.
pub(crate) fn indexer(name: &str) -> Indexers<DynamicObject> {
    match name {
        "namespace" => Indexers::new().with_namespace(),
        "app" => Indexers::new().with("app", |o: &DynamicObject| Ok(app_values(o))),
        _ => Indexers::new().with("letters", |o: &DynamicObject| Ok(letter_values(o))),
    }
}
