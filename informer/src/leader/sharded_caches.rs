//! [`ShardedCaches`]: per replica, the caches and the work of the shards its
//! [`ShardedElection`](crate::ShardedElection) holds, and nothing of the others: each held shard
//! lists and watches only its hash range (server-side sharded list and watch), so adding a
//! replica shrinks every replica's cache, not only its work.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use kcache_reflector::{ShardField, ShardSelector, ShardedListerWatcher};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::ShardFilter;

/// How long a shard's work waits before it starts again after ending (or panicking) on its own
/// while the shard is still held.
pub const SHARD_RESTART_DELAY: Duration = Duration::from_secs(1);

/// Runs, for every shard a [`ShardFilter`] holds, the work of that shard alone: its informers
/// (built on [`ShardScope::lister_watcher`], so the server sends only the shard's objects) and
/// its reconcile runner.
///
/// - **Gaining a shard** (its Lease acquired): `work(scope)` starts. Build the shard's informers
///   and its [`ReconcileRunner`](crate::ReconcileRunner) there: the runner waits for the caches
///   to sync before it reconciles, then reconciles every key of the shard.
/// - **Losing a shard** (its Lease lost, or the replica cancelled): the scope's
///   [`cancelled`](ShardScope::cancelled) token fires; the work stops its reconciles, then its
///   informers, and returns, dropping the shard's objects. Only then does the election let the
///   Lease go, so the next holder never reconciles a key this replica is still reconciling. A
///   Lease that could not be renewed is lost at once; the work must end within the election's
///   margin (lease duration − renew deadline − retry period), as with any leader election.
/// - **A replica that dies** without releasing its Leases: each of its shards is held again by
///   a living replica within lease duration + 2 × 2.2 × retry period (with the defaults 15 s +
///   8.8 s: a candidate sees the last renewal, and tries again, each a retry period apart
///   jittered by up to 1.2×) of the dead one's last renewal, or of the moment the living
///   replicas began to stand for it (a lease duration after their start, for a shard they do
///   not prefer), whichever is later; never before its Lease expired. Then the shard's caches
///   sync and its keys are reconciled.
/// - Work that ends (or panics) on its own while the shard is still held starts again after
///   [`SHARD_RESTART_DELAY`].
///
/// The cache's shard and the work's shard are the same hash range: with
/// [`ShardField::Namespace`] a namespace (an owner and the objects it owns) stays in one shard,
/// and [`ShardScope::key_filter`] keeps a runner to its shard's keys even when a `watches`
/// mapping names keys of other namespaces; with [`ShardField::Uid`] a flat collection spreads
/// evenly (a runner then reconciles the keys of its shard's cache: keep its `owns` and
/// `watches` to objects of the same shard). Shard counts that are powers of two split the hash
/// space exactly.
///
/// ```no_run
/// use std::sync::Arc;
/// use kcache_informer::{Action, BoxError, LeaderElector, ReconcileRunner, ShardFilter,
///     ShardedCaches, ShardedElection, SharedIndexInformer};
/// use kcache_reflector::{ListerWatcher, ShardField};
/// use kcache_store::{DynamicObject, ObjectKey};
/// use tokio_util::sync::CancellationToken;
///
/// # #[expect(dead_code, reason = "the example shows the function alone")]
/// async fn replica(
///     pods: Arc<dyn ListerWatcher<DynamicObject>>,
///     lease_lock: impl Fn(u32) -> Arc<dyn kcache_reflector::LeaseLock>,
///     me: String,
///     index: u32,
///     replicas: u32,
///     cancel: CancellationToken,
/// ) {
///     let filter = ShardFilter::by_namespace(4);
///     let election = ShardedElection::new(
///         &filter,
///         |shard| LeaderElector::builder(lease_lock(shard), me.clone()),
///         |shard| shard % replicas == index,
///     )
///     .expect("valid election settings");
///     let caches = ShardedCaches::new(&filter, ShardField::Namespace);
///     let work = caches.run(cancel.clone(), move |scope| {
///         let pods = Arc::clone(&pods);
///         async move {
///             let informer = SharedIndexInformer::builder(Arc::new(scope.lister_watcher(pods))).build();
///             let mut runner = ReconcileRunner::builder(&informer).name(format!("pods-{}", scope.shard()));
///             if let Some(keys) = scope.key_filter() {
///                 runner = runner.shards(keys);
///             }
///             let Ok(runner) = runner.build() else { return };
///             let stop_informer = CancellationToken::new();
///             let (informer, stop) = (informer.clone(), stop_informer.clone());
///             let informer = tokio::spawn(async move { informer.run(stop).await });
///             let reconcile = |key: ObjectKey, _: Arc<()>| async move {
///                 let _ = key;
///                 Ok::<_, BoxError>(Action::Done)
///             };
///             // Reconciles until the shard is lost, then stops its informer.
///             let _ = runner.run(Arc::new(()), reconcile, scope.cancelled().clone()).await;
///             stop_informer.cancel();
///             let _ = informer.await;
///         }
///     });
///     tokio::join!(election.run(cancel), work);
/// }
/// ```
#[derive(Clone)]
pub struct ShardedCaches {
    filter: ShardFilter,
    field: ShardField,
}

/// One held shard, handed to the work of [`ShardedCaches::run`].
#[derive(Clone)]
pub struct ShardScope {
    shard: u32,
    shards: u32,
    selector: ShardSelector,
    cancel: CancellationToken,
    keys: Option<ShardFilter>,
}

impl ShardScope {
    /// The shard.
    #[must_use]
    pub fn shard(&self) -> u32 {
        self.shard
    }

    /// How many shards there are.
    #[must_use]
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// The shard's hash range, as list and watch requests carry it.
    #[must_use]
    pub fn selector(&self) -> &ShardSelector {
        &self.selector
    }

    /// Fires when the shard is lost or the replica stops: stop reconciling, then stop the
    /// informers, then return.
    #[must_use]
    pub fn cancelled(&self) -> &CancellationToken {
        &self.cancel
    }

    /// `lw`, asked for this shard's objects only (and filtering what a server without sharded
    /// list and watch sends anyway).
    pub fn lister_watcher<L>(&self, lw: L) -> ShardedListerWatcher<L> {
        ShardedListerWatcher::new(lw, self.selector.clone())
    }

    /// With [`ShardField::Namespace`]: a filter holding this shard alone, mapping keys by their
    /// namespace, for [`ReconcileRunnerBuilder::shards`](crate::ReconcileRunnerBuilder::shards),
    /// so the shard's runner leaves out keys of other shards (a `watches` mapping into another
    /// namespace). `None` with [`ShardField::Uid`], whose shard a key does not tell.
    #[must_use]
    pub fn key_filter(&self) -> Option<&ShardFilter> {
        self.keys.as_ref()
    }
}

impl std::fmt::Debug for ShardScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardScope")
            .field("shard", &self.shard)
            .field("selector", &self.selector.to_string())
            .finish_non_exhaustive()
    }
}

impl ShardedCaches {
    /// The caches of `filter`'s held shards, split on `field`.
    #[must_use]
    pub fn new(filter: &ShardFilter, field: ShardField) -> Self {
        Self {
            filter: filter.clone(),
            field,
        }
    }

    /// The hash range of `shard`.
    #[must_use]
    pub fn selector(&self, shard: u32) -> ShardSelector {
        ShardSelector::shard(self.field, shard, self.filter.shards())
    }

    fn scope(&self, shard: u32, cancel: CancellationToken) -> ShardScope {
        let keys = (self.field == ShardField::Namespace).then(|| {
            let keys = ShardFilter::by_namespace(self.filter.shards());
            keys.acquire(shard);
            keys
        });
        ShardScope {
            shard,
            shards: self.filter.shards(),
            selector: self.selector(shard),
            cancel,
            keys,
        }
    }

    /// Runs `work` for each shard while it is held, until `cancel` fires; returns once every
    /// shard's work has returned.
    pub async fn run<F, Fut>(&self, cancel: CancellationToken, work: F)
    where
        F: Fn(ShardScope) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let work = Arc::new(work);
        let mut changed = self.filter.watch_changed();
        let mut running: HashMap<u32, CancellationToken> = HashMap::new();
        let mut tasks: JoinSet<u32> = JoinSet::new();
        // Which shard each task runs, to know it even when the task was aborted.
        let mut task_shard: HashMap<tokio::task::Id, u32> = HashMap::new();
        loop {
            let held = self.filter.held_shards();
            for (shard, stop) in &running {
                if !held.contains(shard) {
                    stop.cancel();
                }
            }
            for shard in held {
                if running.contains_key(&shard) {
                    continue;
                }
                // Held under the filter's lock: the Lease is not given up until the guard drops.
                let Some(guard) = self.filter.begin_shard(shard) else {
                    continue;
                };
                let stop = cancel.child_token();
                running.insert(shard, stop.clone());
                let task = tasks.spawn(shard_work(
                    self.scope(shard, stop),
                    Arc::clone(&work),
                    guard,
                ));
                task_shard.insert(task.id(), shard);
            }
            tokio::select! {
                () = cancel.cancelled() => break,
                r = changed.changed() => if r.is_err() { break },
                Some(done) = tasks.join_next_with_id(), if !tasks.is_empty() => {
                    let id = match &done {
                        Ok((id, _)) => *id,
                        Err(e) => e.id(),
                    };
                    if let Some(shard) = task_shard.remove(&id) {
                        running.remove(&shard);
                    }
                }
            }
        }
        for stop in running.values() {
            stop.cancel();
        }
        while tasks.join_next().await.is_some() {}
    }
}

/// The work of one shard, started again while the shard is held; ends when it is lost. The
/// guard keeps the shard's Lease until then.
async fn shard_work<F, Fut>(scope: ShardScope, work: Arc<F>, guard: super::shards::InFlight) -> u32
where
    F: Fn(ShardScope) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let shard = scope.shard;
    loop {
        tracing::info!(shard, selector = %scope.selector, "shard held: starting its caches and work");
        if AssertUnwindSafe(work(scope.clone()))
            .catch_unwind()
            .await
            .is_err()
        {
            tracing::error!(shard, "the shard's work panicked");
        }
        if scope.cancel.is_cancelled() {
            break;
        }
        tracing::warn!(
            shard,
            delay = ?SHARD_RESTART_DELAY,
            "the shard's work ended while the shard is held: starting it again"
        );
        tokio::select! {
            () = scope.cancel.cancelled() => break,
            () = tokio::time::sleep(SHARD_RESTART_DELAY) => {}
        }
    }
    tracing::info!(shard, "shard given up: its caches and work stopped");
    drop(guard);
    shard
}

impl std::fmt::Debug for ShardedCaches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedCaches")
            .field("filter", &self.filter)
            .field("field", &self.field)
            .finish()
    }
}
