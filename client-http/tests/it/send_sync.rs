//! Public types are `Send + Sync + 'static`, so they can live in `Arc`s shared across tasks.

use kcache_client_http::{
    ApiResource, Client, Config, Error, HttpListerWatcher, HyperTransport, Identity, Kubeconfig,
    Secret, WatchDecoder,
};
use kcache_store::DynamicObject;

fn assert_send_sync<T: Send + Sync + 'static>() {}

#[test]
fn public_types_are_send_and_sync() {
    assert_send_sync::<Client>();
    assert_send_sync::<Config>();
    assert_send_sync::<Error>();
    assert_send_sync::<HttpListerWatcher<DynamicObject>>();
    assert_send_sync::<HyperTransport>();
    assert_send_sync::<Identity>();
    assert_send_sync::<Kubeconfig>();
    assert_send_sync::<Secret>();
    assert_send_sync::<ApiResource>();
    assert_send_sync::<WatchDecoder<DynamicObject>>();
}
