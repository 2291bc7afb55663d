//! An operator tested against the embedded fake API server: its custom resource definition is
//! installed through the API (as `kubectl apply -f crd.yaml` would), and each `Widget` gets a
//! config map it owns, kept in line with the widget's `spec.size` by server-side apply; deleting
//! a widget lets the server's garbage collector delete its config map.
//!
//! `cargo run -p kcache-testing-e2e --example operator`; the test
//! `testing/e2e/tests/it/operator.rs` runs the same [`check_operator`] and fails on any step.

#![allow(clippy::print_stdout, reason = "an example program says what it does")]

use std::sync::Arc;
use std::time::Duration;

use kcache_client_http::{Client, Config, HttpListerWatcher, ObjectClient, Patch};
use kcache_informer::{Action, BoxError, Owns, ReconcileRunner, SharedIndexInformer};
use kcache_store::{ApiResource, DynamicObject, Lister, Object, ObjectKey};
use kcache_testing_server::FakeApiServer;
use serde_json::json;
use tokio_util::sync::CancellationToken;

// <README operator>
/// The widgets' resource, as their definition serves it.
fn widgets() -> ApiResource {
    ApiResource::new("example.com", "v1", "widgets", true)
}

/// The definition of `Widget`: what `kubectl apply -f crd.yaml` would send.
fn widget_definition() -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    }))
    .unwrap_or_default()
}

/// What the reconcile needs: the widgets' cache and a writer of config maps.
struct Ctx {
    widgets: Lister<DynamicObject>,
    configmaps: ObjectClient<DynamicObject>,
}

/// Applies the config map a widget owns, from the widget in the cache.
async fn reconcile(key: ObjectKey, ctx: Arc<Ctx>) -> Result<Action, BoxError> {
    let Some(widget) = ctx.widgets.get_by_key(key.as_str()) else {
        // Deleted: the garbage collector deletes what it owned.
        return Ok(Action::Done);
    };
    let name = widget.name().unwrap_or_default();
    let size = widget
        .data
        .get("spec")
        .map_or(0, |s| s["size"].as_u64().unwrap_or(0));
    let configmap = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{name}-config"), "ownerReferences": [{
            "apiVersion": "example.com/v1", "kind": "Widget", "name": name,
            "uid": widget.uid().unwrap_or_default(), "controller": true,
        }]},
        "data": {"size": size.to_string()},
    });
    let apply = Patch::Apply {
        object: configmap,
        field_manager: "widget-operator".to_owned(),
        force: true,
    };
    ctx.configmaps
        .patch(&format!("{name}-config"), &apply)
        .await?;
    Ok(Action::Done)
}

/// Runs the operator against the API server `client` talks to until `cancel` fires.
async fn run_operator(client: Client, cancel: CancellationToken) -> Result<(), BoxError> {
    let informer = |resource: ApiResource| {
        let lw = HttpListerWatcher::<DynamicObject>::builder(client.clone(), resource).build();
        SharedIndexInformer::builder(Arc::new(lw)).build()
    };
    let widget_informer = informer(widgets());
    let configmap_informer = informer(ApiResource::new("", "v1", "configmaps", true));
    // A widget's key on its own changes, and on the changes of the config map it controls.
    let runner = ReconcileRunner::builder(&widget_informer)
        .name("widgets")
        .owns(
            &configmap_informer,
            Owns::controller("example.com", "Widget"),
        )
        .build()?;
    let ctx = Arc::new(Ctx {
        widgets: widget_informer.lister(),
        configmaps: ObjectClient::dynamic(client, ApiResource::new("", "v1", "configmaps", true)),
    });
    let informers = [widget_informer, configmap_informer].map(|informer| {
        let cancel = cancel.clone();
        tokio::spawn(async move { informer.run(cancel).await })
    });
    runner.run(ctx, reconcile, cancel).await?;
    for running in informers {
        running.await??;
    }
    Ok(())
}
// </README operator>

/// Installs the definition on `server`, runs the operator, and checks each step as a user
/// would: a widget gets its config map, a change of size reaches it, deleting the widget deletes
/// it.
pub(crate) async fn check_operator(server: &FakeApiServer) -> Result<(), BoxError> {
    let client = Client::new(Config::new(server.url().parse()?))?;
    let crds = ObjectClient::<DynamicObject>::dynamic(
        client.clone(),
        ApiResource::new(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            false,
        ),
    );
    crds.create(&widget_definition()).await?;
    println!("installed widgets.example.com");

    let cancel = CancellationToken::new();
    let operator = tokio::spawn(run_operator(client.clone(), cancel.clone()));
    let widgets = ObjectClient::<DynamicObject>::dynamic(client.clone(), widgets());
    let configmaps = ObjectClient::<DynamicObject>::dynamic(
        client,
        ApiResource::new("", "v1", "configmaps", true),
    );
    let mut gear: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "gear"}, "spec": {"size": 3},
    }))?;
    gear = widgets.create(&gear).await?;
    let size_of = |cm: Option<DynamicObject>| {
        cm.and_then(|cm| cm.data.get("data").map(|d| d["size"].clone()))
    };
    wait_until("the ConfigMap of size 3", || async {
        Ok(size_of(configmaps.get("gear-config").await?) == Some(json!("3")))
    })
    .await?;
    println!("gear-config holds size 3");

    gear.data.insert("spec".to_owned(), json!({"size": 5}));
    widgets.replace(&gear).await?;
    wait_until("the ConfigMap of size 5", || async {
        Ok(size_of(configmaps.get("gear-config").await?) == Some(json!("5")))
    })
    .await?;
    println!("gear-config follows the widget: size 5");

    widgets.delete("gear", None).await?;
    wait_until("the ConfigMap collected", || async {
        Ok(configmaps.get("gear-config").await?.is_none())
    })
    .await?;
    println!("gear deleted; the garbage collector deleted gear-config");
    cancel.cancel();
    operator.await??;
    Ok(())
}

/// Polls `done` every 20 ms for at most 10 s; an error naming `what` past that.
async fn wait_until<F, Fut>(what: &str, mut done: F) -> Result<(), BoxError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool, BoxError>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !done().await? {
        if tokio::time::Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

#[allow(
    dead_code,
    reason = "the test includes this file for check_operator only"
)]
#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let server = FakeApiServer::start().await?;
    check_operator(&server).await?;
    server.shutdown().await;
    Ok(())
}
