//! Public types are `Send + Sync + 'static`, so they can live in `Arc`s shared across tasks, and
//! the futures of `ObjectClient` are `Send`, so they can be spawned.

use std::future::Future;

use kcache_client_http::{
    ApiResource, Client, Config, Error, EventRecorder, EventRecorderBuilder, EventType,
    HttpLeaseLock, HttpListerWatcher, HyperTransport, Identity, Kubeconfig, ObjectClient,
    ObjectReference, Patch, Preconditions, Recorded, RecorderStats, Scale, Secret, WatchDecoder,
};
use kcache_store::DynamicObject;

fn assert_send_sync<T: Send + Sync + 'static>() {}

fn assert_send<F: Future + Send>(_: F) {}

#[test]
fn object_client_futures_are_send() {
    let config = Config::new("http://127.0.0.1:1".parse().unwrap());
    let client = ObjectClient::<DynamicObject>::dynamic(
        Client::new(config).unwrap(),
        ApiResource::new("", "v1", "configmaps", true),
    );
    let object = DynamicObject::new(Some("ns"), "a");
    let patch = Patch::Merge(serde_json::json!({}));
    // Built, never polled.
    assert_send(client.get("a"));
    assert_send(client.create(&object));
    assert_send(client.replace(&object));
    assert_send(client.patch("a", &patch));
    assert_send(client.delete("a", Some(&Preconditions::new())));
    assert_send(client.get_status("a"));
    assert_send(client.replace_status(&object));
    assert_send(client.patch_status("a", &patch));
    let scale = Scale::default();
    assert_send(client.get_scale("a"));
    assert_send(client.replace_scale("a", &scale));
    assert_send(client.patch_scale("a", &patch));
}

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
    assert_send_sync::<ObjectClient<DynamicObject>>();
    assert_send_sync::<HttpLeaseLock>();
    assert_send_sync::<Patch>();
    assert_send_sync::<Preconditions>();
    assert_send_sync::<Scale>();
    assert_send_sync::<EventRecorder>();
    assert_send_sync::<EventRecorderBuilder>();
    assert_send_sync::<ObjectReference>();
    assert_send_sync::<EventType>();
    assert_send_sync::<Recorded>();
    assert_send_sync::<RecorderStats>();
}

#[tokio::test]
async fn event_recorder_shutdown_is_send() {
    let config = Config::new("http://127.0.0.1:1".parse().unwrap());
    let recorder = EventRecorder::new(Client::new(config).unwrap(), "example.com/c", "i").unwrap();
    // Built, never polled.
    assert_send(recorder.shutdown());
}
