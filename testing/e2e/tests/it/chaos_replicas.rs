//! The chaos suite's replica form: replicas of a sharded controller (`ShardedElection` +
//! `ShardedCaches`, four shards by uid or by namespace, Leases and informers over HTTP against
//! the fake API server) are killed, restarted (under a new name or their old one, as a
//! `StatefulSet` pod comes back) and cut off from their Leases while their informers keep
//! running, all while the seed's churn and faults (dropped and corrupt watches, 410s, 429s and
//! 500s, compaction, blackouts) go on, against a server that applies `shardSelector` or one
//! that ignores it.
//!
//! Throughout, no key is reconciled by two replicas at once. Once the faults stop, the living
//! replicas' caches are exactly the server's collection, each shard cached by one replica and
//! holding only its own objects; then every object is changed once and each change is
//! reconciled by exactly the replica caching its shard.
//!
//! Seeds as the rest of the chaos suite (`KCACHE_CHAOS_SEEDS`, `KCACHE_CHAOS_SEED`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kcache_client_http::{Client, Config, HttpLeaseLock};
use kcache_informer::{LeaderElector, ShardFilter, ShardedCaches, ShardedElection};
use kcache_reflector::{
    Error as ReflectorError, LeaseLock, LeaseRecord, ShardField, VersionedLease, shard_hash,
    shard_index,
};
use kcache_store::{DynamicObject, Object};
use kcache_testing::{ReconcileLedger, poll_until};
use kcache_testing_server::fake_api_server::ServedResource;

use crate::chaos::{InformerSetup, State, World, broken_keys, seeds, server_state};
use crate::shard_work::{BuildInformer, Ledger, Replica, work};

const SHARDS: u32 = 4;

/// The Leases' timing: a replica cut off from its Leases stops its shards' work within the
/// renew deadline, a second before another may take them.
const LEASE: Duration = Duration::from_secs(2);
const RENEW_DEADLINE: Duration = Duration::from_secs(1);
const RETRY: Duration = Duration::from_millis(200);

/// A Lease lock over HTTP whose calls fail while the replica is cut off from the Leases (its
/// informers' connections are not): the partition under which a replica could go on
/// reconciling a shard that another has taken.
struct Partitioned {
    inner: HttpLeaseLock,
    cut: Arc<AtomicBool>,
}

impl Partitioned {
    fn check(&self) -> Result<(), ReflectorError> {
        if self.cut.load(Ordering::SeqCst) {
            return Err(ReflectorError::transport(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                format!("{}: cut off by the test", self.inner.describe()),
            )));
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl LeaseLock for Partitioned {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    async fn get(&self) -> Result<Option<VersionedLease>, ReflectorError> {
        self.check()?;
        self.inner.get().await
    }
    async fn create(&self, record: &LeaseRecord) -> Result<VersionedLease, ReflectorError> {
        self.check()?;
        self.inner.create(record).await
    }
    async fn update(
        &self,
        current: &VersionedLease,
        record: &LeaseRecord,
    ) -> Result<VersionedLease, ReflectorError> {
        self.check()?;
        self.inner.update(current, record).await
    }
}

/// key -> (replica, shard, resource version) of every cached object, and how many objects are
/// cached in all (more than the keys: one is cached twice).
fn cached(ledger: &Ledger) -> (BTreeMap<String, (usize, u32, String)>, usize) {
    let all = ledger.cached();
    let count = all.len();
    let map = all
        .into_iter()
        .map(|(key, replica, shard, rv)| (key, (replica, shard, rv)))
        .collect();
    (map, count)
}

/// One running replica: its name and the switch that cuts it off from its Leases.
struct Member {
    name: String,
    cut: Arc<AtomicBool>,
    running: Replica,
}

impl Member {
    fn start(
        name: &str,
        instance: usize,
        field: ShardField,
        world: &World,
        setup: InformerSetup,
        ledger: &Arc<Ledger>,
    ) -> Self {
        let url = world.server.url().to_owned();
        let client = Client::new(Config::new(url.parse().unwrap())).unwrap();
        let filter = match field {
            ShardField::Namespace => ShardFilter::by_namespace(SHARDS),
            ShardField::Uid => ShardFilter::new(SHARDS),
        };
        let cut = Arc::new(AtomicBool::new(false));
        let build: BuildInformer = Arc::new(move |lw| setup.build(lw));
        let election = ShardedElection::new(
            &filter,
            |shard| {
                let lock = Arc::new(Partitioned {
                    inner: HttpLeaseLock::new(client.clone(), "default", &format!("chaos-{shard}")),
                    cut: Arc::clone(&cut),
                });
                LeaderElector::builder(lock, name)
                    .lease_duration(LEASE)
                    .renew_deadline(RENEW_DEADLINE)
                    .retry_period(RETRY)
            },
            |shard| shard as usize % 3 == instance % 3,
        )
        .unwrap();
        let caches = ShardedCaches::new(&filter, field);
        let work = work(instance, client.clone(), 2, build, Arc::clone(ledger));
        Self {
            name: name.to_owned(),
            cut,
            running: Replica::start(election, caches, work),
        }
    }
}

fn shard_of(field: ShardField, o: &DynamicObject) -> u32 {
    shard_index(shard_hash(field.value_of(o)), SHARDS)
}

/// The replicas of a run, living and dead, and how the next one is named.
struct Fleet {
    field: ShardField,
    setup: InformerSetup,
    ledger: Arc<Ledger>,
    living: Vec<Member>,
    /// Names of killed replicas, which may come back under them.
    dead: Vec<String>,
    instances: usize,
    events: Vec<String>,
}

impl Fleet {
    fn start(&mut self, world: &World, name: Option<String>) {
        let instance = self.instances;
        self.instances += 1;
        let name = name.unwrap_or_else(|| format!("replica-{instance}"));
        self.events
            .push(format!("start {name} (instance {instance})"));
        let replica = Member::start(&name, instance, self.field, world, self.setup, &self.ledger);
        self.living.push(replica);
    }

    /// One replica event: a kill (never the last living replica), a restart (under a new name
    /// or a dead one's), or a replica cut off from its Leases or reconnected.
    async fn step(&mut self, world: &mut World) {
        match world.rng.u8(0..4) {
            0 if self.living.len() > 1 => {
                let r = self
                    .living
                    .swap_remove(world.rng.usize(0..self.living.len()));
                self.events.push(format!("kill {}", r.name));
                self.dead.push(r.name.clone());
                r.running.kill().await;
            }
            1 => {
                let old = (!self.dead.is_empty() && world.rng.bool())
                    .then(|| self.dead.swap_remove(world.rng.usize(0..self.dead.len())));
                self.start(world, old);
            }
            _ => {
                let r = &self.living[world.rng.usize(0..self.living.len())];
                let cut = !r.cut.load(Ordering::SeqCst);
                self.events.push(format!(
                    "{} {}",
                    if cut { "cut" } else { "reconnect" },
                    r.name
                ));
                r.cut.store(cut, Ordering::SeqCst);
            }
        }
    }
}

/// Waits until the living replicas' caches are exactly `want` (keys and versions), every shard
/// cached by one replica and holding only its objects.
async fn quiescent(fleet: &Fleet, want: &State, context: &str) {
    let ledger = &fleet.ledger;
    poll_until(
        &format!("{context}: the caches to equal the server"),
        Duration::from_secs(60),
        Duration::from_millis(50),
        || {
            let (cached, count) = cached(ledger);
            let got: State = cached
                .iter()
                .map(|(k, (_, _, rv))| (k.clone(), rv.clone()))
                .collect();
            count == cached.len()
                && &got == want
                && ledger.holders().len() == SHARDS as usize
                && ledger.holders().values().all(|h| h.len() == 1)
        },
    )
    .await;
}

async fn run_replicas_seed(seed: u64) {
    let field = if seed.is_multiple_of(2) {
        ShardField::Uid
    } else {
        ShardField::Namespace
    };
    let mut world = World::with_namespaces(seed, 12).await;
    let setup = InformerSetup::draw(&mut world, seed);
    let mut fleet = Fleet {
        field,
        setup,
        ledger: Arc::new(Ledger::new(ReconcileLedger::new(Duration::from_millis(1)))),
        living: Vec::new(),
        dead: Vec::new(),
        instances: 0,
        events: Vec::new(),
    };
    for _ in 0..3 {
        fleet.start(&world, None);
    }
    let steps = world.rng.usize(30..60);
    for _ in 0..steps {
        world.step().await;
        if world.rng.u8(0..6) == 0 {
            fleet.step(&mut world).await;
            // Long enough for Leases to expire and shards to move while the chaos goes on.
            tokio::time::sleep(Duration::from_millis(world.rng.u64(0..1_500))).await;
        }
    }
    world.server.clear_faults();
    for r in &fleet.living {
        r.cut.store(false, Ordering::SeqCst);
    }
    let context = format!(
        "replica chaos seed {seed} ({field:?}, {setup:?}; {})",
        fleet.events.join(", ")
    );

    // Objects whose last change reached a replica undecodable stay out of its cache until
    // their next change: change each once, then the caches must be the server's exactly.
    let want = server_state(&world.server);
    for key in broken_keys(&world.server, &want) {
        world.touch(&key);
    }
    let want = server_state(&world.server);
    quiescent(&fleet, &want, &context).await;
    let (cached, _) = cached(&fleet.ledger);
    for o in &world.server.list(&ServedResource::pods()) {
        let (_, shard, _) = &cached[&o.key().to_string()];
        assert_eq!(
            *shard,
            shard_of(field, o),
            "{context}: {} cached by shard {shard}",
            o.key()
        );
    }

    // Every object changed once: each change reconciled by the replica caching its shard, and
    // by it alone.
    fleet.ledger.reconciles.clear();
    let keys: Vec<String> = want.keys().cloned().collect();
    for key in &keys {
        world.touch(key);
    }
    let holders = fleet.ledger.holders();
    poll_until(
        &format!("{context}: every changed key reconciled"),
        Duration::from_secs(60),
        Duration::from_millis(50),
        || {
            fleet
                .ledger
                .reconciles
                .all_reconciled(keys.iter().map(String::as_str))
        },
    )
    .await;
    for key in &keys {
        let by = fleet.ledger.reconciles.reconciled_by(key);
        let shard = cached[key].1;
        assert_eq!(
            by,
            BTreeSet::from([holders[&shard][0]]),
            "{context}: {key} of shard {shard}"
        );
    }
    assert_eq!(
        fleet.ledger.reconciles.overlaps(),
        0,
        "{context}: a key was reconciled by two replicas at once"
    );
    for r in fleet.living {
        r.running.kill().await;
    }
    world.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_replicas_keep_single_ownership_under_kills_partitions_and_faults() {
    // Fewer seeds than the other chaos tests by default: each runs for several Lease periods.
    let all = seeds();
    let chosen: Vec<u64> = if std::env::var_os("KCACHE_CHAOS_SEEDS").is_some()
        || std::env::var_os("KCACHE_CHAOS_SEED").is_some()
    {
        all
    } else {
        all.into_iter().take(4).collect()
    };
    for seed in chosen {
        let outcome = tokio::spawn(run_replicas_seed(seed)).await;
        if let Err(e) = outcome {
            panic!("replica chaos seed {seed} failed (replay with KCACHE_CHAOS_SEED={seed}): {e}");
        }
        eprintln!("replica chaos seed {seed}: ok");
    }
}
