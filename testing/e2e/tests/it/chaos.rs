//! The chaos suite: the full stack (a `SharedIndexInformer` over client-http) against the fake
//! API server over real HTTP, with churn and random faults (dropped connections, 410s,
//! compaction, 429/500 and 429s asking to wait 63 years, truncated and corrupt lines, stalls,
//! undecodable MODIFIED and DELETED events, repeated continue tokens, streaming lists without
//! their initial-events bookmark). After the faults stop, the cache must equal the server's
//! state and every handler's event log must replay to it: no delete lost, no object duplicated.
//!
//! An undecodable MODIFIED leaves its object out of the cache (the handlers hear a delete) until
//! the next change of it or a relist: the check first waits for the cache to equal the server
//! with only such objects missing (never at an older version), then changes each of them on the
//! server once and waits for the cache to equal it exactly.
//!
//! Seeds of 0 (mod 4) cache compact objects (`Compact<DynamicObject>`: metadata decoded, the
//! rest compressed), of 1 typed ones (`DynamicObject`), of 2 metadata only
//! (`PartialObjectMetadata` from metadata-only lists and watches), of 3 typed ones, metadata
//! only or compact ones read in protobuf (lists, watch frames and their faults in Kubernetes'
//! protobuf encoding), in turn: every form must pass the same checks. Seeds whose `seed / 4`
//! is even run over client-http's own client, the others over kube-rs's
//! (`KubeListerWatcher`): both backends must pass them too. The default eight seeds cover each
//! JSON form on each backend and the typed and metadata protobuf forms on one; 24 seeds cover
//! every form on both.
//!
//! Seeds not divisible by 3 cache one shard of four through `ShardedListerWatcher` (by uid or
//! by namespace), against a server that applies `shardSelector` or one that ignores it: the
//! cache must then equal the server's shard.
//!
//! `KCACHE_CHAOS_SEEDS=N` (or `cargo xtask chaos --seeds N`) runs N seeds; the test command
//! runs a few. A failure prints its seed; `KCACHE_CHAOS_SEED=S` replays one.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kcache_informer::{QueueKind, ResourceEventHandler, RunMode, SharedIndexInformer};
use kcache_reflector::{
    BackoffConfig, ListerWatcher, ShardField, ShardSelector, ShardedListerWatcher,
};
use kcache_store::{
    Compact, DynamicObject, Object, ObjectOrTombstone, PartialObjectMetadata, deletion_handling_key,
};
use kcache_testing::workload;
use kcache_testing_server::FakeApiServer;
use kcache_testing_server::fake_api_server::{Fault, FaultKind, ServedResource, Verb};
use tokio_util::sync::CancellationToken;

use crate::support::Backend;

/// key -> resource version, as a handler would rebuild it from its events.
pub(crate) type State = BTreeMap<String, String>;

/// A handler's view, rebuilt from its events, and every event that made no sense.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<(State, Vec<String>)>>);

fn key(o: &(impl Object + ?Sized)) -> String {
    kcache_store::meta_namespace_key(o).unwrap().to_string()
}

fn rv(o: &(impl Object + ?Sized)) -> String {
    o.resource_version().unwrap_or_default().to_owned()
}

impl Log {
    fn state(&self) -> State {
        self.0.lock().unwrap().0.clone()
    }
    fn errors(&self) -> Vec<String> {
        self.0.lock().unwrap().1.clone()
    }
}

impl<T: Object> ResourceEventHandler<T> for Log {
    fn on_add(&self, obj: &Arc<T>, _: bool) {
        let (state, errors) = &mut *self.0.lock().unwrap();
        if state.insert(key(&**obj), rv(&**obj)).is_some() {
            errors.push(format!(
                "add of {} which the handler already had",
                key(&**obj)
            ));
        }
    }
    fn on_update(&self, old: &Arc<T>, new: &Arc<T>) {
        let (state, errors) = &mut *self.0.lock().unwrap();
        if state.get(&key(&**old)) != Some(&rv(&**old)) {
            errors.push(format!(
                "update of {} from a state the handler never had",
                key(&**old)
            ));
        }
        state.insert(key(&**new), rv(&**new));
    }
    fn on_delete(&self, obj: &ObjectOrTombstone<T>) {
        let (state, errors) = &mut *self.0.lock().unwrap();
        let k = deletion_handling_key(obj).unwrap().to_string();
        if state.remove(&k).is_none() {
            errors.push(format!("delete of {k} which the handler never had"));
        }
    }
}

pub(crate) fn server_state(server: &FakeApiServer) -> State {
    server
        .list(&ServedResource::pods())
        .iter()
        .map(|o| (key(&**o), rv(&**o)))
        .collect()
}

impl World {
    /// The server's state as the informer should cache it: the whole collection, or the
    /// seed's shard of it.
    fn state(&self) -> State {
        self.server
            .list(&ServedResource::pods())
            .iter()
            .filter(|o| self.shard.as_ref().is_none_or(|s| s.matches(&***o)))
            .map(|o| (key(&**o), rv(&**o)))
            .collect()
    }
}

fn cache_state<T: Object>(inf: &SharedIndexInformer<T>) -> State {
    inf.indexer()
        .list()
        .iter()
        .map(|o| (key(&**o), rv(&**o)))
        .collect()
}

/// A `Retry-After` of 63 years: the reflector must cap it at its backoff cap.
const FOREVER: u32 = 2_000_000_000;

fn random_fault(rng: &mut fastrand::Rng) -> Fault {
    let n = rng.usize(0..5);
    match rng.u8(0..20) {
        0 => Fault::watch(FaultKind::DropAfter(n)),
        1 => Fault::watch(FaultKind::TruncateAfter(n)),
        2 => Fault::watch(FaultKind::CorruptAfter(n)),
        3 => Fault::watch(FaultKind::UnknownTypeAfter(n)),
        4 => Fault::expired_event(n),
        5 => Fault::watch(FaultKind::CloseAfter(n)),
        6 => Fault::watch(FaultKind::Stall),
        7 => Fault::status(Verb::List, 500, "InternalError", "chaos"),
        8 => Fault::status(Verb::Watch, 500, "InternalError", "chaos"),
        9 => Fault::too_many_requests(Verb::List, 1),
        10 => Fault::too_many_requests(Verb::Watch, 1),
        11 | 12 => Fault::watch(FaultKind::UndecodableModifiedAfter(n)),
        13 => Fault::watch(FaultKind::UndecodableDeletedAfter(n)),
        // Waits for a list page with a continue token (paginated seeds only).
        14 | 15 => Fault::new(Verb::List, FaultKind::RepeatContinue),
        16 => Fault::too_many_requests(Verb::List, FOREVER),
        17 => Fault::too_many_requests(Verb::Watch, FOREVER),
        // Waits for a streaming list.
        18 => Fault::watch(FaultKind::NoInitialEventsEndThenClose),
        _ => Fault::watch(FaultKind::NoInitialEventsEndThenStall),
    }
}

/// The server side of a run: the fake server, its pods and the seeded choices.
pub(crate) struct World {
    pub(crate) server: FakeApiServer,
    /// The reflector's page size, when lists are paginated (so continue tokens are in play).
    page_size: Option<i64>,
    pods: ServedResource,
    generator: workload::PodGenerator,
    names: Vec<(Option<String>, String)>,
    pub(crate) rng: fastrand::Rng,
    /// The shard the informer caches, if this seed's is sharded (see [`shard_of_seed`]).
    shard: Option<ShardSelector>,
}

/// Seeds not divisible by 3 cache one shard of four (`ShardedListerWatcher`): by uid or by
/// namespace in turn, against a server that applies `shardSelector` (`seed / 3` even) or one
/// that ignores it (odd), where the lister-watcher filters. Chosen from the seed alone, so the
/// random draws of every seed stay as they were. Returns the selector and whether the server
/// applies it.
fn shard_of_seed(seed: u64) -> (Option<ShardSelector>, bool) {
    let server_shards = (seed / 3).is_multiple_of(2);
    if seed.is_multiple_of(3) {
        return (None, server_shards);
    }
    let field = if (seed / 2).is_multiple_of(2) {
        ShardField::Uid
    } else {
        ShardField::Namespace
    };
    let index = u32::try_from(seed % 4).unwrap_or(0);
    (Some(ShardSelector::shard(field, index, 4)), server_shards)
}

impl World {
    pub(crate) async fn new(seed: u64) -> Self {
        Self::with_namespaces(seed, 3).await
    }

    /// A seed's world whose pods spread over `namespaces` namespaces.
    pub(crate) async fn with_namespaces(seed: u64, namespaces: usize) -> Self {
        let mut rng = fastrand::Rng::with_seed(seed);
        // Half the seeds list in small pages, `resourceVersion=0` lists included; a third run
        // against a server without the streaming list, so that every relist is a list.
        let page_size = rng.bool().then(|| rng.i64(2..8));
        let streaming_list = rng.u8(0..3) != 0;
        let (shard, server_shards) = shard_of_seed(seed);
        let server = FakeApiServer::builder()
            .sharded_list_watch(server_shards)
            .history_limit(40)
            .bookmark_interval(Duration::from_millis(100))
            .rv0_ignores_limit(page_size.is_none())
            .watch_list(streaming_list)
            .seed(seed)
            .start()
            .await
            .unwrap();
        let mut world = Self {
            server,
            page_size,
            pods: ServedResource::pods(),
            generator: workload::PodGenerator::new(seed, namespaces),
            names: Vec::new(),
            rng,
            shard,
        };
        for _ in 0..world.rng.usize(0..20) {
            world.create();
        }
        world
    }

    fn create(&mut self) {
        let p = self
            .server
            .create(&self.pods, self.generator.next_pod())
            .unwrap();
        self.names.push((
            p.metadata.namespace.clone(),
            p.metadata.name.clone().unwrap(),
        ));
    }

    fn update(&mut self) {
        if self.names.is_empty() {
            return self.create();
        }
        let (ns, name) = &self.names[self.rng.usize(0..self.names.len())];
        if let Some(current) = self.server.get(&self.pods, ns.as_deref(), name) {
            self.server
                .update(&self.pods, self.generator.mutate(&current))
                .unwrap();
        }
    }

    /// Changes the object `key` (`ns/name`), if it still exists.
    pub(crate) fn touch(&mut self, key: &str) {
        let (ns, name) = key
            .split_once('/')
            .map_or((None, key), |(n, k)| (Some(n), k));
        if let Some(current) = self.server.get(&self.pods, ns, name) {
            self.server
                .update(&self.pods, self.generator.mutate(&current))
                .unwrap();
        }
    }

    fn delete(&mut self) {
        if self.names.is_empty() {
            return;
        }
        let (ns, name) = self.names.swap_remove(self.rng.usize(0..self.names.len()));
        self.server
            .delete(&self.pods, ns.as_deref(), &name)
            .unwrap();
    }

    /// Watches end and cannot reopen while objects change and the history is compacted: only
    /// a relist can find out (tombstones).
    async fn blackout(&mut self) {
        self.server
            .inject(Fault::status(Verb::Watch, 503, "ServiceUnavailable", "blackout").times(1000));
        self.server.close_watches();
        for _ in 0..self.rng.usize(1..4) {
            if self.rng.bool() {
                self.create();
            } else {
                self.delete();
            }
        }
        self.server.compact();
        tokio::time::sleep(Duration::from_millis(self.rng.u64(0..50))).await;
        self.server.clear_faults();
    }

    /// One random step: a change, a fault, compaction or a blackout.
    pub(crate) async fn step(&mut self) {
        match self.rng.u8(0..11) {
            0..=2 => self.create(),
            3..=4 => self.update(),
            5 => self.delete(),
            6 => self.server.compact(),
            7 => self.server.expire_continue_tokens(),
            9 => self.blackout().await,
            _ => {
                let fault = random_fault(&mut self.rng);
                self.server.inject(fault);
            }
        }
        tokio::time::sleep(Duration::from_millis(self.rng.u64(0..15))).await;
    }
}

/// How the informer's objects are built from the wire (typed or compact), over which backend,
/// for the server at the URL.
type MakeListerWatcher<T> = fn(Backend, &str) -> Arc<dyn ListerWatcher<T>>;

/// How a seed's informers run: queue, run mode and the reflector's page size, drawn from the
/// seed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InformerSetup {
    seed: u64,
    page_size: Option<i64>,
    pub(crate) queue: QueueKind,
    pub(crate) mode: RunMode,
}

impl InformerSetup {
    pub(crate) fn draw(world: &mut World, seed: u64) -> Self {
        let queue = if world.rng.bool() {
            QueueKind::DeltaFifo
        } else {
            QueueKind::RealFifo
        };
        // Half the seeds run the informer on its own thread (what `run` does on this
        // multi-threaded runtime by default), half on a task of this runtime.
        let mode = if world.rng.bool() {
            RunMode::OwnThread
        } else {
            RunMode::CallersTask
        };
        Self {
            seed,
            page_size: world.page_size,
            queue,
            mode,
        }
    }

    /// An informer over `lw`, set up as drawn, with a short idle timeout and backoff.
    pub(crate) fn build<T: Object + Clone>(
        self,
        lw: Arc<dyn ListerWatcher<T>>,
    ) -> SharedIndexInformer<T> {
        let Self {
            seed, page_size, ..
        } = self;
        SharedIndexInformer::builder(lw)
            .queue(self.queue)
            .run_mode(self.mode)
            .reflector_options(move |b| {
                let b = match page_size {
                    Some(n) => b.page_size(n),
                    None => b,
                };
                b.seed(seed)
                    .idle_timeout(Some(Duration::from_millis(500)))
                    .backoff(BackoffConfig {
                        initial: Duration::from_millis(5),
                        cap: Duration::from_millis(100),
                        ..BackoffConfig::default()
                    })
            })
            .build()
    }
}

fn informer<T: Object + Clone>(
    world: &mut World,
    seed: u64,
    lw: Arc<dyn ListerWatcher<T>>,
) -> (SharedIndexInformer<T>, QueueKind, RunMode) {
    let setup = InformerSetup::draw(world, seed);
    (setup.build(lw), setup.queue, setup.mode)
}

/// The objects whose current version reached the client as an undecodable MODIFIED: the
/// client leaves them out until their next change or a relist.
pub(crate) fn broken_keys(server: &FakeApiServer, want: &State) -> BTreeSet<String> {
    server
        .undecodable_events()
        .into_iter()
        .filter(|e| e.event_type == "MODIFIED")
        .filter_map(|e| {
            let key = match &e.namespace {
                Some(ns) => format!("{ns}/{}", e.name),
                None => e.name.clone(),
            };
            (want.get(&key) == Some(&e.resource_version)).then_some(key)
        })
        .collect()
}

/// Whether `got` equals `want` but for keys of `may_miss` that it lacks.
fn agrees(got: &State, want: &State, may_miss: &BTreeSet<String>) -> bool {
    got.iter().all(|(k, rv)| want.get(k) == Some(rv))
        && want
            .keys()
            .all(|k| got.contains_key(k) || may_miss.contains(k))
}

/// Waits until the cache and every handler's log agree with `want` (see [`agrees`]).
async fn converge<T: Object>(
    informer: &SharedIndexInformer<T>,
    logs: &[Log],
    want: &State,
    may_miss: &BTreeSet<String>,
    context: &str,
) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let cache = cache_state(informer);
        if agrees(&cache, want, may_miss) && logs.iter().all(|l| agrees(&l.state(), want, may_miss))
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{context}: no convergence after 30s\nserver {want:?}\nmay miss {may_miss:?}\ncache  {cache:?}\nlogs   {:?}",
            logs.iter().map(Log::state).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn run_seed(seed: u64) {
    let backend = if (seed / 4).is_multiple_of(2) {
        Backend::Http
    } else {
        Backend::Kube
    };
    match seed % 4 {
        0 => {
            run_form::<Compact<DynamicObject>>(seed, "compact", backend, Backend::compact_pods)
                .await;
        }
        1 => run_form::<DynamicObject>(seed, "typed", backend, Backend::pods).await,
        2 => {
            run_form::<PartialObjectMetadata>(seed, "metadata", backend, Backend::metadata_pods)
                .await;
        }
        // Typed, metadata only or compact, in turn, over alternating backends: seed 3 typed
        // over client-http, 7 metadata over kube-rs's client, 11 compact over client-http, 15
        // typed over kube-rs's, 19 metadata over client-http, 23 compact over kube-rs's.
        _ => match (seed / 4) % 3 {
            0 => {
                run_form::<DynamicObject>(seed, "protobuf", backend, Backend::protobuf_pods).await;
            }
            1 => {
                run_form::<PartialObjectMetadata>(
                    seed,
                    "metadata-protobuf",
                    backend,
                    Backend::metadata_protobuf_pods,
                )
                .await;
            }
            _ => {
                run_form::<Compact<DynamicObject>>(
                    seed,
                    "compact-protobuf",
                    backend,
                    Backend::compact_protobuf_pods,
                )
                .await;
            }
        },
    }
}

async fn run_form<T: Object + Clone + serde::de::DeserializeOwned>(
    seed: u64,
    form: &str,
    backend: Backend,
    make: MakeListerWatcher<T>,
) {
    let mut world = World::new(seed).await;
    let lw = make(backend, world.server.url());
    let lw: Arc<dyn ListerWatcher<T>> = match &world.shard {
        Some(selector) => Arc::new(ShardedListerWatcher::new(lw, selector.clone())),
        None => lw,
    };
    let (informer, queue, mode) = informer(&mut world, seed, lw);
    let early = Log::default();
    informer.add_event_handler(early.clone()).unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (inf, cancel) = (informer.clone(), cancel.clone());
        async move { inf.run(cancel).await }
    });

    let mut late = None;
    let steps = world.rng.usize(20..60);
    for step in 0..steps {
        world.step().await;
        if step == steps / 2 {
            let log = Log::default();
            informer.add_event_handler(log.clone()).unwrap();
            late = Some(log);
        }
    }
    world.server.clear_faults();

    // Quiescence: the cache and both handlers agree with the server, except that objects
    // whose last change reached the client undecodable may be missing.
    let logs: Vec<Log> = std::iter::once(early).chain(late).collect();
    let shard = world
        .shard
        .as_ref()
        .map_or_else(String::new, |s| format!(", {s}"));
    let context = format!("seed {seed} ({form}, {backend}, {queue:?}, {mode:?}{shard})");
    let want = world.state();
    let broken = broken_keys(&world.server, &want);
    converge(&informer, &logs, &want, &broken, &context).await;
    // The next change of each brings it back.
    let missing: Vec<String> = broken
        .iter()
        .filter(|k| !cache_state(&informer).contains_key(*k))
        .cloned()
        .collect();
    for key in &missing {
        world.touch(key);
    }
    let want = world.state();
    converge(&informer, &logs, &want, &BTreeSet::new(), &context).await;
    for log in &logs {
        assert_eq!(log.errors(), Vec::<String>::new(), "{context}");
    }
    // A protobuf form asked for protobuf, and only it did.
    let asked_protobuf = world.server.requests().iter().any(|r| {
        r.accept
            .as_deref()
            .is_some_and(|a| a.starts_with("application/vnd.kubernetes.protobuf"))
    });
    assert_eq!(asked_protobuf, form.ends_with("protobuf"), "{context}");
    // A sharded seed asked for its shard on every list and watch of the pods.
    if let Some(selector) = &world.shard {
        let wire = selector.to_string();
        assert!(
            world
                .server
                .requests()
                .iter()
                .filter(|r| r.path.ends_with("/pods"))
                .all(|r| r.param("shardSelector") == Some(wire.as_str())),
            "{context}"
        );
    }
    cancel.cancel();
    run.await.unwrap().unwrap();
    world.server.shutdown().await;
}

pub(crate) fn seeds() -> Vec<u64> {
    if let Some(one) = std::env::var("KCACHE_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return vec![one];
    }
    let n = std::env::var("KCACHE_CHAOS_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    (1..=n).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_and_handlers_converge_under_chaos() {
    for seed in seeds() {
        let outcome = tokio::spawn(run_seed(seed)).await;
        if let Err(e) = outcome {
            panic!("chaos seed {seed} failed (replay with KCACHE_CHAOS_SEED={seed}): {e}");
        }
        eprintln!("chaos seed {seed}: ok");
    }
}

/// What the reconciles saw: each key's versions in order (`None`: not in the cache), the
/// start of each attempt, and whether one key ever ran twice at once.
#[derive(Default)]
struct Reconciled {
    seen: Mutex<BTreeMap<String, Vec<Option<String>>>>,
    attempts: Mutex<BTreeMap<String, Vec<Instant>>>,
    running: Mutex<BTreeSet<String>>,
    overlaps: std::sync::atomic::AtomicUsize,
}

/// The key of the object whose reconcile always fails.
const ALWAYS_FAILS: &str = "chaos/always-fails";

/// Keys whose first three reconciles fail (a tenth of them, by name): retried under chaos.
fn fails_at_first(key: &str) -> bool {
    key.bytes().map(u32::from).sum::<u32>().is_multiple_of(10)
}

/// The runner over the full stack under chaos: churn and faults on the server while 3 workers
/// reconcile. Once the faults stop, every key's last reconcile saw the server's final version
/// (or its absence, for a deleted object it had seen; keys whose first reconciles fail too),
/// and no key ever ran on two workers at once. Then, with the server quiet, a key whose
/// reconcile always fails is retried no sooner than its backoff allows (10, 20, 40, 80 ms).
async fn run_runner_seed(seed: u64) {
    use kcache_informer::{Action, BoxError, ReconcileRunner};
    use kcache_queue::ItemExponentialBackoff;
    use std::sync::atomic::Ordering;

    let mut world = World::new(seed).await;
    let lw = Backend::Http.pods::<DynamicObject>(world.server.url());
    let (informer, queue, mode) = informer(&mut world, seed, lw);
    let context = format!("runner seed {seed} ({queue:?}, {mode:?})");
    let runner = ReconcileRunner::builder(&informer)
        .name("chaos")
        .workers(3)
        .rate_limiter(Arc::new(ItemExponentialBackoff::new(
            Duration::from_millis(10),
            Duration::from_millis(500),
        )))
        .build()
        .unwrap();
    let record = Arc::new(Reconciled::default());
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (inf, cancel) = (informer.clone(), cancel.clone());
        async move { inf.run(cancel).await }
    });
    let lister = informer.lister();
    let reconciling = tokio::spawn(runner.run(
        Arc::clone(&record),
        move |key, record: Arc<Reconciled>| {
            let lister = lister.clone();
            async move {
                let key = key.to_string();
                if !record.running.lock().unwrap().insert(key.clone()) {
                    record.overlaps.fetch_add(1, Ordering::SeqCst);
                }
                let attempt = {
                    let mut attempts = record.attempts.lock().unwrap();
                    let a = attempts.entry(key.clone()).or_default();
                    a.push(Instant::now());
                    a.len()
                };
                let rv = lister
                    .get_by_key(&key)
                    .and_then(|o| o.resource_version().map(str::to_owned));
                tokio::time::sleep(Duration::from_millis(1)).await;
                record.running.lock().unwrap().remove(&key);
                if key == ALWAYS_FAILS || (fails_at_first(&key) && attempt <= 3) {
                    return Err::<Action, BoxError>("not yet".into());
                }
                record.seen.lock().unwrap().entry(key).or_default().push(rv);
                Ok(Action::Done)
            }
        },
        cancel.clone(),
    ));
    for _ in 0..world.rng.usize(20..50) {
        world.step().await;
    }
    world.server.clear_faults();
    // Objects whose last change reached the client undecodable are out of the cache until
    // their next change: change each once, as the informer chaos test does.
    let want = server_state(&world.server);
    for key in broken_keys(&world.server, &want) {
        world.touch(&key);
    }
    let want = server_state(&world.server);
    reconciles_converge(&record, &want, &context).await;
    assert_eq!(
        record.overlaps.load(Ordering::SeqCst),
        0,
        "{context}: a key ran twice at once"
    );
    failing_key_backs_off(&world, &record, &context).await;
    cancel.cancel();
    reconciling.await.unwrap().unwrap();
    run.await.unwrap().unwrap();
    world.server.shutdown().await;
}

/// With the server quiet (no churn, no faults, hence no relist re-adding keys), a key whose
/// reconcile always fails is retried only as its backoff allows.
async fn failing_key_backs_off(world: &World, record: &Reconciled, context: &str) {
    world
        .server
        .create(
            &world.pods,
            DynamicObject::new(Some("chaos"), "always-fails"),
        )
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while record
        .attempts
        .lock()
        .unwrap()
        .get(ALWAYS_FAILS)
        .map_or(0, Vec::len)
        < 5
    {
        assert!(
            Instant::now() < deadline,
            "{context}: the failing key was not retried"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let at = record.attempts.lock().unwrap()[ALWAYS_FAILS].clone();
    for (i, min) in [10, 20, 40, 80].into_iter().enumerate() {
        let gap = at[i + 1] - at[i];
        assert!(
            gap >= Duration::from_millis(min),
            "{context}: retried after {gap:?}, before its {min} ms backoff"
        );
    }
}

/// Waits until every key's last successful reconcile saw `want`'s version, and every key it
/// reconciled that the server no longer has was last seen absent.
async fn reconciles_converge(record: &Reconciled, want: &State, context: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let observed = record.seen.lock().unwrap().clone();
        let last = |k: &str| observed.get(k).and_then(|v| v.last().cloned());
        let current = want.iter().all(|(k, rv)| last(k) == Some(Some(rv.clone())));
        let gone = observed
            .keys()
            .filter(|k| !want.contains_key(*k))
            .all(|k| last(k) == Some(None));
        if current && gone {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{context}: reconciles did not converge after 30s\nserver {want:?}\nseen {observed:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_runner_converges_under_chaos() {
    for seed in seeds() {
        let outcome = tokio::spawn(run_runner_seed(seed)).await;
        if let Err(e) = outcome {
            panic!("runner chaos seed {seed} failed (replay with KCACHE_CHAOS_SEED={seed}): {e}");
        }
        eprintln!("runner chaos seed {seed}: ok");
    }
}
