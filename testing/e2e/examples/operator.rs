//! An operator on kcache alone, tested against the embedded fake API server: a `Widget` custom
//! resource (a kube-rs `#[derive(CustomResource)]` type, cached as a kcache object) whose
//! definition is installed through the API (as `kubectl apply -f crd.yaml` would). Each widget
//! gets a config map it owns (server-side apply), an entry in the `registry` namespace that no
//! owner reference can reach (removed by the widget's finalizer when it is deleted), its status
//! written through the status subresource, and events that `kubectl describe` shows. Its own
//! status writes do not reconcile it again (a generation predicate).
//!
//! `cargo run -p kcache-testing-e2e --example operator`; the test
//! `testing/e2e/tests/it/operator.rs` runs the same [`check_operator`], under injected faults
//! too, and fails on any step.

#![allow(clippy::print_stdout, reason = "an example program says what it does")]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kcache_client_http::{
    Client, Config, EventRecorder, EventType, FinalizerEvent, HttpListerWatcher, ObjectClient,
    ObjectReference, Patch, finalizer,
};
use kcache_informer::{Action, BoxError, Owns, Predicate, ReconcileRunner, SharedIndexInformer};
use kcache_store::{ApiResource, DynamicObject, Lister, Object, ObjectKey, impl_object};
use kcache_testing_server::FakeApiServer;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

// <README operator>
/// A widget: its size is what its config map holds.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
#[kube(status = "WidgetStatus")]
pub(crate) struct WidgetSpec {
    size: u32,
}

/// What the operator reports on a widget.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WidgetStatus {
    observed_generation: Option<i64>,
    config_map: Option<String>,
    /// A note for people (the test writes one, as an auditing tool might).
    note: Option<String>,
}

// A kube-rs custom resource is a kcache object through its `metadata`.
impl_object!(Widget);

/// The widgets' resource, as their definition serves it.
fn widgets() -> ApiResource {
    ApiResource::new("example.com", "v1", "widgets", true)
}

const FINALIZER: &str = "example.com/registry-entry";

/// How events name a widget.
fn reference(widget: &Widget) -> ObjectReference {
    ObjectReference::from_object(widget, "example.com/v1", "Widget")
}
const MANAGER: &str = "widget-operator";

/// What the reconcile needs: the widgets' cache, writers, and an event recorder.
struct Ctx {
    widgets: Lister<Widget>,
    client: Client,
    events: EventRecorder,
    /// How often each widget was reconciled (the test reads it).
    reconciles: Mutex<BTreeMap<String, usize>>,
}

impl Ctx {
    fn in_namespace<T>(&self, resource: ApiResource, namespace: &str) -> ObjectClient<T> {
        ObjectClient::builder(self.client.clone(), resource)
            .namespace(namespace)
            .build()
    }
}

/// Runs a widget's reconcile under its finalizer: apply while it lives, clean up once it is
/// being deleted.
async fn reconcile(key: ObjectKey, ctx: Arc<Ctx>) -> Result<Action, BoxError> {
    if let Ok(mut counts) = ctx.reconciles.lock() {
        *counts.entry(key.to_string()).or_default() += 1;
    }
    let Some(widget) = ctx.widgets.get_by_key(key.as_str()) else {
        // Gone: the garbage collector deletes what it owned.
        return Ok(Action::Done);
    };
    let namespace = widget.namespace().unwrap_or("default").to_owned();
    let api: ObjectClient<Widget> = ctx.in_namespace(widgets(), &namespace);
    let done = finalizer(&api, FINALIZER, widget, |event| async {
        match event {
            FinalizerEvent::Apply(widget) => apply(&ctx, &api, &widget).await,
            FinalizerEvent::Cleanup(widget) => cleanup(&ctx, &widget).await,
        }
    })
    .await?;
    Ok(done.unwrap_or(Action::Done))
}

/// The config map a widget owns, its registry entry, and its status.
async fn apply(ctx: &Ctx, api: &ObjectClient<Widget>, widget: &Widget) -> Result<Action, BoxError> {
    let (name, namespace) = (
        widget.name().unwrap_or_default(),
        widget.namespace().unwrap_or_default(),
    );
    let config = format!("{name}-config");
    let configmap = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": config, "ownerReferences": [{
            "apiVersion": "example.com/v1", "kind": "Widget", "name": name,
            "uid": widget.uid().unwrap_or_default(), "controller": true,
        }]},
        "data": {"size": widget.spec.size.to_string()},
    });
    let configmaps = ApiResource::new("", "v1", "configmaps", true);
    let apply = |object| Patch::Apply {
        object,
        field_manager: MANAGER.to_owned(),
        force: true,
    };
    ctx.in_namespace::<DynamicObject>(configmaps.clone(), namespace)
        .patch(&config, &apply(configmap))
        .await?;
    // An entry no owner reference can reach (another namespace): the finalizer removes it.
    let entry = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{namespace}.{name}")},
        "data": {"widget": format!("{namespace}/{name}")}});
    ctx.in_namespace::<DynamicObject>(configmaps, "registry")
        .patch(&format!("{namespace}.{name}"), &apply(entry))
        .await?;

    let generation = widget.generation();
    let status = widget.status.as_ref();
    if status.and_then(|s| s.observed_generation) != generation {
        let patch = Patch::Merge(
            json!({"status": {"observedGeneration": generation, "configMap": config}}),
        );
        api.patch_status(name, &patch).await?;
        let note = format!("config map {config} holds size {}", widget.spec.size);
        ctx.events.record(
            &reference(widget),
            None,
            EventType::Normal,
            "Applied",
            "Apply",
            &note,
        );
    }
    Ok(Action::Done)
}

/// Removes the widget's registry entry before its finalizer goes.
async fn cleanup(ctx: &Ctx, widget: &Widget) -> Result<Action, BoxError> {
    let (name, namespace) = (
        widget.name().unwrap_or_default(),
        widget.namespace().unwrap_or_default(),
    );
    let configmaps = ApiResource::new("", "v1", "configmaps", true);
    let registry = ctx.in_namespace::<DynamicObject>(configmaps, "registry");
    match registry.delete(&format!("{namespace}.{name}"), None).await {
        Err(e) if !e.is_not_found() => return Err(e.into()),
        _ => {}
    }
    ctx.events.record(
        &reference(widget),
        None,
        EventType::Normal,
        "Deleted",
        "Cleanup",
        "registry entry removed",
    );
    Ok(Action::Done)
}

/// Runs the operator against the API server `client` talks to until `cancel` fires.
async fn run_operator(
    client: Client,
    ctx: Arc<Ctx>,
    widget_informer: SharedIndexInformer<Widget>,
    cancel: CancellationToken,
) -> Result<(), BoxError> {
    let configmaps = HttpListerWatcher::<DynamicObject>::builder(
        client.clone(),
        ApiResource::new("", "v1", "configmaps", true),
    )
    .build();
    let configmap_informer = SharedIndexInformer::builder(Arc::new(configmaps)).build();
    // A widget's key on its spec's changes (not on its own status writes), and on the changes
    // of the config map it controls.
    let runner = ReconcileRunner::builder(&widget_informer)
        .name("widgets")
        .predicate(Predicate::generation_changed())
        .owns(
            &configmap_informer,
            Owns::controller("example.com", "Widget"),
        )
        .build()?;
    let widget_run = tokio::spawn({
        let (informer, cancel) = (widget_informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    let configmap_run = tokio::spawn({
        let cancel = cancel.clone();
        async move { configmap_informer.run(cancel).await }
    });
    runner.run(ctx, reconcile, cancel).await?;
    widget_run.await??;
    configmap_run.await??;
    Ok(())
}
// </README operator>

/// The definition of `Widget` from its Rust type, with its status subresource: what
/// `kubectl apply -f crd.yaml` would send.
fn widget_definition() -> Result<DynamicObject, BoxError> {
    Ok(serde_json::from_value(
        serde_json::to_value(Widget::crd())?,
    )?)
}

/// Everything the operator runs on: its context, and the widgets' informer.
pub(crate) struct Operator {
    ctx: Arc<Ctx>,
    widgets: SharedIndexInformer<Widget>,
}

impl Operator {
    fn new(client: &Client) -> Result<Self, BoxError> {
        let lw = HttpListerWatcher::<Widget>::builder(client.clone(), widgets())
            .kind("Widget")
            .build();
        let widgets = SharedIndexInformer::builder(Arc::new(lw)).build();
        let events =
            EventRecorder::new(client.clone(), "example.com/widget-operator", "operator-0")?;
        let ctx = Arc::new(Ctx {
            widgets: widgets.lister(),
            client: client.clone(),
            events,
            reconciles: Mutex::default(),
        });
        Ok(Self { ctx, widgets })
    }

    /// How often the widget of `key` was reconciled.
    fn reconciles(&self, key: &str) -> usize {
        self.ctx
            .reconciles
            .lock()
            .map_or(0, |counts| counts.get(key).copied().unwrap_or(0))
    }
}

/// A config map of `namespace` by name, through `client`.
fn configmaps(client: &Client, namespace: &str) -> ObjectClient<DynamicObject> {
    ObjectClient::builder(
        client.clone(),
        ApiResource::new("", "v1", "configmaps", true),
    )
    .namespace(namespace)
    .build()
}

/// Installs the definition on `server`, runs the operator, and checks each step as a user
/// would: a widget gets its config map, registry entry, status and an event; its own status
/// write does not reconcile it again; a change of size reaches the config map; deleting the
/// widget runs its cleanup, removes the finalizer, and the garbage collector deletes its
/// config map. `faults` injects the given faults on `server` while the widget lives.
pub(crate) async fn check_operator(
    server: &FakeApiServer,
    faults: impl Fn(&FakeApiServer),
) -> Result<(), BoxError> {
    let client = Client::new(Config::new(server.url().parse()?))?;
    install_definition(&client).await?;
    println!("installed widgets.example.com");

    let operator = Operator::new(&client)?;
    let cancel = CancellationToken::new();
    let running = tokio::spawn(run_operator(
        client.clone(),
        Arc::clone(&operator.ctx),
        operator.widgets.clone(),
        cancel.clone(),
    ));
    let widget_api = ObjectClient::<Widget>::builder(client.clone(), widgets())
        .namespace("shop")
        .build();
    let (configmaps, registry) = (configmaps(&client, "shop"), configmaps(&client, "registry"));
    let size_of = |cm: Option<DynamicObject>| {
        cm.and_then(|cm| cm.data.get("data").map(|d| d["size"].clone()))
    };
    widget_api
        .create(&Widget::new("gear", WidgetSpec { size: 3 }))
        .await?;
    wait_until(
        "the config map of size 3, the status and the finalizer",
        || async {
            let gear = widget_api.get("gear").await?;
            let observed = gear
                .as_ref()
                .and_then(|g| g.status.as_ref()?.observed_generation);
            let finalized = gear
                .as_ref()
                .and_then(|g| g.metadata.finalizers.as_ref())
                .is_some_and(|f| f.iter().any(|f| f == FINALIZER));
            Ok(
                size_of(configmaps.get("gear-config").await?) == Some(json!("3"))
                    && registry.get("shop.gear").await?.is_some()
                    && observed == Some(1)
                    && finalized,
            )
        },
    )
    .await?;
    println!("gear: config map of size 3, registry entry, status at generation 1, finalizer on");
    wait_for_event(&client, "gear", "Applied").await?;
    println!("gear: an Applied event for kubectl describe");
    check_status_writes_are_filtered(&operator, &widget_api, &configmaps).await?;

    faults(server);
    let patch = Patch::Merge(json!({"spec": {"size": 5}}));
    widget_api.patch("gear", &patch).await?;
    wait_until(
        "the config map of size 5 and the status at generation 2",
        || async {
            let observed = widget_api
                .get("gear")
                .await?
                .and_then(|g| g.status?.observed_generation);
            Ok(
                size_of(configmaps.get("gear-config").await?) == Some(json!("5"))
                    && observed == Some(2),
            )
        },
    )
    .await?;
    println!("gear-config follows the widget: size 5, status at generation 2");
    server.clear_faults();

    widget_api.delete("gear", None).await?;
    wait_until(
        "the cleanup, the finalizer's removal and the collection",
        || async {
            Ok(registry.get("shop.gear").await?.is_none()
                && widget_api.get("gear").await?.is_none()
                && configmaps.get("gear-config").await?.is_none())
        },
    )
    .await?;
    println!("gear deleted: its registry entry removed by the finalizer's cleanup, then the");
    println!("finalizer; the garbage collector deleted gear-config");
    wait_for_event(&client, "gear", "Deleted").await?;
    cancel.cancel();
    running.await??;
    operator.ctx.events.shutdown().await;
    Ok(())
}

/// A status write changes no generation: no reconcile follows it. Markers show when every
/// earlier event was handled (one worker takes keys in order, and each informer hands its
/// events on in order): a config map owned by a widget that does not exist (through the config
/// maps' informer), then a widget (through the widgets' one).
async fn check_status_writes_are_filtered(
    operator: &Operator,
    widget_api: &ObjectClient<Widget>,
    configmaps: &ObjectClient<DynamicObject>,
) -> Result<(), BoxError> {
    configmaps
        .create(&serde_json::from_value(
            json!({"metadata": {"name": "marker",
            "ownerReferences": [{"apiVersion": "example.com/v1", "kind": "Widget",
                "name": "nobody", "uid": "u", "controller": true}]}}),
        )?)
        .await?;
    wait_until("the config map marker", || async {
        Ok(operator.reconciles("shop/nobody") > 0)
    })
    .await?;
    let before = operator.reconciles("shop/gear");
    let note = json!({"status": {"note": "audited"}});
    let audited = widget_api.patch_status("gear", &Patch::Merge(note)).await?;
    if audited.status.and_then(|s| s.note).as_deref() != Some("audited") {
        return Err("the status write did not change the status".into());
    }
    widget_api
        .create(&Widget::new("marker", WidgetSpec { size: 1 }))
        .await?;
    wait_until("the widget marker", || async {
        Ok(operator.reconciles("shop/marker") > 0)
    })
    .await?;
    if operator.reconciles("shop/gear") != before {
        return Err("a status write reconciled the widget again".into());
    }
    println!("gear: a status write did not reconcile it again");
    Ok(())
}

/// Installs the definition of `Widget` through the API.
async fn install_definition(client: &Client) -> Result<(), BoxError> {
    let crds = ObjectClient::<DynamicObject>::dynamic(
        client.clone(),
        ApiResource::new(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            false,
        ),
    );
    crds.create(&widget_definition()?).await?;
    Ok(())
}

/// Waits for an Event of `reason` about widget `name` in namespace `shop`.
async fn wait_for_event(client: &Client, name: &str, reason: &str) -> Result<(), BoxError> {
    wait_until(&format!("the {reason} event"), || async {
        Ok(events_about(client, name)
            .await?
            .iter()
            .any(|e| e.data["reason"] == reason))
    })
    .await
}

/// The `events.k8s.io/v1` Events of namespace `shop` about `name`.
async fn events_about(client: &Client, name: &str) -> Result<Vec<DynamicObject>, BoxError> {
    use kcache_reflector::{ListOptions, ListerWatcher};
    let events = ApiResource::new("events.k8s.io", "v1", "events", true);
    let lw = HttpListerWatcher::<DynamicObject>::builder(client.clone(), events)
        .namespace("shop")
        .build();
    let list = lw.list(&ListOptions::default()).await?;
    Ok(list
        .items
        .into_iter()
        .filter(|e| e.data.get("regarding").is_some_and(|r| r["name"] == name))
        .collect())
}

/// Polls `done` every 20 ms for at most 20 s; an error naming `what` past that.
async fn wait_until<F, Fut>(what: &str, mut done: F) -> Result<(), BoxError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool, BoxError>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
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
    check_operator(&server, |_| {}).await?;
    server.shutdown().await;
    Ok(())
}
