//! Sharded caches over HTTP: three replicas split four shards of 30,000 pods (over 300
//! namespaces, sharded by namespace; or flat, sharded by uid), each listing, watching and
//! caching only the shards it holds, through the fake API server's `shardSelector`. At every
//! quiescent point the caches' union is the server's collection with nothing cached twice;
//! when a replica is killed its shards move with their keys, each reconciled by one replica;
//! replicas killed and restarted under churn never reconcile a key at once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kcache_client_http::{Client, Config, HttpLeaseLock};
use kcache_informer::{
    LeaderElector, ShardFilter, ShardedCaches, ShardedElection, SharedIndexInformer,
};
use kcache_reflector::{ShardField, ShardSelector, shard_hash, shard_index};
use kcache_store::{DynamicObject, Object};
use kcache_testing::{ReconcileLedger, poll_until};
use kcache_testing_server::{FakeApiServer, ServedResource};

use crate::shard_work::{BuildInformer, Ledger, Replica, work};

const SHARDS: u32 = 4;

fn namespace(n: usize) -> String {
    const APPS: [&str; 10] = [
        "shop", "payments", "search", "auth", "billing", "mail", "ads", "ml", "data", "infra",
    ];
    const ENVS: [&str; 5] = ["prod", "staging", "dev", "qa", "perf"];
    const REGIONS: [&str; 6] = ["eu", "us", "ap", "sa", "af", "me"];
    format!(
        "{}-{}-{}",
        APPS[n % 10],
        ENVS[(n / 10) % 5],
        REGIONS[(n / 50) % 6]
    )
}

fn shard_of(field: ShardField, o: &DynamicObject) -> u32 {
    shard_index(shard_hash(field.value_of(o)), SHARDS)
}

fn replica(
    index: usize,
    field: ShardField,
    server: &FakeApiServer,
    ledger: &Arc<Ledger>,
) -> Replica {
    let identity = format!("replica-{index}");
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let filter = match field {
        ShardField::Namespace => ShardFilter::by_namespace(SHARDS),
        ShardField::Uid => ShardFilter::new(SHARDS),
    };
    let election = ShardedElection::new(
        &filter,
        |shard| {
            let lock = Arc::new(HttpLeaseLock::new(
                client.clone(),
                "default",
                &format!("pods-{shard}"),
            ));
            LeaderElector::builder(lock, identity.clone())
                .lease_duration(Duration::from_secs(2))
                .renew_deadline(Duration::from_secs(1))
                .retry_period(Duration::from_millis(200))
        },
        |shard| shard as usize % 3 == index % 3,
    )
    .unwrap();
    let caches = ShardedCaches::new(&filter, field);
    let build: BuildInformer = Arc::new(|lw| SharedIndexInformer::builder(lw).build());
    Replica::start(
        election,
        caches,
        work(index, client, 4, build, Arc::clone(ledger)),
    )
}

async fn wait_until(what: &str, cond: impl FnMut() -> bool) {
    poll_until(
        what,
        Duration::from_secs(120),
        Duration::from_millis(100),
        cond,
    )
    .await;
}

/// Waits for the caches to equal the server's pods (keys and versions), every shard held by one
/// replica and caching exactly its objects.
async fn quiescent(server: &FakeApiServer, ledger: &Ledger, field: ShardField) {
    let want = || -> BTreeMap<String, (u32, String)> {
        server
            .list(&ServedResource::pods())
            .iter()
            .map(|o| {
                let rv = o.resource_version().unwrap_or("").to_owned();
                (o.key().to_string(), (shard_of(field, o), rv))
            })
            .collect()
    };
    wait_until("the caches to equal the server", || {
        let cached = ledger.cached();
        let got: BTreeMap<String, (u32, String)> = cached
            .iter()
            .map(|(k, _, s, rv)| (k.clone(), (*s, rv.clone())))
            .collect();
        got.len() == cached.len() && got == want() && ledger.holders().len() == SHARDS as usize
    })
    .await;
    for (shard, replicas) in ledger.holders() {
        assert_eq!(replicas.len(), 1, "shard {shard} run by {replicas:?}");
    }
}

async fn three_replicas(field: ShardField, pods_total: usize) {
    let server = Arc::new(
        FakeApiServer::builder()
            .history_limit(pods_total * 2)
            .start()
            .await
            .unwrap(),
    );
    for i in 0..pods_total {
        let ns = match field {
            ShardField::Namespace => namespace(i % 300),
            ShardField::Uid => "flat".to_owned(),
        };
        server
            .create(
                &ServedResource::pods(),
                DynamicObject::new(Some(&ns), &format!("p{i}")),
            )
            .unwrap();
    }
    let ledger = Arc::new(Ledger::new(ReconcileLedger::default()));
    let mut replicas: Vec<Replica> = (0..3)
        .map(|i| replica(i, field, &server, &ledger))
        .collect();
    wait_until("every pod reconciled", || {
        ledger.reconciles.len() == pods_total
    })
    .await;
    quiescent(&server, &ledger, field).await;
    let holders = ledger.holders();
    for (key, by) in &ledger.reconciles.snapshot() {
        let (ns, name) = key.split_once('/').unwrap();
        let object = DynamicObject::new(Some(ns), name);
        let shard = match field {
            ShardField::Namespace => shard_of(field, &object),
            // The uid is the server's: find it in the caches.
            ShardField::Uid => ledger.cached().iter().find(|c| &c.0 == key).unwrap().2,
        };
        assert_eq!(by, &BTreeSet::from([holders[&shard][0]]), "{key}");
        if field == ShardField::Uid {
            break; // one lookup over 30,000 cached objects is enough for the flat case
        }
    }
    // The server filtered: every list and watch asked for a shard and nothing came back outside.
    let requests = server.requests();
    let pod_requests: Vec<_> = requests
        .iter()
        .filter(|r| r.path == "/api/v1/pods")
        .collect();
    assert!(!pod_requests.is_empty());
    assert!(pod_requests.iter().all(|r| {
        r.param("shardSelector")
            .is_some_and(|s| ShardSelector::parse(s).is_ok())
    }));
    for lw in ledger.lister_watchers() {
        assert_eq!(lw.ignored_objects(), 0, "the server sent only the shard");
        assert!(lw.server_honoured().unwrap_or(true));
    }

    // Replica 0 is killed (its Leases not released): its shards move once they expire.
    ledger.reconciles.clear();
    let dead_shards: Vec<u32> = holders
        .iter()
        .filter(|(_, r)| r[0] == 0)
        .map(|(s, _)| *s)
        .collect();
    replicas.remove(0).kill().await;
    quiescent(&server, &ledger, field).await;
    let moved: BTreeSet<String> = ledger
        .cached()
        .into_iter()
        .filter(|c| dead_shards.contains(&c.2))
        .map(|c| c.0)
        .collect();
    wait_until("the dead replica's keys reconciled again", || {
        ledger
            .reconciles
            .all_reconciled(moved.iter().map(String::as_str))
    })
    .await;
    for key in &moved {
        let by = ledger.reconciles.reconciled_by(key);
        assert_eq!(by.len(), 1, "{key} reconciled by one replica: {by:?}");
    }

    under_churn(&server, &ledger, field, pods_total, replicas).await;
}

/// Under churn: a replica restarts, another is killed; at the end the caches equal the server,
/// and no key ever ran on two replicas at once.
async fn under_churn(
    server: &Arc<FakeApiServer>,
    ledger: &Arc<Ledger>,
    field: ShardField,
    pods_total: usize,
    mut replicas: Vec<Replica>,
) {
    let churning = Arc::new(AtomicBool::new(true));
    let churn = tokio::spawn({
        let (server, churning) = (Arc::clone(server), Arc::clone(&churning));
        async move {
            let mut i = 0_usize;
            while churning.load(Ordering::SeqCst) {
                let ns = match field {
                    ShardField::Namespace => namespace(i % 300),
                    ShardField::Uid => "flat".to_owned(),
                };
                let name = format!("p{}", i % pods_total);
                let _ = server.delete(&ServedResource::pods(), Some(&ns), &name);
                let _ = server.create(
                    &ServedResource::pods(),
                    DynamicObject::new(Some(&ns), &format!("c{i}")),
                );
                i += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
    });
    replicas.push(replica(3, field, server, ledger));
    tokio::time::sleep(Duration::from_secs(2)).await;
    replicas.remove(0).kill().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    churning.store(false, Ordering::SeqCst);
    churn.await.unwrap();
    quiescent(server, ledger, field).await;
    assert_eq!(
        ledger.reconciles.overlaps(),
        0,
        "a key ran on two replicas at once"
    );
    assert_eq!(ledger.ignored(), 0, "the server sent only the shards");
    for r in replicas {
        r.kill().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_shards_over_http_split_30000_pods_and_move_with_dead_replicas() {
    three_replicas(ShardField::Namespace, 30_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uid_shards_over_http_split_a_flat_collection_and_move_with_dead_replicas() {
    three_replicas(ShardField::Uid, 6_000).await;
}
