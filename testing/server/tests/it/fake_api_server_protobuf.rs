//! Protobuf (`application/vnd.kubernetes.protobuf`) against the fake API server over HTTP, as
//! client-go and kubectl speak it: GETs, lists and their pages, watches and streaming lists as
//! length-prefixed frames, `Status` errors, writes answering in protobuf, protobuf request
//! bodies (and malformed ones), and custom resources, which have no protobuf encoding. Every
//! answer is decoded with `kcache-protobuf` and compared with the JSON answer to the same
//! request.

use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use kcache_protobuf::envelope;
use kcache_protobuf::frames::{FrameReader, parse_event};
use kcache_store::DynamicObject;
use kcache_testing_server::fake_api_server::{
    FakeApiServer, Fault, FaultKind, INITIAL_EVENTS_END, ServedResource, Verb,
};
use serde_json::{Value, json};

use crate::fake_api_server::{create_pods, widgets_server};
use crate::fake_api_server_client::{Client, Reply};

/// What client-go's clientsets send (`ContentConfig` with protobuf, then anything).
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf, */*";

/// What kubectl sends for built-in kinds.
const PROTOBUF_THEN_JSON: &str = "application/vnd.kubernetes.protobuf,application/json";

/// Protobuf and nothing else.
const PROTOBUF_ONLY: &str = "application/vnd.kubernetes.protobuf";

/// A request with `Accept: accept` and an optional body of media type `content_type`, read to
/// the end.
async fn send(
    client: &Client,
    method: Method,
    path: &str,
    body: Option<(&str, Bytes)>,
    accept: &str,
) -> Reply {
    let (content_type, body) = body.map_or((None, Bytes::new()), |(t, b)| (Some(t), b));
    Client::read(
        client
            .send_raw(method, path, body, content_type, Some(accept))
            .await,
    )
    .await
}

/// A GET with `Accept: accept`.
async fn get(client: &Client, path: &str, accept: &str) -> Reply {
    send(client, Method::GET, path, None, accept).await
}

/// The JSON form of a protobuf answer, asserting its media type and envelope.
#[track_caller]
fn decoded(reply: &Reply) -> Value {
    assert_eq!(
        reply.headers["content-type"],
        envelope::CONTENT_TYPE,
        "{}: {}",
        reply.status,
        String::from_utf8_lossy(&reply.body)
    );
    assert!(envelope::is_enveloped(&reply.body), "{:?}", reply.body);
    envelope::decode(&reply.body).unwrap()
}

/// `(apiVersion, kind)` named by a protobuf answer's envelope.
fn envelope_kind(reply: &Reply) -> (String, String) {
    let e = envelope::parse(&reply.body).unwrap();
    (e.api_version.to_owned(), e.kind.to_owned())
}

/// A protobuf watch body split into frames.
struct ProtoWatch {
    body: Incoming,
    frames: FrameReader,
}

impl ProtoWatch {
    /// Opens a protobuf watch; the status must be 200 and the media type the watch one.
    async fn open(client: &Client, path: &str) -> Self {
        Self::open_with(client, path, PROTOBUF).await
    }

    /// Opens a watch asking for `accept`, which must be answered in protobuf frames.
    async fn open_with(client: &Client, path: &str, accept: &str) -> Self {
        let resp = client.send(Method::GET, path, None, Some(accept)).await;
        assert_eq!(resp.status(), StatusCode::OK, "watch {path}");
        assert_eq!(resp.headers()["content-type"], envelope::WATCH_CONTENT_TYPE);
        Self {
            body: resp.into_body(),
            frames: FrameReader::new(16 << 20),
        }
    }

    /// The next frame's payload; `None` once the stream has ended cleanly.
    async fn next_payload(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(payload) = self.frames.next_frame().unwrap() {
                return Some(payload.to_vec());
            }
            let frame = tokio::time::timeout(Duration::from_secs(5), self.body.frame())
                .await
                .expect("a frame within 5 s")?
                .unwrap();
            if let Ok(data) = frame.into_data() {
                self.frames.push(&data);
            }
        }
    }

    /// The next event: its type and its object's JSON form, with the envelope's `apiVersion`
    /// and `kind` (which must be the object's own).
    async fn next(&mut self) -> (String, Value) {
        let payload = self.next_payload().await.expect("the stream goes on");
        let event = parse_event(&payload).unwrap();
        let object: Value = envelope::decode(event.object).unwrap();
        let e = envelope::parse(event.object).unwrap();
        assert_eq!(object["apiVersion"], e.api_version);
        assert_eq!(object["kind"], e.kind);
        (event.event_type.to_owned(), object)
    }
}

/// A configmap `name` in `default` with `data`.
fn configmap(name: &str, data: &Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "data": data})
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "app", "image": "nginx:1.27",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
                }]},
            },
        },
    })
}

#[tokio::test]
async fn gets_lists_and_pages_in_protobuf_are_the_json_answers() {
    let server = FakeApiServer::start().await.unwrap();
    create_pods(&server, "a", ["p0", "p1", "p2"]);
    create_pods(&server, "b", ["p3", "p4"]);
    let client = Client::new(&server);
    // Written over HTTP, so defaulted and with managedFields and timestamps.
    let created = client
        .request(
            Method::POST,
            "/apis/apps/v1/namespaces/default/deployments",
            Some(deployment("web")),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);

    for (path, kind) in [
        ("/api/v1/namespaces/a/pods/p1", "Pod"),
        (
            "/apis/apps/v1/namespaces/default/deployments/web",
            "Deployment",
        ),
        ("/api/v1/namespaces/default", "Namespace"),
    ] {
        let json = client.get(path).await;
        assert_eq!(json.status, StatusCode::OK);
        for accept in [PROTOBUF, PROTOBUF_THEN_JSON, PROTOBUF_ONLY] {
            let reply = get(&client, path, accept).await;
            assert_eq!(reply.status, StatusCode::OK, "{path}");
            assert_eq!(decoded(&reply), json.json(), "{path} {accept}");
            assert_eq!(envelope_kind(&reply).1, kind);
        }
    }

    for path in [
        "/api/v1/pods",
        "/api/v1/namespaces/a/pods",
        "/api/v1/pods?labelSelector=app%3Dweb",
        "/apis/apps/v1/deployments",
        "/api/v1/namespaces",
    ] {
        let json = client.get(path).await.json();
        let reply = get(&client, path, PROTOBUF).await;
        assert_eq!(reply.status, StatusCode::OK);
        let list = decoded(&reply);
        assert_eq!(list, json, "{path}");
        assert!(list["items"].as_array().is_some_and(|i| !i.is_empty()));
        assert!(envelope_kind(&reply).1.ends_with("List"));
    }
    let (api_version, kind) = envelope_kind(&get(&client, "/api/v1/pods", PROTOBUF).await);
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "PodList"));

    // Pages: the same tokens, items and counts as in JSON, to the last page.
    let mut token = String::new();
    let mut names = Vec::new();
    loop {
        let path = format!("/api/v1/pods?limit=2&continue={token}");
        let json = client.get(&path).await.json();
        let page = decoded(&get(&client, &path, PROTOBUF).await);
        assert_eq!(page, json);
        for item in page["items"].as_array().unwrap() {
            names.push(item["metadata"]["name"].as_str().unwrap().to_owned());
        }
        match page["metadata"]["continue"].as_str() {
            Some(next) => {
                assert!(page["metadata"]["remainingItemCount"].as_u64().unwrap() > 0);
                token = next.to_owned();
            }
            None => break,
        }
    }
    assert_eq!(names, ["p0", "p1", "p2", "p3", "p4"]);
}

#[tokio::test]
async fn watches_in_protobuf_are_frames_of_the_json_events() {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    create_pods(&server, "a", ["p0"]);
    let rv = server.resource_version();
    let client = Client::new(&server);
    let path = format!("/api/v1/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=true");
    let mut json = client.watch(&path).await;
    let mut proto = ProtoWatch::open(&client, &path).await;

    create_pods(&server, "a", ["p1"]);
    let mut changed = server.get(&pods, Some("a"), "p1").unwrap().as_ref().clone();
    changed
        .metadata
        .labels
        .get_or_insert_default()
        .insert("tier".into(), "front".into());
    server.update(&pods, changed).unwrap();
    server.delete(&pods, Some("a"), "p0").unwrap();
    server.send_bookmark();
    for expected in ["ADDED", "MODIFIED", "DELETED", "BOOKMARK"] {
        let event = json.next().await;
        let (event_type, object) = proto.next().await;
        assert_eq!(event_type, expected);
        assert_eq!(event["type"], expected);
        assert_eq!(object, event["object"], "{expected}");
    }

    // From a compacted resource version: one ERROR event, a 410 Status.
    server.compact();
    let mut old = ProtoWatch::open(&client, "/api/v1/pods?watch=1&resourceVersion=1").await;
    let (event_type, status) = old.next().await;
    assert_eq!(event_type, "ERROR");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["apiVersion"], "v1");
    assert_eq!(status["code"], 410);
    assert_eq!(status["reason"], "Expired");
    let mut json_old = client.watch("/api/v1/pods?watch=1&resourceVersion=1").await;
    assert_eq!(json_old.next().await["object"], status);
}

#[tokio::test]
async fn streaming_lists_in_protobuf_end_with_the_annotated_bookmark() {
    // Over TLS: HTTP/2, whose DATA frames cut the stream anywhere.
    let server = FakeApiServer::builder().tls(true).start().await.unwrap();
    let pods = ServedResource::pods();
    create_pods(&server, "ns", ["b", "a"]);
    let client = Client::new(&server);
    let path = "/api/v1/pods?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&\
                resourceVersionMatch=NotOlderThan&resourceVersion=";
    let mut json = client.watch(path).await;
    let mut proto = ProtoWatch::open(&client, path).await;
    let mut names = Vec::new();
    for _ in 0..2 {
        let (event_type, object) = proto.next().await;
        assert_eq!(event_type, "ADDED");
        assert_eq!(object["kind"], "Pod");
        assert_eq!(object, json.next().await["object"]);
        names.push(object["metadata"]["name"].as_str().unwrap().to_owned());
    }
    assert_eq!(names, ["a", "b"]);
    let (event_type, bookmark) = proto.next().await;
    assert_eq!(event_type, "BOOKMARK");
    assert_eq!(bookmark["kind"], "Pod");
    assert_eq!(bookmark["apiVersion"], "v1");
    assert_eq!(
        bookmark["metadata"]["annotations"][INITIAL_EVENTS_END],
        "true"
    );
    assert_eq!(bookmark, json.next().await["object"]);
    server.delete(&pods, Some("ns"), "a").unwrap();
    let (event_type, deleted) = proto.next().await;
    assert_eq!(event_type, "DELETED");
    assert_eq!(deleted["metadata"]["name"], "a");
    assert_eq!(deleted, json.next().await["object"]);
}

#[tokio::test]
async fn errors_to_protobuf_requests_are_enveloped_statuses() {
    let server = FakeApiServer::start().await.unwrap();
    create_pods(&server, "a", ["p0", "p1", "p2"]);
    let client = Client::new(&server);

    // 404 of a GET.
    let path = "/api/v1/namespaces/a/pods/nope";
    let reply = get(&client, path, PROTOBUF).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(
        envelope_kind(&reply),
        ("v1".to_owned(), "Status".to_owned())
    );
    let status = decoded(&reply);
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["code"], 404);
    assert_eq!(status, client.get(path).await.json());

    // 409 of a create.
    let path = "/api/v1/namespaces/a/pods";
    let existing = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p0", "namespace": "a"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let body = Bytes::from(serde_json::to_vec(&existing).unwrap());
    let reply = send(
        &client,
        Method::POST,
        path,
        Some(("application/json", body.clone())),
        PROTOBUF,
    )
    .await;
    assert_eq!(reply.status, StatusCode::CONFLICT);
    let status = decoded(&reply);
    assert_eq!(status["reason"], "AlreadyExists");
    let json = send(
        &client,
        Method::POST,
        path,
        Some(("application/json", body)),
        "application/json",
    )
    .await;
    assert_eq!(status, json.json());

    // 410 of an expired continue token.
    let first = decoded(&get(&client, "/api/v1/pods?limit=1", PROTOBUF).await);
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    server.expire_continue_tokens();
    let path = format!("/api/v1/pods?limit=1&continue={token}");
    let reply = get(&client, &path, PROTOBUF).await;
    assert_eq!(reply.status, StatusCode::GONE);
    let status = decoded(&reply);
    assert_eq!(status["reason"], "Expired");
    assert!(status["metadata"]["continue"].is_string(), "{status}");
    assert_eq!(status, client.get(&path).await.json());

    // 400 of a bad list option.
    let reply = get(&client, "/api/v1/pods?resourceVersion=abc", PROTOBUF).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(decoded(&reply)["code"], 400);
}

#[tokio::test]
async fn custom_resources_are_406_to_protobuf_alone_and_json_otherwise() {
    let (server, widgets) = widgets_server().await;
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "a"},
        "spec": {"size": 3},
    }))
    .unwrap();
    server.create(&widgets, widget).unwrap();
    let client = Client::new(&server);
    for path in [
        "/apis/example.com/v1/namespaces/a/widgets",
        "/apis/example.com/v1/namespaces/a/widgets/w",
    ] {
        let refused = get(&client, path, PROTOBUF_ONLY).await;
        assert_eq!(refused.status, StatusCode::NOT_ACCEPTABLE, "{path}");
        assert_eq!(refused.headers["content-type"], "application/json");
        let status = refused.json();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "NotAcceptable");
        assert_eq!(
            status["message"],
            "only the following media types are accepted: application/json, application/yaml"
        );
        let json = client.get(path).await.json();
        for accept in [PROTOBUF, PROTOBUF_THEN_JSON] {
            let reply = get(&client, path, accept).await;
            assert_eq!(reply.status, StatusCode::OK, "{path} {accept}");
            assert_eq!(reply.headers["content-type"], "application/json");
            assert_eq!(reply.json(), json);
        }
    }
    // A watch falls back to JSON lines too.
    let mut watch = client
        .watch_with("/apis/example.com/v1/widgets?watch=1", Some(PROTOBUF))
        .await;
    assert_eq!(watch.next().await["object"]["metadata"]["name"], "w");
}

#[tokio::test]
async fn protobuf_bodies_are_written_as_their_json_form() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let path = "/api/v1/namespaces/default/configmaps";
    let body = envelope::encode_object(&configmap("settings", &json!({"mode": "fast"}))).unwrap();
    let created = send(
        &client,
        Method::POST,
        path,
        Some((envelope::CONTENT_TYPE, body.into())),
        PROTOBUF,
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let created = decoded(&created);
    assert_eq!(created["data"], json!({"mode": "fast"}));
    assert_eq!(created["metadata"]["labels"], json!({"app": "web"}));
    let stored = client.get(&format!("{path}/settings")).await.json();
    assert_eq!(created, stored);
    assert!(stored["metadata"]["uid"].is_string());

    // A PUT in protobuf, answered in JSON to a JSON request.
    let mut replacement = configmap("settings", &json!({"mode": "slow"}));
    replacement["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"].clone();
    let body = envelope::encode_object(&replacement).unwrap();
    let updated = send(
        &client,
        Method::PUT,
        &format!("{path}/settings"),
        Some((envelope::CONTENT_TYPE, body.into())),
        "application/json",
    )
    .await;
    assert_eq!(updated.status, StatusCode::OK);
    assert_eq!(updated.json()["data"], json!({"mode": "slow"}));

    // A deployment: defaulted as from JSON.
    let body = envelope::encode_object(&deployment("web")).unwrap();
    let created = send(
        &client,
        Method::POST,
        "/apis/apps/v1/namespaces/default/deployments",
        Some((envelope::CONTENT_TYPE, body.into())),
        PROTOBUF_THEN_JSON,
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let created = decoded(&created);
    assert_eq!(created["spec"]["replicas"], 2);
    assert_eq!(
        created["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"],
        "500m"
    );
    let mut same = deployment("web");
    same["metadata"]["name"] = json!("web2");
    let from_json = client
        .request(
            Method::POST,
            "/apis/apps/v1/namespaces/default/deployments?dryRun=All",
            Some(same),
        )
        .await
        .json();
    assert_eq!(created["spec"], from_json["spec"]);

    // DELETE answers its Status in protobuf.
    let reply = send(
        &client,
        Method::DELETE,
        &format!("{path}/settings"),
        None,
        PROTOBUF,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let status = decoded(&reply);
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Success");
    assert_eq!(status["details"]["name"], "settings");
}

#[tokio::test]
async fn malformed_protobuf_bodies_are_400() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let path = "/api/v1/namespaces/default/configmaps";
    let valid = envelope::encode_object(&configmap("c", &json!({"k": "v"}))).unwrap();
    for (why, body) in [
        ("JSON", Bytes::from_static(b"{\"kind\":\"ConfigMap\"}")),
        (
            "truncated",
            Bytes::copy_from_slice(&valid[..valid.len() / 2]),
        ),
        ("unknown kind", {
            let mut out = Vec::new();
            envelope::write("example.com/v1", "Widget", b"", &mut out);
            Bytes::from(out)
        }),
    ] {
        for accept in ["application/json", PROTOBUF] {
            let reply = send(
                &client,
                Method::POST,
                path,
                Some((envelope::CONTENT_TYPE, body.clone())),
                accept,
            )
            .await;
            assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{why}");
            let status = if accept == PROTOBUF {
                decoded(&reply)
            } else {
                reply.json()
            };
            assert_eq!(status["reason"], "BadRequest", "{why}");
            let message = status["message"].as_str().unwrap();
            assert!(
                message.starts_with(
                    "the object provided is unrecognized: the protobuf body could not be decoded"
                ),
                "{why}: {message}"
            );
        }
    }
    assert_eq!(client.get(path).await.json()["items"], json!([]));
}

#[tokio::test]
async fn access_reviews_in_protobuf_are_answered_in_protobuf() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "delete", "resource": "secrets",
            "namespace": "default"}}});
    let body = envelope::encode_object(&review).unwrap();
    let reply = send(
        &client,
        Method::POST,
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        Some((envelope::CONTENT_TYPE, body.into())),
        PROTOBUF_THEN_JSON,
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let answered = decoded(&reply);
    assert_eq!(answered["spec"], review["spec"]);
    assert_eq!(answered["status"]["allowed"], true);
}

#[tokio::test]
async fn faults_reach_protobuf_clients_in_protobuf() {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    create_pods(&server, "a", ["p0"]);
    let client = Client::new(&server);
    let watch = "/api/v1/pods?watch=1";

    // An HTTP error: its Status enveloped.
    server.inject(Fault::status(Verb::Get, 500, "InternalError", "boom"));
    let reply = get(&client, "/api/v1/namespaces/a/pods/p0", PROTOBUF).await;
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
    let status = decoded(&reply);
    assert_eq!(
        (&status["reason"], &status["message"]),
        (&json!("InternalError"), &json!("boom"))
    );

    // An ERROR event after the first.
    server.inject(Fault::expired_event(1));
    let mut stream = ProtoWatch::open(&client, watch).await;
    assert_eq!(stream.next().await.0, "ADDED");
    let (event_type, status) = stream.next().await;
    assert_eq!(event_type, "ERROR");
    assert_eq!(
        (status["kind"].as_str(), status["code"].as_u64()),
        (Some("Status"), Some(410))
    );
    assert_eq!(stream.next_payload().await, None);

    // An unknown event type, then the stream goes on.
    server.inject(Fault::watch(FaultKind::UnknownTypeAfter(1)));
    let mut stream = ProtoWatch::open(&client, watch).await;
    assert_eq!(stream.next().await.0, "ADDED");
    let (event_type, object) = stream.next().await;
    assert_eq!(
        (event_type.as_str(), object["kind"].as_str()),
        ("BOGUS", Some("Pod"))
    );

    // A corrupt frame, then the stream goes on.
    server.inject(Fault::watch(FaultKind::CorruptAfter(1)));
    let mut stream = ProtoWatch::open(&client, watch).await;
    assert_eq!(stream.next().await.0, "ADDED");
    let corrupt = stream.next_payload().await.unwrap();
    assert!(parse_event(&corrupt).is_err(), "{corrupt:?}");
    create_pods(&server, "a", ["p1"]);
    assert_eq!(stream.next().await.1["metadata"]["name"], "p1");

    // Half a frame, then the end.
    server.inject(Fault::watch(FaultKind::TruncateAfter(1)));
    let mut stream = ProtoWatch::open(&client, watch).await;
    assert_eq!(stream.next().await.0, "ADDED");
    assert_eq!(stream.next_payload().await, None);
    assert!(stream.frames.buffered() > 0);

    // An undecodable MODIFIED event whose identity can still be read.
    server.inject(Fault::watch(FaultKind::UndecodableModifiedAfter(0)));
    let rv = server.resource_version();
    let mut stream = ProtoWatch::open(&client, &format!("{watch}&resourceVersion={rv}")).await;
    let mut changed = server.get(&pods, Some("a"), "p0").unwrap().as_ref().clone();
    changed
        .metadata
        .labels
        .get_or_insert_default()
        .insert("tier".into(), "front".into());
    server.update(&pods, changed).unwrap();
    let payload = stream.next_payload().await.unwrap();
    let event = parse_event(&payload).unwrap();
    assert_eq!(event.event_type, "MODIFIED");
    assert!(envelope::decode::<Value>(event.object).is_err());
    let enveloped = envelope::parse(event.object).unwrap();
    assert_eq!((enveloped.api_version, enveloped.kind), ("7", "Pod"));
    let message = kcache_protobuf::table::message_for_kind("v1", "Pod").unwrap();
    let object: Value = kcache_protobuf::from_message(enveloped.raw, message, None).unwrap();
    assert_eq!(object["metadata"]["name"], "p0");
    assert_eq!(server.undecodable_events().len(), 1);
}

#[tokio::test]
async fn patches_scales_and_collection_deletes_answer_in_protobuf() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let created = client
        .request(Method::POST, deployments, Some(deployment("web")))
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let web = format!("{deployments}/web");

    // A merge patch, answered in protobuf: the JSON of the object it stored.
    let patch = json!({"metadata": {"labels": {"tier": "front"}}});
    let reply = send(
        &client,
        Method::PATCH,
        &web,
        Some(("application/merge-patch+json", patch.to_string().into())),
        PROTOBUF,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let patched = decoded(&reply);
    assert_eq!(patched["metadata"]["labels"]["tier"], "front");
    assert_eq!(patched, client.get(&web).await.json());

    // The scale subresource: read, then replaced with a protobuf body.
    let reply = get(&client, &format!("{web}/scale"), PROTOBUF).await;
    assert_eq!(
        envelope_kind(&reply),
        ("autoscaling/v1".into(), "Scale".into())
    );
    let mut scale = decoded(&reply);
    assert_eq!(scale["spec"]["replicas"], 2);
    assert_eq!(scale, client.get(&format!("{web}/scale")).await.json());
    scale["spec"]["replicas"] = json!(5);
    let body = envelope::encode_object(&scale).unwrap();
    let reply = send(
        &client,
        Method::PUT,
        &format!("{web}/scale"),
        Some((envelope::CONTENT_TYPE, body.into())),
        PROTOBUF,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(decoded(&reply)["spec"]["replicas"], 5);
    assert_eq!(client.get(&web).await.json()["spec"]["replicas"], 5);

    // A DELETE whose options are protobuf (client-go's clientsets send them so): a dry run.
    let options = json!({"apiVersion": "apps/v1", "kind": "DeleteOptions", "dryRun": ["All"]});
    let body = envelope::encode_object(&options).unwrap();
    let reply = send(
        &client,
        Method::DELETE,
        &web,
        Some((envelope::CONTENT_TYPE, body.into())),
        PROTOBUF,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(decoded(&reply)["status"], "Success");
    assert_eq!(client.get(&web).await.status, StatusCode::OK, "a dry run");

    // A collection delete answers the list of what it deleted.
    let reply = send(&client, Method::DELETE, deployments, None, PROTOBUF).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(envelope_kind(&reply).1, "DeploymentList");
    let deleted = decoded(&reply);
    assert_eq!(deleted["items"][0]["metadata"]["name"], "web");
    assert_eq!(client.get(deployments).await.json()["items"], json!([]));
}

/// What client-go's metadata client sends for a list when configured for protobuf.
const METADATA_LIST: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;\
     g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,\
     application/json";

/// The same for one object or a watch.
const METADATA: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;\
     g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,\
     application/json";

/// The JSON-only form of an `Accept` of metadata in protobuf (its second and third ranges).
fn json_form(accept: &str) -> String {
    accept.split_once(",application/json;").map_or_else(
        || accept.to_owned(),
        |(_, rest)| format!("application/json;{rest}"),
    )
}

#[tokio::test]
async fn metadata_in_protobuf_for_built_in_and_custom_resources() {
    let (server, widgets) = widgets_server().await;
    create_pods(&server, "a", ["p0", "p1"]);
    for name in ["w0", "w1"] {
        let widget: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "a", "labels": {"size": "3"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p0",
                    "uid": "u-1", "controller": true}]},
            "spec": {"size": 3},
        }))
        .unwrap();
        server.create(&widgets, widget).unwrap();
    }
    let client = Client::new(&server);
    for (list, one) in [
        ("/api/v1/namespaces/a/pods", "/api/v1/namespaces/a/pods/p1"),
        (
            "/apis/example.com/v1/namespaces/a/widgets",
            "/apis/example.com/v1/namespaces/a/widgets/w1",
        ),
    ] {
        for (path, accept, kind) in [
            (list, METADATA_LIST, "PartialObjectMetadataList"),
            (one, METADATA, "PartialObjectMetadata"),
        ] {
            let reply = get(&client, path, accept).await;
            assert_eq!(reply.status, StatusCode::OK, "{path}");
            assert_eq!(
                envelope_kind(&reply),
                ("meta.k8s.io/v1".to_owned(), kind.to_owned())
            );
            let mut json = get(&client, path, &json_form(accept)).await.json();
            assert_eq!(json["kind"], kind);
            // A list's items carry their type in JSON; in protobuf an item is its message
            // alone (`TypeMeta` has no protobuf field), as kube-apiserver's are.
            for item in json
                .get_mut("items")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                let item = item.as_object_mut().unwrap();
                assert_eq!(item.remove("kind"), Some(json!("PartialObjectMetadata")));
                assert_eq!(item.remove("apiVersion"), Some(json!("meta.k8s.io/v1")));
            }
            assert_eq!(decoded(&reply), json, "{path}");
        }
        // The wrong kind for the path is refused in protobuf, as other errors are.
        let refused = get(&client, one, METADATA_LIST).await;
        assert_eq!(refused.status, StatusCode::NOT_ACCEPTABLE);
        assert_eq!(decoded(&refused)["reason"], "NotAcceptable");
    }
    // Smaller than the whole objects in protobuf, and than the metadata in JSON.
    let whole = get(&client, "/api/v1/namespaces/a/pods", PROTOBUF).await;
    let meta = get(&client, "/api/v1/namespaces/a/pods", METADATA_LIST).await;
    let meta_json = get(
        &client,
        "/api/v1/namespaces/a/pods",
        &json_form(METADATA_LIST),
    )
    .await;
    assert!(meta.body.len() < whole.body.len());
    assert!(meta.body.len() < meta_json.body.len());

    metadata_watches_in_protobuf_are_the_json_watches(&server, &client, &widgets).await;
}

/// Every metadata-only watch event's object (bookmarks included) in protobuf is the JSON
/// watch's, for pods and for `widgets`.
async fn metadata_watches_in_protobuf_are_the_json_watches(
    server: &FakeApiServer,
    client: &Client,
    widgets: &ServedResource,
) {
    // Watches: every event's object (bookmarks included) is the JSON watch's.
    let rv = server.resource_version();
    for (path, resource) in [
        (
            format!("/api/v1/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=true"),
            None,
        ),
        (
            format!(
                "/apis/example.com/v1/widgets?watch=1&resourceVersion={rv}&allowWatchBookmarks=true"
            ),
            Some(widgets),
        ),
    ] {
        let mut json = client.watch_with(&path, Some(&json_form(METADATA))).await;
        let mut proto = ProtoWatch::open_with(client, &path, METADATA).await;
        match resource {
            None => {
                create_pods(server, "a", ["p2"]);
                server
                    .delete(&ServedResource::pods(), Some("a"), "p2")
                    .unwrap();
            }
            Some(widgets) => {
                let widget: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": "w2", "namespace": "a"}, "spec": {"size": 1},
                }))
                .unwrap();
                server.create(widgets, widget).unwrap();
                server.delete(widgets, Some("a"), "w2").unwrap();
            }
        }
        server.send_bookmark();
        for expected in ["ADDED", "DELETED", "BOOKMARK"] {
            let event = json.next().await;
            let (event_type, object) = proto.next().await;
            assert_eq!(event_type, expected, "{path}");
            assert_eq!(object["kind"], "PartialObjectMetadata");
            assert_eq!(object, event["object"], "{path} {expected}");
        }
    }
}
