//! The fake API server as a writable store, over HTTP: each patch type, preconditions (PUT,
//! PATCH and DELETE), the watch event of every write, Leases, namespaces that come with their
//! objects, the default kinds, `OpenAPI` v3 and tables.

use http::{Method, StatusCode};
use kcache_store::DynamicObject;
use kcache_testing_server::fake_api_server::{
    FakeApiServer, PatchType, Preconditions, ServedResource,
};
use serde_json::{Value, json};

use crate::fake_api_server::{assert_event, assert_quiet, pod};
use crate::fake_api_server_client::{Client, Reply};

const CM: &str = "/api/v1/namespaces/ns/configmaps/c";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

/// A server with configmap `ns/c` (`data: {a: "1"}`, RV 2) and a client.
async fn with_configmap() -> (FakeApiServer, Client) {
    let server = FakeApiServer::start().await.unwrap();
    let cm = object(json!({"metadata": {"name": "c", "namespace": "ns"}, "data": {"a": "1"}}));
    let created = server.create(&ServedResource::configmaps(), cm).unwrap();
    assert_eq!(created.metadata.resource_version.as_deref(), Some("2"));
    let client = Client::new(&server);
    (server, client)
}

/// Asserts a reply's status and, for errors, its Status reason.
#[track_caller]
fn assert_reply(reply: &Reply, status: StatusCode, reason: Option<&str>) -> Value {
    let body = reply.json();
    assert_eq!(reply.status, status, "{body}");
    if let Some(reason) = reason {
        assert_eq!(
            (body["kind"].as_str(), body["reason"].as_str()),
            (Some("Status"), Some(reason)),
            "{body}"
        );
        assert_eq!(body["code"], status.as_u16());
    }
    body
}

#[tokio::test]
async fn merge_patch_changes_what_it_names_and_a_no_op_writes_nothing() {
    let (server, client) = with_configmap().await;
    let mut watch = client
        .watch("/api/v1/namespaces/ns/configmaps?watch=1&resourceVersion=2")
        .await;
    let patch = json!({"metadata": {"labels": {"x": "y"}}, "data": {"a": null, "b": "2"}});
    let obj = assert_reply(&client.patch(CM, MERGE, &patch).await, StatusCode::OK, None);
    assert_eq!(obj["data"], json!({"b": "2"}));
    assert_eq!(obj["metadata"]["labels"], json!({"x": "y"}));
    assert_eq!(obj["metadata"]["resourceVersion"], "3");
    assert_event(&watch.next().await, "MODIFIED", "c", 3);
    // The same patch again changes nothing: same RV, no event.
    let again = assert_reply(&client.patch(CM, MERGE, &patch).await, StatusCode::OK, None);
    assert_eq!(again["metadata"]["resourceVersion"], "3");
    assert_eq!(server.resource_version(), 3);
    assert_quiet(&mut watch).await;
    // A charset parameter on the media type is fine; a patch that is not an object is not.
    let reply = client
        .request_raw(
            Method::PATCH,
            CM,
            "application/merge-patch+json; charset=utf-8",
            "{}",
        )
        .await;
    assert_reply(&reply, StatusCode::OK, None);
    let reply = client.patch(CM, MERGE, &json!([1])).await;
    assert_reply(&reply, StatusCode::BAD_REQUEST, Some("BadRequest"));
}

#[tokio::test]
async fn json_patch_applies_every_operation_all_or_nothing() {
    let (server, client) = with_configmap().await;
    let patch = json!([
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "add", "path": "/data/b", "value": "2"},
        {"op": "copy", "from": "/data/b", "path": "/data/c"},
        {"op": "move", "from": "/data/a", "path": "/data/moved"},
        {"op": "replace", "path": "/data/b", "value": "two"},
        {"op": "remove", "path": "/data/c"},
        {"op": "add", "path": "/metadata/labels", "value": {"k/x": "v"}},
        {"op": "replace", "path": "/metadata/labels/k~1x", "value": "w"},
    ]);
    let obj = assert_reply(
        &client.patch(CM, JSON_PATCH, &patch).await,
        StatusCode::OK,
        None,
    );
    assert_eq!(obj["data"], json!({"b": "two", "moved": "1"}));
    assert_eq!(obj["metadata"]["labels"], json!({"k/x": "w"}));
    assert_eq!(obj["metadata"]["resourceVersion"], "3");
    // A failed test or a missing path is 422, and nothing of the patch is written.
    for patch in [
        json!([{"op": "add", "path": "/data/z", "value": "1"}, {"op": "test", "path": "/data/b", "value": "2"}]),
        json!([{"op": "remove", "path": "/data/nope"}]),
    ] {
        let reply = client.patch(CM, JSON_PATCH, &patch).await;
        assert_reply(&reply, StatusCode::UNPROCESSABLE_ENTITY, Some("Invalid"));
    }
    // A patch that is not a list of operations is 400.
    let reply = client.patch(CM, JSON_PATCH, &json!({"op": "add"})).await;
    assert_reply(&reply, StatusCode::BAD_REQUEST, Some("BadRequest"));
    let stored = server
        .get(&ServedResource::configmaps(), Some("ns"), "c")
        .unwrap();
    assert_eq!(stored.metadata.resource_version.as_deref(), Some("3"));
    assert_eq!(stored.data["data"], json!({"b": "two", "moved": "1"}));
}

#[tokio::test]
async fn strategic_merge_patch_follows_kubectls_list_directives() {
    let server = FakeApiServer::start().await.unwrap();
    let deployments = ServedResource::deployments();
    let deploy = object(json!({
        "metadata": {"name": "web", "namespace": "ns", "finalizers": ["a", "b"]},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]},
            {"name": "sidecar", "image": "sidecar:1"},
        ]}}},
    }));
    server.create(&deployments, deploy).unwrap();
    let client = Client::new(&server);
    let url = "/apis/apps/v1/namespaces/ns/deployments/web";
    // What `kubectl apply` sends when app's image changes and sidecar goes: the ports of app,
    // which the patch does not repeat, stay.
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "app"}],
        "containers": [{"name": "app", "image": "app:2"}, {"name": "sidecar", "$patch": "delete"}],
    }}}, "metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}});
    let obj = assert_reply(
        &client.patch(url, STRATEGIC, &patch).await,
        StatusCode::OK,
        None,
    );
    let containers = &obj["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers.as_array().map(Vec::len), Some(1), "{containers}");
    assert_eq!(
        (
            &containers[0]["name"],
            &containers[0]["image"],
            &containers[0]["ports"]
        ),
        (
            &json!("app"),
            &json!("app:2"),
            &json!([{"containerPort": 80, "protocol": "TCP"}])
        )
    );
    assert_eq!(obj["metadata"]["finalizers"], json!(["a"]));
    assert_eq!(obj["metadata"]["generation"], 2, "a spec change");
    // Without directives the schema says how: containers merge by name (a new one appends),
    // and maps merge.
    let patch = json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "other", "image": "o:1"}]}}}});
    let obj = assert_reply(
        &client.patch(url, STRATEGIC, &patch).await,
        StatusCode::OK,
        None,
    );
    assert_eq!(obj["spec"]["replicas"], 3);
    let containers = &obj["spec"]["template"]["spec"]["containers"];
    assert_eq!(
        names_and_images(containers),
        json!([{"name": "app", "image": "app:2"}, {"name": "other", "image": "o:1"}])
    );
}

#[tokio::test]
async fn server_side_apply_creates_then_merges_and_needs_a_field_manager() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let path = "/apis/coordination.k8s.io/v1/namespaces/team/leases/leader";
    let applied = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "leader"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}});
    let mut watch = client
        .watch("/apis/coordination.k8s.io/v1/leases?watch=1&resourceVersion=1")
        .await;
    // No fieldManager: 422, as on the real server.
    let reply = client.patch(path, APPLY, &applied).await;
    assert_reply(&reply, StatusCode::UNPROCESSABLE_ENTITY, Some("Invalid"));
    let with_manager = format!("{path}?fieldManager=test&force=true");
    let created = client.patch(&with_manager, APPLY, &applied).await;
    let obj = assert_reply(&created, StatusCode::CREATED, None);
    assert_eq!(obj["metadata"]["namespace"], "team");
    assert_event(&watch.next().await, "ADDED", "leader", 2);
    // Applied again as YAML with a new holder and no duration: the holder changes, and the
    // duration, which the manager no longer applies and nobody else owns, goes.
    let yaml = "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: leader\nspec:\n  holderIdentity: b\n";
    let reply = client
        .request_raw(Method::PATCH, &with_manager, APPLY, yaml)
        .await;
    let obj = assert_reply(&reply, StatusCode::OK, None);
    assert_eq!(obj["spec"], json!({"holderIdentity": "b"}));
    assert_event(&watch.next().await, "MODIFIED", "leader", 3);
    // An object of another kind, or another name, is refused.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "leader"}});
    let reply = client.patch(&with_manager, APPLY, &pod).await;
    assert_reply(&reply, StatusCode::BAD_REQUEST, Some("BadRequest"));
    let renamed = json!({"kind": "Lease", "metadata": {"name": "other"}});
    let reply = client.patch(&with_manager, APPLY, &renamed).await;
    assert_reply(&reply, StatusCode::BAD_REQUEST, Some("BadRequest"));
    assert_quiet(&mut watch).await;
}

#[tokio::test]
async fn a_resource_version_in_a_patch_is_a_precondition() {
    let (_server, client) = with_configmap().await;
    for (content_type, stale) in [
        (
            MERGE,
            json!({"metadata": {"resourceVersion": "1"}, "data": {"a": "2"}}),
        ),
        (
            STRATEGIC,
            json!({"metadata": {"resourceVersion": "1"}, "data": {"a": "2"}}),
        ),
        (
            JSON_PATCH,
            json!([{"op": "replace", "path": "/metadata/resourceVersion", "value": "1"}]),
        ),
    ] {
        let reply = client.patch(CM, content_type, &stale).await;
        let status = assert_reply(&reply, StatusCode::CONFLICT, Some("Conflict"));
        assert!(
            status["message"]
                .as_str()
                .unwrap()
                .contains("the object has been modified"),
            "{status}"
        );
    }
    let current = json!({"metadata": {"resourceVersion": "2"}, "data": {"a": "2"}});
    let obj = assert_reply(
        &client.patch(CM, MERGE, &current).await,
        StatusCode::OK,
        None,
    );
    assert_eq!(obj["metadata"]["resourceVersion"], "3");
    // A uid that is not the object's is a conflict too.
    let other_uid = json!({"metadata": {"uid": "00000000-0000-4000-8000-000000000000"}});
    let reply = client.patch(CM, MERGE, &other_uid).await;
    assert_reply(&reply, StatusCode::CONFLICT, Some("Conflict"));
}

#[tokio::test]
async fn put_with_a_stale_resource_version_conflicts() {
    let (_server, client) = with_configmap().await;
    let body = |rv: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "ns", "resourceVersion": rv}, "data": {"a": rv}})
    };
    let reply = client.request(Method::PUT, CM, Some(body("2"))).await;
    assert_eq!(
        assert_reply(&reply, StatusCode::OK, None)["metadata"]["resourceVersion"],
        "3"
    );
    let reply = client.request(Method::PUT, CM, Some(body("2"))).await;
    assert_reply(&reply, StatusCode::CONFLICT, Some("Conflict"));
}

#[tokio::test]
async fn json_patches_stay_within_kube_apiservers_limits() {
    let (server, client) = with_configmap().await;
    // Each copy of the object into a child of its own doubles it: refused once the copies pass
    // 3 MiB in all (some twenty operations here), not after 2^40 copies of the object.
    let doubling: Vec<Value> = (0..40)
        .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")}))
        .collect();
    let reply = client.patch(CM, JSON_PATCH, &json!(doubling)).await;
    let status = assert_reply(&reply, StatusCode::UNPROCESSABLE_ENTITY, Some("Invalid"));
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("accumulated size"),
        "{status}"
    );
    // More than 10,000 operations: 413.
    let many = vec![json!({"op": "test", "path": "/data/a", "value": "1"}); 10_001];
    let reply = client.patch(CM, JSON_PATCH, &json!(many)).await;
    assert_reply(
        &reply,
        StatusCode::PAYLOAD_TOO_LARGE,
        Some("RequestEntityTooLarge"),
    );
    // Nothing was written.
    assert_eq!(server.resource_version(), 2);
    let stored = server
        .get(&ServedResource::configmaps(), Some("ns"), "c")
        .unwrap();
    assert_eq!(stored.data["data"], json!({"a": "1"}));
}

#[tokio::test]
async fn delete_preconditions_must_hold() {
    let (server, client) = with_configmap().await;
    let uid = server
        .get(&ServedResource::configmaps(), Some("ns"), "c")
        .unwrap()
        .metadata
        .uid
        .clone()
        .unwrap();
    let mut watch = client
        .watch("/api/v1/namespaces/ns/configmaps?watch=1&resourceVersion=2")
        .await;
    let delete = |preconditions: Value| {
        let options = json!({"kind": "DeleteOptions", "apiVersion": "v1",
            "propagationPolicy": "Background", "preconditions": preconditions});
        client.request(Method::DELETE, CM, Some(options))
    };
    let stale = assert_reply(
        &delete(json!({"resourceVersion": "1"})).await,
        StatusCode::CONFLICT,
        Some("Conflict"),
    );
    assert!(
        stale["message"]
            .as_str()
            .unwrap()
            .ends_with("Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: 2"),
        "{stale}"
    );
    let other_uid = json!({"uid": "00000000-0000-4000-8000-000000000000"});
    assert_reply(
        &delete(other_uid).await,
        StatusCode::CONFLICT,
        Some("Conflict"),
    );
    assert!(
        server
            .get(&ServedResource::configmaps(), Some("ns"), "c")
            .is_some()
    );
    assert_quiet(&mut watch).await;
    let ok = delete(json!({"uid": uid, "resourceVersion": "2"})).await;
    assert_reply(&ok, StatusCode::OK, None);
    assert_event(&watch.next().await, "DELETED", "c", 3);
    // A body that is not DeleteOptions is 400.
    let (server, client) = with_configmap().await;
    let reply = client
        .request_raw(Method::DELETE, CM, "application/json", "not json")
        .await;
    assert_reply(&reply, StatusCode::BAD_REQUEST, Some("BadRequest"));
    // A server-side dry run, as `kubectl delete --dry-run=server` asks for it (in the body), is
    // answered as the delete would be, and deletes nothing.
    let dry_run = json!({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"],
        "propagationPolicy": "Background"});
    let reply = client.request(Method::DELETE, CM, Some(dry_run)).await;
    let status = assert_reply(&reply, StatusCode::OK, None);
    assert_eq!(status["status"], "Success", "{status}");
    assert!(
        server
            .get(&ServedResource::configmaps(), Some("ns"), "c")
            .is_some()
    );
    // An unknown propagation policy is 422, as on the real server.
    let sideways = json!({"propagationPolicy": "Sideways"});
    let reply = client.request(Method::DELETE, CM, Some(sideways)).await;
    assert_reply(&reply, StatusCode::UNPROCESSABLE_ENTITY, Some("Invalid"));
    assert_eq!(server.resource_version(), 2);
}

#[tokio::test]
async fn every_write_sends_its_watch_event() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let mut watch = client
        .watch("/api/v1/namespaces/ns/configmaps?watch=1&resourceVersion=1")
        .await;
    let collection = "/api/v1/namespaces/ns/configmaps";
    let body = json!({"metadata": {"name": "c"}, "data": {"a": "1"}});
    assert_reply(
        &client.request(Method::POST, collection, Some(body)).await,
        StatusCode::CREATED,
        None,
    );
    assert_event(&watch.next().await, "ADDED", "c", 2);
    let replaced = json!({"metadata": {"name": "c", "namespace": "ns"}, "data": {"a": "2"}});
    assert_reply(
        &client.request(Method::PUT, CM, Some(replaced)).await,
        StatusCode::OK,
        None,
    );
    assert_event(&watch.next().await, "MODIFIED", "c", 3);
    for (i, (content_type, patch)) in [
        (MERGE, json!({"data": {"m": "1"}})),
        (
            JSON_PATCH,
            json!([{"op": "add", "path": "/data/j", "value": "1"}]),
        ),
        (STRATEGIC, json!({"data": {"s": "1"}})),
    ]
    .into_iter()
    .enumerate()
    {
        assert_reply(
            &client.patch(CM, content_type, &patch).await,
            StatusCode::OK,
            None,
        );
        assert_event(&watch.next().await, "MODIFIED", "c", 4 + i);
    }
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"x": "1"}});
    let apply_path = format!("{CM}?fieldManager=test");
    assert_reply(
        &client.patch(&apply_path, APPLY, &applied).await,
        StatusCode::OK,
        None,
    );
    assert_event(&watch.next().await, "MODIFIED", "c", 7);
    // A finalizer makes the delete a MODIFIED; removing it by patch makes the DELETED.
    let finalizer = json!({"metadata": {"finalizers": ["test/hold"]}});
    assert_reply(
        &client.patch(CM, MERGE, &finalizer).await,
        StatusCode::OK,
        None,
    );
    assert_event(&watch.next().await, "MODIFIED", "c", 8);
    assert_reply(
        &client.request(Method::DELETE, CM, None).await,
        StatusCode::OK,
        None,
    );
    let marked = watch.next().await;
    assert_event(&marked, "MODIFIED", "c", 9);
    assert!(marked["object"]["metadata"]["deletionTimestamp"].is_string());
    let release = json!({"metadata": {"finalizers": null}});
    assert_reply(
        &client.patch(CM, MERGE, &release).await,
        StatusCode::OK,
        None,
    );
    assert_event(&watch.next().await, "DELETED", "c", 10);
    assert_quiet(&mut watch).await;
}

#[tokio::test]
async fn patch_errors_name_the_problem() {
    let (_server, client) = with_configmap().await;
    // Another media type: 415 listing the accepted ones.
    let reply = client.patch(CM, "application/json", &json!({})).await;
    let status = assert_reply(
        &reply,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        Some("UnsupportedMediaType"),
    );
    let message = status["message"].as_str().unwrap();
    for t in PatchType::ALL {
        assert!(message.contains(t.content_type()), "{message}");
    }
    // A missing object (a non-apply patch does not create), a collection, a bad body.
    let reply = client
        .patch("/api/v1/namespaces/ns/configmaps/nope", MERGE, &json!({}))
        .await;
    assert_reply(&reply, StatusCode::NOT_FOUND, Some("NotFound"));
    let reply = client
        .patch("/api/v1/namespaces/ns/configmaps", MERGE, &json!({}))
        .await;
    assert_reply(
        &reply,
        StatusCode::METHOD_NOT_ALLOWED,
        Some("MethodNotAllowed"),
    );
    let reply = client.request_raw(Method::PATCH, CM, MERGE, "{").await;
    assert_reply(&reply, StatusCode::BAD_REQUEST, Some("BadRequest"));
    // Renaming through a patch is refused.
    let reply = client
        .patch(CM, MERGE, &json!({"metadata": {"name": "d"}}))
        .await;
    assert_reply(&reply, StatusCode::BAD_REQUEST, Some("BadRequest"));
    // fieldValidation is accepted with its three values; dryRun is refused rather than ignored.
    for v in ["Strict", "Warn", "Ignore"] {
        let path = format!("{CM}?fieldValidation={v}");
        assert_reply(
            &client.patch(&path, MERGE, &json!({})).await,
            StatusCode::OK,
            None,
        );
    }
    let path = format!("{CM}?fieldValidation=Loose");
    assert_reply(
        &client.patch(&path, MERGE, &json!({})).await,
        StatusCode::BAD_REQUEST,
        Some("BadRequest"),
    );
    // A dry run is answered with the patched object and changes nothing.
    let path = format!("{CM}?dryRun=All");
    let answered = assert_reply(
        &client
            .patch(&path, MERGE, &json!({"data": {"z": "1"}}))
            .await,
        StatusCode::OK,
        None,
    );
    assert_eq!(answered["data"]["z"], "1");
    let stored = assert_reply(&client.get(CM).await, StatusCode::OK, None);
    assert!(stored["data"].get("z").is_none(), "{stored}");
}

#[tokio::test]
async fn leases_take_updates_with_resource_version_preconditions() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let collection = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
    let path = format!("{collection}/controller");
    let mut watch = client.watch(&format!("{collection}?watch=1")).await;
    let lease = |holder: &str, renew: u32, rv: Option<&str>| {
        let renew_time = format!("2026-01-01T00:00:{renew:02}.000000Z");
        let mut lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "controller", "namespace": "kube-system"},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                "acquireTime": "2026-01-01T00:00:00.000000Z", "renewTime": renew_time}});
        if let Some(rv) = rv {
            lease["metadata"]["resourceVersion"] = json!(rv);
        }
        lease
    };
    let created = client
        .request(Method::POST, collection, Some(lease("a", 0, None)))
        .await;
    let created = assert_reply(&created, StatusCode::CREATED, None);
    assert_eq!(created["kind"], "Lease");
    let rv = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_event(&watch.next().await, "ADDED", "controller", &rv);
    // Two candidates renew from the same RV: the first wins, the second gets 409.
    let renewed = client
        .request(Method::PUT, &path, Some(lease("a", 5, Some(&rv))))
        .await;
    let renewed = assert_reply(&renewed, StatusCode::OK, None);
    let new_rv = renewed["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(new_rv, rv);
    let lost = client
        .request(Method::PUT, &path, Some(lease("b", 6, Some(&rv))))
        .await;
    assert_reply(&lost, StatusCode::CONFLICT, Some("Conflict"));
    // The loser re-reads and takes over by patch, with the RV it read as precondition.
    let take_over =
        json!({"metadata": {"resourceVersion": new_rv}, "spec": {"holderIdentity": "b"}});
    let taken = client.patch(&path, MERGE, &take_over).await;
    assert_eq!(
        assert_reply(&taken, StatusCode::OK, None)["spec"]["holderIdentity"],
        "b"
    );
    let _modified = watch.next().await;
    let event = watch.next().await;
    assert_eq!(event["type"], "MODIFIED");
    assert_eq!(event["object"]["spec"]["holderIdentity"], "b");
    // The Rust handle does the same.
    let leases = ServedResource::leases();
    let stale = server.patch(
        &leases,
        Some("kube-system"),
        "controller",
        PatchType::Merge,
        &take_over,
    );
    assert_eq!(stale.unwrap_err().reason, "Conflict");
}

#[tokio::test]
async fn the_rust_handle_patches_and_deletes_with_preconditions() {
    let (server, _client) = with_configmap().await;
    let cms = ServedResource::configmaps();
    let patched = server
        .patch(
            &cms,
            Some("ns"),
            "c",
            PatchType::Json,
            &json!([{"op": "add", "path": "/data/b", "value": "2"}]),
        )
        .unwrap();
    assert_eq!(patched.data["data"], json!({"a": "1", "b": "2"}));
    let applied = server
        .patch(
            &cms,
            Some("ns"),
            "new",
            PatchType::Apply,
            &json!({"data": {"x": "1"}}),
        )
        .unwrap();
    assert_eq!(applied.metadata.namespace.as_deref(), Some("ns"));
    let rv = patched.metadata.resource_version.clone().unwrap();
    let stale = server.delete_with(&cms, Some("ns"), "c", &Preconditions::resource_version("2"));
    assert_eq!(stale.unwrap_err().code, 409);
    let uid = patched.metadata.uid.clone().unwrap();
    let preconditions = Preconditions::uid(&uid).and_resource_version(&rv);
    server
        .delete_with(&cms, Some("ns"), "c", &preconditions)
        .unwrap();
    assert!(server.get(&cms, Some("ns"), "c").is_none());
}

#[tokio::test]
async fn objects_bring_their_namespace_at_their_resource_version() {
    let server = FakeApiServer::start().await.unwrap();
    let namespaces = ServedResource::namespaces();
    let names = |server: &FakeApiServer| -> Vec<String> {
        server
            .list(&namespaces)
            .iter()
            .map(|n| n.metadata.name.clone().unwrap())
            .collect()
    };
    assert_eq!(
        names(&server),
        ["default", "kube-node-lease", "kube-public", "kube-system"]
    );
    let client = Client::new(&server);
    let mut watch = client
        .watch("/api/v1/namespaces?watch=1&resourceVersion=1")
        .await;
    let created = server
        .create(&ServedResource::pods(), pod("team-a", "web-1", "web"))
        .unwrap();
    assert_eq!(created.metadata.resource_version.as_deref(), Some("2"));
    let event = watch.next().await;
    assert_event(&event, "ADDED", "team-a", 2);
    assert_eq!(event["object"]["status"]["phase"], "Active");
    assert_eq!(
        event["object"]["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "team-a"
    );
    // A second object in it, or one in `default`, creates nothing more.
    server
        .create(&ServedResource::pods(), pod("team-a", "web-2", "web"))
        .unwrap();
    server
        .create(&ServedResource::pods(), pod("default", "web-3", "web"))
        .unwrap();
    assert_eq!(server.resource_version(), 4);
    assert_quiet(&mut watch).await;
    assert_eq!(names(&server).len(), 5);
    // `kubectl create namespace` gets the same defaults.
    let ns = client
        .request(
            Method::POST,
            "/api/v1/namespaces",
            Some(json!({"metadata": {"name": "made"}})),
        )
        .await;
    let ns = assert_reply(&ns, StatusCode::CREATED, None);
    assert_eq!(ns["status"]["phase"], "Active");
    assert_event(&watch.next().await, "ADDED", "made", 5);
    // A namespace name that no namespace can have is refused, and makes no Namespace: from a
    // URL, or from the object (through the handle).
    let rv = server.resource_version();
    for path in [
        "/api/v1/namespaces/Team_A/configmaps",
        "/api/v1/namespaces/-a/configmaps",
    ] {
        let cm = json!({"metadata": {"name": "c"}});
        let reply = client.request(Method::POST, path, Some(cm)).await;
        assert_reply(&reply, StatusCode::BAD_REQUEST, Some("BadRequest"));
    }
    let err = server
        .create(&ServedResource::pods(), pod("a.b", "web", "web"))
        .unwrap_err();
    assert_eq!(err.code, 400);
    assert_eq!(server.resource_version(), rv);
    assert_eq!(names(&server).len(), 6);
    assert_quiet(&mut watch).await;
}

#[tokio::test]
async fn the_common_kinds_are_served_by_default() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let resources = |list: Value| -> Vec<(String, Value)> {
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            // The subresources (`pods/status`, `deployments/scale`) are listed too.
            .filter(|r| !r["name"].as_str().unwrap().contains('/'))
            .map(|r| {
                (
                    r["name"].as_str().unwrap().to_owned(),
                    r["shortNames"].clone(),
                )
            })
            .collect()
    };
    let core = resources(client.get("/api/v1").await.json());
    for (name, short) in [
        ("pods", json!(["po"])),
        ("services", json!(["svc"])),
        ("events", json!(["ev"])),
        ("serviceaccounts", json!(["sa"])),
        ("secrets", json!([])),
        ("namespaces", json!(["ns"])),
    ] {
        assert!(
            core.contains(&(name.to_owned(), short.clone())),
            "{name}: {core:?}"
        );
    }
    let apps = resources(client.get("/apis/apps/v1").await.json());
    assert_eq!(
        apps,
        [
            ("deployments".to_owned(), json!(["deploy"])),
            ("replicasets".to_owned(), json!(["rs"]))
        ]
    );
    let coordination = client.get("/apis/coordination.k8s.io/v1").await.json();
    assert_eq!(coordination["resources"][0]["name"], "leases");
    assert!(
        coordination["resources"][0]["verbs"]
            .as_array()
            .unwrap()
            .contains(&json!("patch"))
    );
    // Events select on their involved object, as `kubectl describe` asks.
    let event = object(json!({"metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "p", "uid": "u1"}, "reason": "Started"}));
    server.create(&ServedResource::events(), event).unwrap();
    let selected = client
        .get("/api/v1/namespaces/ns/events?fieldSelector=involvedObject.uid%3Du1,involvedObject.name%3Dp")
        .await;
    assert_eq!(
        assert_reply(&selected, StatusCode::OK, None)["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // `source` selects on `source.component`, or `reportingComponent` without one, as
    // kube-apiserver maps it (`source` itself is an object).
    let from = |name: &str, source: Value| {
        let mut event = json!({"metadata": {"name": name, "namespace": "ns"}, "reason": "Pulled"});
        event
            .as_object_mut()
            .unwrap()
            .extend(source.as_object().unwrap().clone());
        object(event)
    };
    for event in [
        from(
            "kubelet",
            json!({"source": {"component": "kubelet", "host": "n1"}}),
        ),
        from(
            "scheduler",
            json!({"reportingComponent": "default-scheduler"}),
        ),
        from(
            "both",
            json!({"source": {"component": "kubelet"}, "reportingComponent": "other"}),
        ),
    ] {
        server.create(&ServedResource::events(), event).unwrap();
    }
    let by_source = |source: &'static str| {
        let client = &client;
        async move {
            let path = format!("/api/v1/namespaces/ns/events?fieldSelector=source%3D{source}");
            let list = assert_reply(&client.get(&path).await, StatusCode::OK, None);
            list["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["metadata"]["name"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(by_source("kubelet").await, ["both", "kubelet"]);
    assert_eq!(by_source("default-scheduler").await, ["scheduler"]);
    assert!(by_source("other").await.is_empty());
}

#[tokio::test]
async fn openapi_v3_offers_field_validation_on_every_kinds_patch() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let root = assert_reply(&client.get("/openapi/v3").await, StatusCode::OK, None);
    let paths = root["paths"].as_object().unwrap();
    let gvs: Vec<&str> = paths.keys().map(String::as_str).collect();
    assert_eq!(
        gvs,
        [
            "api/v1",
            "apis/apiextensions.k8s.io/v1",
            "apis/apps/v1",
            "apis/coordination.k8s.io/v1",
            "apis/events.k8s.io/v1"
        ]
    );
    let url = paths["apis/apps/v1"]["serverRelativeURL"].as_str().unwrap();
    assert!(url.starts_with("/openapi/v3/apis/apps/v1?hash="), "{url}");
    let doc = assert_reply(&client.get(url).await, StatusCode::OK, None);
    assert_eq!(doc["openapi"], "3.0.0");
    let item = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"];
    let patch = &item["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "apps", "version": "v1", "kind": "Deployment"})
    );
    assert!(
        patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
    );
    let media: Vec<&str> = patch["requestBody"]["content"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert!(media.contains(&"application/apply-patch+yaml"), "{media:?}");
    // A built-in kind has its real schema, and takes strategic merge patches.
    assert!(
        media.contains(&"application/strategic-merge-patch+json"),
        "see openapi.rs"
    );
    let schema = &doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
    assert!(schema["properties"]["spec"].is_object());
    assert_eq!(
        schema["x-kubernetes-group-version-kind"][0]["kind"],
        "Deployment"
    );
    // Cluster-scoped kinds have no namespace in their paths.
    let core = client.get("/openapi/v3/api/v1").await.json();
    assert!(core["paths"]["/api/v1/nodes/{name}"]["patch"].is_object());
    assert_eq!(
        client.get("/openapi/v3/apis/nope/v1").await.status,
        StatusCode::NOT_FOUND
    );
    // A resource registered later changes the document and its hash.
    server.register(ServedResource::new(
        kcache_store::ApiResource::new("apps", "v1", "statefulsets", true),
        "StatefulSet",
    ));
    let root2 = client.get("/openapi/v3").await.json();
    assert_ne!(
        root2["paths"]["apis/apps/v1"],
        root["paths"]["apis/apps/v1"]
    );
    assert_eq!(root2["paths"]["api/v1"], root["paths"]["api/v1"]);
}

/// The Table of a list, as `kubectl get` asks for it: (column names with priority, rows).
async fn table(client: &Client, path: &str) -> (Vec<(String, u64)>, Vec<Vec<Value>>) {
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let resp = client.send(Method::GET, path, None, Some(accept)).await;
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    let t: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(t["kind"], "Table", "{t}");
    let columns = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["priority"].as_u64().unwrap(),
            )
        })
        .collect();
    let rows = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cells"].as_array().unwrap().clone())
        .collect();
    (columns, rows)
}

/// The columns as `(name, wide)`.
fn cols(names: &[(&str, u64)]) -> Vec<(String, u64)> {
    names.iter().map(|(n, p)| ((*n).to_owned(), *p)).collect()
}

#[tokio::test]
async fn tables_of_pods_and_deployments_have_their_wide_columns() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let running = object(json!({
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": "Running", "podIP": "10.0.0.7", "containerStatuses": [
            {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}}},
            {"name": "b", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
        ]},
    }));
    server.create(&ServedResource::pods(), running).unwrap();
    let (columns, rows) = table(&client, "/api/v1/pods").await;
    assert_eq!(
        columns,
        cols(&[
            ("Name", 0),
            ("Ready", 0),
            ("Status", 0),
            ("Restarts", 0),
            ("Age", 0),
            ("IP", 1),
            ("Node", 1),
            ("Nominated Node", 1),
            ("Readiness Gates", 1)
        ])
    );
    let row = &rows[0];
    assert_eq!(
        row[..4],
        [
            json!("p"),
            json!("1/2"),
            json!("CrashLoopBackOff"),
            json!("2")
        ]
    );
    assert_eq!(
        row[5..],
        [
            json!("10.0.0.7"),
            json!("node-1"),
            json!("<none>"),
            json!("<none>")
        ]
    );
    assert!(row[4].as_str().unwrap().ends_with('s'), "age {}", row[4]);

    let deploy = object(json!({"metadata": {"name": "web", "namespace": "ns"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [{"name": "app", "image": "app:1"}, {"name": "log", "image": "log:2"}]}}},
        "status": {"readyReplicas": 1, "updatedReplicas": 2}}));
    server
        .create(&ServedResource::deployments(), deploy)
        .unwrap();
    let (columns, rows) = table(&client, "/apis/apps/v1/deployments").await;
    assert_eq!(
        columns,
        cols(&[
            ("Name", 0),
            ("Ready", 0),
            ("Up-to-date", 0),
            ("Available", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1)
        ])
    );
    assert_eq!(
        rows[0][..4],
        [json!("web"), json!("1/3"), json!(2), json!(0)]
    );
    assert_eq!(
        rows[0][5..],
        [json!("app,log"), json!("app:1,log:2"), json!("app=web")]
    );
}

#[tokio::test]
async fn tables_of_services_leases_namespaces_configmaps_events_and_nodes() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let svc = object(json!({"metadata": {"name": "web", "namespace": "ns"},
        "spec": {"type": "NodePort", "clusterIP": "10.96.0.1", "selector": {"app": "web"},
            "ports": [{"port": 80, "nodePort": 30080}, {"port": 53, "protocol": "UDP"}]}}));
    server.create(&ServedResource::services(), svc).unwrap();
    let (columns, rows) = table(&client, "/api/v1/services").await;
    assert_eq!(
        columns,
        cols(&[
            ("Name", 0),
            ("Type", 0),
            ("Cluster-IP", 0),
            ("External-IP", 0),
            ("Port(s)", 0),
            ("Age", 0),
            ("Selector", 1)
        ])
    );
    assert_eq!(
        rows[0][..5],
        [
            json!("web"),
            json!("NodePort"),
            json!("10.96.0.1"),
            json!("<none>"),
            json!("80:30080/TCP,53/UDP")
        ]
    );
    assert_eq!(rows[0][6], json!("app=web"));

    let lease = object(
        json!({"metadata": {"name": "l", "namespace": "ns"}, "spec": {"holderIdentity": "me"}}),
    );
    server.create(&ServedResource::leases(), lease).unwrap();
    let (columns, rows) = table(&client, "/apis/coordination.k8s.io/v1/leases").await;
    assert_eq!(columns, cols(&[("Name", 0), ("Holder", 0), ("Age", 0)]));
    assert_eq!(rows[0][..2], [json!("l"), json!("me")]);

    let (columns, rows) = table(&client, "/api/v1/namespaces").await;
    assert_eq!(columns, cols(&[("Name", 0), ("Status", 0), ("Age", 0)]));
    assert_eq!(rows[0][..2], [json!("default"), json!("Active")]);

    let cm =
        object(json!({"metadata": {"name": "c", "namespace": "ns"}, "data": {"a": "1", "b": "2"}}));
    server.create(&ServedResource::configmaps(), cm).unwrap();
    let (columns, rows) = table(&client, "/api/v1/configmaps").await;
    assert_eq!(columns, cols(&[("Name", 0), ("Data", 0), ("Age", 0)]));
    assert_eq!(rows[0][..2], [json!("c"), json!(2)]);

    let event = object(
        json!({"metadata": {"name": "e", "namespace": "ns"}, "type": "Warning",
        "reason": "BackOff", "message": "restarting", "involvedObject": {"kind": "Pod", "name": "p"},
        "source": {"component": "kubelet", "host": "node-1"}, "count": 3}),
    );
    server.create(&ServedResource::events(), event).unwrap();
    let (columns, rows) = table(&client, "/api/v1/events").await;
    let shown: Vec<&str> = columns
        .iter()
        .filter(|c| c.1 == 0)
        .map(|c| c.0.as_str())
        .collect();
    assert_eq!(shown, ["Last Seen", "Type", "Reason", "Object", "Message"]);
    assert_eq!(
        rows[0][1..4],
        [json!("Warning"), json!("BackOff"), json!("pod/p")]
    );
    assert_eq!(
        rows[0][5..7],
        [json!("kubelet, node-1"), json!("restarting")]
    );

    let node = object(
        json!({"metadata": {"name": "n", "labels": {"node-role.kubernetes.io/control-plane": ""}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1.34.0"}}}),
    );
    server.create(&ServedResource::nodes(), node).unwrap();
    let (columns, rows) = table(&client, "/api/v1/nodes").await;
    let shown: Vec<&str> = columns
        .iter()
        .filter(|c| c.1 == 0)
        .map(|c| c.0.as_str())
        .collect();
    assert_eq!(shown, ["Name", "Status", "Roles", "Age", "Version"]);
    assert_eq!(
        rows[0][..3],
        [json!("n"), json!("Ready"), json!("control-plane")]
    );
    assert_eq!(rows[0][4], json!("v1.34.0"));
}

/// The name and image of each container (the server defaults the rest).
fn names_and_images(containers: &Value) -> Value {
    containers
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!({"name": c["name"], "image": c["image"]}))
        .collect()
}
