//! Custom resource types of your own as kcache objects, against the fake API server: a kube-rs
//! `#[derive(CustomResource)]` type (k8s-openapi's `ObjectMeta`) and a plain serde type
//! (kcache's `ObjectMeta`), each made an object by `impl_object!`, its definition installed
//! through the API (with a status subresource), listed and watched into an informer, indexed by
//! a spec field, created and written (status included) through `ObjectClient`.

use std::sync::Arc;
use std::time::Duration;

use kcache_client_http::{ApiResource, Client, Config, HttpListerWatcher, ObjectClient, Patch};
use kcache_informer::SharedIndexInformer;
use kcache_store::{DynamicObject, Indexers, Object, ObjectMeta, impl_object};
use kcache_testing_server::FakeApiServer;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A kube-rs custom resource.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Gear", namespaced)]
#[kube(status = "GearStatus")]
pub(crate) struct GearSpec {
    teeth: u32,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub(crate) struct GearStatus {
    turning: bool,
}

impl_object!(Gear);

/// A plain serde custom resource, on kcache's own metadata type.
#[derive(Deserialize, Serialize, Clone, Debug)]
struct Gadget {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
    spec: GadgetSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<serde_json::Value>,
}

#[derive(Deserialize, Serialize, Clone, Debug)]
struct GadgetSpec {
    colour: String,
}

impl_object!(Gadget);

fn client(server: &FakeApiServer) -> Client {
    Client::new(Config::new(server.url().parse().unwrap())).unwrap()
}

async fn install(server: &FakeApiServer, definition: serde_json::Value) {
    let crds = ObjectClient::<DynamicObject>::dynamic(
        client(server),
        ApiResource::new(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            false,
        ),
    );
    crds.create(&serde_json::from_value(definition).unwrap())
        .await
        .unwrap();
}

/// Runs `informer` until `cancel`, and waits for its sync.
async fn started<T: Object + Clone>(
    informer: &SharedIndexInformer<T>,
    cancel: &CancellationToken,
) -> tokio::task::JoinHandle<kcache_informer::Result<()>> {
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    eventually(|| informer.has_synced()).await;
    run
}

async fn eventually(done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "timed out");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_derived_custom_resource_is_cached_indexed_and_written() {
    let server = FakeApiServer::start().await.unwrap();
    install(&server, serde_json::to_value(Gear::crd()).unwrap()).await;
    let resource = ApiResource::new("example.com", "v1", "gears", true);
    let api = ObjectClient::<Gear>::builder(client(&server), resource.clone())
        .namespace("shop")
        .build();
    for (name, teeth) in [("small", 8), ("big", 32), ("also-small", 8)] {
        api.create(&Gear::new(name, GearSpec { teeth }))
            .await
            .unwrap();
    }
    let lw = HttpListerWatcher::<Gear>::builder(client(&server), resource)
        .kind("Gear")
        .build();
    let informer = SharedIndexInformer::builder(Arc::new(lw))
        .indexers(Indexers::new().with("by-teeth", |g: &Gear| Ok(vec![g.spec.teeth.to_string()])))
        .build();
    let cancel = CancellationToken::new();
    let run = started(&informer, &cancel).await;
    let mut small: Vec<String> = informer
        .indexer()
        .by_index("by-teeth", "8")
        .unwrap()
        .iter()
        .map(|g| g.key().to_string())
        .collect();
    small.sort();
    assert_eq!(small, ["shop/also-small", "shop/small"]);

    // The status subresource: written alone, seen by the cache, the spec untouched.
    let written = api
        .patch_status("big", &Patch::Merge(json!({"status": {"turning": true}})))
        .await
        .unwrap();
    assert!(written.status.as_ref().is_some_and(|s| s.turning));
    let lister = informer.lister();
    eventually(|| {
        lister
            .get_by_key("shop/big")
            .is_some_and(|g| g.status.as_ref().is_some_and(|s| s.turning))
    })
    .await;
    assert_eq!(lister.get_by_key("shop/big").unwrap().spec.teeth, 32);
    // A spec change moves it in the index.
    api.patch("big", &Patch::Merge(json!({"spec": {"teeth": 8}})))
        .await
        .unwrap();
    eventually(|| {
        informer
            .indexer()
            .by_index("by-teeth", "8")
            .is_ok_and(|g| g.len() == 3)
    })
    .await;
    cancel.cancel();
    run.await.unwrap().unwrap();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_serde_custom_resource_is_cached_indexed_and_written() {
    let server = FakeApiServer::start().await.unwrap();
    install(
        &server,
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}]},
        }),
    )
    .await;
    let resource = ApiResource::new("example.com", "v1", "gadgets", true);
    let api = ObjectClient::<Gadget>::builder(client(&server), resource.clone())
        .namespace("shop")
        .build();
    for (name, colour) in [("a", "red"), ("b", "blue"), ("c", "red")] {
        let gadget = Gadget {
            api_version: "example.com/v1".into(),
            kind: "Gadget".into(),
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: GadgetSpec {
                colour: colour.into(),
            },
            status: None,
        };
        api.create(&gadget).await.unwrap();
    }
    let lw = HttpListerWatcher::<Gadget>::builder(client(&server), resource)
        .kind("Gadget")
        .build();
    let informer = SharedIndexInformer::builder(Arc::new(lw))
        .indexers(Indexers::new().with("by-colour", |g: &Gadget| Ok(vec![g.spec.colour.clone()])))
        .build();
    let cancel = CancellationToken::new();
    let run = started(&informer, &cancel).await;
    assert_eq!(
        informer
            .indexer()
            .by_index("by-colour", "red")
            .unwrap()
            .len(),
        2
    );
    // Replace the status from the cached copy (its resourceVersion the precondition).
    let mut b = (*informer.lister().get_by_key("shop/b").unwrap()).clone();
    b.status = Some(json!({"shipped": true}));
    b.spec.colour = "ignored by a status write".into();
    let written = api.replace_status(&b).await.unwrap();
    assert_eq!(written.status, Some(json!({"shipped": true})));
    assert_eq!(written.spec.colour, "blue");
    eventually(|| {
        informer
            .lister()
            .get_by_key("shop/b")
            .is_some_and(|g| g.status.is_some())
    })
    .await;
    // A stale copy's status write is refused.
    b.status = Some(json!({"shipped": false}));
    assert!(api.replace_status(&b).await.unwrap_err().is_conflict());
    cancel.cancel();
    run.await.unwrap().unwrap();
    server.shutdown().await;
}
