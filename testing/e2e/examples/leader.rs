//! Two replicas of a controller with leader election on a Lease, against the embedded fake
//! API server: only the leader reconciles; when it stops (here: cancelled, releasing the
//! Lease), the other takes over and reconciles everything again.
//!
//! `cargo run -p kcache-testing-e2e --example leader`.

#![allow(clippy::print_stdout, reason = "an example program says what it does")]

use std::sync::Arc;
use std::time::Duration;

use kcache_client_http::{Client, Config, HttpLeaseLock, HttpListerWatcher};
use kcache_informer::{Action, BoxError, LeaderElector, ReconcileRunner, SharedIndexInformer};
use kcache_store::{ApiResource, DynamicObject, ObjectKey};
use kcache_testing_server::{FakeApiServer, ServedResource};
use tokio_util::sync::CancellationToken;

// <README leader>
/// One replica: stands for the Lease `default/configmap-controller`; while leading, runs an
/// informer and a reconcile runner, both stopped when leadership ends.
async fn replica(
    identity: &'static str,
    client: Client,
    cancel: CancellationToken,
) -> Result<(), BoxError> {
    let lock = Arc::new(HttpLeaseLock::new(
        client.clone(),
        "default",
        "configmap-controller",
    ));
    let elector = LeaderElector::builder(lock, identity)
        // Shorter than the defaults (15 s, 10 s, 2 s), for the demonstration.
        .lease_duration(Duration::from_secs(3))
        .renew_deadline(Duration::from_secs(2))
        .retry_period(Duration::from_millis(500))
        .release_on_cancel(true)
        .build()?;
    elector
        .run(cancel, move |leading: CancellationToken| async move {
            println!("{identity}: leading");
            let lw = HttpListerWatcher::<DynamicObject>::builder(
                client,
                ApiResource::new("", "v1", "configmaps", true),
            )
            .build();
            let configmaps = SharedIndexInformer::builder(Arc::new(lw)).build();
            let runner = match ReconcileRunner::builder(&configmaps).name(identity).build() {
                Ok(runner) => runner,
                Err(e) => return println!("{identity}: {e}"),
            };
            let informer = tokio::spawn({
                let (configmaps, leading) = (configmaps.clone(), leading.clone());
                async move { configmaps.run(leading).await }
            });
            let reconcile = move |key: ObjectKey, _: Arc<()>| async move {
                println!("{identity}: reconciles {key}");
                Ok::<_, BoxError>(Action::Done)
            };
            if let Err(e) = runner.run(Arc::new(()), reconcile, leading).await {
                println!("{identity}: {e}");
            }
            let _ = informer.await;
            println!("{identity}: stopped leading");
        })
        .await;
    Ok(())
}
// </README leader>

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    // Leases are among the kinds the fake server serves by default.
    let server = FakeApiServer::start().await?;
    for name in ["settings", "flags"] {
        server.create(
            &ServedResource::configmaps(),
            DynamicObject::new(Some("default"), name),
        )?;
    }
    let (stop_a, stop_b) = (CancellationToken::new(), CancellationToken::new());
    let client_a = Client::new(Config::new(server.url().parse()?))?;
    let a = tokio::spawn(replica("replica-a", client_a, stop_a.clone()));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let client_b = Client::new(Config::new(server.url().parse()?))?;
    let b = tokio::spawn(replica("replica-b", client_b, stop_b.clone()));
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The leader goes away, releasing the Lease: the other replica takes over.
    stop_a.cancel();
    a.await??;
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop_b.cancel();
    b.await??;
    Ok(())
}
