//! The fake API server's object lifecycle and operator-facing endpoints over HTTP, each with
//! the watch events it produces: dry runs, the `status` and `scale` subresources,
//! `deletecollection`, DELETE answers, garbage collection (background, foreground, orphan),
//! namespace deletion, generation, defaults, health endpoints, access reviews and discovery
//! categories.

use http::{Method, StatusCode};
use kcache_store::DynamicObject;
use kcache_testing_server::fake_api_server::{FakeApiServer, ServedResource};
use serde_json::{Value, json};

use crate::fake_api_server::{assert_event, assert_quiet};
use crate::fake_api_server_client::{Client, Reply, summary};

const MERGE: &str = "application/merge-patch+json";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/ns/deployments";
const REPLICASETS: &str = "/apis/apps/v1/namespaces/ns/replicasets";
const PODS: &str = "/api/v1/namespaces/ns/pods";

/// Asserts a reply's status; returns its JSON body.
#[track_caller]
fn ok(reply: &Reply, status: StatusCode) -> Value {
    let body = reply.json();
    assert_eq!(reply.status, status, "{body}");
    body
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
        "status": {"replicas": 7},
    })
}

/// An object of kind `kind` named `name` in `ns`, owned by the object of `owner_uid`.
fn owned(kind: &str, name: &str, owner_uid: &str) -> Value {
    json!({
        "metadata": {"name": name, "namespace": "ns", "labels": {"app": "web"}, "ownerReferences": [{
            "apiVersion": "apps/v1", "kind": kind, "name": "owner", "uid": owner_uid,
            "controller": true, "blockOwnerDeletion": true,
        }]},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
    })
}

async fn start() -> (FakeApiServer, Client) {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    (server, client)
}

/// The `(type, name)` of the next `n` events of `watch`.
async fn events(
    watch: &mut crate::fake_api_server_client::Watch,
    n: usize,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for _ in 0..n {
        let (kind, name, _) = summary(&watch.next().await);
        out.push((kind, name));
    }
    out
}

fn pair(kind: &str, name: &str) -> (String, String) {
    (kind.to_owned(), name.to_owned())
}

#[tokio::test]
async fn a_dry_run_answers_each_write_and_stores_nothing() {
    let (server, client) = start().await;
    let rv = server.resource_version();
    let mut watch = client
        .watch(&format!("{DEPLOYMENTS}?watch=1&resourceVersion={rv}"))
        .await;
    let reply = client
        .request(
            Method::POST,
            &format!("{DEPLOYMENTS}?dryRun=All"),
            Some(deployment("web")),
        )
        .await;
    let created = ok(&reply, StatusCode::CREATED);
    assert_eq!(created["metadata"]["name"], "web");
    assert!(created["metadata"]["uid"].is_string(), "{created}");
    assert!(
        created["metadata"].get("resourceVersion").is_none(),
        "{created}"
    );
    assert_eq!(
        created["spec"]["revisionHistoryLimit"], 10,
        "defaulted: {created}"
    );
    assert_eq!(server.resource_version(), rv);
    ok(
        &client.get(&format!("{DEPLOYMENTS}/web")).await,
        StatusCode::NOT_FOUND,
    );

    ok(
        &client
            .request(Method::POST, DEPLOYMENTS, Some(deployment("web")))
            .await,
        StatusCode::CREATED,
    );
    assert_event(&watch.next().await, "ADDED", "web", rv + 1);
    let web = format!("{DEPLOYMENTS}/web");
    let patched = client
        .patch(
            &format!("{web}?dryRun=All"),
            MERGE,
            &json!({"spec": {"replicas": 5}}),
        )
        .await;
    let patched = ok(&patched, StatusCode::OK);
    assert_eq!(patched["spec"]["replicas"], 5);
    assert_eq!(patched["metadata"]["resourceVersion"], (rv + 1).to_string());
    let deleted = client
        .request(Method::DELETE, &web, Some(json!({"dryRun": ["All"]})))
        .await;
    ok(&deleted, StatusCode::OK);
    assert_eq!(
        ok(&client.get(&web).await, StatusCode::OK)["spec"]["replicas"],
        2
    );
    assert_eq!(server.resource_version(), rv + 1);
    assert_quiet(&mut watch).await;
    let bad = client
        .request(
            Method::POST,
            &format!("{DEPLOYMENTS}?dryRun=Some"),
            Some(deployment("x")),
        )
        .await;
    assert_eq!(
        ok(&bad, StatusCode::UNPROCESSABLE_ENTITY)["reason"],
        "Invalid"
    );
}

#[tokio::test]
async fn status_writes_change_only_status_and_object_writes_keep_it() {
    let (_server, client) = start().await;
    let created = ok(
        &client
            .request(Method::POST, DEPLOYMENTS, Some(deployment("web")))
            .await,
        StatusCode::CREATED,
    );
    assert!(
        created.get("status").is_none(),
        "a create starts without status: {created}"
    );
    let status = format!("{DEPLOYMENTS}/web/status");
    let reply = client
        .patch(
            &status,
            MERGE,
            &json!({"spec": {"replicas": 9}, "status": {"replicas": 2}}),
        )
        .await;
    let written = ok(&reply, StatusCode::OK);
    assert_eq!(written["status"]["replicas"], 2);
    assert_eq!(
        written["spec"]["replicas"], 2,
        "spec untouched through /status"
    );
    assert_eq!(written["metadata"]["generation"], 1);
    // A PUT of the object with another status keeps the stored one, and bumps generation.
    let mut put = written.clone();
    put["spec"]["replicas"] = json!(3);
    put["status"] = json!({"replicas": 99});
    let replaced = ok(
        &client
            .request(Method::PUT, &format!("{DEPLOYMENTS}/web"), Some(put))
            .await,
        StatusCode::OK,
    );
    assert_eq!(replaced["status"]["replicas"], 2);
    assert_eq!(replaced["metadata"]["generation"], 2);
    // A PUT to /status with a stale resource version conflicts.
    let mut stale = written.clone();
    stale["status"] = json!({"replicas": 1});
    let reply = client.request(Method::PUT, &status, Some(stale)).await;
    assert_eq!(ok(&reply, StatusCode::CONFLICT)["reason"], "Conflict");
    assert_eq!(
        ok(&client.get(&status).await, StatusCode::OK)["status"]["replicas"],
        2
    );
    // Configmaps have no status subresource.
    let cm = client
        .get("/api/v1/namespaces/ns/configmaps/x/status")
        .await;
    assert_eq!(cm.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn scale_reads_and_writes_replicas() {
    let (_server, client) = start().await;
    ok(
        &client
            .request(Method::POST, DEPLOYMENTS, Some(deployment("web")))
            .await,
        StatusCode::CREATED,
    );
    let scale_path = format!("{DEPLOYMENTS}/web/scale");
    let scale = ok(&client.get(&scale_path).await, StatusCode::OK);
    assert_eq!(
        (
            &scale["kind"],
            &scale["apiVersion"],
            &scale["spec"]["replicas"]
        ),
        (&json!("Scale"), &json!("autoscaling/v1"), &json!(2))
    );
    assert_eq!(scale["status"]["selector"], "app=web");
    let patched = client
        .patch(&scale_path, MERGE, &json!({"spec": {"replicas": 4}}))
        .await;
    assert_eq!(ok(&patched, StatusCode::OK)["spec"]["replicas"], 4);
    let mut put = scale.clone();
    put["spec"]["replicas"] = json!(6);
    put["metadata"] = json!({"name": "web", "namespace": "ns"});
    let replaced = client.request(Method::PUT, &scale_path, Some(put)).await;
    assert_eq!(ok(&replaced, StatusCode::OK)["spec"]["replicas"], 6);
    let deployment = ok(
        &client.get(&format!("{DEPLOYMENTS}/web")).await,
        StatusCode::OK,
    );
    assert_eq!(deployment["spec"]["replicas"], 6);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["name"],
        "web"
    );
    let pods = client.get(&format!("{PODS}/x/scale")).await;
    assert_eq!(pods.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn delete_collection_deletes_what_the_selectors_match() {
    let (server, client) = start().await;
    for (name, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        let body = json!({"metadata": {"name": name, "labels": {"app": app}}, "data": {}});
        ok(
            &client
                .request(Method::POST, "/api/v1/namespaces/ns/configmaps", Some(body))
                .await,
            StatusCode::CREATED,
        );
    }
    let reply = client
        .request(
            Method::DELETE,
            "/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dweb",
            None,
        )
        .await;
    let list = ok(&reply, StatusCode::OK);
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    let left = server.list(&ServedResource::configmaps());
    let names: Vec<_> = left
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    assert_eq!(names, ["c"]);
}

#[tokio::test]
async fn delete_answers_a_status_or_the_object_as_kube_apiserver_does() {
    let (_server, client) = start().await;
    let body = json!({"metadata": {"name": "c"}, "data": {}});
    ok(
        &client
            .request(Method::POST, "/api/v1/namespaces/ns/configmaps", Some(body))
            .await,
        StatusCode::CREATED,
    );
    let reply = client
        .request(Method::DELETE, "/api/v1/namespaces/ns/configmaps/c", None)
        .await;
    let status = ok(&reply, StatusCode::OK);
    assert_eq!(
        (
            &status["kind"],
            &status["status"],
            &status["details"]["kind"],
            &status["details"]["name"]
        ),
        (
            &json!("Status"),
            &json!("Success"),
            &json!("configmaps"),
            &json!("c")
        )
    );
    let pod =
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}});
    ok(
        &client.request(Method::POST, PODS, Some(pod)).await,
        StatusCode::CREATED,
    );
    let deleted = ok(
        &client
            .request(Method::DELETE, &format!("{PODS}/p"), None)
            .await,
        StatusCode::OK,
    );
    assert_eq!(
        (&deleted["kind"], &deleted["metadata"]["name"]),
        (&json!("Pod"), &json!("p"))
    );
}

/// A deployment owning a replica set owning a pod.
async fn owner_chain(client: &Client) -> String {
    let d = ok(
        &client
            .request(Method::POST, DEPLOYMENTS, Some(deployment("owner")))
            .await,
        StatusCode::CREATED,
    );
    let d_uid = d["metadata"]["uid"].as_str().unwrap().to_owned();
    let mut rs = owned("Deployment", "rs", &d_uid);
    rs["spec"] = json!({"selector": {"matchLabels": {"app": "web"}}, "template": {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
    }});
    let rs = ok(
        &client.request(Method::POST, REPLICASETS, Some(rs)).await,
        StatusCode::CREATED,
    );
    let rs_uid = rs["metadata"]["uid"].as_str().unwrap();
    ok(
        &client
            .request(Method::POST, PODS, Some(owned("ReplicaSet", "pod", rs_uid)))
            .await,
        StatusCode::CREATED,
    );
    d_uid
}

#[tokio::test]
async fn background_deletion_collects_dependents_after_their_owner() {
    let (server, client) = start().await;
    owner_chain(&client).await;
    let rv = server.resource_version();
    let mut deployments = client
        .watch(&format!("{DEPLOYMENTS}?watch=1&resourceVersion={rv}"))
        .await;
    let mut replicasets = client
        .watch(&format!("{REPLICASETS}?watch=1&resourceVersion={rv}"))
        .await;
    let mut pods = client
        .watch(&format!("{PODS}?watch=1&resourceVersion={rv}"))
        .await;
    let reply = client
        .request(
            Method::DELETE,
            &format!("{DEPLOYMENTS}/owner"),
            Some(json!({"propagationPolicy": "Background"})),
        )
        .await;
    ok(&reply, StatusCode::OK);
    assert_event(&deployments.next().await, "DELETED", "owner", rv + 1);
    assert_event(&replicasets.next().await, "DELETED", "rs", rv + 2);
    assert_event(&pods.next().await, "DELETED", "pod", rv + 3);
    assert!(server.list(&ServedResource::pods()).is_empty());
}

#[tokio::test]
async fn foreground_deletion_removes_dependents_first_and_a_finalizer_holds_the_owner() {
    let (server, client) = start().await;
    owner_chain(&client).await;
    // The pod has a finalizer: it holds the replica set, which holds the deployment.
    let patch = json!({"metadata": {"finalizers": ["example.com/hold"]}});
    ok(
        &client.patch(&format!("{PODS}/pod"), MERGE, &patch).await,
        StatusCode::OK,
    );
    let rv = server.resource_version();
    let mut deployments = client
        .watch(&format!("{DEPLOYMENTS}?watch=1&resourceVersion={rv}"))
        .await;
    let reply = client
        .request(
            Method::DELETE,
            &format!("{DEPLOYMENTS}/owner"),
            Some(json!({"propagationPolicy": "Foreground"})),
        )
        .await;
    let marked = ok(&reply, StatusCode::OK);
    assert!(
        marked["metadata"]["deletionTimestamp"].is_string(),
        "{marked}"
    );
    assert_eq!(
        marked["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert_event(&deployments.next().await, "MODIFIED", "owner", rv + 1);
    let rs = ok(
        &client.get(&format!("{REPLICASETS}/rs")).await,
        StatusCode::OK,
    );
    assert_eq!(rs["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    let pod = ok(&client.get(&format!("{PODS}/pod")).await, StatusCode::OK);
    assert!(pod["metadata"]["deletionTimestamp"].is_string(), "{pod}");
    // Releasing the pod lets the whole chain go.
    let release = json!({"metadata": {"finalizers": null}});
    ok(
        &client.patch(&format!("{PODS}/pod"), MERGE, &release).await,
        StatusCode::OK,
    );
    let (kind, name, _) = summary(&deployments.next().await);
    assert_eq!((kind.as_str(), name.as_str()), ("DELETED", "owner"));
    assert!(server.list(&ServedResource::replicasets()).is_empty());
    assert!(server.list(&ServedResource::pods()).is_empty());
}

#[tokio::test]
async fn orphan_deletion_leaves_dependents_without_the_reference() {
    let (server, client) = start().await;
    owner_chain(&client).await;
    let reply = client
        .request(
            Method::DELETE,
            &format!("{DEPLOYMENTS}/owner"),
            Some(json!({"propagationPolicy": "Orphan"})),
        )
        .await;
    ok(&reply, StatusCode::OK);
    let rs = ok(
        &client.get(&format!("{REPLICASETS}/rs")).await,
        StatusCode::OK,
    );
    assert!(rs["metadata"].get("ownerReferences").is_none(), "{rs}");
    assert_eq!(server.list(&ServedResource::pods()).len(), 1);
    assert!(server.list(&ServedResource::deployments()).is_empty());
}

#[tokio::test]
async fn deleting_a_namespace_terminates_it_deletes_its_contents_then_it() {
    let (server, client) = start().await;
    let body = json!({"metadata": {"name": "c"}, "data": {}});
    ok(
        &client
            .request(Method::POST, "/api/v1/namespaces/ns/configmaps", Some(body))
            .await,
        StatusCode::CREATED,
    );
    let held =
        json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "data": {}});
    ok(
        &client
            .request(Method::POST, "/api/v1/namespaces/ns/configmaps", Some(held))
            .await,
        StatusCode::CREATED,
    );
    let rv = server.resource_version();
    let mut namespaces = client
        .watch(&format!("/api/v1/namespaces?watch=1&resourceVersion={rv}"))
        .await;
    let mut configmaps = client
        .watch(&format!("/api/v1/configmaps?watch=1&resourceVersion={rv}"))
        .await;
    let reply = client
        .request(Method::DELETE, "/api/v1/namespaces/ns", None)
        .await;
    let ns = ok(&reply, StatusCode::OK);
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert!(ns["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(events(&mut namespaces, 1).await, [pair("MODIFIED", "ns")]);
    assert_eq!(
        events(&mut configmaps, 2).await,
        [pair("DELETED", "c"), pair("MODIFIED", "held")]
    );
    // Nothing new can be made in it while it terminates.
    let body = json!({"metadata": {"name": "late"}, "data": {}});
    let reply = client
        .request(Method::POST, "/api/v1/namespaces/ns/configmaps", Some(body))
        .await;
    let refused = ok(&reply, StatusCode::FORBIDDEN);
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("because it is being terminated"),
        "{refused}"
    );
    // The last finalizer's removal lets the object and then the namespace go.
    let release = json!({"metadata": {"finalizers": null}});
    ok(
        &client
            .patch("/api/v1/namespaces/ns/configmaps/held", MERGE, &release)
            .await,
        StatusCode::OK,
    );
    assert_eq!(events(&mut configmaps, 1).await, [pair("DELETED", "held")]);
    assert_eq!(events(&mut namespaces, 1).await, [pair("DELETED", "ns")]);
    ok(
        &client.get("/api/v1/namespaces/ns").await,
        StatusCode::NOT_FOUND,
    );
}

#[tokio::test]
async fn only_kinds_with_generation_carry_it_and_defaults_are_set() {
    let (_server, client) = start().await;
    let cm = json!({"metadata": {"name": "c"}, "data": {"a": "1"}});
    let cm = ok(
        &client
            .request(Method::POST, "/api/v1/namespaces/ns/configmaps", Some(cm))
            .await,
        StatusCode::CREATED,
    );
    assert!(cm["metadata"].get("generation").is_none(), "{cm}");
    let svc = json!({"metadata": {"name": "s"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}});
    let svc = ok(
        &client
            .request(Method::POST, "/api/v1/namespaces/ns/services", Some(svc))
            .await,
        StatusCode::CREATED,
    );
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert!(
        svc["spec"]["clusterIP"]
            .as_str()
            .unwrap()
            .starts_with("10.96."),
        "{svc}"
    );
    assert_eq!(svc["spec"]["ports"][0]["protocol"], "TCP");
    let secret = json!({"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}});
    let secret = ok(
        &client
            .request(Method::POST, "/api/v1/namespaces/ns/secrets", Some(secret))
            .await,
        StatusCode::CREATED,
    );
    assert_eq!(secret["data"]["password"], "aHVudGVyMg==");
    assert_eq!(secret["type"], "Opaque");
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}, "status": {"phase": "Running"}});
    let pod = ok(
        &client.request(Method::POST, PODS, Some(pod)).await,
        StatusCode::CREATED,
    );
    assert_eq!(pod["status"]["phase"], "Pending");
    assert_eq!(pod["spec"]["restartPolicy"], "Always");
    assert_eq!(pod["metadata"]["generation"], 1);
}

#[tokio::test]
async fn health_endpoints_answer_as_kube_apiserver_does() {
    let (_server, client) = start().await;
    for path in ["/healthz", "/livez", "/readyz", "/readyz/ping"] {
        let reply = client.get(path).await;
        assert_eq!(
            (reply.status, &reply.body[..]),
            (StatusCode::OK, &b"ok"[..]),
            "{path}"
        );
    }
    let verbose = client.get("/readyz?verbose").await;
    let text = String::from_utf8_lossy(&verbose.body);
    assert!(
        text.contains("[+]ping ok") && text.ends_with("readyz check passed\n"),
        "{text}"
    );
    assert_eq!(
        client.get("/readyz/nothing").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn access_reviews_allow_and_discovery_lists_categories_and_subresources() {
    let (_server, client) = start().await;
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "ns"}},
    });
    let reply = client
        .request(
            Method::POST,
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            Some(review),
        )
        .await;
    let answered = ok(&reply, StatusCode::CREATED);
    assert_eq!(answered["status"]["allowed"], true);
    assert_eq!(answered["spec"]["resourceAttributes"]["verb"], "list");
    let core = ok(&client.get("/api/v1").await, StatusCode::OK);
    let resources = core["resources"].as_array().unwrap();
    let find = |name: &str| resources.iter().find(|r| r["name"] == name).cloned();
    assert_eq!(find("pods").unwrap()["categories"], json!(["all"]));
    assert!(find("pods/status").is_some());
    assert!(find("configmaps").unwrap().get("categories").is_none());
    let apps = ok(&client.get("/apis/apps/v1").await, StatusCode::OK);
    let scale = apps["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "deployments/scale")
        .cloned()
        .unwrap();
    assert_eq!(
        (&scale["group"], &scale["kind"]),
        (&json!("autoscaling"), &json!("Scale"))
    );
    let groups = ok(&client.get("/apis").await, StatusCode::OK);
    assert!(groups.to_string().contains("authorization.k8s.io"));
}

/// Objects written through the Rust handle keep the status they are given (a test seeding a
/// cluster's state), unlike HTTP creates.
#[tokio::test]
async fn the_handle_stores_status_as_given() {
    let (server, _client) = start().await;
    let pod: DynamicObject = serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "ns"}, "status": {"phase": "Running"},
    }))
    .unwrap();
    let created = server.create(&ServedResource::pods(), pod).unwrap();
    assert_eq!(created.data["status"]["phase"], "Running");
}

/// A `CustomResourceDefinition` of `widgets.example.com`, namespaced, `v1` with a `status`
/// subresource.
pub(crate) fn widget_definition() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                      "shortNames": ["wd"], "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}},
            }],
        },
    })
}

#[tokio::test]
async fn a_custom_resource_definition_serves_its_kind_until_deleted() {
    let (server, client) = start().await;
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let created = ok(
        &client
            .request(Method::POST, crds, Some(widget_definition()))
            .await,
        StatusCode::CREATED,
    );
    let conditions = created["status"]["conditions"].to_string();
    assert!(conditions.contains("Established"), "{created}");
    assert_eq!(created["status"]["acceptedNames"]["kind"], "Widget");
    let discovery = ok(&client.get("/apis/example.com/v1").await, StatusCode::OK);
    let names: Vec<&str> = discovery["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["widgets", "widgets/status"]);
    let widgets = "/apis/example.com/v1/namespaces/ns/widgets";
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 3}, "status": {"ready": true}});
    let made = ok(
        &client.request(Method::POST, widgets, Some(widget)).await,
        StatusCode::CREATED,
    );
    assert!(
        made.get("status").is_none(),
        "status goes through /status: {made}"
    );
    assert_eq!(made["metadata"]["generation"], 1);
    let rv = server.resource_version();
    let mut watch = client
        .watch(&format!("{widgets}?watch=1&resourceVersion={rv}"))
        .await;
    // A name that is not `<plural>.<group>` is refused.
    let mut bad = widget_definition();
    bad["metadata"]["name"] = json!("gadgets.example.com");
    let reply = client.request(Method::POST, crds, Some(bad)).await;
    assert_eq!(
        ok(&reply, StatusCode::UNPROCESSABLE_ENTITY)["reason"],
        "Invalid"
    );
    // Deleting the definition deletes its objects, then stops serving them.
    ok(
        &client
            .request(Method::DELETE, &format!("{crds}/widgets.example.com"), None)
            .await,
        StatusCode::OK,
    );
    assert_eq!(events(&mut watch, 1).await, [pair("DELETED", "w")]);
    assert_eq!(client.get(widgets).await.status, StatusCode::NOT_FOUND);
}

/// A custom resource's `scale` subresource reads and writes the paths its definition names.
#[tokio::test]
async fn a_custom_resources_scale_uses_its_definitions_paths() {
    let (_server, client) = start().await;
    let mut crd = widget_definition();
    crd["spec"]["versions"][0]["subresources"]["scale"] = json!({
        "specReplicasPath": ".spec.workers",
        "statusReplicasPath": ".status.workers",
        "labelSelectorPath": ".status.selector",
    });
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    ok(
        &client.request(Method::POST, crds, Some(crd)).await,
        StatusCode::CREATED,
    );
    let widgets = "/apis/example.com/v1/namespaces/ns/widgets";
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"workers": 2}});
    ok(
        &client.request(Method::POST, widgets, Some(widget)).await,
        StatusCode::CREATED,
    );
    let status = json!({"status": {"workers": 1, "selector": "app=w"}});
    ok(
        &client
            .patch(&format!("{widgets}/w/status"), MERGE, &status)
            .await,
        StatusCode::OK,
    );
    let scale = ok(
        &client.get(&format!("{widgets}/w/scale")).await,
        StatusCode::OK,
    );
    assert_eq!(scale["spec"]["replicas"], 2);
    assert_eq!(scale["status"], json!({"replicas": 1, "selector": "app=w"}));
    let scaled = client
        .patch(
            &format!("{widgets}/w/scale"),
            MERGE,
            &json!({"spec": {"replicas": 4}}),
        )
        .await;
    assert_eq!(ok(&scaled, StatusCode::OK)["spec"]["replicas"], 4);
    let w = ok(&client.get(&format!("{widgets}/w")).await, StatusCode::OK);
    assert_eq!(w["spec"]["workers"], 4);
}

/// A write owned only by objects already removed (a controller's late write racing its owner's
/// deletion) is collected right after it; one owned by an object that never existed here stays.
#[tokio::test]
async fn a_late_write_owned_by_a_removed_owner_is_collected() {
    let (server, client) = start().await;
    let d = ok(
        &client
            .request(Method::POST, DEPLOYMENTS, Some(deployment("gone")))
            .await,
        StatusCode::CREATED,
    );
    let uid = d["metadata"]["uid"].as_str().unwrap().to_owned();
    ok(
        &client
            .request(Method::DELETE, &format!("{DEPLOYMENTS}/gone"), None)
            .await,
        StatusCode::OK,
    );
    let rv = server.resource_version();
    let mut watch = client
        .watch(&format!("{PODS}?watch=1&resourceVersion={rv}"))
        .await;
    ok(
        &client
            .request(Method::POST, PODS, Some(owned("Deployment", "late", &uid)))
            .await,
        StatusCode::CREATED,
    );
    assert_eq!(
        events(&mut watch, 2).await,
        [pair("ADDED", "late"), pair("DELETED", "late")]
    );
    let never = "00000000-0000-0000-0000-000000000000";
    ok(
        &client
            .request(Method::POST, PODS, Some(owned("ReplicaSet", "kept", never)))
            .await,
        StatusCode::CREATED,
    );
    ok(&client.get(&format!("{PODS}/kept")).await, StatusCode::OK);
}

/// A chain of owners thousands deep is collected whole: the collector works through a queue,
/// not the stack.
#[tokio::test]
async fn a_deep_ownership_chain_is_collected_without_recursion() {
    let (server, client) = start().await;
    let cms = ServedResource::configmaps();
    let mut owner_uid: Option<String> = None;
    for i in 0..5_000 {
        let mut cm = json!({"metadata": {"name": format!("c{i}"), "namespace": "ns"}, "data": {}});
        if let Some(uid) = &owner_uid {
            cm["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
                "name": format!("c{}", i - 1), "uid": uid}]);
        }
        let created = server
            .create(&cms, serde_json::from_value::<DynamicObject>(cm).unwrap())
            .unwrap();
        owner_uid = created.metadata.uid.clone();
    }
    ok(
        &client
            .request(Method::DELETE, "/api/v1/namespaces/ns/configmaps/c0", None)
            .await,
        StatusCode::OK,
    );
    assert!(server.list(&cms).is_empty());
}

/// The uids the server assigns come from a stream of their own: a workload generated from the
/// same seed as the server (the owner references of `kcache_testing::workload`'s pods are drawn
/// by the same uid function) never has a pod owned by another pod the server made, so deleting
/// pods under churn garbage-collects nothing else.
#[tokio::test]
async fn a_workload_seeded_like_the_server_shares_no_uid_with_it() {
    use kcache_testing::workload::{PodGenerator, PodShape};
    const SEED: u64 = 7;
    let server = FakeApiServer::builder().seed(SEED).start().await.unwrap();
    let pods = ServedResource::pods();
    let mut generator = PodGenerator::with_shape(SEED, 4, PodShape::Light);
    let mut owners = std::collections::HashSet::new();
    for _ in 0..3000 {
        let pod = generator.next_pod();
        owners.extend(
            kcache_store::Object::owner_references(&pod)
                .into_iter()
                .map(|o| o.uid),
        );
        server.create(&pods, pod).unwrap();
    }
    assert!(!owners.is_empty(), "the workload's pods have owners");
    let made = server.list(&pods);
    assert_eq!(made.len(), 3000);
    let shared: Vec<_> = made
        .iter()
        .filter_map(|p| p.metadata.uid.as_ref())
        .filter(|uid| owners.contains(*uid))
        .collect();
    assert!(
        shared.is_empty(),
        "{} server uids own workload pods, the first {:?}",
        shared.len(),
        shared.first()
    );
    // And so deleting pods deletes only them.
    for pod in made.iter().take(300) {
        let name = pod.metadata.name.as_deref().unwrap();
        server
            .delete(&pods, pod.metadata.namespace.as_deref(), name)
            .unwrap();
    }
    assert_eq!(server.list(&pods).len(), 2700);
}
