//! The `k8s-openapi` feature: typed Kubernetes objects in the cache.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kcache_store::{Cache, Indexer, Indexers, Lister, Object, Selector, Store};

fn pod(ns: &str, name: &str, app: &str) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            resource_version: Some("42".into()),
            uid: Some(format!("uid-{name}")),
            labels: Some([("app".to_owned(), app.to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    })
}

#[test]
fn typed_objects_implement_object() {
    let p = pod("default", "web-1", "web");
    assert_eq!(p.name(), Some("web-1"));
    assert_eq!(p.namespace(), Some("default"));
    assert_eq!(p.resource_version(), Some("42"));
    assert_eq!(p.uid(), Some("uid-web-1"));
    assert_eq!(p.labels().unwrap()["app"], "web");
    assert!(!p.is_being_deleted());
    let cm = ConfigMap::default();
    assert_eq!(cm.name(), None);
}

#[test]
fn typed_cache_with_listers() {
    let cache = Arc::new(Cache::<Pod>::with_indexers(
        Indexers::new().with_namespace(),
    ));
    cache.add(pod("default", "web-1", "web")).unwrap();
    cache.add(pod("default", "db-1", "db")).unwrap();
    cache.add(pod("other", "web-2", "web")).unwrap();
    assert_eq!(cache.by_index("namespace", "default").unwrap().len(), 2);
    let lister = Lister::new(cache);
    let web: Selector = "app=web".parse().unwrap();
    assert_eq!(lister.list(&web).len(), 2);
    assert_eq!(lister.namespace("other").list(&web).len(), 1);
    assert!(lister.namespace("default").get("db-1").is_some());
    assert!(lister.namespace("other").get("db-1").is_none());
    assert!(Cache::<Pod>::new().add(Arc::new(Pod::default())).is_err());
}

#[test]
fn typed_objects_clear_their_managed_fields() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    use kcache_store::ClearManagedFields;
    let mut p = Pod {
        metadata: ObjectMeta {
            name: Some("a".into()),
            managed_fields: Some(vec![ManagedFieldsEntry::default()]),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    };
    p.clear_managed_fields();
    assert!(p.metadata.managed_fields.is_none());
    assert_eq!(p.name(), Some("a"));
}
