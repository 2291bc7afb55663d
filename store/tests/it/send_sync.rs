//! Compile-time checks that the public types can cross threads.

use kcache_store::{
    Cache, DeletedFinalStateUnknown, DynamicObject, Error, FieldSelector, Indexer, Indexers,
    Lister, NamespaceLister, ObjectKey, ObjectOrTombstone, Selector, Store, ThreadSafeStore,
};

fn send_sync<T: Send + Sync + 'static>() {}

#[test]
fn public_types_are_send_sync() {
    send_sync::<Cache<DynamicObject>>();
    send_sync::<ThreadSafeStore<DynamicObject>>();
    send_sync::<Indexers<DynamicObject>>();
    send_sync::<Lister<DynamicObject>>();
    send_sync::<NamespaceLister<DynamicObject>>();
    send_sync::<ObjectKey>();
    send_sync::<ObjectOrTombstone<DynamicObject>>();
    send_sync::<DeletedFinalStateUnknown<DynamicObject>>();
    send_sync::<Selector>();
    send_sync::<FieldSelector>();
    send_sync::<Error>();
    send_sync::<std::sync::Arc<dyn Store<DynamicObject>>>();
    send_sync::<std::sync::Arc<dyn Indexer<DynamicObject>>>();
}
