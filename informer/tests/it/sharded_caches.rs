//! Sharded caches: three replicas split four shards of a collection; each replica caches only
//! the objects of the shards it holds (the server here ignores `shardSelector`, so the
//! lister-watcher filters), the caches' union is the collection, every key is reconciled by the
//! replica caching it, and when a replica dies its shards' caches and keys move to the living,
//! never reconciled by two replicas at once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kcache_informer::{
    Action, BoxError, LeaderElector, ReconcileRunner, ShardFilter, ShardScope, ShardedCaches,
    ShardedElection, SharedIndexInformer,
};
use kcache_reflector::{ShardField, shard_hash, shard_index};
use kcache_store::{DynamicObject, Object, ObjectKey};
use kcache_testing::{FakeLease, FakeListerWatcher, ReconcileLedger};

use crate::sharding::wait_until;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const SHARDS: u32 = 4;
const NAMESPACES: usize = 40;
const PER_NAMESPACE: usize = 25;

/// Who cached and reconciled what.
struct Ledger {
    /// (replica, shard) -> the keys its cache holds, kept up to date by the shard's work.
    caches: Mutex<BTreeMap<(usize, u32), SharedIndexInformer<DynamicObject>>>,
    reconciles: ReconcileLedger,
}

impl Default for Ledger {
    fn default() -> Self {
        Self {
            caches: Mutex::default(),
            reconciles: ReconcileLedger::new(Duration::from_millis(1)),
        }
    }
}

impl Ledger {
    /// replica -> the keys it caches, over every shard it holds.
    fn cached(&self) -> BTreeMap<usize, BTreeSet<String>> {
        let mut out: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
        for ((replica, _), informer) in self.caches.lock().unwrap().iter() {
            out.entry(*replica).or_default().extend(
                informer
                    .indexer()
                    .list_keys()
                    .into_iter()
                    .map(|k| k.to_string()),
            );
        }
        out
    }
}

struct Replica {
    cancel: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

fn shard_work(
    index: usize,
    fake: FakeListerWatcher<DynamicObject>,
    ledger: Arc<Ledger>,
) -> impl Fn(ShardScope) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
+ Send
+ Sync
+ 'static {
    move |scope: ShardScope| {
        let (fake, ledger) = (fake.clone(), Arc::clone(&ledger));
        Box::pin(async move {
            let informer =
                SharedIndexInformer::builder(Arc::new(scope.lister_watcher(fake))).build();
            let mut runner = ReconcileRunner::builder(&informer)
                .name(format!("replica-{index}-shard-{}", scope.shard()))
                .workers(2);
            if let Some(keys) = scope.key_filter() {
                runner = runner.shards(keys);
            }
            let runner = runner.build().unwrap();
            ledger
                .caches
                .lock()
                .unwrap()
                .insert((index, scope.shard()), informer.clone());
            let stop = CancellationToken::new();
            let run = tokio::spawn({
                let (informer, stop) = (informer.clone(), stop.clone());
                async move { informer.run(stop).await.unwrap() }
            });
            let reconcile = move |key: ObjectKey, ledger: Arc<Ledger>| async move {
                ledger.reconciles.reconcile(index, &key).await;
                Ok::<_, BoxError>(Action::Done)
            };
            runner
                .run(Arc::clone(&ledger), reconcile, scope.cancelled().clone())
                .await
                .unwrap();
            // Reconciles over: the informer stops, and its objects go with it.
            stop.cancel();
            run.await.unwrap();
            ledger
                .caches
                .lock()
                .unwrap()
                .remove(&(index, scope.shard()));
        })
    }
}

fn replica(
    index: usize,
    field: ShardField,
    fake: &FakeListerWatcher<DynamicObject>,
    leases: &[FakeLease],
    ledger: &Arc<Ledger>,
) -> Replica {
    let identity = format!("replica-{index}");
    let filter = match field {
        ShardField::Namespace => ShardFilter::by_namespace(SHARDS),
        ShardField::Uid => ShardFilter::new(SHARDS),
    };
    let election = ShardedElection::new(
        &filter,
        |shard| {
            LeaderElector::builder(leases[shard as usize].lock(&identity), identity.clone())
                .seed(u64::from(shard) * 10 + index as u64)
        },
        // Three replicas, four shards: replica 0 prefers shards 0 and 3.
        |shard| shard as usize % 3 == index,
    )
    .unwrap();
    let caches = ShardedCaches::new(&filter, field);
    let cancel = CancellationToken::new();
    let work = shard_work(index, fake.clone(), Arc::clone(ledger));
    let tasks = vec![
        tokio::spawn({
            let cancel = cancel.clone();
            async move { election.run(cancel).await }
        }),
        tokio::spawn({
            let cancel = cancel.clone();
            async move { caches.run(cancel, work).await }
        }),
    ];
    Replica { cancel, tasks }
}

/// Namespace `n` of 40: an application and an environment. (FNV-1a's top bits follow the last
/// bytes, so `team-0` .. `team-39` would fill only two of four ranges.)
fn namespace(n: usize) -> String {
    const APPS: [&str; 10] = [
        "shop", "payments", "search", "auth", "billing", "mail", "ads", "ml", "data", "infra",
    ];
    const ENVS: [&str; 4] = ["prod", "staging", "dev", "qa"];
    format!("{}-{}", APPS[n % 10], ENVS[n / 10])
}

/// The collection: 40 namespaces of 25 objects each, and each key's shard on `field`.
fn collection(fake: &FakeListerWatcher<DynamicObject>, field: ShardField) -> BTreeMap<String, u32> {
    let handle = fake.handle();
    let mut shard_of_key = BTreeMap::new();
    for n in 0..NAMESPACES {
        let ns = namespace(n);
        for i in 0..PER_NAMESPACE {
            let mut o = DynamicObject::new(Some(&ns), &format!("obj-{i}"));
            o.metadata.uid = Some(format!("{n:08x}-{i:04x}-4000-8000-{:012x}", n * 1000 + i));
            let value = match field {
                ShardField::Namespace => o.namespace().unwrap_or(""),
                ShardField::Uid => o.uid().unwrap_or(""),
            };
            shard_of_key.insert(o.key().to_string(), shard_index(shard_hash(value), SHARDS));
            handle.add(o);
        }
    }
    shard_of_key
}

/// Asserts that each replica caches exactly the objects of the shards it holds, that no object
/// is cached twice and that the union is the collection.
fn check_caches(
    ledger: &Ledger,
    expected: &BTreeMap<String, u32>,
    field: ShardField,
    held: &BTreeMap<usize, Vec<u32>>,
) {
    let cached = ledger.cached();
    let mut union = BTreeSet::new();
    for (replica, keys) in &cached {
        for key in keys {
            assert!(union.insert(key.clone()), "{key} cached twice");
            let shard = expected[key];
            assert!(
                held[replica].contains(&shard),
                "replica {replica} caches {key} of shard {shard} ({field:?})"
            );
        }
    }
    assert_eq!(
        union.len(),
        expected.len(),
        "the caches' union is the collection"
    );
}

async fn three_replicas(field: ShardField) {
    let fake = FakeListerWatcher::<DynamicObject>::new();
    let expected = collection(&fake, field);
    let per_shard: Vec<usize> = (0..SHARDS)
        .map(|s| expected.values().filter(|v| **v == s).count())
        .collect();
    assert!(
        per_shard.iter().all(|n| *n > 0),
        "every shard has objects: {per_shard:?}"
    );
    let leases: Vec<FakeLease> = (0..SHARDS)
        .map(|s| FakeLease::new(&format!("ns/controller-shard-{s}")))
        .collect();
    let ledger = Arc::new(Ledger::default());
    let started = tokio::time::Instant::now();
    let mut replicas: Vec<Replica> = (0..3)
        .map(|i| replica(i, field, &fake, &leases, &ledger))
        .collect();
    let holders = || -> BTreeMap<usize, Vec<u32>> {
        let mut out: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
        for (s, lease) in leases.iter().enumerate() {
            if let Some(holder) = lease.current().and_then(|l| l.record.holder_identity) {
                let r: usize = holder.trim_start_matches("replica-").parse().unwrap();
                out.entry(r).or_default().push(u32::try_from(s).unwrap());
            }
        }
        out
    };

    wait_until("every key reconciled", || {
        ledger.reconciles.len() == expected.len()
    })
    .await;
    let held = holders();
    check_caches(&ledger, &expected, field, &held);
    for (key, shard) in &expected {
        let by = ledger.reconciles.reconciled_by(key);
        let owner = held
            .iter()
            .find(|(_, s)| s.contains(shard))
            .map(|(r, _)| *r)
            .unwrap();
        assert_eq!(by, BTreeSet::from([owner]), "{key} (shard {shard})");
    }

    // Replica 0 dies: its shards (0 and 3) move once their Leases expire, with their caches.
    ledger.reconciles.clear();
    let dead = replicas.remove(0);
    let killed = tokio::time::Instant::now();
    dead.cancel.cancel();
    for t in dead.tasks {
        t.await.unwrap();
    }
    assert!(
        !ledger.cached().contains_key(&0),
        "a stopped replica's caches are dropped"
    );
    let moved: Vec<&String> = expected
        .iter()
        .filter(|(_, s)| held[&0].contains(s))
        .map(|(k, _)| k)
        .collect();
    wait_until("the dead replica's keys reconciled again", || {
        ledger
            .reconciles
            .all_reconciled(moved.iter().map(|k| k.as_str()))
    })
    .await;
    // The documented bound (`ShardedCaches`): held again within lease duration + 2 x 2.2 x
    // retry period of the last renewal (at most a retry period before the kill) or of the
    // moment the living replicas began to stand for shards they do not prefer (a lease
    // duration after their start), whichever is later; then synced and reconciled (here in no
    // time); never before the Lease expired.
    let (lease, retry) = (Duration::from_secs(15), Duration::from_secs(2));
    let standing = killed.max(started + lease);
    let moved_at = tokio::time::Instant::now();
    assert!(
        moved_at - standing <= lease + retry.mul_f64(4.4) + Duration::from_millis(100),
        "the dead replica's keys had no owner for {:?} after the kill",
        moved_at - killed
    );
    assert!(
        moved_at - killed + retry >= lease,
        "taken over {:?} after the kill, before the Lease expired",
        moved_at - killed
    );
    let held = holders();
    assert!(!held.contains_key(&0));
    check_caches(&ledger, &expected, field, &held);
    for key in &moved {
        let by = ledger.reconciles.reconciled_by(key);
        assert_eq!(by.len(), 1, "{key} reconciled by one replica: {by:?}");
    }
    assert_eq!(
        ledger.reconciles.overlaps(),
        0,
        "a key ran on two replicas at once"
    );
    for r in replicas {
        r.cancel.cancel();
        for t in r.tasks {
            t.await.unwrap();
        }
    }
}

#[tokio::test(start_paused = true)]
async fn namespace_shards_cache_and_reconcile_apart_and_move_with_a_dead_replica() {
    three_replicas(ShardField::Namespace).await;
}

#[tokio::test(start_paused = true)]
async fn uid_shards_cache_and_reconcile_apart_and_move_with_a_dead_replica() {
    three_replicas(ShardField::Uid).await;
}
