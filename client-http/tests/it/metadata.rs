//! Metadata-only lister-watchers (`HttpListerWatcher::metadata`) against a scripted server: the
//! `Accept` headers of lists and watches, objects in the `PartialObjectMetadata` form naming
//! the resource's type, whole objects from a server that ignores the request decoded alike,
//! `managedFields` skipped, and an object of another type refused.

use futures_util::StreamExt;
use kcache_client_http::{ApiResource, Client, Config, HttpListerWatcher};
use kcache_reflector::{ListOptions, ListerWatcher, WatchEvent};
use kcache_store::{Compact, Object, PartialObjectMetadata};
use kcache_testing_server::scripted_server::{Reply, ScriptedServer, watch_line};
use serde_json::json;

fn secrets() -> ApiResource {
    ApiResource::new("", "v1", "secrets", true)
}

fn partial(name: &str, rv: &str) -> serde_json::Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
        "metadata": {"name": name, "namespace": "web", "resourceVersion": rv,
            "labels": {"app": "web"}, "managedFields": [{"manager": "m", "operation": "Update"}]}})
}

fn lister_watcher(server: &ScriptedServer) -> HttpListerWatcher<PartialObjectMetadata> {
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    HttpListerWatcher::<PartialObjectMetadata>::builder(client, secrets())
        .kind("Secret")
        .metadata_only()
        .build()
}

#[tokio::test]
async fn lists_and_watches_ask_for_metadata_and_name_the_resources_type() {
    let server = ScriptedServer::start(|req| {
        if req.is_list() {
            let body = json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": "10"}, "items": [partial("a", "8"), partial("b", "9")]});
            Reply::json(200, body.to_string())
        } else {
            let lines = futures_util::stream::iter([watch_line("MODIFIED", &partial("a", "11"))]);
            Reply::stream(200, lines)
        }
    })
    .await
    .unwrap();
    let lw = lister_watcher(&server);
    let list = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(list.resource_version, "10");
    let names: Vec<_> = list.items.iter().filter_map(Object::name).collect();
    assert_eq!(names, ["a", "b"]);
    let a = &list.items[0];
    assert_eq!(
        (a.api_version.as_deref(), a.kind.as_deref()),
        (Some("v1"), Some("Secret"))
    );
    assert!(!a.metadata.other.contains_key("managedFields"));
    assert_eq!(a.labels().map(|l| l["app"].as_str()), Some("web"));

    let opts = ListOptions {
        resource_version: "10".into(),
        ..ListOptions::default()
    };
    let mut watch = lw.watch(&opts).await.unwrap();
    match watch.next().await {
        Some(Ok(WatchEvent::Modified(a))) => {
            assert_eq!(a.resource_version(), Some("11"));
            assert_eq!(a.kind.as_deref(), Some("Secret"));
        }
        other => panic!("expected the MODIFIED event, got {other:?}"),
    }
    let requests = server.requests();
    assert_eq!(
        requests[0].accept.as_deref(),
        Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")
    );
    assert_eq!(
        requests[1].accept.as_deref(),
        Some("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json")
    );
}

#[tokio::test]
async fn whole_objects_decode_alike_and_another_type_is_refused() {
    let server = ScriptedServer::start(|_| {
        let body = json!({"kind": "SecretList", "apiVersion": "v1",
            "metadata": {"resourceVersion": "5"},
            "items": [
                {"metadata": {"name": "a", "namespace": "web"}, "data": {"k": "dg=="}, "type": "Opaque"},
                {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c", "namespace": "web"}},
            ]});
        Reply::json(200, body.to_string())
    })
    .await
    .unwrap();
    let list = lister_watcher(&server)
        .list(&ListOptions::default())
        .await
        .unwrap();
    let names: Vec<_> = list.items.iter().filter_map(Object::name).collect();
    assert_eq!(names, ["a"]);
    assert_eq!(list.skipped.len(), 1, "the ConfigMap is left out");
    assert_eq!(list.items[0].kind.as_deref(), Some("Secret"));
}

#[tokio::test]
async fn compact_metadata_keeps_the_metadata_form_compact() {
    let server = ScriptedServer::start(|_| {
        let body = json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "10"}, "items": [partial("a", "8")]});
        Reply::json(200, body.to_string())
    })
    .await
    .unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let lw = HttpListerWatcher::<Compact<PartialObjectMetadata>>::compact(client, secrets())
        .kind("Secret")
        .metadata_only()
        .build();
    let list = lw.list(&ListOptions::default()).await.unwrap();
    let a = &list.items[0];
    assert_eq!(a.name(), Some("a"));
    assert_eq!(a.labels().map(|l| l["app"].as_str()), Some("web"));
    let typed = a.typed().unwrap();
    assert_eq!(typed.metadata.resource_version.as_deref(), Some("8"));
    assert!(!typed.metadata.other.contains_key("managedFields"));
    assert_eq!(
        server.requests()[0].accept.as_deref(),
        Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")
    );
}

/// An enveloped protobuf object from its JSON form (list items lose their type, as on the
/// wire).
fn protobuf(value: &serde_json::Value) -> Vec<u8> {
    let mut value = value.clone();
    for item in value
        .get_mut("items")
        .and_then(serde_json::Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let item = item.as_object_mut().unwrap();
        item.remove("apiVersion");
        item.remove("kind");
    }
    kcache_protobuf::envelope::encode_object(&value).unwrap()
}

#[tokio::test]
async fn metadata_in_protobuf_decodes_as_the_json_form_does() {
    let server = ScriptedServer::start(|req| {
        if req.is_list() {
            let body = json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": "10"}, "items": [partial("a", "8"), partial("b", "9")]});
            Reply::protobuf(200, protobuf(&body))
        } else {
            let mut frames = Vec::new();
            for (event_type, object) in [
                ("MODIFIED", partial("a", "11")),
                // A server that ignores `as=`: the whole object, decoded alike.
                ("ADDED", json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "c", "namespace": "web", "resourceVersion": "12"},
                    "data": {"k": "dg=="}, "type": "Opaque"})),
                // Another type: refused with its identity.
                ("ADDED", json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "d", "namespace": "web", "resourceVersion": "13"}})),
            ] {
                let mut frame = Vec::new();
                kcache_protobuf::frames::write_event(event_type, &protobuf(&object), &mut frame);
                frames.push(bytes::Bytes::from(frame));
            }
            Reply::protobuf_stream(200, futures_util::stream::iter(frames))
        }
    })
    .await
    .unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let lw = HttpListerWatcher::<PartialObjectMetadata>::builder(client, secrets())
        .kind("Secret")
        .metadata_only()
        .protobuf()
        .build();
    let list = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(list.resource_version, "10");
    let json_list: Vec<PartialObjectMetadata> = ["a", "b"]
        .iter()
        .zip(["8", "9"])
        .map(|(name, rv)| {
            let mut object: PartialObjectMetadata =
                serde_json::from_value(partial(name, rv)).unwrap();
            object.metadata.other.remove("managedFields");
            object.api_version = Some("v1".into());
            object.kind = Some("Secret".into());
            object
        })
        .collect();
    assert_eq!(list.items, json_list);

    let mut watch = lw.watch(&ListOptions::default()).await.unwrap();
    match watch.next().await {
        Some(Ok(WatchEvent::Modified(a))) => {
            assert_eq!(a.resource_version(), Some("11"));
            assert_eq!(a.kind.as_deref(), Some("Secret"));
            assert!(!a.metadata.other.contains_key("managedFields"));
        }
        other => panic!("expected the MODIFIED event, got {other:?}"),
    }
    match watch.next().await {
        Some(Ok(WatchEvent::Added(c))) => {
            assert_eq!((c.name(), c.kind.as_deref()), (Some("c"), Some("Secret")));
        }
        other => panic!("expected the whole Secret, got {other:?}"),
    }
    match watch.next().await {
        Some(Err(e)) => assert!(e.to_string().contains("ConfigMap"), "{e}"),
        other => panic!("expected the ConfigMap refused, got {other:?}"),
    }
    let requests = server.requests();
    assert_eq!(
        requests[0].accept.as_deref(),
        Some(
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,\
             application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
        )
    );
    assert_eq!(
        requests[1].accept.as_deref(),
        Some(
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,\
             application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
        )
    );
}
