//! The work of one shard in the sharded-replica tests (`sharded.rs`, `chaos_replicas.rs`): an
//! informer of the shard alone over HTTP (`ShardScope::lister_watcher`), a reconcile runner
//! over it recording into a `ReconcileLedger`, the record of which replica runs which shard's
//! cache, and a replica's running election and caches.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use kcache_client_http::{Client, HttpListerWatcher};
use kcache_informer::{
    Action, BoxError, ReconcileRunner, ShardScope, ShardedCaches, ShardedElection,
    SharedIndexInformer,
};
use kcache_reflector::{ListerWatcher, ShardedListerWatcher};
use kcache_store::{ApiResource, DynamicObject, Object, ObjectKey};
use kcache_testing::ReconcileLedger;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub(crate) type ShardLw = ShardedListerWatcher<HttpListerWatcher<DynamicObject>>;

/// (replica, shard) -> the shard's informer and lister-watcher, while its work runs.
type Running = BTreeMap<(usize, u32), (SharedIndexInformer<DynamicObject>, Arc<ShardLw>)>;

/// Builds a shard's informer over its lister-watcher.
pub(crate) type BuildInformer = Arc<
    dyn Fn(Arc<dyn ListerWatcher<DynamicObject>>) -> SharedIndexInformer<DynamicObject>
        + Send
        + Sync,
>;

/// What the replicas cache and reconcile.
pub(crate) struct Ledger {
    running: Mutex<Running>,
    /// Objects the server sent outside a shard, summed over ended shard works.
    ignored: AtomicUsize,
    pub(crate) reconciles: ReconcileLedger,
}

impl Ledger {
    pub(crate) fn new(reconciles: ReconcileLedger) -> Self {
        Self {
            running: Mutex::default(),
            ignored: AtomicUsize::new(0),
            reconciles,
        }
    }

    /// (key, replica, shard, resource version) of every cached object.
    pub(crate) fn cached(&self) -> Vec<(String, usize, u32, String)> {
        let mut out = Vec::new();
        for ((replica, shard), (informer, _)) in self.running.lock().unwrap().iter() {
            for o in informer.indexer().list() {
                let rv = o.resource_version().unwrap_or("").to_owned();
                out.push((o.key().to_string(), *replica, *shard, rv));
            }
        }
        out
    }

    /// shard -> the replicas running its work.
    pub(crate) fn holders(&self) -> BTreeMap<u32, Vec<usize>> {
        let mut out: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (replica, shard) in self.running.lock().unwrap().keys() {
            out.entry(*shard).or_default().push(*replica);
        }
        out
    }

    /// The lister-watchers of the shards running now.
    pub(crate) fn lister_watchers(&self) -> Vec<Arc<ShardLw>> {
        let running = self.running.lock().unwrap();
        running.values().map(|(_, lw)| Arc::clone(lw)).collect()
    }

    /// Objects the server sent outside a shard, over the shard works that ended.
    pub(crate) fn ignored(&self) -> usize {
        self.ignored.load(Ordering::SeqCst)
    }
}

pub(crate) fn pods() -> ApiResource {
    ApiResource::new("", "v1", "pods", true)
}

/// A shard's work for replica `replica`: the shard's informer of pods (built by `build`), a
/// reconcile runner of `workers` over it recording into the ledger; when the shard is lost,
/// the reconciles stop, then the informer.
pub(crate) fn work(
    replica: usize,
    client: Client,
    workers: usize,
    build: BuildInformer,
    ledger: Arc<Ledger>,
) -> impl Fn(ShardScope) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync + 'static {
    move |scope: ShardScope| {
        let (client, ledger, build) = (client.clone(), Arc::clone(&ledger), Arc::clone(&build));
        Box::pin(async move {
            let lw = Arc::new(scope.lister_watcher(HttpListerWatcher::dynamic(client, pods())));
            let informer = build(Arc::clone(&lw) as Arc<dyn ListerWatcher<DynamicObject>>);
            let mut runner = ReconcileRunner::builder(&informer)
                .name(format!("replica-{replica}-shard-{}", scope.shard()))
                .workers(workers);
            if let Some(keys) = scope.key_filter() {
                runner = runner.shards(keys);
            }
            let runner = runner.build().unwrap();
            ledger.running.lock().unwrap().insert(
                (replica, scope.shard()),
                (informer.clone(), Arc::clone(&lw)),
            );
            let stop = CancellationToken::new();
            let run = tokio::spawn({
                let (informer, stop) = (informer.clone(), stop.clone());
                async move { informer.run(stop).await.unwrap() }
            });
            let reconcile = move |key: ObjectKey, ledger: Arc<Ledger>| async move {
                ledger.reconciles.reconcile(replica, &key).await;
                Ok::<_, BoxError>(Action::Done)
            };
            runner
                .run(Arc::clone(&ledger), reconcile, scope.cancelled().clone())
                .await
                .unwrap();
            stop.cancel();
            run.await.unwrap();
            ledger
                .running
                .lock()
                .unwrap()
                .remove(&(replica, scope.shard()));
            let ignored = usize::try_from(lw.ignored_objects()).unwrap();
            ledger.ignored.fetch_add(ignored, Ordering::SeqCst);
        })
    }
}

/// A replica running: its election and its shard caches, each on a task.
pub(crate) struct Replica {
    cancel: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl Replica {
    /// Runs `election` and, over its shards, `caches` with `work`.
    pub(crate) fn start<F, Fut>(election: ShardedElection, caches: ShardedCaches, work: F) -> Self
    where
        F: Fn(ShardScope) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let cancel = CancellationToken::new();
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
        Self { cancel, tasks }
    }

    /// Stops it (its Leases are not released: they expire) and waits until it has stopped.
    pub(crate) async fn kill(self) {
        self.cancel.cancel();
        for t in self.tasks {
            t.await.unwrap();
        }
    }
}
