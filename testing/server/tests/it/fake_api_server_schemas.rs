//! What the vendored Kubernetes schemas drive, over HTTP: field validation (`Strict`, `Warn`,
//! `Ignore`) of unknown and duplicate fields at any depth, wrong types refused, strategic merge
//! patch merging lists by key (containers) and as sets (finalizers), `$patch: delete` by key,
//! 415 for a strategic merge patch of a custom resource, and the real schemas in `OpenAPI` v3.

use http::{Method, StatusCode};
use kcache_store::ApiResource;
use kcache_testing_server::fake_api_server::{FakeApiServer, ServedResource};
use serde_json::{Value, json};

use crate::fake_api_server::pod;
use crate::fake_api_server_client::{Client, Reply};

const PODS: &str = "/api/v1/namespaces/ns/pods";
const POD: &str = "/api/v1/namespaces/ns/pods/p";
const MERGE: &str = "application/merge-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";

/// A pod manifest `p` with unknown fields `spec.foo` and `spec.containers[0].bar`.
fn pod_with_unknown_fields() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"foo": 1, "containers": [{"name": "a", "image": "nginx", "bar": true}]},
    })
}

/// The `Warning` header values of a reply.
fn warnings(reply: &Reply) -> Vec<String> {
    reply
        .headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

/// Asserts a reply's status code and, for errors, its Status reason; returns its body.
#[track_caller]
fn assert_reply(reply: &Reply, status: StatusCode, reason: Option<&str>) -> Value {
    let body = reply.json();
    assert_eq!(reply.status, status, "{body}");
    if let Some(reason) = reason {
        assert_eq!(body["reason"], reason, "{body}");
        assert_eq!(body["code"], status.as_u16(), "{body}");
    }
    body
}

#[tokio::test]
async fn strict_refuses_unknown_fields_at_any_depth_with_kube_apiservers_message() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let path = format!("{PODS}?fieldValidation=Strict");
    let reply = client
        .request(Method::POST, &path, Some(pod_with_unknown_fields()))
        .await;
    let status = assert_reply(&reply, StatusCode::BAD_REQUEST, Some("BadRequest"));
    assert_eq!(
        status["message"],
        "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \
         \"spec.containers[0].bar\", unknown field \"spec.foo\""
    );
    // Nothing was written.
    let missing = client.get(POD).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    // Duplicate fields too, with their path.
    let body = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","name":"p"},
        "spec":{"containers":[{"name":"a","image":"x","image":"y"}]}}"#;
    let reply = client
        .request_raw(Method::POST, &path, "application/json", body)
        .await;
    let status = assert_reply(&reply, StatusCode::BAD_REQUEST, Some("BadRequest"));
    assert_eq!(
        status["message"],
        "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: duplicate field \
         \"metadata.name\", duplicate field \"spec.containers[0].image\""
    );
    // A PUT is checked the same way.
    server
        .create(&ServedResource::pods(), pod("ns", "p", "web"))
        .unwrap();
    let mut replaced = pod_with_unknown_fields();
    replaced["spec"]["containers"][0]["bar"] = Value::Null;
    let reply = client
        .request(
            Method::PUT,
            &format!("{POD}?fieldValidation=Strict"),
            Some(replaced),
        )
        .await;
    let status = assert_reply(&reply, StatusCode::BAD_REQUEST, Some("BadRequest"));
    assert_eq!(
        status["message"],
        "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \
         \"spec.containers[0].bar\", unknown field \"spec.foo\""
    );
}

#[tokio::test]
async fn warn_is_the_default_and_ignore_says_nothing() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    for path in [PODS.to_owned(), format!("{PODS}?fieldValidation=Warn")] {
        let reply = client
            .request(Method::POST, &path, Some(pod_with_unknown_fields()))
            .await;
        assert_reply(&reply, StatusCode::CREATED, None);
        assert_eq!(
            warnings(&reply),
            [
                r#"299 - "unknown field \"spec.containers[0].bar\"""#,
                r#"299 - "unknown field \"spec.foo\"""#,
            ]
        );
        assert_eq!(
            client.request(Method::DELETE, POD, None).await.status,
            StatusCode::OK
        );
    }
    let reply = client
        .request(
            Method::POST,
            &format!("{PODS}?fieldValidation=Ignore"),
            Some(pod_with_unknown_fields()),
        )
        .await;
    assert_reply(&reply, StatusCode::CREATED, None);
    assert_eq!(warnings(&reply), Vec::<String>::new());
    // A clean object has no warnings; a custom resource is never checked.
    let clean = client
        .request(
            Method::POST,
            "/api/v1/namespaces/ns/configmaps",
            Some(json!({"metadata": {"name": "c"}, "data": {"a": "1"}})),
        )
        .await;
    assert_reply(&clean, StatusCode::CREATED, None);
    assert!(warnings(&clean).is_empty());
    let widgets = ServedResource::new(
        ApiResource::new("example.com", "v1", "widgets", true),
        "Widget",
    );
    server.register(widgets);
    let reply = client
        .request(
            Method::POST,
            "/apis/example.com/v1/namespaces/ns/widgets?fieldValidation=Strict",
            Some(json!({"metadata": {"name": "w"}, "spec": {"anything": 1}})),
        )
        .await;
    assert_reply(&reply, StatusCode::CREATED, None);
}

#[tokio::test]
async fn patches_are_validated_on_the_patched_object() {
    let server = FakeApiServer::start().await.unwrap();
    server
        .create(&ServedResource::pods(), pod("ns", "p", "web"))
        .unwrap();
    let client = Client::new(&server);
    let patch = json!({"spec": {"foo": 1}});
    let reply = client
        .patch(&format!("{POD}?fieldValidation=Strict"), MERGE, &patch)
        .await;
    let status = assert_reply(&reply, StatusCode::UNPROCESSABLE_ENTITY, Some("Invalid"));
    let message = status["message"].as_str().unwrap();
    assert!(
        message.starts_with(" \"\" is invalid: patch: Invalid value: \"{"),
        "{message}"
    );
    assert!(
        message.ends_with(": strict decoding error: unknown field \"spec.foo\""),
        "{message}"
    );
    assert_eq!(status["details"]["causes"][0]["field"], "patch");
    let reply = client
        .patch(&format!("{POD}?fieldValidation=Strict"), STRATEGIC, &patch)
        .await;
    let status = assert_reply(&reply, StatusCode::UNPROCESSABLE_ENTITY, Some("Invalid"));
    assert_eq!(
        status["message"],
        " \"\" is invalid: patch: Invalid value: \"map[spec:map[foo:1]]\": strict decoding \
         error: unknown field \"spec.foo\""
    );
    // Warn: written, with the warning.
    let reply = client.patch(POD, STRATEGIC, &patch).await;
    let obj = assert_reply(&reply, StatusCode::OK, None);
    assert_eq!(obj["spec"]["foo"], 1);
    assert_eq!(warnings(&reply), [r#"299 - "unknown field \"spec.foo\"""#]);
}

#[tokio::test]
async fn wrong_types_are_refused_whatever_the_level() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let mut bad = pod_with_unknown_fields();
    bad["spec"] =
        json!({"containers": [{"name": "a", "image": "x", "ports": [{"containerPort": "80"}]}]});
    for level in ["Strict", "Warn", "Ignore"] {
        let reply = client
            .request(
                Method::POST,
                &format!("{PODS}?fieldValidation={level}"),
                Some(bad.clone()),
            )
            .await;
        let status = assert_reply(&reply, StatusCode::BAD_REQUEST, Some("BadRequest"));
        assert_eq!(
            status["message"],
            "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal string \
             into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"
        );
    }
    bad["spec"] = json!({"containers": "nginx"});
    let reply = client.request(Method::POST, PODS, Some(bad)).await;
    let status = assert_reply(&reply, StatusCode::BAD_REQUEST, Some("BadRequest"));
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .ends_with("PodSpec.spec.containers of type []v1.Container"),
        "{status}"
    );
    // An object where a string belongs, in a patch: 422, as kube-apiserver answers a patch
    // whose result does not decode.
    server
        .create(&ServedResource::pods(), pod("ns", "p", "web"))
        .unwrap();
    let reply = client
        .patch(
            &format!("{POD}?fieldValidation=Ignore"),
            MERGE,
            &json!({"spec": {"nodeName": {"a": 1}}}),
        )
        .await;
    let status = assert_reply(&reply, StatusCode::UNPROCESSABLE_ENTITY, Some("Invalid"));
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .ends_with("json: cannot unmarshal object into Go struct field PodSpec.spec.nodeName of type string"),
        "{status}"
    );
}

#[tokio::test]
async fn strategic_merge_patch_merges_containers_by_name_and_finalizers_as_a_set() {
    let server = FakeApiServer::start().await.unwrap();
    server
        .create(&ServedResource::pods(), pod("ns", "p", "web"))
        .unwrap();
    let client = Client::new(&server);
    let sidecar = json!({"spec": {"containers": [{"name": "sidecar", "image": "busybox"}]}});
    let obj = assert_reply(
        &client.patch(POD, STRATEGIC, &sidecar).await,
        StatusCode::OK,
        None,
    );
    assert_eq!(
        names_and_images(&obj["spec"]["containers"]),
        json!([{"name": "c", "image": "nginx"}, {"name": "sidecar", "image": "busybox"}])
    );
    // A patch entry merges into the entry with its key.
    let image = json!({"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}});
    let obj = assert_reply(
        &client.patch(POD, STRATEGIC, &image).await,
        StatusCode::OK,
        None,
    );
    assert_eq!(obj["spec"]["containers"][0]["image"], "nginx:2");
    assert_eq!(obj["spec"]["containers"].as_array().unwrap().len(), 2);
    // Two finalizer patches keep both.
    for f in ["a.example.com/x", "b.example.com/y"] {
        let patch = json!({"metadata": {"finalizers": [f]}});
        assert_reply(
            &client.patch(POD, STRATEGIC, &patch).await,
            StatusCode::OK,
            None,
        );
    }
    let obj = client.get(POD).await.json();
    assert_eq!(
        obj["metadata"]["finalizers"],
        json!(["a.example.com/x", "b.example.com/y"])
    );
    // `$patch: delete` removes the container with that name.
    let delete = json!({"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}});
    let obj = assert_reply(
        &client.patch(POD, STRATEGIC, &delete).await,
        StatusCode::OK,
        None,
    );
    assert_eq!(
        names_and_images(&obj["spec"]["containers"]),
        json!([{"name": "c", "image": "nginx:2"}])
    );
    // A list without a merge strategy (a container's args) is replaced.
    let args = json!({"spec": {"containers": [{"name": "c", "args": ["a", "b"]}]}});
    assert_reply(
        &client.patch(POD, STRATEGIC, &args).await,
        StatusCode::OK,
        None,
    );
    let args = json!({"spec": {"containers": [{"name": "c", "args": ["z"]}]}});
    let obj = assert_reply(
        &client.patch(POD, STRATEGIC, &args).await,
        StatusCode::OK,
        None,
    );
    assert_eq!(obj["spec"]["containers"][0]["args"], json!(["z"]));
}

#[tokio::test]
async fn strategic_merge_patch_of_a_custom_resource_is_415() {
    let server = FakeApiServer::start().await.unwrap();
    let widgets = ServedResource::new(
        ApiResource::new("example.com", "v1", "widgets", true),
        "Widget",
    );
    server.register(widgets.clone());
    server
        .create(
            &widgets,
            serde_json::from_value(json!({"metadata": {"name": "w", "namespace": "ns"}})).unwrap(),
        )
        .unwrap();
    let client = Client::new(&server);
    let path = "/apis/example.com/v1/namespaces/ns/widgets/w";
    let reply = client
        .patch(path, STRATEGIC, &json!({"spec": {"a": 1}}))
        .await;
    let status = assert_reply(
        &reply,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        Some("UnsupportedMediaType"),
    );
    assert_eq!(
        status["message"],
        "the body of the request was in an unknown format - accepted media types include: \
         application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
    // A merge patch is fine.
    let reply = client.patch(path, MERGE, &json!({"spec": {"a": 1}})).await;
    assert_reply(&reply, StatusCode::OK, None);
}

#[tokio::test]
async fn openapi_documents_carry_the_real_schemas() {
    let server = FakeApiServer::start().await.unwrap();
    let widgets = ServedResource::new(
        ApiResource::new("example.com", "v1", "widgets", true),
        "Widget",
    );
    server.register(widgets);
    let client = Client::new(&server);
    let doc = client.get("/openapi/v3/apis/apps/v1").await.json();
    let schemas = &doc["components"]["schemas"];
    let deployment = &schemas["io.k8s.api.apps.v1.Deployment"];
    assert!(
        deployment["description"]
            .as_str()
            .unwrap()
            .starts_with("Deployment enables declarative updates")
    );
    assert!(
        deployment
            .get("x-kubernetes-preserve-unknown-fields")
            .is_none()
    );
    let containers = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(
        containers["items"]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.Container"
    );
    assert!(schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object());
    let patch = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    let media: Vec<&str> = patch["requestBody"]["content"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert!(media.contains(&STRATEGIC), "{media:?}");
    // A custom resource keeps the permissive schema and has no strategic merge patch.
    let doc = client.get("/openapi/v3/apis/example.com/v1").await.json();
    let widget = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(widget["x-kubernetes-preserve-unknown-fields"], true);
    let patch =
        &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
    assert!(patch["requestBody"]["content"].get(STRATEGIC).is_none());
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
