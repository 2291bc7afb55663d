//! `ObjectClient`: get, create, replace and delete round trips against the fake API server
//! (dynamic objects and, with the `k8s-openapi` feature, typed `ConfigMap`s), conflicts and
//! missing objects; then the requests the fake server cannot judge (each kind of patch, delete
//! preconditions) and hostile answers, against a `ScriptedServer`, with the content type and
//! body recorded at the `Transport` seam (the scripted server logs method, path and query).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Method;
use kcache_client_http::{
    ApiResource, Client, Config, HyperTransport, ObjectClient, Patch, Preconditions,
};
use kcache_reflector::Error;
use kcache_store::{DynamicObject, Object};
use kcache_testing_server::{
    FakeApiServer, Reply, ScriptedRequest, ScriptedServer, ServedResource,
};
use serde_json::{Value, json};

use crate::support::{Recording, Sent, client};
use crate::support_chain;

fn configmaps() -> ApiResource {
    ApiResource::new("", "v1", "configmaps", true)
}

/// `ConfigMap`s in namespace `shop` of `server`.
fn shop(server: &FakeApiServer) -> ObjectClient<DynamicObject> {
    ObjectClient::builder(client(server), configmaps())
        .namespace("shop")
        .build()
}

/// A `ConfigMap` `name` in `shop` with `data`.
fn configmap(name: &str, data: Value) -> DynamicObject {
    let mut cm = DynamicObject::new(Some("shop"), name);
    cm.data.insert("data".into(), data);
    cm
}

#[tokio::test]
async fn dynamic_objects_round_trip() {
    let server = FakeApiServer::start().await.unwrap();
    let cms = shop(&server);
    assert_eq!(cms.namespace(), Some("shop"));
    assert!(cms.get("settings").await.unwrap().is_none());

    let created = cms
        .create(&configmap("settings", json!({"mode": "slow"})))
        .await
        .unwrap();
    assert_eq!(created.kind.as_deref(), Some("ConfigMap"));
    assert!(created.uid().is_some());
    let rv = created.resource_version().unwrap().to_owned();

    let read = cms.get("settings").await.unwrap().unwrap();
    assert_eq!(read, created);

    let mut changed = read.clone();
    changed.data.insert("data".into(), json!({"mode": "fast"}));
    let replaced = cms.replace(&changed).await.unwrap();
    assert_ne!(replaced.resource_version(), Some(rv.as_str()));
    assert_eq!(replaced.data["data"]["mode"], "fast");
    let stored = server
        .get(&ServedResource::configmaps(), Some("shop"), "settings")
        .unwrap();
    assert_eq!(stored.data["data"]["mode"], "fast");

    // A configmap's delete is answered with a Status, as kube-apiserver answers it: no object.
    assert!(cms.delete("settings", None).await.unwrap().is_none());
    assert!(cms.get("settings").await.unwrap().is_none());
    let e = cms.delete("settings", None).await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
}

#[tokio::test]
async fn a_replace_from_a_stale_version_is_a_conflict() {
    let server = FakeApiServer::start().await.unwrap();
    let cms = shop(&server);
    let created = cms
        .create(&configmap("settings", json!({"mode": "slow"})))
        .await
        .unwrap();
    let mut theirs = created.clone();
    theirs.data.insert("data".into(), json!({"mode": "off"}));
    cms.replace(&theirs).await.unwrap();

    let mut ours = created;
    ours.data.insert("data".into(), json!({"mode": "fast"}));
    let e = cms.replace(&ours).await.unwrap_err();
    assert!(e.is_conflict(), "{e}");
    let status = e.status().unwrap();
    assert_eq!(
        (status.code, status.reason.as_deref()),
        (Some(409), Some("Conflict"))
    );
    let stored = server
        .get(&ServedResource::configmaps(), Some("shop"), "settings")
        .unwrap();
    assert_eq!(stored.data["data"]["mode"], "off");
}

#[tokio::test]
async fn creating_a_taken_name_is_already_exists_not_a_conflict() {
    let server = FakeApiServer::start().await.unwrap();
    let cms = shop(&server);
    let cm = configmap("settings", json!({}));
    cms.create(&cm).await.unwrap();
    let e = cms.create(&cm).await.unwrap_err();
    assert!(e.is_already_exists(), "{e}");
    assert!(!e.is_conflict(), "{e}");
    assert_eq!(e.status().unwrap().reason.as_deref(), Some("AlreadyExists"));
}

#[tokio::test]
async fn replace_without_a_name_is_refused_before_sending() {
    let server = FakeApiServer::start().await.unwrap();
    let cms = shop(&server);
    server.clear_requests();
    let e = cms.replace(&DynamicObject::default()).await.unwrap_err();
    assert!(matches!(e, Error::Transport(_)), "{e:?}");
    assert_eq!(
        support_chain(&e),
        r#"transport error: invalid object name "": may not be empty"#
    );
    assert!(server.requests().is_empty());
}

/// A resource the server does not serve answers 404 too, as `404 page not found` text (an
/// unknown group) or a `NotFound` Status naming no object: that is a misconfiguration, an
/// error, while a missing object of a served resource is `None`.
#[tokio::test]
async fn a_resource_the_server_does_not_serve_is_an_error_not_none() {
    for as_status in [false, true] {
        let server = FakeApiServer::builder()
            .not_found_as_status(as_status)
            .start()
            .await
            .unwrap();
        let widgets = ObjectClient::<DynamicObject>::builder(
            client(&server),
            ApiResource::new("example.com", "v1", "widgets", true),
        )
        .namespace("shop")
        .build();
        let e = widgets.get("w").await.unwrap_err();
        assert_eq!(e.status().unwrap().code, Some(404), "{e}");
        assert!(shop(&server).get("nothing").await.unwrap().is_none());
    }
}

#[tokio::test]
async fn cluster_scoped_objects_ignore_the_namespace() {
    let server = FakeApiServer::start().await.unwrap();
    let nodes = ObjectClient::<DynamicObject>::builder(
        client(&server),
        ApiResource::new("", "v1", "nodes", false),
    )
    .namespace("shop")
    .build();
    assert_eq!(nodes.namespace(), None);
    let created = nodes
        .create(&DynamicObject::new(None, "node-1"))
        .await
        .unwrap();
    assert_eq!(created.namespace(), None);
    assert_eq!(nodes.get("node-1").await.unwrap().unwrap(), created);
    assert_eq!(
        server.requests().last().unwrap().path,
        "/api/v1/nodes/node-1"
    );
}

/// The same round trip with k8s-openapi's `ConfigMap`.
#[cfg(feature = "k8s-openapi")]
#[tokio::test]
async fn typed_objects_round_trip() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    let server = FakeApiServer::start().await.unwrap();
    let cms = ObjectClient::<ConfigMap>::typed(client(&server))
        .namespace("shop")
        .build();
    assert_eq!(cms.resource(), &configmaps());
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("settings".into()),
            ..ObjectMeta::default()
        },
        data: Some([("mode".to_owned(), "slow".to_owned())].into()),
        ..ConfigMap::default()
    };
    let created = cms.create(&cm).await.unwrap();
    assert_eq!(created.metadata.namespace.as_deref(), Some("shop"));
    let mut read = cms.get("settings").await.unwrap().unwrap();
    assert_eq!(read, created);

    read.data = Some([("mode".to_owned(), "fast".to_owned())].into());
    let replaced = cms.replace(&read).await.unwrap();
    assert_eq!(replaced.data.as_ref().unwrap()["mode"], "fast");
    // `created` still carries the first resource version.
    assert!(cms.replace(&created).await.unwrap_err().is_conflict());

    // In the client's default namespace (`ns`, from the server's kubeconfig), it is not there.
    assert!(
        ObjectClient::<ConfigMap>::new(client(&server))
            .get("settings")
            .await
            .unwrap()
            .is_none()
    );
    // A configmap's delete is answered with a Status, as kube-apiserver answers it: no object.
    assert!(cms.delete("settings", None).await.unwrap().is_none());
    assert!(cms.get("settings").await.unwrap().is_none());
}

/// A scripted server answering every request with `reply`, `ConfigMap`s in `shop` on it, and
/// what they send.
async fn scripted(
    reply: impl Fn(&ScriptedRequest) -> Reply + Send + Sync + 'static,
) -> (
    ScriptedServer,
    ObjectClient<DynamicObject>,
    Arc<Mutex<Vec<Sent>>>,
) {
    let server = ScriptedServer::start(reply).await.unwrap();
    let mut config = Config::new(server.url().parse().unwrap());
    config.list_timeout = Duration::from_secs(10);
    let sent = Arc::default();
    let transport = Recording {
        inner: HyperTransport::new(&config).unwrap(),
        sent: Arc::clone(&sent),
    };
    let client = Client::with_transport(config, transport).unwrap();
    let cms = ObjectClient::builder(client, configmaps())
        .namespace("shop")
        .build();
    (server, cms, sent)
}

/// The `ConfigMap` `settings` at resource version `rv`, as a server answers.
fn settings_json(rv: &str) -> String {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "settings", "namespace": "shop", "resourceVersion": rv},
           "data": {"mode": "fast"}})
    .to_string()
}

/// The one request sent.
fn only(sent: &Mutex<Vec<Sent>>) -> Sent {
    let sent = sent.lock().unwrap();
    assert_eq!(sent.len(), 1, "{sent:?}");
    sent[0].clone()
}

/// The query of `request` as pairs of `&str`.
fn query(request: &ScriptedRequest) -> Vec<(&str, &str)> {
    request
        .query
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// An empty name would make the collection's URL (where a DELETE is a deletecollection), `.`
/// and `..` another path, `/` and `%` other segments: refused before anything is sent.
#[tokio::test]
async fn names_that_are_not_one_path_segment_are_refused_before_sending() {
    let (server, cms, sent) = scripted(|_| Reply::json(200, settings_json("1"))).await;
    for name in ["", ".", "..", "a/b", "100%"] {
        let invalid = |e: Error| {
            assert!(matches!(e, Error::Transport(_)), "{name:?}: {e:?}");
            let chain = support_chain(&e);
            assert!(
                chain.starts_with(&format!("transport error: invalid object name {name:?}: ")),
                "{chain}"
            );
        };
        invalid(cms.get(name).await.unwrap_err());
        invalid(cms.delete(name, None).await.unwrap_err());
        let preconditions = Preconditions::new().with_resource_version("7");
        invalid(cms.delete(name, Some(&preconditions)).await.unwrap_err());
        invalid(cms.patch(name, &Patch::Merge(json!({}))).await.unwrap_err());
        invalid(cms.replace(&configmap(name, json!({}))).await.unwrap_err());
    }
    assert_eq!(
        support_chain(&cms.delete("", None).await.unwrap_err()),
        r#"transport error: invalid object name "": may not be empty"#
    );
    assert!(server.requests().is_empty(), "{:?}", server.requests());
    assert!(sent.lock().unwrap().is_empty());
}

/// The API server's 404 for a missing object is a `NotFound` Status naming it: only that is
/// `None`. A 404 that names another object, a `NotFound` Status without a name (a resource
/// its group does not serve), a text 404 (nothing serves the path), a 403 and a 500 are
/// errors.
#[tokio::test]
async fn only_the_not_found_of_the_object_asked_for_is_none() {
    let missing = |name: &str| {
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("configmaps \"{name}\" not found"), "reason": "NotFound",
               "details": {"name": name, "kind": "configmaps"}, "code": 404})
        .to_string()
    };
    let (server, cms, _) = scripted(move |req| match req.path.rsplit('/').next() {
        Some("settings") => Reply::json(404, missing("settings")),
        Some("renamed") => Reply::json(404, missing("someone-else")),
        Some("unserved") => Reply::status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ),
        Some("no-route") => Reply::json(404, "404 page not found\n"),
        Some("forbidden") => Reply::status(403, "Forbidden", "forbidden"),
        _ => Reply::status(500, "InternalError", "etcd is down"),
    })
    .await;
    assert!(cms.get("settings").await.unwrap().is_none());
    for name in ["renamed", "unserved", "no-route"] {
        let e = cms.get(name).await.unwrap_err();
        assert_eq!(e.status().unwrap().code, Some(404), "{name}: {e}");
    }
    let e = cms.get("forbidden").await.unwrap_err();
    assert_eq!(e.status().unwrap().code, Some(403), "{e}");
    let e = cms.get("down").await.unwrap_err();
    assert!(e.is_internal_error(), "{e}");
    assert_eq!(server.requests().len(), 6);
}

#[tokio::test]
async fn a_merge_patch_is_sent_as_merge_patch_json() {
    let (server, cms, sent) = scripted(|_| Reply::json(200, settings_json("7"))).await;
    let patch = Patch::Merge(json!({"data": {"mode": "fast", "old": null}}));
    let patched = cms.patch("settings", &patch).await.unwrap();
    assert_eq!(patched.resource_version(), Some("7"));
    let request = &server.requests()[0];
    assert_eq!(request.method, Method::PATCH);
    assert_eq!(request.path, "/api/v1/namespaces/shop/configmaps/settings");
    assert!(request.query.is_empty());
    let sent = only(&sent);
    assert_eq!(
        sent.content_type.as_deref(),
        Some("application/merge-patch+json")
    );
    assert_eq!(sent.json(), json!({"data": {"mode": "fast", "old": null}}));
}

#[tokio::test]
async fn a_json_patch_is_sent_as_an_array_of_operations() {
    let (server, cms, sent) = scripted(|_| Reply::json(200, settings_json("8"))).await;
    let ops = vec![
        json!({"op": "test", "path": "/metadata/resourceVersion", "value": "7"}),
        json!({"op": "replace", "path": "/data/mode", "value": "fast"}),
    ];
    cms.patch("settings", &Patch::Json(ops.clone()))
        .await
        .unwrap();
    let request = &server.requests()[0];
    assert_eq!(
        (request.method.clone(), request.path.as_str()),
        (Method::PATCH, "/api/v1/namespaces/shop/configmaps/settings")
    );
    let sent = only(&sent);
    assert_eq!(
        sent.content_type.as_deref(),
        Some("application/json-patch+json")
    );
    assert_eq!(sent.json(), Value::Array(ops));
}

#[tokio::test]
async fn server_side_apply_names_its_manager_and_forces_when_asked() {
    let (server, cms, sent) = scripted(|req| {
        if req.param("force").is_some() {
            Reply::json(200, settings_json("9"))
        } else {
            Reply::status(409, "Conflict", "Apply failed with 1 conflict")
        }
    })
    .await;
    let intent = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "settings", "namespace": "shop"},
                        "data": {"mode": "fast"}});
    let apply = |force| Patch::Apply {
        object: intent.clone(),
        field_manager: "my controller".into(),
        force,
    };
    let e = cms.patch("settings", &apply(false)).await.unwrap_err();
    assert!(e.is_conflict(), "{e}");
    let applied = cms.patch("settings", &apply(true)).await.unwrap();
    assert_eq!(applied.resource_version(), Some("9"));

    let requests = server.requests();
    assert_eq!(query(&requests[0]), [("fieldManager", "my controller")]);
    assert_eq!(
        query(&requests[1]),
        [("fieldManager", "my controller"), ("force", "true")]
    );
    for r in &requests {
        assert_eq!(
            (r.method.clone(), r.path.as_str()),
            (Method::PATCH, "/api/v1/namespaces/shop/configmaps/settings")
        );
    }
    let sent = sent.lock().unwrap().clone();
    for s in &sent {
        assert_eq!(
            s.content_type.as_deref(),
            Some("application/apply-patch+yaml")
        );
        // JSON, which YAML parsers read too.
        assert_eq!(s.json(), intent);
    }
}

#[tokio::test]
async fn delete_sends_its_preconditions_as_delete_options() {
    let (server, cms, sent) = scripted(|req| {
        if req.path.ends_with("/stale") {
            Reply::status(
                409,
                "Conflict",
                "Precondition failed: UID in precondition: u",
            )
        } else {
            Reply::json(
                200,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                       "status": "Success", "details": {"name": "settings", "kind": "configmaps"}})
                .to_string(),
            )
        }
    })
    .await;
    let preconditions = Preconditions::new()
        .with_resource_version("7")
        .with_uid("5b1c");
    // A success Status instead of the object: `None`.
    assert!(
        cms.delete("settings", Some(&preconditions))
            .await
            .unwrap()
            .is_none()
    );
    let e = cms
        .delete("stale", Some(&Preconditions::new().with_uid("u")))
        .await
        .unwrap_err();
    assert!(e.is_conflict(), "{e}");
    cms.delete("settings", None).await.unwrap();

    let requests = server.requests();
    assert!(requests.iter().all(|r| r.method == Method::DELETE));
    assert_eq!(
        requests[0].path,
        "/api/v1/namespaces/shop/configmaps/settings"
    );
    assert_eq!(requests[1].path, "/api/v1/namespaces/shop/configmaps/stale");
    let sent = sent.lock().unwrap().clone();
    assert_eq!(sent[0].content_type.as_deref(), Some("application/json"));
    assert_eq!(
        sent[0].json(),
        json!({"kind": "DeleteOptions", "apiVersion": "v1",
               "preconditions": {"resourceVersion": "7", "uid": "5b1c"}})
    );
    assert_eq!(sent[1].json()["preconditions"], json!({"uid": "u"}));
    // No preconditions, no body.
    assert_eq!(sent[2].content_type, None);
    assert!(sent[2].body.is_empty());
}

#[tokio::test]
async fn create_and_replace_send_the_object_as_json() {
    let (server, cms, sent) = scripted(|_| Reply::json(200, settings_json("3"))).await;
    let mut cm = configmap("settings", json!({"mode": "fast"}));
    cms.create(&cm).await.unwrap();
    cm.metadata.resource_version = Some("2".into());
    cms.replace(&cm).await.unwrap();
    let requests = server.requests();
    assert_eq!(
        (requests[0].method.clone(), requests[0].path.as_str()),
        (Method::POST, "/api/v1/namespaces/shop/configmaps")
    );
    assert_eq!(
        (requests[1].method.clone(), requests[1].path.as_str()),
        (Method::PUT, "/api/v1/namespaces/shop/configmaps/settings")
    );
    let sent = sent.lock().unwrap().clone();
    assert!(
        sent.iter()
            .all(|s| s.content_type.as_deref() == Some("application/json"))
    );
    assert_eq!(sent[0].json()["metadata"]["name"], "settings");
    // The resource version in the body is the replace's precondition.
    assert_eq!(sent[1].json()["metadata"]["resourceVersion"], "2");
}

#[tokio::test]
async fn a_response_over_the_size_limit_is_refused() {
    let server = ScriptedServer::start(|_| Reply::json(200, settings_json("3")))
        .await
        .unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let small = ObjectClient::<DynamicObject>::builder(client.clone(), configmaps())
        .max_object_size(64)
        .build();
    let e = small.get("settings").await.unwrap_err();
    assert!(matches!(e, Error::Limit(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        "the response is larger than the limit of 64 bytes"
    );
    let large = ObjectClient::<DynamicObject>::dynamic(client, configmaps());
    assert_eq!(large.namespace(), Some("default"));
    assert!(large.get("settings").await.unwrap().is_some());
}

#[tokio::test]
async fn an_undecodable_answer_names_the_field_not_its_value() {
    let (_server, cms, _) = scripted(|_| {
        Reply::json(
            200,
            json!({"metadata": {"name": "settings", "namespace": "shop", "resourceVersion": "3",
                                "labels": {"secret": 12345}}})
            .to_string(),
        )
    })
    .await;
    let e = cms
        .patch("settings", &Patch::Merge(json!({})))
        .await
        .unwrap_err();
    let decode = e.as_decode().unwrap();
    assert_eq!(decode.path.as_deref(), Some("metadata.labels.secret"));
    let text = e.to_string();
    assert!(
        text.starts_with("could not decode patch response (shop/settings at resourceVersion 3)"),
        "{text}"
    );
    assert!(!text.contains("12345"), "{text}");
}

#[tokio::test]
async fn a_response_that_never_ends_times_out() {
    let server = ScriptedServer::start(|_| Reply::stream(200, futures_util::stream::pending()))
        .await
        .unwrap();
    let mut config = Config::new(server.url().parse().unwrap());
    config.list_timeout = Duration::from_millis(200);
    let cms = ObjectClient::<DynamicObject>::dynamic(Client::new(config).unwrap(), configmaps());
    let e = cms.get("settings").await.unwrap_err();
    assert!(matches!(e, Error::Timeout), "{e:?}");
}

/// The object client's own bound, shorter than the client's list timeout.
#[tokio::test]
async fn writes_have_a_timeout_of_their_own() {
    let server = ScriptedServer::start(|_| Reply::stream(200, futures_util::stream::pending()))
        .await
        .unwrap();
    let mut config = Config::new(server.url().parse().unwrap());
    config.list_timeout = Duration::from_secs(600);
    let cms = ObjectClient::<DynamicObject>::builder(Client::new(config).unwrap(), configmaps())
        .timeout(Duration::from_millis(200))
        .build();
    let started = std::time::Instant::now();
    let e = cms
        .patch("settings", &Patch::Merge(json!({})))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Timeout), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(30));
}
