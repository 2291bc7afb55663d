//! Custom resources served from a `CustomResourceDefinition` with a structural schema, over
//! HTTP: pruning of unknown fields on every write, field validation (`Strict`, `Warn`,
//! `Ignore`), each validation keyword's 422 with kube-apiserver's message, defaulting, the
//! `OpenAPI` document carrying the schema and the Tables' printer columns.

use http::{Method, StatusCode};
use kcache_testing_server::fake_api_server::{FakeApiServer, ServedResource};
use serde_json::{Value, json};

use crate::fake_api_server_client::{Client, Reply};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/ns/widgets";
const MERGE: &str = "application/merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

/// Asserts a reply's status; returns its JSON body.
#[track_caller]
fn ok(reply: &Reply, status: StatusCode) -> Value {
    let body = reply.json();
    assert_eq!(reply.status, status, "{body}");
    body
}

/// The `Warning` headers of a reply.
fn warnings(reply: &Reply) -> Vec<String> {
    reply
        .headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

/// A definition of `widgets.example.com` with a schema using every keyword the server checks,
/// and printer columns.
pub(crate) fn schema_definition() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": "A widget.",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "description": "What the widget should be.",
                            "required": ["size"],
                            "properties": {
                                "size": {"type": "integer", "minimum": 1, "maximum": 10,
                                    "description": "How big the widget is."},
                                "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                                "name": {"type": "string", "minLength": 2, "maxLength": 5},
                                "tags": {"type": "array", "minItems": 1, "maxItems": 2,
                                    "items": {"type": "string"}},
                                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                                "note": {"type": "string", "nullable": true},
                                "mode": {"type": "object", "default": {},
                                    "properties": {"level": {"type": "integer", "default": 3}}},
                            },
                        },
                        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
                    },
                }},
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size",
                        "description": "How big"},
                    {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1},
                ],
            }],
        },
    })
}

/// A server serving [`schema_definition`].
async fn start() -> (FakeApiServer, Client) {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    ok(
        &client
            .request(Method::POST, CRDS, Some(schema_definition()))
            .await,
        StatusCode::CREATED,
    );
    (server, client)
}

fn widget(name: &str, spec: &Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn unknown_fields_are_pruned_from_every_write_and_warned_of() {
    let (_server, client) = start().await;
    let mut body = widget(
        "w",
        &json!({"size": 2, "foo": 1, "labels": {"a": "b"},
        "free": {"any": {"thing": 1}}}),
    );
    body["metadata"]["bogus"] = json!(true);
    body["extra"] = json!(1);
    let reply = client.request(Method::POST, WIDGETS, Some(body)).await;
    let made = ok(&reply, StatusCode::CREATED);
    assert_eq!(
        warnings(&reply),
        [
            "299 - \"unknown field \\\"metadata.bogus\\\"\"",
            "299 - \"unknown field \\\"extra\\\"\"",
            "299 - \"unknown field \\\"spec.foo\\\"\"",
        ]
    );
    assert_eq!(made["metadata"].get("bogus"), None, "{made}");
    assert_eq!(made.get("extra"), None, "{made}");
    assert_eq!(made["spec"].get("foo"), None, "{made}");
    assert_eq!(made["spec"]["labels"], json!({"a": "b"}));
    assert_eq!(made["spec"]["free"], json!({"any": {"thing": 1}}));
    let stored = ok(&client.get(&format!("{WIDGETS}/w")).await, StatusCode::OK);
    assert_eq!(stored["spec"].get("foo"), None, "{stored}");
    // A PUT, a merge patch and an apply are pruned too.
    let mut put = made.clone();
    put["spec"]["bar"] = json!(1);
    let reply = client
        .request(Method::PUT, &format!("{WIDGETS}/w"), Some(put))
        .await;
    assert_eq!(ok(&reply, StatusCode::OK)["spec"].get("bar"), None);
    assert_eq!(
        warnings(&reply),
        ["299 - \"unknown field \\\"spec.bar\\\"\""]
    );
    let reply = client
        .patch(
            &format!("{WIDGETS}/w"),
            MERGE,
            &json!({"spec": {"baz": 1, "size": 3}}),
        )
        .await;
    let patched = ok(&reply, StatusCode::OK);
    assert_eq!(
        (patched["spec"].get("baz"), &patched["spec"]["size"]),
        (None, &json!(3))
    );
    assert_eq!(
        warnings(&reply),
        ["299 - \"unknown field \\\"spec.baz\\\"\""]
    );
    let applied = widget("w", &json!({"size": 4, "qux": 1}));
    let reply = client
        .patch(
            &format!("{WIDGETS}/w?fieldManager=test&force=true"),
            APPLY,
            &applied,
        )
        .await;
    let applied = ok(&reply, StatusCode::OK);
    assert_eq!(
        (applied["spec"].get("qux"), &applied["spec"]["size"]),
        (None, &json!(4))
    );
}

#[tokio::test]
async fn strict_refuses_unknown_fields_and_ignore_prunes_silently() {
    let (_server, client) = start().await;
    let body = widget("w", &json!({"size": 2, "foo": 1}));
    let reply = client
        .request(
            Method::POST,
            &format!("{WIDGETS}?fieldValidation=Strict"),
            Some(body.clone()),
        )
        .await;
    assert_eq!(
        ok(&reply, StatusCode::BAD_REQUEST)["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: \
         unknown field \"spec.foo\""
    );
    let reply = client
        .request(
            Method::POST,
            &format!("{WIDGETS}?fieldValidation=Ignore"),
            Some(body),
        )
        .await;
    assert_eq!(ok(&reply, StatusCode::CREATED)["spec"].get("foo"), None);
    assert!(warnings(&reply).is_empty());
    let reply = client
        .patch(
            &format!("{WIDGETS}/w?fieldValidation=Strict"),
            MERGE,
            &json!({"spec": {"bar": 1}}),
        )
        .await;
    let refused = ok(&reply, StatusCode::UNPROCESSABLE_ENTITY);
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.contains("strict decoding error: unknown field \"spec.bar\""),
        "{message}"
    );
}

#[tokio::test]
async fn each_validation_keyword_answers_kube_apiservers_422() {
    let (_server, client) = start().await;
    let cases = [
        (
            json!({"size": "big"}),
            "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"",
        ),
        (json!({"color": "red"}), "spec.size: Required value"),
        (
            json!({"size": 1, "color": "pink"}),
            "spec.color: Unsupported value: \"pink\": supported values: \"red\", \"blue\"",
        ),
        (
            json!({"size": 11}),
            "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
        ),
        (
            json!({"size": 0}),
            "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1",
        ),
        (
            json!({"size": 1, "name": "toolong"}),
            "spec.name: Too long: may not be more than 5 bytes",
        ),
        (
            json!({"size": 1, "name": "a"}),
            "spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long",
        ),
        (
            json!({"size": 1, "tags": ["a", "b", "c"]}),
            "spec.tags: Too many: 3: must have at most 2 items",
        ),
        (
            json!({"size": 1, "tags": []}),
            "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
        ),
        (
            json!({"size": 1, "tags": [null]}),
            "spec.tags[0]: Invalid value: \"null\": spec.tags[0] in body must be of type string: \"null\"",
        ),
    ];
    for (spec, problem) in cases {
        let reply = client
            .request(Method::POST, WIDGETS, Some(widget("w", &spec)))
            .await;
        let refused = ok(&reply, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(refused["reason"], "Invalid");
        assert_eq!(
            refused["message"],
            format!("Widget.example.com \"w\" is invalid: {problem}"),
            "{spec}"
        );
        let (field, _) = problem.split_once(": ").unwrap();
        assert_eq!(refused["details"]["causes"][0]["field"], field);
        assert_eq!(refused["details"]["kind"], "Widget");
    }
    // Several problems are joined; a nullable field takes null.
    let reply = client
        .request(
            Method::POST,
            WIDGETS,
            Some(widget("w", &json!({"size": 20, "color": "pink"}))),
        )
        .await;
    assert_eq!(
        ok(&reply, StatusCode::UNPROCESSABLE_ENTITY)["message"],
        "Widget.example.com \"w\" is invalid: [spec.color: Unsupported value: \"pink\": \
         supported values: \"red\", \"blue\", spec.size: Invalid value: 20: spec.size in body \
         should be less than or equal to 10]"
    );
    let reply = client
        .request(
            Method::POST,
            WIDGETS,
            Some(widget("w", &json!({"size": 1, "note": null}))),
        )
        .await;
    assert_eq!(ok(&reply, StatusCode::CREATED)["spec"]["note"], Value::Null);
    // Updates and patches are validated as well.
    let reply = client
        .patch(
            &format!("{WIDGETS}/w"),
            MERGE,
            &json!({"spec": {"size": "x"}}),
        )
        .await;
    assert_eq!(
        ok(&reply, StatusCode::UNPROCESSABLE_ENTITY)["reason"],
        "Invalid"
    );
}

#[tokio::test]
async fn defaults_apply_on_writes_where_the_parent_exists() {
    let (server, client) = start().await;
    let reply = client
        .request(
            Method::POST,
            WIDGETS,
            Some(widget("w", &json!({"size": 1}))),
        )
        .await;
    let made = ok(&reply, StatusCode::CREATED);
    assert_eq!(made["spec"]["color"], "red");
    assert_eq!(made["spec"]["mode"], json!({"level": 3}));
    // No spec: nothing to default in it.
    let bare =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "bare"}});
    let made = ok(
        &client.request(Method::POST, WIDGETS, Some(bare)).await,
        StatusCode::CREATED,
    );
    assert_eq!(made.get("spec"), None, "{made}");
    // A null that is not nullable takes the default again.
    let reply = client
        .patch(
            &format!("{WIDGETS}/w"),
            MERGE,
            &json!({"spec": {"color": null, "mode": {"level": null}}}),
        )
        .await;
    let patched = ok(&reply, StatusCode::OK);
    assert_eq!(patched["spec"]["color"], "red");
    assert_eq!(patched["spec"]["mode"], json!({"level": 3}));
    // The Rust handle stores what it is given.
    let resource = ServedResource::new(
        kcache_store::ApiResource::new("example.com", "v1", "widgets", true),
        "Widget",
    );
    let mut obj = kcache_store::DynamicObject::new(Some("ns"), "raw");
    obj.data
        .insert("spec".into(), json!({"size": 99, "foo": 1}));
    let stored = server.create(&resource, obj).unwrap();
    assert_eq!(stored.data["spec"], json!({"size": 99, "foo": 1}));
}

#[tokio::test]
async fn the_openapi_document_carries_the_definitions_schema() {
    let (_server, client) = start().await;
    let doc = ok(
        &client.get("/openapi/v3/apis/example.com/v1").await,
        StatusCode::OK,
    );
    let schema = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        schema["properties"]["spec"]["properties"]["size"]["description"],
        "How big the widget is."
    );
    assert_eq!(
        schema["x-kubernetes-group-version-kind"],
        json!([{"group": "example.com", "version": "v1", "kind": "Widget"}])
    );
    assert_eq!(
        schema["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert!(
        doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object()
    );
    assert!(
        schema.get("x-kubernetes-preserve-unknown-fields").is_none(),
        "{schema}"
    );
}

#[tokio::test]
async fn tables_have_the_printer_columns() {
    let (_server, client) = start().await;
    ok(
        &client
            .request(
                Method::POST,
                WIDGETS,
                Some(widget("w", &json!({"size": 7}))),
            )
            .await,
        StatusCode::CREATED,
    );
    let resp = client
        .send(
            Method::GET,
            WIDGETS,
            None,
            Some("application/json;as=Table;v=v1;g=meta.k8s.io"),
        )
        .await;
    let table: Value = {
        use http_body_util::BodyExt as _;
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&body).unwrap()
    };
    let columns: Vec<(&str, &str, i64)> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["type"].as_str().unwrap(),
                c["priority"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        columns,
        [
            ("Name", "string", 0),
            ("Size", "integer", 0),
            ("Color", "string", 1)
        ]
    );
    assert_eq!(table["columnDefinitions"][1]["description"], "How big");
    assert_eq!(table["rows"][0]["cells"], json!(["w", 7, "red"]));
}
