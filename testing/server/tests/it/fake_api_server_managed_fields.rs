//! Field ownership over HTTP: the `metadata.managedFields` of creates, updates, patches and
//! server-side applies, apply conflicts (409 with kube-apiserver's message and causes), `force`,
//! fields an applier stops applying, ownership shared by equal values, and the checks of the
//! write options that name managers.

use http::{Method, StatusCode};
use kcache_testing_server::fake_api_server::FakeApiServer;
use serde_json::{Value, json};

use crate::fake_api_server_client::{Client, Reply};

const CMS: &str = "/api/v1/namespaces/ns/configmaps";
const CM: &str = "/api/v1/namespaces/ns/configmaps/c";
const DEPLOY: &str = "/apis/apps/v1/namespaces/ns/deployments/web";
const MERGE: &str = "application/merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

/// The body of a reply with `status`.
#[track_caller]
fn expect(reply: &Reply, status: StatusCode) -> Value {
    let body = reply.json();
    assert_eq!(reply.status, status, "{body}");
    body
}

/// `(manager, operation, fieldsV1)` of each entry, in order, checking the other members.
#[track_caller]
fn entries(obj: &Value) -> Vec<(String, String, Value)> {
    let list = obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    list.iter()
        .map(|e| {
            assert_eq!(e["fieldsType"], "FieldsV1", "{e}");
            let time = e["time"].as_str().unwrap();
            assert!(time.len() == 20 && time.ends_with('Z'), "{time}");
            (
                e["manager"].as_str().unwrap().to_owned(),
                e["operation"].as_str().unwrap().to_owned(),
                e["fieldsV1"].clone(),
            )
        })
        .collect()
}

/// The managers of `obj`'s entries, sorted by name, once checked to be in the order the
/// server writes them: by operation, then time, then manager (so two applies a second apart,
/// as on a loaded machine, can come in either order).
fn managers(obj: &Value) -> Vec<String> {
    let list = obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let keys: Vec<(String, String, String)> = list
        .iter()
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
            (text("operation"), text("time"), text("manager"))
        })
        .collect();
    assert!(keys.windows(2).all(|w| w[0] <= w[1]), "{keys:?}");
    let mut names: Vec<String> = keys.into_iter().map(|(_, _, m)| m).collect();
    names.sort();
    names
}

fn entry(manager: &str, operation: &str, fields: Value) -> (String, String, Value) {
    (manager.to_owned(), operation.to_owned(), fields)
}

#[tokio::test]
async fn every_http_write_records_its_manager_and_the_fields_it_changed() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"app": "x"}}, "data": {"a": "1", "b": "2"}});
    let created = expect(
        &client
            .request(
                Method::POST,
                &format!("{CMS}?fieldManager=creator"),
                Some(cm),
            )
            .await,
        StatusCode::CREATED,
    );
    assert_eq!(
        entries(&created),
        [entry(
            "creator",
            "Update",
            json!({"f:data": {"f:a": {}, "f:b": {}},
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
        )]
    );
    assert_eq!(created["metadata"]["managedFields"][0]["apiVersion"], "v1");
    // An update owns what it changed, taken from the creator.
    let mut edited = created.clone();
    edited["data"]["a"] = json!("9");
    let edited = expect(
        &client
            .request(
                Method::PUT,
                &format!("{CM}?fieldManager=editor"),
                Some(edited),
            )
            .await,
        StatusCode::OK,
    );
    // A patch too; an apply owns what it applied and comes first.
    let patch = json!({"data": {"c": "3"}});
    client
        .patch(&format!("{CM}?fieldManager=patcher"), MERGE, &patch)
        .await;
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
        "data": {"d": "4"}});
    let obj = expect(
        &client
            .patch(&format!("{CM}?fieldManager=applier"), APPLY, &applied)
            .await,
        StatusCode::OK,
    );
    assert_eq!(
        entries(&obj),
        [
            entry("applier", "Apply", json!({"f:data": {"f:d": {}}})),
            entry(
                "creator",
                "Update",
                json!({"f:data": {"f:b": {}},
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
            ),
            entry("editor", "Update", json!({"f:data": {"f:a": {}}})),
            entry("patcher", "Update", json!({"f:data": {"f:c": {}}})),
        ]
    );
    assert_eq!(obj["data"], json!({"a": "9", "b": "2", "c": "3", "d": "4"}));
    // A write that changes nothing writes nothing, managedFields included.
    let again = expect(
        &client.request(Method::PUT, CM, Some(obj.clone())).await,
        StatusCode::OK,
    );
    assert_eq!(
        again["metadata"]["resourceVersion"],
        obj["metadata"]["resourceVersion"]
    );
    assert_eq!(
        again["metadata"]["managedFields"],
        obj["metadata"]["managedFields"]
    );
    // Without a fieldManager nor a User-Agent the manager is `unknown`; writes through the Rust
    // handle record nothing.
    let unknown = expect(
        &client.patch(CM, MERGE, &json!({"data": {"e": "5"}})).await,
        StatusCode::OK,
    );
    assert!(
        entries(&unknown)
            .iter()
            .any(|(m, _, f)| m == "unknown" && *f == json!({"f:data": {"f:e": {}}}))
    );
    assert_eq!(
        edited["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

fn deployment(replicas: Option<i64>, containers: &Value) -> Value {
    let mut obj = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": containers}}}});
    if let Some(replicas) = replicas {
        obj["spec"]["replicas"] = json!(replicas);
    }
    obj
}

async fn apply_as(client: &Client, manager: &str, force: bool, body: &Value) -> Reply {
    client
        .patch(
            &format!("{DEPLOY}?fieldManager={manager}&force={force}"),
            APPLY,
            body,
        )
        .await
}

#[tokio::test]
async fn applies_conflict_share_take_and_remove_fields_by_owner() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let x = json!([{"name": "x", "image": "x:1"}]);
    let y = json!([{"name": "y", "image": "y:1"}]);
    expect(
        &apply_as(&client, "a", false, &deployment(Some(2), &x)).await,
        StatusCode::CREATED,
    );
    // b applies the same replicas (shared, no conflict) and its own container: a's stays.
    let obj = expect(
        &apply_as(&client, "b", false, &deployment(Some(2), &y)).await,
        StatusCode::OK,
    );
    assert_eq!(
        name_and_image(&obj),
        json!([{"name": "x", "image": "x:1"}, {"name": "y", "image": "y:1"}])
    );
    let mut owners: Vec<String> = entries(&obj)
        .into_iter()
        .filter(|(_, _, f)| f["f:spec"].get("f:replicas").is_some())
        .map(|(m, _, _)| m)
        .collect();
    // In time order: a second may pass between the two applies.
    owners.sort();
    assert_eq!(owners, ["a", "b"]);
    // Another value for a field a owns too: 409, worded as kube-apiserver words it.
    let reply = apply_as(&client, "b", false, &deployment(Some(3), &y)).await;
    let status = expect(&reply, StatusCode::CONFLICT);
    assert_eq!(status["reason"], "Conflict");
    assert_eq!(
        status["message"],
        "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"a\"",
            "field": ".spec.replicas"}])
    );
    // An update takes the field from both; an apply then conflicts with it, named with its
    // API version, and with two fields both are listed.
    let scale = json!({"spec": {"replicas": 5, "template": {"spec": {"containers": [
        {"name": "x", "image": "x:2"}, {"name": "y", "image": "y:1"}]}}}});
    expect(
        &client
            .patch(&format!("{DEPLOY}?fieldManager=scaler"), MERGE, &scale)
            .await,
        StatusCode::OK,
    );
    let status = expect(
        &apply_as(&client, "a", false, &deployment(Some(2), &x)).await,
        StatusCode::CONFLICT,
    );
    assert_eq!(
        status["message"],
        "Apply failed with 2 conflicts: conflicts with \"scaler\" using apps/v1:\n\
         - .spec.replicas\n- .spec.template.spec.containers[name=\"x\"].image"
    );
    // Forced, a takes both; the scaler owns nothing any more and its entry goes.
    let obj = expect(
        &apply_as(&client, "a", true, &deployment(Some(2), &x)).await,
        StatusCode::OK,
    );
    assert_eq!(obj["spec"]["replicas"], 2);
    assert_eq!(managers(&obj), ["a", "b"]);
    // b stops applying its container and replicas: the container goes (nobody else owns it),
    // replicas stay (a owns them).
    let obj = expect(
        &apply_as(&client, "b", false, &deployment(None, &json!([]))).await,
        StatusCode::OK,
    );
    assert_eq!(obj["spec"]["replicas"], 2);
    assert_eq!(name_and_image(&obj), json!([{"name": "x", "image": "x:1"}]));
    assert_eq!(managers(&obj), ["a"]);
}

#[tokio::test]
async fn write_options_naming_managers_are_checked() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let cm = json!({"metadata": {"name": "c"}});
    let long = "m".repeat(129);
    let status = expect(
        &client
            .request(
                Method::POST,
                &format!("{CMS}?fieldManager={long}"),
                Some(cm.clone()),
            )
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    );
    assert_eq!(
        status["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than \
         128 bytes"
    );
    expect(
        &client.request(Method::POST, CMS, Some(cm)).await,
        StatusCode::CREATED,
    );
    let status = expect(
        &client
            .patch(
                &format!("{CM}?force=true"),
                MERGE,
                &json!({"data": {"a": "1"}}),
            )
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    );
    assert_eq!(
        status["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for \
         non-apply patch"
    );
}

/// The name and image of each container of a deployment's template (the server defaults the
/// rest, as kube-apiserver does).
fn name_and_image(obj: &Value) -> Value {
    obj["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!({"name": c["name"], "image": c["image"]}))
        .collect()
}

/// A list the vendored schema keys (`spec.schedulingGates` by `name`) merges entry by entry
/// between two appliers, where an atomic list would conflict.
#[tokio::test]
async fn list_types_come_from_the_kinds_schema() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let pod = |gate: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}],
                     "schedulingGates": [{"name": gate}]}})
    };
    let path = "/api/v1/namespaces/ns/pods/p";
    for (manager, gate) in [("a", "example.com/a"), ("b", "example.com/b")] {
        let reply = client
            .patch(&format!("{path}?fieldManager={manager}"), APPLY, &pod(gate))
            .await;
        expect(
            &reply,
            if manager == "a" {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            },
        );
    }
    let obj = expect(&client.get(path).await, StatusCode::OK);
    assert_eq!(
        obj["spec"]["schedulingGates"],
        json!([{"name": "example.com/a"}, {"name": "example.com/b"}])
    );
    let b = entries(&obj)
        .into_iter()
        .find(|(m, _, _)| m == "b")
        .map(|(_, _, fields)| fields)
        .unwrap();
    assert!(
        b.to_string().contains(r#"k:{\"name\":\"example.com/b\"}"#),
        "{b}"
    );
}
