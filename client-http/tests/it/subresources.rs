//! `ObjectClient`'s `status` and `scale` subresources against the fake API server, over HTTP:
//! a status write leaves the spec alone and a spec write the status (deployments, and a custom
//! resource whose definition is installed through the API), stale versions (and other uids)
//! conflict, each kind of patch, missing objects and kinds without the subresource are 404s,
//! invalid names send nothing, and a `Scale` reads and writes the desired replicas.

use std::sync::Arc;

use kcache_client_http::{ApiResource, Client, HyperTransport, ObjectClient, Patch, Scale};
use kcache_reflector::Error;
use kcache_store::{DynamicObject, Object};
use kcache_testing_server::{FakeApiServer, ServedResource};
use serde_json::json;

use crate::support::{Recording, Sent, client, config};
use crate::support_chain;

/// Deployments in namespace `shop` of `server`.
fn deployments(server: &FakeApiServer) -> ObjectClient<DynamicObject> {
    ObjectClient::builder(
        client(server),
        ApiResource::new("apps", "v1", "deployments", true),
    )
    .namespace("shop")
    .build()
}

/// A deployment `name` in `shop` of `replicas` pods labelled `app: <name>`.
fn deployment(name: &str, replicas: i64) -> DynamicObject {
    let mut d = DynamicObject::new(Some("shop"), name);
    d.data.insert(
        "spec".into(),
        json!({
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        }),
    );
    d
}

/// The deployment `name` as the server stores it.
fn stored(server: &FakeApiServer, name: &str) -> DynamicObject {
    (*server
        .get(&ServedResource::deployments(), Some("shop"), name)
        .unwrap())
    .clone()
}

/// The method, path and query of the last request `server` received.
fn last_request(server: &FakeApiServer) -> (String, String, Vec<(String, String)>) {
    let last = server.requests().pop().unwrap();
    (last.method, last.path, last.query)
}

/// A 422 `Invalid` answer, which is not a conflict.
fn assert_invalid(e: &Error) {
    let status = e.status().unwrap();
    assert_eq!(
        (status.code, status.reason.as_deref()),
        (Some(422), Some("Invalid")),
        "{e}"
    );
    assert!(!e.is_conflict(), "{e}");
}

#[tokio::test]
async fn a_status_write_leaves_the_spec_alone_and_a_spec_write_the_status() {
    let server = FakeApiServer::start().await.unwrap();
    let deploys = deployments(&server);
    let mut web = deployment("web", 2);
    web.data.insert("status".into(), json!({"replicas": 7}));
    // A create over HTTP starts without a status: it is the controller's to write.
    let created = deploys.create(&web).await.unwrap();
    assert!(created.data.get("status").is_none(), "{created:?}");

    let mut ours = created.clone();
    ours.data["spec"]["replicas"] = json!(9);
    ours.data
        .insert("status".into(), json!({"replicas": 2, "readyReplicas": 1}));
    let written = deploys.replace_status(&ours).await.unwrap();
    assert_eq!(written.data["spec"]["replicas"], 2);
    assert_eq!(written.data["status"]["readyReplicas"], 1);
    assert_ne!(written.resource_version(), created.resource_version());
    // A status write is no change of the spec: the generation stays.
    assert_eq!(written.generation(), created.generation());
    let (method, path, _) = last_request(&server);
    assert_eq!(
        (method.as_str(), path.as_str()),
        (
            "PUT",
            "/apis/apps/v1/namespaces/shop/deployments/web/status"
        )
    );

    let mut spec_change = written.clone();
    spec_change.data["spec"]["replicas"] = json!(4);
    spec_change.data["status"] = json!({"readyReplicas": 99});
    let replaced = deploys.replace(&spec_change).await.unwrap();
    assert_eq!(replaced.data["spec"]["replicas"], 4);
    assert_eq!(replaced.data["status"], written.data["status"]);
    assert!(replaced.generation() > written.generation());

    // A status read is of the whole object.
    let read = deploys.get_status("web").await.unwrap().unwrap();
    assert_eq!(read, replaced);
    let stored = stored(&server, "web");
    assert_eq!(stored.data["spec"]["replicas"], 4);
    assert_eq!(stored.data["status"], written.data["status"]);
}

/// The definition of `Widget`, with `status` and `scale` subresources (its desired replicas at
/// `.spec.workers`).
fn widget_definition() -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.workers",
                    "statusReplicasPath": ".status.workers",
                    "labelSelectorPath": ".status.selector",
                }}}],
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn a_custom_resource_with_a_status_subresource_keeps_status_and_spec_apart() {
    let server = FakeApiServer::start().await.unwrap();
    let crds = ObjectClient::<DynamicObject>::dynamic(
        client(&server),
        ApiResource::new(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            false,
        ),
    );
    crds.create(&widget_definition()).await.unwrap();
    let widgets = ObjectClient::<DynamicObject>::builder(
        client(&server),
        ApiResource::new("example.com", "v1", "widgets", true),
    )
    .namespace("shop")
    .build();

    let gear: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "gear"},
        "spec": {"workers": 2}, "status": {"workers": 5},
    }))
    .unwrap();
    let created = widgets.create(&gear).await.unwrap();
    assert!(created.data.get("status").is_none(), "{created:?}");

    let status = Patch::Merge(json!({
        "spec": {"workers": 0},
        "status": {"workers": 1, "selector": "app=gear"},
    }));
    let reported = widgets.patch_status("gear", &status).await.unwrap();
    assert_eq!(reported.data["spec"], json!({"workers": 2}));
    assert_eq!(
        reported.data["status"],
        json!({"workers": 1, "selector": "app=gear"})
    );
    assert_eq!(reported.generation(), created.generation());

    let mut spec_change = reported.clone();
    spec_change.data["spec"]["workers"] = json!(3);
    spec_change.data["status"]["workers"] = json!(0);
    let replaced = widgets.replace(&spec_change).await.unwrap();
    assert_eq!(replaced.data["spec"]["workers"], 3);
    assert_eq!(replaced.data["status"], reported.data["status"]);

    // Its scale follows the definition's paths.
    let scale = widgets.get_scale("gear").await.unwrap();
    assert_eq!(scale.spec.replicas, 3);
    assert_eq!(scale.status.replicas, 1);
    assert_eq!(scale.status.selector.as_deref(), Some("app=gear"));
    let scale = widgets
        .patch_scale("gear", &Patch::Merge(json!({"spec": {"replicas": 6}})))
        .await
        .unwrap();
    assert_eq!(scale.spec.replicas, 6);
    let gear = widgets.get("gear").await.unwrap().unwrap();
    assert_eq!(gear.data["spec"], json!({"workers": 6}));
    assert_eq!(gear.data["status"], reported.data["status"]);
}

#[tokio::test]
async fn a_status_replace_from_a_stale_version_is_a_conflict() {
    let server = FakeApiServer::start().await.unwrap();
    let deploys = deployments(&server);
    let created = deploys.create(&deployment("web", 2)).await.unwrap();

    let mut theirs = created.clone();
    theirs.data.insert("status".into(), json!({"replicas": 1}));
    deploys.replace_status(&theirs).await.unwrap();

    let mut ours = created;
    ours.data.insert("status".into(), json!({"replicas": 2}));
    let e = deploys.replace_status(&ours).await.unwrap_err();
    assert!(e.is_conflict(), "{e}");
    assert_eq!(
        stored(&server, "web").data["status"],
        json!({"replicas": 1})
    );

    // A change of the spec makes the version stale too.
    let fresh = deploys.get("web").await.unwrap().unwrap();
    deploys
        .patch("web", &Patch::Merge(json!({"spec": {"replicas": 3}})))
        .await
        .unwrap();
    let e = deploys.replace_status(&fresh).await.unwrap_err();
    assert!(e.is_conflict(), "{e}");
}

#[tokio::test]
async fn status_patches_merge_json_and_apply() {
    let server = FakeApiServer::start().await.unwrap();
    let deploys = deployments(&server);
    let created = deploys.create(&deployment("web", 2)).await.unwrap();

    let merged = deploys
        .patch_status(
            "web",
            &Patch::Merge(json!({"status": {"readyReplicas": 1}})),
        )
        .await
        .unwrap();
    assert_eq!(merged.data["status"]["readyReplicas"], 1);
    let (method, path, _) = last_request(&server);
    assert_eq!(
        (method.as_str(), path.as_str()),
        (
            "PATCH",
            "/apis/apps/v1/namespaces/shop/deployments/web/status"
        )
    );

    // A JSON patch made conditional by a `test`: it holds, then no longer does.
    let bump = |from: i64, to: i64| {
        Patch::Json(vec![
            json!({"op": "test", "path": "/status/readyReplicas", "value": from}),
            json!({"op": "replace", "path": "/status/readyReplicas", "value": to}),
            json!({"op": "replace", "path": "/spec/replicas", "value": 9}),
        ])
    };
    let bumped = deploys.patch_status("web", &bump(1, 2)).await.unwrap();
    assert_eq!(bumped.data["status"]["readyReplicas"], 2);
    assert_eq!(bumped.data["spec"]["replicas"], 2);
    assert_invalid(&deploys.patch_status("web", &bump(1, 3)).await.unwrap_err());
    assert_eq!(stored(&server, "web").data["status"]["readyReplicas"], 2);

    // Server-side apply of the status this controller owns.
    let apply = Patch::Apply {
        object: json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"replicas": 8},
            "status": {"availableReplicas": 2},
        }),
        field_manager: "web-controller".into(),
        force: true,
    };
    let applied = deploys.patch_status("web", &apply).await.unwrap();
    assert_eq!(applied.data["status"]["availableReplicas"], 2);
    assert_eq!(applied.data["spec"]["replicas"], 2);
    let (_, path, query) = last_request(&server);
    assert!(path.ends_with("/deployments/web/status"), "{path}");
    let query: Vec<(&str, &str)> = query
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        query,
        [("fieldManager", "web-controller"), ("force", "true")]
    );

    // None of these changed the spec, so none bumped the generation.
    assert_eq!(applied.generation(), created.generation());
}

#[tokio::test]
async fn the_status_of_a_missing_object_is_not_found() {
    let server = FakeApiServer::start().await.unwrap();
    let deploys = deployments(&server);
    let not_found = |e: Error| assert!(e.is_not_found(), "{e}");

    not_found(
        deploys
            .replace_status(&deployment("ghost", 1))
            .await
            .unwrap_err(),
    );
    not_found(
        deploys
            .patch_status("ghost", &Patch::Merge(json!({"status": {}})))
            .await
            .unwrap_err(),
    );
    // Unlike an apply of the object, an apply of its status creates nothing.
    let apply = Patch::Apply {
        object: json!({"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": "ghost"}, "status": {"replicas": 1}}),
        field_manager: "ctl".into(),
        force: false,
    };
    not_found(deploys.patch_status("ghost", &apply).await.unwrap_err());
    assert!(
        server
            .get(&ServedResource::deployments(), Some("shop"), "ghost")
            .is_none()
    );
    // As for `get`, the object's own `NotFound` is `None`.
    assert!(deploys.get_status("ghost").await.unwrap().is_none());

    // A kind without a status subresource: a 404 that is an error, never `None`.
    let configmaps = ObjectClient::<DynamicObject>::builder(
        client(&server),
        ApiResource::new("", "v1", "configmaps", true),
    )
    .namespace("shop")
    .build();
    configmaps
        .create(&DynamicObject::new(Some("shop"), "settings"))
        .await
        .unwrap();
    not_found(configmaps.get_status("settings").await.unwrap_err());
    not_found(
        configmaps
            .patch_status("settings", &Patch::Merge(json!({"status": {}})))
            .await
            .unwrap_err(),
    );
}

/// Names that cannot be one path segment are refused before anything is sent, for the
/// subresources as for the object.
#[tokio::test]
async fn invalid_names_send_nothing() {
    let server = FakeApiServer::start().await.unwrap();
    let deploys = deployments(&server);
    server.clear_requests();
    let patch = Patch::Merge(json!({"spec": {"replicas": 1}}));
    for name in ["", ".", "..", "a/b", "100%"] {
        let invalid = |e: Error| {
            assert!(matches!(e, Error::Transport(_)), "{name:?}: {e:?}");
            let chain = support_chain(&e);
            assert!(
                chain.starts_with(&format!("transport error: invalid object name {name:?}: ")),
                "{chain}"
            );
        };
        invalid(deploys.get_status(name).await.unwrap_err());
        invalid(deploys.patch_status(name, &patch).await.unwrap_err());
        invalid(
            deploys
                .replace_status(&deployment(name, 1))
                .await
                .unwrap_err(),
        );
        invalid(deploys.get_scale(name).await.unwrap_err());
        invalid(deploys.patch_scale(name, &patch).await.unwrap_err());
        invalid(
            deploys
                .replace_scale(name, &Scale::default())
                .await
                .unwrap_err(),
        );
    }
    // An object without a name is the empty one.
    let e = deploys
        .replace_status(&DynamicObject::default())
        .await
        .unwrap_err();
    assert_eq!(
        support_chain(&e),
        r#"transport error: invalid object name "": may not be empty"#
    );
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

#[tokio::test]
async fn the_scale_reads_and_writes_the_desired_replicas() {
    let server = FakeApiServer::start().await.unwrap();
    let deploys = deployments(&server);
    let created = deploys.create(&deployment("web", 2)).await.unwrap();
    deploys
        .patch_status("web", &Patch::Merge(json!({"status": {"replicas": 2}})))
        .await
        .unwrap();

    let scale = deploys.get_scale("web").await.unwrap();
    assert_eq!(scale.metadata.name.as_deref(), Some("web"));
    assert_eq!(scale.metadata.namespace.as_deref(), Some("shop"));
    assert_eq!(scale.metadata.uid.as_deref(), created.uid());
    assert_eq!((scale.spec.replicas, scale.status.replicas), (2, 2));
    assert_eq!(scale.status.selector.as_deref(), Some("app=web"));
    let (method, path, _) = last_request(&server);
    assert_eq!(
        (method.as_str(), path.as_str()),
        ("GET", "/apis/apps/v1/namespaces/shop/deployments/web/scale")
    );

    let patched = deploys
        .patch_scale("web", &Patch::Merge(json!({"spec": {"replicas": 5}})))
        .await
        .unwrap();
    assert_eq!(patched.spec.replicas, 5);
    let web = deploys.get("web").await.unwrap().unwrap();
    assert_eq!(web.data["spec"]["replicas"], 5);
    assert_eq!(web.data["status"], json!({"replicas": 2}));
    assert_eq!(
        web.resource_version(),
        patched.metadata.resource_version.as_deref()
    );

    // Read, change, write back: the version read is the precondition.
    let mut scale = deploys.get_scale("web").await.unwrap();
    scale.spec.replicas = 3;
    let replaced = deploys.replace_scale("web", &scale).await.unwrap();
    assert_eq!(replaced.spec.replicas, 3);
    assert_eq!(stored(&server, "web").data["spec"]["replicas"], 3);

    // A `Scale` without metadata is sent with the object's name and namespace.
    let mut bare = Scale::default();
    bare.spec.replicas = 4;
    assert_eq!(
        deploys
            .replace_scale("web", &bare)
            .await
            .unwrap()
            .spec
            .replicas,
        4
    );

    // Negative replicas are invalid.
    let mut negative = Scale::default();
    negative.spec.replicas = -1;
    assert_invalid(&deploys.replace_scale("web", &negative).await.unwrap_err());
    assert_eq!(stored(&server, "web").data["spec"]["replicas"], 4);
}

#[tokio::test]
async fn a_scale_replace_from_a_stale_version_is_a_conflict() {
    let server = FakeApiServer::start().await.unwrap();
    let deploys = deployments(&server);
    deploys.create(&deployment("web", 2)).await.unwrap();
    let mut stale = deploys.get_scale("web").await.unwrap();
    // Anything written to the object makes the version stale, its status included.
    deploys
        .patch_status("web", &Patch::Merge(json!({"status": {"replicas": 2}})))
        .await
        .unwrap();
    stale.spec.replicas = 10;
    let e = deploys.replace_scale("web", &stale).await.unwrap_err();
    assert!(e.is_conflict(), "{e}");
    assert_eq!(stored(&server, "web").data["spec"]["replicas"], 2);

    // A merge patch naming the stale version conflicts as well.
    let rv = stale.metadata.resource_version.clone().unwrap();
    let conditional = Patch::Merge(json!({
        "metadata": {"resourceVersion": rv},
        "spec": {"replicas": 10},
    }));
    let e = deploys.patch_scale("web", &conditional).await.unwrap_err();
    assert!(e.is_conflict(), "{e}");
}

#[tokio::test]
async fn a_kind_without_a_scale_subresource_is_not_found() {
    let server = FakeApiServer::start().await.unwrap();
    server
        .create(
            &ServedResource::pods(),
            DynamicObject::new(Some("shop"), "web-0"),
        )
        .unwrap();
    let pods = ObjectClient::<DynamicObject>::builder(
        client(&server),
        ApiResource::new("", "v1", "pods", true),
    )
    .namespace("shop")
    .build();
    let not_found = |e: Error| assert!(e.is_not_found(), "{e}");
    not_found(pods.get_scale("web-0").await.unwrap_err());
    not_found(
        pods.patch_scale("web-0", &Patch::Merge(json!({"spec": {"replicas": 1}})))
            .await
            .unwrap_err(),
    );
    not_found(
        pods.replace_scale("web-0", &Scale::default())
            .await
            .unwrap_err(),
    );
    // And a deployment that does not exist has no scale either.
    not_found(deployments(&server).get_scale("ghost").await.unwrap_err());
}

/// What a `Scale` is sent as: `autoscaling/v1`, with the object's name and namespace when its
/// metadata has none (the API server requires them), else as it is.
#[tokio::test]
async fn a_scale_is_sent_as_an_autoscaling_v1_scale() {
    let server = FakeApiServer::start().await.unwrap();
    let config = config(&server);
    let sent = Arc::default();
    let transport = Recording {
        inner: HyperTransport::new(&config).unwrap(),
        sent: Arc::clone(&sent),
    };
    let deploys = ObjectClient::<DynamicObject>::builder(
        Client::with_transport(config, transport).unwrap(),
        ApiResource::new("apps", "v1", "deployments", true),
    )
    .namespace("shop")
    .build();
    deploys.create(&deployment("web", 2)).await.unwrap();
    sent.lock().unwrap().clear();

    let mut bare = Scale::default();
    bare.spec.replicas = 1;
    let written = deploys.replace_scale("web", &bare).await.unwrap();
    assert_eq!(written.spec.replicas, 1);
    let mut read = deploys.get_scale("web").await.unwrap();
    read.spec.replicas = 0;
    deploys.replace_scale("web", &read).await.unwrap();

    let sent: Vec<Sent> = sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[0].content_type.as_deref(), Some("application/json"));
    assert_eq!(
        sent[0].json(),
        json!({
            "apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"replicas": 1},
            "status": {"replicas": 0},
        })
    );
    // The scale read is sent back whole, its resource version the precondition.
    let back = sent[2].json();
    assert_eq!(
        back["metadata"],
        serde_json::to_value(&read.metadata).unwrap()
    );
    assert_eq!(back["spec"], json!({"replicas": 0}));
    assert_eq!(stored(&server, "web").data["spec"]["replicas"], 0);
}

/// A subresource write is of the object the URL names: a body naming another object is a 400,
/// another uid a 409 (the uid is a precondition, as the resource version is).
#[tokio::test]
async fn a_subresource_write_naming_another_object_is_refused() {
    let server = FakeApiServer::start().await.unwrap();
    let deploys = deployments(&server);
    let created = deploys.create(&deployment("web", 2)).await.unwrap();

    let mut scale = deploys.get_scale("web").await.unwrap();
    scale.metadata.name = Some("api".into());
    scale.spec.replicas = 5;
    let e = deploys.replace_scale("web", &scale).await.unwrap_err();
    assert_eq!(e.status().unwrap().code, Some(400), "{e}");
    let mut scale = deploys.get_scale("web").await.unwrap();
    scale.metadata.uid = Some("another-uid".into());
    assert!(
        deploys
            .replace_scale("web", &scale)
            .await
            .unwrap_err()
            .is_conflict()
    );

    let mut other = created.clone();
    other.metadata.uid = Some("another-uid".into());
    other.data.insert("status".into(), json!({"replicas": 1}));
    let e = deploys.replace_status(&other).await.unwrap_err();
    assert!(e.is_conflict(), "{e}");
    assert_eq!(stored(&server, "web").data["spec"]["replicas"], 2);
    assert!(stored(&server, "web").data.get("status").is_none());
}
