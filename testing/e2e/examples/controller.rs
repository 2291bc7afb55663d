//! A controller in kcache: deployments owning pods, reconciled by a pool of workers that read
//! only from the informers' caches, against the embedded fake API server.
//!
//! `cargo run -p kcache-testing-e2e --example controller`. Each reconcile compares a
//! deployment's `spec.replicas` with the pods it owns in the cache and says what a real
//! controller would create or delete; the fake server plays the cluster (the program itself
//! scales the deployments and deletes pods while the controller runs).

#![allow(clippy::print_stdout, reason = "an example program says what it does")]

use std::sync::Arc;
use std::time::Duration;

use kcache_client_http::{Client, Config, HttpListerWatcher};
use kcache_informer::{Action, BoxError, Owns, ReconcileRunner, SharedIndexInformer};
use kcache_store::{ApiResource, DynamicObject, Lister, Object, ObjectKey, Selector};
use kcache_testing_server::{FakeApiServer, ServedResource};
use tokio_util::sync::CancellationToken;

// <README controller>
/// What the reconcile needs: the two caches.
struct Ctx {
    deployments: Lister<DynamicObject>,
    pods: Lister<DynamicObject>,
}

/// Compares a deployment's wanted replicas with the pods it owns, reading only the caches.
async fn reconcile(key: ObjectKey, ctx: Arc<Ctx>) -> Result<Action, BoxError> {
    let Some(deployment) = ctx.deployments.get_by_key(key.as_str()) else {
        println!("{key}: deleted; its pods go with it");
        return Ok(Action::Done);
    };
    let wanted = deployment
        .data
        .get("spec")
        .and_then(|s| s["replicas"].as_u64())
        .unwrap_or(1);
    let namespace = deployment.namespace().unwrap_or_default();
    let owned = ctx
        .pods
        .namespace(namespace)
        .list(&Selector::everything())
        .into_iter()
        .filter(|pod| {
            pod.owner_references()
                .iter()
                .any(|r| r.is_controller() && Some(r.name.as_str()) == deployment.name())
        })
        .count() as u64;
    match owned.cmp(&wanted) {
        std::cmp::Ordering::Less => println!(
            "{key}: {owned}/{wanted} pods, would create {}",
            wanted - owned
        ),
        std::cmp::Ordering::Greater => println!(
            "{key}: {owned}/{wanted} pods, would delete {}",
            owned - wanted
        ),
        std::cmp::Ordering::Equal => println!("{key}: {owned}/{wanted} pods, as wanted"),
    }
    // Look again in a minute even if nothing changes.
    Ok(Action::RequeueAfter(Duration::from_secs(60)))
}

/// Runs the controller against the API server `client` talks to until `cancel` fires.
async fn run_controller(client: Client, cancel: CancellationToken) -> Result<(), BoxError> {
    let informer = |resource: ApiResource| {
        let lw = HttpListerWatcher::<DynamicObject>::builder(client.clone(), resource).build();
        SharedIndexInformer::builder(Arc::new(lw)).build()
    };
    let deployments = informer(ApiResource::new("apps", "v1", "deployments", true));
    let pods = informer(ApiResource::new("", "v1", "pods", true));

    // A deployment's key on its own changes, and on the changes of the pods it controls.
    let runner = ReconcileRunner::builder(&deployments)
        .name("deployments")
        .owns(&pods, Owns::controller("apps", "Deployment"))
        .workers(4)
        .build()?;
    let ctx = Arc::new(Ctx {
        deployments: deployments.lister(),
        pods: pods.lister(),
    });
    let informers = [deployments.clone(), pods.clone()].map(|informer| {
        let cancel = cancel.clone();
        tokio::spawn(async move { informer.run(cancel).await })
    });
    runner.run(ctx, reconcile, cancel).await?;
    for running in informers {
        running.await??;
    }
    Ok(())
}
// </README controller>

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    // Deployments and pods are among the kinds the fake server serves by default.
    let server = FakeApiServer::start().await?;
    let deployments = ServedResource::deployments();
    let pods = ServedResource::pods();
    for (name, replicas) in [("web", 3), ("db", 1)] {
        server.create(&deployments, deployment(name, replicas))?;
        for i in 0..replicas.min(2) {
            server.create(&pods, owned_pod(name, i))?;
        }
    }
    let client = Client::new(Config::new(server.url().parse()?))?;
    let cancel = CancellationToken::new();
    let controller = tokio::spawn(run_controller(client, cancel.clone()));

    // The cluster changes while the controller runs.
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.update(&deployments, deployment("db", 2))?;
    server.delete(&pods, Some("default"), "web-0")?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    cancel.cancel();
    controller.await??;
    Ok(())
}

fn deployment(name: &str, replicas: u64) -> DynamicObject {
    let mut d = DynamicObject::new(Some("default"), name);
    d.data
        .insert("spec".to_owned(), serde_json::json!({"replicas": replicas}));
    d
}

fn owned_pod(owner: &str, i: u64) -> DynamicObject {
    let mut pod = DynamicObject::new(Some("default"), &format!("{owner}-{i}"));
    pod.metadata.other.insert(
        "ownerReferences".to_owned(),
        serde_json::json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": owner,
                            "uid": format!("uid-{owner}"), "controller": true}]),
    );
    pod
}
