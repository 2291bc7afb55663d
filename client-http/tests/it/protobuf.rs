//! Protobuf lister-watchers (`HttpListerWatcherBuilder::protobuf`) against a scripted server:
//! the `Accept` header, lists and watches in protobuf decoding to exactly what the same
//! objects give in JSON, a server answering JSON read as JSON, an undecodable item left out
//! with its identity, an oversized frame refused.

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kcache_client_http::{ApiResource, Client, Config, HttpListerWatcher};
use kcache_protobuf::envelope::{self, encode_object};
use kcache_protobuf::frames::write_event;
use kcache_protobuf::wire::{put_bytes, put_nested};
use kcache_reflector::{ListOptions, ListerWatcher, WatchEvent};
use kcache_testing_server::scripted_server::{Reply, ScriptedServer, list_body, watch_line};
use serde_json::{Value, json};

fn pod(name: &str, rv: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "web", "resourceVersion": rv, "uid": format!("uid-{name}"),
            "creationTimestamp": "2024-05-01T10:00:00Z", "labels": {"app": "web"},
            "annotations": {"note": "caf\u{e9} \"quoted\"\n", "prometheus.io/scrape": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u", "controller": true}],
            "managedFields": [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                "time": "2024-05-01T10:00:01Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}]},
        "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "nginx:1",
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
            "volumes": [{"name": "cfg", "configMap": {"name": "web", "defaultMode": 420}}]},
        "status": {"phase": "Running", "podIP": "10.0.0.5", "startTime": "2024-05-01T10:00:02Z",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:03Z"}]}})
}

fn protobuf_list(rv: &str, items: &[Value]) -> Vec<u8> {
    let items: Vec<Value> = items
        .iter()
        .map(|i| {
            let mut i = i.clone();
            let o = i.as_object_mut().unwrap();
            o.remove("apiVersion");
            o.remove("kind");
            i
        })
        .collect();
    encode_object(&json!({"apiVersion": "v1", "kind": "PodList",
        "metadata": {"resourceVersion": rv}, "items": items}))
    .unwrap()
}

fn frame(event_type: &str, object: &Value) -> bytes::Bytes {
    let mut out = Vec::new();
    write_event(event_type, &encode_object(object).unwrap(), &mut out);
    bytes::Bytes::from(out)
}

fn lister_watcher(server: &ScriptedServer, protobuf: bool) -> HttpListerWatcher<Pod> {
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let builder = HttpListerWatcher::<Pod>::builder(client, ApiResource::of::<Pod>()).kind("Pod");
    if protobuf {
        builder.protobuf()
    } else {
        builder
    }
    .build()
}

fn events() -> Vec<(&'static str, Value)> {
    let bookmark = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"resourceVersion": "13",
        "annotations": {"k8s.io/initial-events-end": "true"}}});
    let gone = json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
        "message": "too old resource version: 1 (13)", "reason": "Expired", "code": 410});
    vec![
        ("ADDED", pod("c", "11")),
        ("MODIFIED", pod("a", "12")),
        ("BOOKMARK", bookmark),
        ("DELETED", pod("b", "13")),
        ("ERROR", gone),
    ]
}

#[tokio::test]
async fn protobuf_lists_and_watches_decode_as_json_does() {
    let items = [pod("a", "8"), pod("b", "9")];
    let proto = ScriptedServer::start(move |req| {
        if req.is_list() {
            Reply::protobuf(200, protobuf_list("10", &[pod("a", "8"), pod("b", "9")]))
        } else {
            let frames: Vec<_> = events().iter().map(|(t, o)| frame(t, o)).collect();
            Reply::protobuf_stream(200, futures_util::stream::iter(frames))
        }
    })
    .await
    .unwrap();
    let json_server = ScriptedServer::start(move |req| {
        if req.is_list() {
            Reply::json(200, list_body("10", None, &items))
        } else {
            let lines: Vec<_> = events().iter().map(|(t, o)| watch_line(t, o)).collect();
            Reply::stream(200, futures_util::stream::iter(lines))
        }
    })
    .await
    .unwrap();
    let (p, j) = (
        lister_watcher(&proto, true),
        lister_watcher(&json_server, false),
    );
    let opts = ListOptions::default();
    let (from_protobuf, from_json) = (p.list(&opts).await.unwrap(), j.list(&opts).await.unwrap());
    assert_eq!(from_protobuf.resource_version, "10");
    assert_eq!(from_protobuf.items, from_json.items);
    assert_eq!(from_protobuf.items.len(), 2);
    assert!(
        from_protobuf.items[0].metadata.managed_fields.is_none(),
        "skipped by default"
    );
    let accept = proto.requests()[0].accept.clone();
    assert_eq!(
        accept.as_deref(),
        Some("application/vnd.kubernetes.protobuf, application/json")
    );

    let watch = ListOptions {
        resource_version: "10".into(),
        ..ListOptions::default()
    };
    let got: Vec<_> = p.watch(&watch).await.unwrap().collect().await;
    let want: Vec<_> = j.watch(&watch).await.unwrap().collect().await;
    assert_eq!(got.len(), 5);
    for (g, w) in got.iter().zip(&want) {
        match (g.as_ref().unwrap(), w.as_ref().unwrap()) {
            (WatchEvent::Added(a), WatchEvent::Added(b))
            | (WatchEvent::Modified(a), WatchEvent::Modified(b))
            | (WatchEvent::Deleted(a), WatchEvent::Deleted(b)) => assert_eq!(a, b),
            (WatchEvent::Bookmark(a), WatchEvent::Bookmark(b)) => {
                assert_eq!(a, b);
                assert!(a.initial_events_end);
            }
            (WatchEvent::Error(a), WatchEvent::Error(b)) => {
                assert_eq!(a, b);
                assert_eq!(a.code, Some(410));
            }
            other => panic!("events differ: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_server_answering_json_is_read_as_json() {
    let server = ScriptedServer::start(|req| {
        if req.is_list() {
            Reply::json(200, list_body("5", None, &[pod("a", "4")]))
        } else {
            Reply::stream(
                200,
                futures_util::stream::iter([watch_line("ADDED", &pod("b", "6"))]),
            )
        }
    })
    .await
    .unwrap();
    let lw = lister_watcher(&server, true);
    let list = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("a"));
    let watch = ListOptions {
        resource_version: "5".into(),
        ..ListOptions::default()
    };
    let events: Vec<_> = lw.watch(&watch).await.unwrap().collect().await;
    assert!(
        matches!(&events[..], [Ok(WatchEvent::Added(p))] if p.metadata.name.as_deref() == Some("b"))
    );
}

#[tokio::test]
async fn an_undecodable_item_is_left_out_with_its_identity_and_big_frames_refused() {
    // Item b's spec.containers[0].name is a varint where a string belongs.
    let server = ScriptedServer::start(|req| {
        if req.is_list() {
            let mut bad = Vec::new();
            put_nested(&mut bad, 1, |m| {
                put_bytes(m, 1, b"b");
                put_bytes(m, 3, b"web");
                put_bytes(m, 6, b"9");
                Ok(())
            })
            .unwrap();
            put_nested(&mut bad, 2, |s| {
                put_nested(s, 2, |c| {
                    kcache_protobuf::wire::put_varint_field(c, 1, 7);
                    Ok(())
                })
            })
            .unwrap();
            let good = kcache_protobuf::encode::to_vec(
                &pod("a", "8"),
                kcache_protobuf::table::message_for_kind("v1", "Pod").unwrap(),
            )
            .unwrap();
            let mut list = Vec::new();
            put_nested(&mut list, 1, |m| {
                put_bytes(m, 2, b"10");
                Ok(())
            })
            .unwrap();
            put_bytes(&mut list, 2, &good);
            put_bytes(&mut list, 2, &bad);
            let mut body = Vec::new();
            envelope::write("v1", "PodList", &list, &mut body);
            Reply::protobuf(200, body)
        } else {
            let big = json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "big", "annotations": {"x": "y".repeat(4096)}}});
            Reply::protobuf_stream(200, futures_util::stream::iter([frame("ADDED", &big)]))
        }
    })
    .await
    .unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let lw = HttpListerWatcher::<Pod>::builder(client, ApiResource::of::<Pod>())
        .kind("Pod")
        .max_event_size(1024)
        .protobuf()
        .build();
    let list = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(list.resource_version, "10");
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.skipped.len(), 1);
    let skipped = list.skipped[0].to_string();
    assert!(
        skipped.contains("list item 1") && skipped.contains("web/b"),
        "{skipped}"
    );
    assert!(skipped.contains("`name`"), "{skipped}");
    let watch = ListOptions {
        resource_version: "10".into(),
        ..ListOptions::default()
    };
    let events: Vec<_> = lw.watch(&watch).await.unwrap().collect().await;
    let err = events[0].as_ref().unwrap_err().to_string();
    assert!(err.contains("over the limit of 1024"), "{err}");
}

/// Only kinds the protobuf table has are asked for in protobuf: a custom resource, a beta
/// version (an aggregated API's `PodMetrics`) or a lister-watcher without a kind asks for JSON,
/// since a server may answer those in a protobuf form the table cannot read.
#[tokio::test]
async fn kinds_the_table_lacks_are_asked_for_in_json() {
    let server = ScriptedServer::start(|_| {
        Reply::json(
            200,
            json!({"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []})
                .to_string(),
        )
    })
    .await
    .unwrap();
    let client = || Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let cases = [
        (
            ApiResource::new("example.com", "v1", "widgets", true),
            Some("Widget"),
        ),
        (
            ApiResource::new("metrics.k8s.io", "v1beta1", "pods", true),
            Some("PodMetrics"),
        ),
        (ApiResource::new("", "v1", "pods", true), None),
        (ApiResource::new("", "v1", "pods", true), Some("Pod")),
    ];
    for (resource, kind) in cases {
        let builder = HttpListerWatcher::<kcache_store::DynamicObject>::builder(client(), resource);
        let builder = match kind {
            Some(kind) => builder.kind(kind),
            None => builder,
        };
        let _ = builder
            .protobuf()
            .build()
            .list(&ListOptions::default())
            .await;
    }
    let accepts: Vec<Option<String>> = server.requests().into_iter().map(|r| r.accept).collect();
    assert_eq!(
        accepts,
        [
            Some("application/json".to_owned()),
            Some("application/json".to_owned()),
            Some("application/json".to_owned()),
            Some("application/vnd.kubernetes.protobuf, application/json".to_owned()),
        ]
    );
}

/// A protobuf `PodList` at resourceVersion 10 of pods a and b, then an item whose
/// `metadata.name` is a varint where a string belongs.
#[cfg(feature = "k8s-openapi")]
fn pod_list_with_a_bad_item() -> Vec<u8> {
    let mut bad = Vec::new();
    put_nested(&mut bad, 1, |m| {
        kcache_protobuf::wire::put_varint_field(m, 1, 7);
        Ok(())
    })
    .unwrap();
    let message = kcache_protobuf::table::message_for_kind("v1", "Pod").unwrap();
    let mut list = Vec::new();
    put_nested(&mut list, 1, |m| {
        put_bytes(m, 2, b"10");
        Ok(())
    })
    .unwrap();
    for item in [pod("a", "8"), pod("b", "9")] {
        put_bytes(
            &mut list,
            2,
            &kcache_protobuf::encode::to_vec(&item, message).unwrap(),
        );
    }
    put_bytes(&mut list, 2, &bad);
    let mut body = Vec::new();
    envelope::write("v1", "PodList", &list, &mut body);
    body
}

/// Compact lister-watchers with protobuf: protobuf answers are kept compact in protobuf (only
/// the metadata decoded), `typed()` gives what the JSON path gives, an object whose metadata
/// does not read is left out with its reason; a JSON answer is kept compact in JSON.
#[cfg(feature = "k8s-openapi")]
#[tokio::test]
async fn compact_objects_stay_protobuf_and_decode_as_json_does() {
    use kcache_store::{Compact, Object};

    let proto = ScriptedServer::start(|req| {
        if req.is_list() {
            Reply::protobuf(200, pod_list_with_a_bad_item())
        } else {
            let frames: Vec<_> = events().iter().map(|(t, o)| frame(t, o)).collect();
            Reply::protobuf_stream(200, futures_util::stream::iter(frames))
        }
    })
    .await
    .unwrap();
    let json_server = ScriptedServer::start(move |req| {
        if req.is_list() {
            Reply::json(200, list_body("10", None, &[pod("a", "8"), pod("b", "9")]))
        } else {
            let lines: Vec<_> = events().iter().map(|(t, o)| watch_line(t, o)).collect();
            Reply::stream(200, futures_util::stream::iter(lines))
        }
    })
    .await
    .unwrap();
    let compact = |server: &ScriptedServer| {
        let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
        HttpListerWatcher::<Compact<Pod>>::compact_typed(client)
            .protobuf()
            .build()
    };
    let (p, j) = (compact(&proto), compact(&json_server));
    let typed = lister_watcher(&json_server, false);
    let opts = ListOptions::default();
    let from_protobuf = p.list(&opts).await.unwrap();
    let from_json = j.list(&opts).await.unwrap();
    let want = typed.list(&opts).await.unwrap().items;
    assert_eq!(
        proto.requests()[0].accept.as_deref(),
        Some("application/vnd.kubernetes.protobuf, application/json")
    );
    assert_eq!(from_protobuf.resource_version, "10");
    assert_eq!(from_protobuf.items.len(), 2);
    assert_eq!(from_protobuf.skipped.len(), 1);
    assert!(
        from_protobuf.skipped[0].to_string().contains("list item 2"),
        "{}",
        from_protobuf.skipped[0]
    );
    for ((p, j), want) in from_protobuf.items.iter().zip(&from_json.items).zip(&want) {
        assert_eq!(p.encoding(), "protobuf");
        assert_eq!(j.encoding(), "json");
        assert_eq!(&p.typed().unwrap(), want);
        assert_eq!(&j.typed().unwrap(), want);
        // Kept as text and packed, read back as the typed object has them, both encodings.
        for c in [p, j] {
            assert_eq!(c.owner_references(), want.owner_references());
            assert_eq!(c.labels(), want.labels());
            assert_eq!(c.annotations(), want.annotations());
        }
        assert_eq!(want.annotations().unwrap()["note"], "café \"quoted\"\n");
        assert!(p.stored_len() < p.json_len());
    }

    let watch = ListOptions {
        resource_version: "10".into(),
        ..ListOptions::default()
    };
    let got: Vec<_> = p.watch(&watch).await.unwrap().collect().await;
    let want: Vec<_> = typed.watch(&watch).await.unwrap().collect().await;
    assert_eq!(got.len(), 5);
    for (g, w) in got.iter().zip(&want) {
        match (g.as_ref().unwrap(), w.as_ref().unwrap()) {
            (WatchEvent::Added(a), WatchEvent::Added(b))
            | (WatchEvent::Modified(a), WatchEvent::Modified(b))
            | (WatchEvent::Deleted(a), WatchEvent::Deleted(b)) => {
                assert_eq!(a.encoding(), "protobuf");
                assert_eq!(&a.typed().unwrap(), b);
                assert_eq!(a.labels(), b.labels());
                assert_eq!(a.annotations(), b.annotations());
                assert_eq!(a.owner_references(), b.owner_references());
            }
            (WatchEvent::Bookmark(a), WatchEvent::Bookmark(b)) => assert_eq!(a, b),
            (WatchEvent::Error(a), WatchEvent::Error(b)) => assert_eq!(a, b),
            other => panic!("events differ: {other:?}"),
        }
    }
}
