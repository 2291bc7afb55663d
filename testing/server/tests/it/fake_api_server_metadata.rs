//! Metadata-only requests (`PartialObjectMetadata`, as metadata informers make them) against the
//! fake API server over HTTP: lists with every list option, GETs, watches and streaming lists,
//! writes, custom resources, the 406 refusals, faults, and the size of what they save.

use std::time::Duration;

use http::Method;
use kcache_store::DynamicObject;
use kcache_testing_server::fake_api_server::{
    FakeApiServer, Fault, FaultKind, INITIAL_EVENTS_END, ServedResource, Verb,
};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::fake_api_server::{create_pods, pod, widgets_server};
use crate::fake_api_server_client::{Client, End, Reply};

/// What a metadata informer asks a list for in JSON (the protobuf form, which client-go's
/// metadata client names first, is `fake_api_server_protobuf.rs`'s).
const LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,\
                    application/json";

/// What a metadata client asks a GET, a write or a watch for.
const ONE: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

async fn get(client: &Client, path: &str, accept: &str) -> Reply {
    let resp = client.send(Method::GET, path, None, Some(accept)).await;
    Client::read(resp).await
}

/// The `PartialObjectMetadata` kube-apiserver answers for an object (or list item) `full`.
fn partial(full: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": full["metadata"],
    })
}

/// Asserts a metadata list is the metadata of the full list `full`.
#[track_caller]
fn assert_partial_list(list: &Value, full: &Value) {
    assert_eq!(list["kind"], "PartialObjectMetadataList", "{list}");
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(list["metadata"], full["metadata"]);
    let items: Vec<Value> = full["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(partial)
        .collect();
    assert_eq!(list["items"], Value::Array(items));
}

fn message(reply: &Reply) -> String {
    reply.json()["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn metadata_lists_page_and_select_as_full_lists_do() {
    let server = FakeApiServer::start().await.unwrap();
    create_pods(&server, "a", ["a0", "a1", "a2", "a3", "a4"]);
    server
        .create(&ServedResource::pods(), pod("b", "db0", "db"))
        .unwrap();
    let client = Client::new(&server);
    for path in [
        "/api/v1/pods",
        "/api/v1/pods?labelSelector=app%3Ddb",
        "/api/v1/pods?fieldSelector=metadata.namespace%3Da",
        "/api/v1/namespaces/a/pods?limit=2",
        "/api/v1/pods?resourceVersion=0",
        "/api/v1/pods?resourceVersion=3&resourceVersionMatch=Exact",
    ] {
        let full = client.get(path).await.json();
        let list = get(&client, path, LIST).await;
        assert_eq!(list.status, 200, "{path}");
        assert_eq!(list.headers["content-type"], "application/json");
        assert_partial_list(&list.json(), &full);
    }
    // Pages: the same tokens and remaining counts as the full list's, one snapshot.
    let mut token = String::new();
    let mut names = Vec::new();
    loop {
        let path = format!("/api/v1/pods?limit=2&continue={token}");
        let list = get(&client, &path, LIST).await.json();
        let full = client.get(&path).await.json();
        assert_partial_list(&list, &full);
        if names.is_empty() {
            assert_eq!(list["metadata"]["remainingItemCount"], 4);
            server
                .create(&ServedResource::pods(), pod("a", "a5", "web"))
                .unwrap();
        }
        for item in list["items"].as_array().unwrap() {
            names.push(item["metadata"]["name"].as_str().unwrap().to_owned());
        }
        match list["metadata"]["continue"].as_str() {
            Some(next) => next.clone_into(&mut token),
            None => break,
        }
    }
    assert_eq!(names, ["a0", "a1", "a2", "a3", "a4", "db0"]);
    // `v1beta1` too.
    let beta = get(
        &client,
        "/api/v1/namespaces/b/pods",
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1",
    )
    .await
    .json();
    assert_eq!(beta["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(beta["items"][0]["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(beta["items"][0]["kind"], "PartialObjectMetadata");
    // List errors come first, as on a full list.
    let bad = get(&client, "/api/v1/pods?continue=nope", LIST).await;
    assert_eq!(bad.status, 400);
}

#[tokio::test]
async fn metadata_gets_writes_and_refusals() {
    let server = FakeApiServer::start().await.unwrap();
    create_pods(&server, "a", ["p"]);
    let client = Client::new(&server);
    let path = "/api/v1/namespaces/a/pods/p";
    let full = client.get(path).await.json();
    let one = get(&client, path, ONE).await;
    assert_eq!(one.status, 200);
    assert_eq!(one.json(), partial(&full));
    assert!(one.json().get("spec").is_none());
    let missing = get(&client, "/api/v1/namespaces/a/pods/nope", ONE).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["kind"], "Status");

    // The list kind on one object, the object kind on a list: 406, naming the Go types.
    let refused = get(
        &client,
        path,
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    )
    .await;
    assert_eq!(refused.status, 406);
    assert_eq!(refused.json()["reason"], "NotAcceptable");
    assert_eq!(
        message(&refused),
        "you requested PartialObjectMetadataList, but the requested object is not a list \
         (*core.Pod)"
    );
    let refused = get(&client, "/api/v1/pods", ONE).await;
    assert_eq!(refused.status, 406);
    assert_eq!(
        message(&refused),
        "you requested PartialObjectMetadata, but the requested object is a list (*core.PodList)"
    );
    // A conversion nobody serves, alone: 406; with a fallback: the fallback.
    for accept in [
        "application/json;as=Foo;g=meta.k8s.io;v=v1",
        "application/json;as=PartialObjectMetadata",
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2",
    ] {
        let refused = get(&client, path, accept).await;
        assert_eq!(refused.status, 406, "{accept}");
        assert_eq!(
            message(&refused),
            "only the following media types are accepted: application/json, application/yaml, \
             application/vnd.kubernetes.protobuf"
        );
        let fallback = get(&client, path, &format!("{accept}, application/json")).await;
        assert_eq!(fallback.json(), full);
    }

    // A write answers the written object's metadata (the metadata client's PATCH).
    let labels = json!({"metadata": {"labels": {"tier": "web"}}});
    let resp = client
        .send_raw(
            Method::PATCH,
            path,
            labels.to_string().into(),
            Some("application/merge-patch+json"),
            Some(ONE),
        )
        .await;
    let patched = Client::read(resp).await;
    assert_eq!(patched.status, 200);
    let patched = patched.json();
    assert_eq!(patched["kind"], "PartialObjectMetadata");
    assert_eq!(patched["metadata"]["labels"]["tier"], "web");
    assert_eq!(patched, partial(&client.get(path).await.json()));
    // A DELETE answering a Status answers it still; one answering the object, its metadata.
    let deleted = client.send(Method::DELETE, path, None, Some(ONE)).await;
    let deleted = Client::read(deleted).await.json();
    assert_eq!(deleted["kind"], "PartialObjectMetadata");
    assert_eq!(deleted["metadata"]["name"], "p");
}

#[tokio::test]
async fn metadata_watches_from_an_rv_with_bookmarks() {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    create_pods(&server, "a", ["p"]);
    let from = server.resource_version();
    let client = Client::new(&server);
    let mut watch = client
        .watch_with(
            &format!("/api/v1/pods?watch=1&resourceVersion={from}&allowWatchBookmarks=true"),
            Some(ONE),
        )
        .await;
    server.create(&pods, pod("a", "q", "db")).unwrap();
    server.delete(&pods, Some("a"), "p").unwrap();
    let last = server.resource_version().to_string();
    let full_q = json!({"metadata": serde_json::to_value(&server.get(&pods, Some("a"), "q").unwrap().metadata).unwrap()});
    let added = watch.next().await;
    assert_eq!(added["type"], "ADDED");
    assert_eq!(added["object"], partial(&full_q));
    let deleted = watch.next().await;
    assert_eq!(deleted["type"], "DELETED");
    assert_eq!(deleted["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(deleted["object"]["metadata"]["name"], "p");
    assert_eq!(deleted["object"]["metadata"]["resourceVersion"], last);
    assert!(deleted["object"].get("spec").is_none());
    server.send_bookmark();
    let bookmark = watch.next().await;
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(
        bookmark["object"],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": last}})
    );
    // Too old: the ERROR event keeps its Status.
    server.compact();
    let mut old = client
        .watch_with(
            &format!("/api/v1/pods?watch=1&resourceVersion={from}"),
            Some(ONE),
        )
        .await;
    let error = old.next().await;
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["object"]["kind"], "Status");
    assert_eq!(error["object"]["code"], 410);
    // The list kind on a watch: the stream ends at its first object.
    let mut listing = client
        .watch_with(
            "/api/v1/pods?watch=1",
            Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
        )
        .await;
    assert_eq!(listing.end(Duration::from_secs(5)).await, End::Clean);
}

#[tokio::test]
async fn metadata_streaming_lists_end_with_the_initial_events_bookmark() {
    let server = FakeApiServer::start().await.unwrap();
    create_pods(&server, "a", ["b", "a"]);
    let client = Client::new(&server);
    let mut watch = client
        .watch_with(
            "/api/v1/pods?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&\
             resourceVersionMatch=NotOlderThan&resourceVersion=",
            Some(ONE),
        )
        .await;
    for name in ["a", "b"] {
        let event = watch.next().await;
        assert_eq!(event["type"], "ADDED");
        assert_eq!(event["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(event["object"]["metadata"]["name"], name);
        assert_eq!(event["object"]["metadata"]["labels"]["app"], "web");
        assert!(event["object"].get("status").is_none());
    }
    let end = watch.next().await;
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(end["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(end["object"]["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(
        end["object"]["metadata"]["resourceVersion"],
        server.resource_version().to_string()
    );
    assert_eq!(
        end["object"]["metadata"]["annotations"][INITIAL_EVENTS_END],
        "true"
    );
}

#[tokio::test]
async fn custom_resources_serve_their_metadata() {
    let (server, widgets) = widgets_server().await;
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "a", "labels": {"size": "big"}},
        "spec": {"size": 3},
    }))
    .unwrap();
    server.create(&widgets, widget).unwrap();
    let client = Client::new(&server);
    let path = "/apis/example.com/v1/namespaces/a/widgets";
    let full = client.get(path).await.json();
    assert_partial_list(&get(&client, path, LIST).await.json(), &full);
    let one = get(&client, &format!("{path}/w"), ONE).await.json();
    assert_eq!(one, partial(&full["items"][0]));
    let refused = get(&client, path, ONE).await;
    assert_eq!(refused.status, 406);
    assert_eq!(
        message(&refused),
        "you requested PartialObjectMetadata, but the requested object is a list \
         (*unstructured.UnstructuredList)"
    );
    let refused = get(&client, path, "application/json;as=Foo;g=meta.k8s.io;v=v1").await;
    assert_eq!(
        message(&refused),
        "only the following media types are accepted: application/json, application/yaml"
    );
    let mut watch = client
        .watch_with(&format!("{path}?watch=1&resourceVersion=0"), Some(ONE))
        .await;
    assert_eq!(watch.next().await["object"], one);
}

#[tokio::test]
async fn faults_apply_to_metadata_requests() {
    let server = FakeApiServer::start().await.unwrap();
    create_pods(&server, "a", ["p", "q", "r"]);
    let client = Client::new(&server);
    server.inject(Fault::status(Verb::List, 503, "ServiceUnavailable", "down"));
    assert_eq!(get(&client, "/api/v1/pods", LIST).await.status, 503);
    assert_eq!(get(&client, "/api/v1/pods", LIST).await.status, 200);
    server.inject(Fault::watch(FaultKind::CloseAfter(1)));
    let mut watch = client
        .watch_with("/api/v1/pods?watch=1&resourceVersion=0", Some(ONE))
        .await;
    assert_eq!(
        watch.next().await["object"]["kind"],
        "PartialObjectMetadata"
    );
    assert_eq!(watch.end(Duration::from_secs(5)).await, End::Clean);
    server.inject(Fault::watch(FaultKind::UndecodableModifiedAfter(0)));
    let mut watch = client
        .watch_with(
            &format!(
                "/api/v1/pods?watch=1&resourceVersion={}",
                server.resource_version()
            ),
            Some(ONE),
        )
        .await;
    server
        .patch(
            &ServedResource::pods(),
            Some("a"),
            "p",
            kcache_testing_server::fake_api_server::PatchType::Merge,
            &json!({"metadata": {"labels": {"x": "y"}}}),
        )
        .unwrap();
    let broken = watch.next().await;
    assert_eq!(broken["type"], "MODIFIED");
    assert_eq!(broken["object"]["apiVersion"], 7);
    assert_eq!(broken["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(broken["object"]["metadata"]["name"], "p");
}

#[tokio::test]
async fn metadata_lists_of_realistic_pods_are_a_fraction_of_full_ones() {
    let server = FakeApiServer::start().await.unwrap();
    for pod in kcache_testing::workload::pods(3, 200, 4) {
        server.create(&ServedResource::pods(), pod).unwrap();
    }
    let client = Client::new(&server);
    let full = client.get("/api/v1/pods").await;
    let metadata = get(&client, "/api/v1/pods", LIST).await;
    let mut list = metadata.json();
    assert_eq!(list["items"].as_array().unwrap().len(), 200);
    // The whole metadata, `managedFields` included (as kube-apiserver sends it): under a third.
    assert!(
        metadata.body.len() * 3 < full.body.len(),
        "metadata {} bytes, full {} bytes",
        metadata.body.len(),
        full.body.len()
    );
    // `managedFields` are most of it: without them (what informers that drop them keep), under
    // a fifth.
    for item in list["items"].as_array_mut().unwrap() {
        item["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
    }
    let trimmed = serde_json::to_vec(&list).unwrap().len();
    assert!(
        trimmed * 5 < full.body.len(),
        "metadata without managedFields {trimmed} bytes, full {} bytes",
        full.body.len()
    );
}

/// The official Python client's raw GET with a metadata `Accept` header reads the same
/// `PartialObjectMetadataList` (skipped without the `kubernetes` package).
#[tokio::test]
async fn the_python_client_reads_metadata_lists() {
    let imported = Command::new("python3")
        .args(["-c", "import kubernetes"])
        .output()
        .await
        .is_ok_and(|out| out.status.success());
    if !imported {
        eprintln!("fake_api_server_metadata: the Python client check NOT RUN (no `kubernetes`)");
        return;
    }
    let env = crate::fake_api_server_kubectl::env(true).await;
    create_pods(&env.server, "py", ["p"]);
    let script = r#"
import json, sys
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1])
accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json"
resp = client.CoreV1Api().list_namespaced_pod("py", _preload_content=False,
                                              _headers={"Accept": accept})
body = json.loads(resp.data)
assert body["kind"] == "PartialObjectMetadataList", body
item = body["items"][0]
assert item["kind"] == "PartialObjectMetadata" and item["metadata"]["name"] == "p", item
assert "spec" not in item, item
print("ok")
"#;
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new("python3")
            .args(["-c", script])
            .arg(&env.kubeconfig)
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the Python client within 60 s")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("ok"),
        "the Python client's check failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
