//! Sharding past one leader: three replicas split 1,000 keys by a stable hash into three
//! shards, each guarded by its own Lease; each key is reconciled by the replica holding its
//! shard only, never by two replicas at once, and a dead replica's shard moves to a living one,
//! which reconciles all of its keys.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kcache_informer::{
    Action, BoxError, LeaderElector, ReconcileRunner, ShardFilter, ShardedElection,
    SharedIndexInformer, shard_of,
};
use kcache_store::{DynamicObject, ObjectKey};
use kcache_testing::{FakeLease, FakeListerWatcher, ReconcileLedger, poll_until};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const KEYS: usize = 1_000;
const SHARDS: u32 = 3;

struct Replica {
    cancel: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

fn replica(
    index: usize,
    fake: &FakeListerWatcher<DynamicObject>,
    leases: &[FakeLease],
    ledger: &Arc<ReconcileLedger>,
) -> Replica {
    let identity = format!("replica-{index}");
    let informer = SharedIndexInformer::builder(Arc::new(fake.clone())).build();
    let filter = ShardFilter::new(SHARDS);
    let election = ShardedElection::new(
        &filter,
        |shard| {
            LeaderElector::builder(leases[shard as usize].lock(&identity), identity.clone())
                .seed(u64::from(shard) * 10 + index as u64)
        },
        |shard| shard as usize == index,
    )
    .unwrap();
    let runner = ReconcileRunner::builder(&informer)
        .name(identity.clone())
        .workers(2)
        .shards(&filter)
        .build()
        .unwrap();
    let cancel = CancellationToken::new();
    let ledger = Arc::clone(ledger);
    let tasks = vec![
        tokio::spawn({
            let (informer, cancel) = (informer.clone(), cancel.clone());
            async move { informer.run(cancel).await.unwrap() }
        }),
        tokio::spawn({
            let cancel = cancel.clone();
            async move { election.run(cancel).await }
        }),
        tokio::spawn({
            let cancel = cancel.clone();
            async move {
                runner
                    .run(
                        ledger,
                        move |key: ObjectKey, ledger: Arc<ReconcileLedger>| async move {
                            ledger.reconcile(index, &key).await;
                            Ok::<_, BoxError>(Action::Done)
                        },
                        cancel,
                    )
                    .await
                    .unwrap();
            }
        }),
    ];
    Replica { cancel, tasks }
}

/// Polls `cond` every 50 ms of (paused) time, for up to 500 s; panics naming `what`.
pub(crate) async fn wait_until(what: &str, cond: impl FnMut() -> bool) {
    poll_until(
        what,
        Duration::from_secs(500),
        Duration::from_millis(50),
        cond,
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn three_replicas_split_the_keys_and_a_dead_replicas_shard_moves() {
    let fake = FakeListerWatcher::<DynamicObject>::new();
    let handle = fake.handle();
    let keys: Vec<String> = (0..KEYS).map(|i| format!("ns/obj-{i}")).collect();
    for i in 0..KEYS {
        handle.add(DynamicObject::new(Some("ns"), &format!("obj-{i}")));
    }
    let leases: Vec<FakeLease> = (0..SHARDS)
        .map(|s| FakeLease::new(&format!("ns/controller-shard-{s}")))
        .collect();
    let ledger = Arc::new(ReconcileLedger::new(Duration::from_millis(1)));
    let mut replicas: Vec<Replica> = (0..3)
        .map(|i| replica(i, &fake, &leases, &ledger))
        .collect();

    // Each key reconciled, by the one replica holding its shard (each its preferred one).
    wait_until("every key reconciled", || ledger.len() == KEYS).await;
    for key in &keys {
        let by = ledger.reconciled_by(key);
        let shard = shard_of(key, SHARDS) as usize;
        assert_eq!(by, BTreeSet::from([shard]), "{key} (shard {shard})");
    }
    let per_shard: Vec<usize> = (0..SHARDS)
        .map(|s| keys.iter().filter(|k| shard_of(k, SHARDS) == s).count())
        .collect();
    assert!(
        per_shard.iter().all(|n| *n > 250),
        "a stable hash spreads keys: {per_shard:?}"
    );

    // Replica 0 dies without releasing: its shard moves once the Lease expires.
    ledger.clear();
    let dead = replicas.remove(0);
    dead.cancel.cancel();
    for t in dead.tasks {
        t.await.unwrap();
    }
    let moved: Vec<&String> = keys.iter().filter(|k| shard_of(k, SHARDS) == 0).collect();
    wait_until("the dead replica's keys reconciled again", || {
        ledger.all_reconciled(moved.iter().map(|k| k.as_str()))
    })
    .await;
    let new_owner = leases[0].current().unwrap().record.holder_identity.unwrap();
    assert_ne!(new_owner, "replica-0");
    for key in &moved {
        let by = ledger.reconciled_by(key);
        assert_eq!(by.len(), 1, "{key} reconciled by one replica: {by:?}");
        assert_eq!(format!("replica-{}", by.first().unwrap()), new_owner);
    }
    assert_eq!(ledger.overlaps(), 0, "a key ran on two replicas at once");
    for r in replicas {
        r.cancel.cancel();
        for t in r.tasks {
            t.await.unwrap();
        }
    }
}
