//! Three replicas of a controller, each caching a third of the config maps: the collection is
//! split into three shards by the hash of each object's uid, each shard has a Lease, and each
//! replica lists, watches and caches only the shards it holds (the server sends only those,
//! `shardSelector`). When a replica stops, its shard moves to another one, with its cache.
//!
//! `cargo run -p kcache-testing-e2e --example sharded`.

#![allow(clippy::print_stdout, reason = "an example program says what it does")]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kcache_client_http::{Client, Config, HttpLeaseLock, HttpListerWatcher};
use kcache_informer::{
    Action, BoxError, LeaderElector, ReconcileRunner, ShardFilter, ShardedCaches, ShardedElection,
    SharedIndexInformer,
};
use kcache_reflector::ShardField;
use kcache_store::{ApiResource, DynamicObject, ObjectKey};
use kcache_testing_server::{FakeApiServer, ServedResource};
use tokio_util::sync::CancellationToken;

const REPLICAS: u32 = 3;
const CONFIG_MAPS: usize = 3_000;

/// What each replica caches now: (replica, shard) -> objects.
type Cached = Arc<Mutex<BTreeMap<(u32, u32), usize>>>;

// <README sharded>
/// One replica of three: stands for every shard's Lease (its own shard at once, the others
/// once a lease duration has passed without a holder), and for each shard it holds runs an
/// informer of that shard alone and a reconcile runner over it.
async fn replica(
    index: u32,
    client: Client,
    cached: Cached,
    cancel: CancellationToken,
) -> Result<(), BoxError> {
    let identity = format!("replica-{index}");
    let filter = ShardFilter::new(REPLICAS);
    let election = ShardedElection::new(
        &filter,
        |shard| {
            let lease = format!("configmap-controller-{shard}");
            let lock = Arc::new(HttpLeaseLock::new(client.clone(), "default", &lease));
            LeaderElector::builder(lock, identity.clone())
                // Shorter than the defaults (15 s, 10 s, 2 s), for the demonstration.
                .lease_duration(Duration::from_secs(3))
                .renew_deadline(Duration::from_secs(2))
                .retry_period(Duration::from_millis(500))
                .release_on_cancel(true)
        },
        |shard| shard == index,
    )?;
    // Split on the uid: a flat collection spreads evenly. (`ShardField::Namespace` keeps a
    // namespace, an owner and what it owns, in one shard.)
    let shard_caches = ShardedCaches::new(&filter, ShardField::Uid);
    let work = shard_caches.run(cancel.clone(), move |scope| {
        let (client, cached) = (client.clone(), Arc::clone(&cached));
        async move {
            let configmaps = HttpListerWatcher::<DynamicObject>::builder(
                client,
                ApiResource::new("", "v1", "configmaps", true),
            )
            .build();
            // Asks the server for this shard alone (and filters if the server ignores it).
            let lw = Arc::new(scope.lister_watcher(configmaps));
            let informer = SharedIndexInformer::builder(lw).build();
            let Ok(runner) = ReconcileRunner::builder(&informer)
                .name(format!("replica-{index}-shard-{}", scope.shard()))
                .build()
            else {
                return;
            };
            let stop_informer = CancellationToken::new();
            let run = tokio::spawn({
                let (informer, stop) = (informer.clone(), stop_informer.clone());
                async move { informer.run(stop).await }
            });
            let (shard, cache) = (scope.shard(), informer.indexer());
            let reconcile = move |key: ObjectKey, cached: Cached| {
                // Every key reconciled is in this shard's cache.
                cached
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert((index, shard), cache.len());
                let _ = key;
                async { Ok::<_, BoxError>(Action::Done) }
            };
            // Reconciles (once the shard's cache has synced) until the shard is lost...
            let ran = runner
                .run(Arc::clone(&cached), reconcile, scope.cancelled().clone())
                .await;
            if let Err(e) = ran {
                println!("replica-{index}: shard {shard}: {e}");
            }
            // ...then stops the informer; its objects go with it.
            stop_informer.cancel();
            let _ = run.await;
            cached
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(&(index, shard));
        }
    });
    tokio::join!(election.run(cancel), work);
    Ok(())
}
// </README sharded>

fn report(cached: &Cached) {
    let cached = cached
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for ((replica, shard), objects) in cached.iter() {
        println!("  replica-{replica} caches shard {shard}: {objects} config maps");
    }
    println!(
        "  in all: {} of {CONFIG_MAPS}",
        cached.values().sum::<usize>()
    );
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let server = FakeApiServer::start().await?;
    for i in 0..CONFIG_MAPS {
        server.create(
            &ServedResource::configmaps(),
            DynamicObject::new(Some(&format!("team-{}", i % 7)), &format!("settings-{i}")),
        )?;
    }
    let cached: Cached = Arc::default();
    let mut replicas = Vec::new();
    for index in 0..REPLICAS {
        let client = Client::new(Config::new(server.url().parse()?))?;
        let stop = CancellationToken::new();
        let task = tokio::spawn(replica(index, client, Arc::clone(&cached), stop.clone()));
        replicas.push((stop, task));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    println!("three replicas:");
    report(&cached);
    // Replica 0 stops, releasing its Lease: another replica takes its shard and caches it.
    let (stop, task) = replicas.remove(0);
    stop.cancel();
    task.await??;
    tokio::time::sleep(Duration::from_secs(5)).await;
    println!("after replica-0 stopped:");
    report(&cached);
    for (stop, task) in replicas {
        stop.cancel();
        task.await??;
    }
    Ok(())
}
