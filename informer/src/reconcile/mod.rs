//! [`ReconcileRunner`]: the other half of a controller. Informer events become keys in a
//! rate-limited [`WorkQueue`]; once the caches have synced, a pool of workers reconciles one key
//! at a time each, never the same key on two workers, and requeues failures with backoff
//! (controller-runtime's controller, client-go's worker loop).

mod action;
mod enqueue;
mod predicate;
mod worker;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use kcache_queue::{RateLimiter, WorkQueue, default_rate_limiter};
use kcache_store::{Object, ObjectKey};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

pub use self::action::{Action, TerminalError};
pub use self::enqueue::Owns;
use self::enqueue::{EnqueueMapped, EnqueueObject, EnqueueOwners, Keys, MapFn};
use self::predicate::Filtered;
pub use self::predicate::{Change, Predicate};
use self::worker::{Worker, WorkerLogs};
use crate::metrics::ReconcileMetrics;
use crate::{BoxError, Error, Result, ShardFilter, SharedIndexInformer};

/// How long [`ReconcileRunner::run`] waits for the caches to sync by default (as
/// controller-runtime's `CacheSyncTimeout`).
pub const DEFAULT_CACHE_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Subscribes one more informer for a runner: given its queue and its name.
type MakeSource = Box<dyn FnOnce(&Keys, &str) -> Result<Source> + Send>;

/// Every key of the primary cache.
type PrimaryKeys = Arc<dyn Fn() -> Vec<ObjectKey> + Send + Sync>;

/// One informer feeding the queue, through an event stream: a future that resolves once the
/// stream has yielded the informer's initial list, and the pump that turns its events into keys
/// (a task of the runner's runtime, so the whole runner lives on it: no thread per informer,
/// and tests can pause its clock).
struct Source {
    what: String,
    synced: BoxFuture<bool>,
    pump: BoxFuture<()>,
}
/// Reconciles the keys of a primary kind with a pool of workers, as a controller-runtime
/// controller does.
///
/// - **Keys in**: the primary informer's adds, updates and deletes (tombstones included)
///   enqueue the object's key; [`owns`](ReconcileRunnerBuilder::owns) enqueues the owners an
///   owned object names; [`watches`](ReconcileRunnerBuilder::watches) maps any other kind to
///   keys. The [`WorkQueue`] de-duplicates keys that are waiting.
/// - **Work**: nothing runs until every informer has synced (or
///   [`cache_sync_timeout`](ReconcileRunnerBuilder::cache_sync_timeout) fails the run); then
///   `workers` tasks each take a key, call `reconcile(key, ctx)` and act on its [`Action`].
///   A key is never reconciled by two workers at once; one added while it runs is handed out
///   again after it returns.
/// - **Failures**: `Err` requeues the key through the rate limiter (5 ms doubling to 1000 s per
///   key, 10 per second overall, by default), [`TerminalError`] does not requeue, a panic is
///   caught and handled as an error. Each is logged with its cause.
/// - **Shutdown**: when `cancel` fires no new reconcile starts, the ones running finish, the
///   subscriptions end and `run` returns.
///
/// Named apart from [`Controller`](crate::Controller), client-go's reflector-and-queue loop
/// under every informer.
///
/// ```
/// use std::sync::Arc;
/// use kcache_informer::{Action, BoxError, ReconcileRunner, SharedIndexInformer};
/// use kcache_store::{DynamicObject, ObjectKey};
/// use tokio_util::sync::CancellationToken;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let api = kcache_testing::FakeListerWatcher::<DynamicObject>::new();
/// api.handle().add(DynamicObject::new(Some("shop"), "web"));
/// let deployments = SharedIndexInformer::builder(Arc::new(api)).build();
/// let runner = ReconcileRunner::builder(&deployments).name("deployments").workers(2).build()?;
///
/// let cancel = CancellationToken::new();
/// tokio::spawn({
///     let (informer, cancel) = (deployments.clone(), cancel.clone());
///     async move { informer.run(cancel).await }
/// });
/// let (seen, done) = (Arc::new(std::sync::Mutex::new(Vec::new())), cancel.clone());
/// let log = Arc::clone(&seen);
/// let lister = deployments.lister();
/// runner
///     .run(Arc::new(()), move |key: ObjectKey, _ctx: Arc<()>| {
///         // Read from the cache, never from the server.
///         let exists = lister.get_by_key(key.as_str()).is_some();
///         log.lock().unwrap().push((key.to_string(), exists));
///         done.cancel();
///         async { Ok::<_, BoxError>(Action::Done) }
///     }, cancel)
///     .await?;
/// assert_eq!(*seen.lock().unwrap(), [("shop/web".to_owned(), true)]);
/// # Ok(())
/// # }
/// ```
pub struct ReconcileRunner {
    name: String,
    queue: WorkQueue<ObjectKey>,
    keys: Keys,
    primary_keys: PrimaryKeys,
    workers: usize,
    cache_sync_timeout: Duration,
    sources: Vec<Source>,
}

/// Builds a [`ReconcileRunner`]; see [`ReconcileRunner::builder`].
pub struct ReconcileRunnerBuilder<P: Object> {
    primary: SharedIndexInformer<P>,
    name: String,
    workers: usize,
    cache_sync_timeout: Duration,
    rate_limiter: Option<Arc<dyn RateLimiter<ObjectKey>>>,
    shards: Option<ShardFilter>,
    predicates: Vec<Predicate<P>>,
    extra: Vec<MakeSource>,
}

impl ReconcileRunner {
    /// A runner reconciling the objects of `primary`.
    pub fn builder<P: Object>(primary: &SharedIndexInformer<P>) -> ReconcileRunnerBuilder<P> {
        ReconcileRunnerBuilder {
            primary: primary.clone(),
            name: "reconciler".to_owned(),
            workers: 1,
            cache_sync_timeout: DEFAULT_CACHE_SYNC_TIMEOUT,
            rate_limiter: None,
            shards: None,
            predicates: Vec::new(),
            extra: Vec::new(),
        }
    }

    /// The runner's work queue: keys can be added by hand (a periodic full reconcile, a key
    /// from elsewhere).
    #[must_use]
    pub fn queue(&self) -> &WorkQueue<ObjectKey> {
        &self.queue
    }

    /// Waits for the caches, reconciles until `cancel` fires, then lets running reconciles
    /// finish and removes its handlers.
    ///
    /// # Errors
    ///
    /// [`Error::CacheSyncTimeout`] when an informer has not synced within the timeout;
    /// [`Error::Stopped`] when an informer stopped before it synced. Cancelling during the
    /// wait is not an error.
    pub async fn run<Ctx, F, Fut>(
        self,
        ctx: Arc<Ctx>,
        reconcile: F,
        cancel: CancellationToken,
    ) -> Result<()>
    where
        Ctx: Send + Sync + 'static,
        F: Fn(ObjectKey, Arc<Ctx>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Action, BoxError>> + Send + 'static,
    {
        let Self {
            name,
            queue,
            keys,
            primary_keys,
            workers,
            cache_sync_timeout,
            sources,
        } = self;
        // Keeps the queue's in-flight gauges current while workers are stuck; ends with it.
        let gauges = tokio::spawn(queue.in_flight_metrics());
        let mut pumps = JoinSet::new();
        if let Some(filter) = keys.shards.clone() {
            pumps.spawn(requeue_acquired(filter, keys.clone(), primary_keys));
        }
        let mut synced = Vec::with_capacity(sources.len());
        for s in sources {
            pumps.spawn(s.pump);
            synced.push((s.what, s.synced));
        }
        let serving = Serving {
            name,
            queue: queue.clone(),
            shards: keys.shards.clone(),
            workers,
            cache_sync_timeout,
        };
        let result = serving
            .serve(synced, &mut pumps, ctx, reconcile, &cancel)
            .await;
        // Dropping the pumps drops their streams, which unsubscribes them.
        pumps.shutdown().await;
        gauges.abort();
        result
    }
}

/// A runner once its sources are pumping.
struct Serving {
    name: String,
    queue: WorkQueue<ObjectKey>,
    shards: Option<ShardFilter>,
    workers: usize,
    cache_sync_timeout: Duration,
}

impl Serving {
    async fn serve<Ctx, F, Fut>(
        &self,
        synced: Vec<(String, BoxFuture<bool>)>,
        pumps: &mut JoinSet<()>,
        ctx: Arc<Ctx>,
        reconcile: F,
        cancel: &CancellationToken,
    ) -> Result<()>
    where
        Ctx: Send + Sync + 'static,
        F: Fn(ObjectKey, Arc<Ctx>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Action, BoxError>> + Send + 'static,
    {
        if !self.wait_for_caches(synced, cancel).await? {
            return Ok(());
        }
        tracing::info!(runner = %self.name, workers = self.workers, "caches synced; starting workers");
        let reconcile = Arc::new(reconcile);
        let metrics = Arc::new(ReconcileMetrics::new(&self.name));
        let logs = Arc::new(WorkerLogs::default());
        let mut workers = JoinSet::new();
        for id in 0..self.workers {
            let worker = Worker {
                id,
                runner: self.name.clone(),
                queue: self.queue.clone(),
                reconcile: Arc::clone(&reconcile),
                ctx: Arc::clone(&ctx),
                cancel: cancel.clone(),
                metrics: Arc::clone(&metrics),
                shards: self.shards.clone(),
                logs: Arc::clone(&logs),
            };
            workers.spawn(worker.run());
        }
        // Until cancelled, or until a source ends: its informer stopped, and reconciling on
        // against a cache that no longer follows the server would act on stale state.
        let result = tokio::select! {
            biased;
            () = cancel.cancelled() => Ok(()),
            // An informer stopped by the same cancellation is no failure.
            Some(_) = pumps.join_next() => if cancel.is_cancelled() {
                Ok(())
            } else {
                tracing::error!(runner = %self.name, "an informer stopped; stopping the workers");
                Err(Error::Stopped)
            },
        };
        // No new key is handed out; every worker returns once its reconcile does.
        self.queue.shut_down();
        while let Some(joined) = workers.join_next().await {
            if let Err(e) = joined {
                tracing::error!(runner = %self.name, error = %e, "a worker ended abnormally");
            }
        }
        tracing::info!(runner = %self.name, "workers stopped");
        result
    }

    /// `Ok(true)` once every source has synced, `Ok(false)` if cancelled first.
    async fn wait_for_caches(
        &self,
        synced: Vec<(String, BoxFuture<bool>)>,
        cancel: &CancellationToken,
    ) -> Result<bool> {
        // Each source resolves `false` as soon as its informer stops: fail then, not at the
        // timeout.
        let mut pending: FuturesUnordered<_> = synced
            .into_iter()
            .map(|(what, synced)| async move { (what, synced.await) })
            .collect();
        let all = async {
            while let Some((what, ok)) = pending.next().await {
                if !ok {
                    return Some(what);
                }
            }
            None
        };
        let stopped = tokio::select! {
            biased;
            () = cancel.cancelled() => return Ok(false),
            r = tokio::time::timeout(self.cache_sync_timeout, all) => r,
        };
        match stopped {
            Err(_) => Err(Error::CacheSyncTimeout {
                runner: self.name.clone(),
                after: self.cache_sync_timeout,
            }),
            Ok(Some(_)) if cancel.is_cancelled() => Ok(false),
            Ok(Some(what)) => {
                tracing::warn!(runner = %self.name, informer = %what, "an informer stopped before it synced");
                Err(Error::Stopped)
            }
            Ok(None) => Ok(true),
        }
    }
}

impl fmt::Debug for ReconcileRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReconcileRunner")
            .field("name", &self.name)
            .field("workers", &self.workers)
            .field("queued", &self.queue.len())
            .finish_non_exhaustive()
    }
}

impl<P: Object> ReconcileRunnerBuilder<P> {
    /// The name in logs and metrics (default `reconciler`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How many keys are reconciled at once (default 1; at least 1).
    #[must_use]
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n.max(1);
        self
    }

    /// How long [`run`](ReconcileRunner::run) waits for the caches to sync (default 2 min).
    #[must_use]
    pub fn cache_sync_timeout(mut self, timeout: Duration) -> Self {
        self.cache_sync_timeout = timeout;
        self
    }

    /// The rate limiter for failed and requeued keys (default
    /// [`default_rate_limiter`](kcache_queue::default_rate_limiter)).
    #[must_use]
    pub fn rate_limiter(mut self, limiter: Arc<dyn RateLimiter<ObjectKey>>) -> Self {
        self.rate_limiter = Some(limiter);
        self
    }

    /// Reconciles only the keys of the shards this replica holds in `filter` (held through a
    /// [`ShardedElection`](crate::ShardedElection)): others are not queued, a key whose shard
    /// was lost meanwhile is dropped when a worker takes it, and when a shard is acquired every
    /// cached key of it is queued (the new holder starts with a full reconcile).
    #[must_use]
    pub fn shards(mut self, filter: &ShardFilter) -> Self {
        self.shards = Some(filter.clone());
        self
    }

    /// Reconciles a primary object's change only if `predicate` lets it through (and every
    /// other predicate given; see [`Predicate`]). By default every change of a primary object
    /// is reconciled, as controller-runtime's `For` and kube-rs's `Controller` do: a
    /// controller that writes its own object's status and should not react to that write
    /// gives [`Predicate::generation_changed`] here.
    #[must_use]
    pub fn predicate(mut self, predicate: Predicate<P>) -> Self {
        self.predicates.push(predicate);
        self
    }

    /// Reconciles the owner of every object of `owned` that changes, found through its owner
    /// references (controller-runtime's `Owns`): a pod's change reconciles its deployment.
    #[must_use]
    pub fn owns<C: Object>(self, owned: &SharedIndexInformer<C>, owns: Owns) -> Self {
        self.owns_where(owned, owns, Vec::new())
    }

    /// As [`owns`](Self::owns), for the changes of `owned` that every one of `predicates`
    /// lets through.
    #[must_use]
    pub fn owns_where<C: Object>(
        mut self,
        owned: &SharedIndexInformer<C>,
        owns: Owns,
        predicates: Vec<Predicate<C>>,
    ) -> Self {
        let owned = owned.clone();
        self.extra.push(Box::new(move |keys, runner| {
            let handler = EnqueueOwners {
                keys: keys.clone(),
                owns: owns.clone(),
                name: format!("{runner}: owners ({owns:?})"),
            };
            let handler = Filtered {
                inner: handler,
                predicates,
            };
            source(&owned, handler, format!("owned {owns:?}"))
        }));
        self
    }

    /// Reconciles the keys `map` returns for every object of `other` that changes
    /// (controller-runtime's `Watches` with a map function).
    #[must_use]
    pub fn watches<C: Object>(
        self,
        other: &SharedIndexInformer<C>,
        map: impl Fn(&C) -> Vec<ObjectKey> + Send + Sync + 'static,
    ) -> Self {
        self.watches_where(other, map, Vec::new())
    }

    /// As [`watches`](Self::watches), for the changes of `other` that every one of
    /// `predicates` lets through.
    #[must_use]
    pub fn watches_where<C: Object>(
        mut self,
        other: &SharedIndexInformer<C>,
        map: impl Fn(&C) -> Vec<ObjectKey> + Send + Sync + 'static,
        predicates: Vec<Predicate<C>>,
    ) -> Self {
        let other = other.clone();
        let map: MapFn<C> = Arc::new(map);
        self.extra.push(Box::new(move |keys, runner| {
            let handler = EnqueueMapped {
                keys: keys.clone(),
                map,
                name: format!("{runner}: mapped"),
            };
            let handler = Filtered {
                inner: handler,
                predicates,
            };
            source(&other, handler, "watched".to_owned())
        }));
        self
    }

    /// Subscribes to the informers (events from now on are kept for the runner) and builds it.
    ///
    /// # Errors
    ///
    /// [`Error::Stopped`] if an informer has stopped; the subscriptions already made end.
    pub fn build(self) -> Result<ReconcileRunner> {
        let limiter = self.rate_limiter.unwrap_or_else(default_rate_limiter);
        let queue = WorkQueue::builder()
            .name(self.name.clone())
            .rate_limiter(limiter)
            .build();
        let keys = Keys {
            queue: queue.clone(),
            shards: self.shards.clone(),
        };
        let primary = Filtered {
            inner: EnqueueObject {
                keys: keys.clone(),
                name: format!("{}: objects", self.name),
            },
            predicates: self.predicates,
        };
        let mut sources = Vec::with_capacity(1 + self.extra.len());
        let built = std::iter::once(source(&self.primary, primary, "primary".to_owned()))
            .chain(self.extra.into_iter().map(|make| make(&keys, &self.name)));
        for s in built {
            // On an error the sources built so far are dropped, unsubscribing them.
            sources.push(s?);
        }
        let indexer = self.primary.indexer();
        let primary_keys: PrimaryKeys = Arc::new(move || indexer.list_keys());
        Ok(ReconcileRunner {
            name: self.name,
            queue,
            keys,
            primary_keys,
            workers: self.workers,
            cache_sync_timeout: self.cache_sync_timeout,
            sources,
        })
    }
}

impl<P: Object> fmt::Debug for ReconcileRunnerBuilder<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReconcileRunnerBuilder")
            .field("name", &self.name)
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

/// Queues the keys of the held shards whenever a shard is acquired.
async fn requeue_acquired(filter: ShardFilter, keys: Keys, primary_keys: PrimaryKeys) {
    let mut acquired = filter.watch_acquired();
    loop {
        for key in primary_keys() {
            keys.add(key);
        }
        if acquired.changed().await.is_err() {
            return;
        }
    }
}

/// Subscribes to `informer` as a [`Source`] whose events `handler` turns into keys.
fn source<T: Object>(
    informer: &SharedIndexInformer<T>,
    handler: impl crate::ResourceEventHandler<T>,
    what: String,
) -> Result<Source> {
    let mut stream = informer.subscribe()?;
    let synced = Box::pin(stream.synced());
    let pump = Box::pin(async move {
        // The panic line can repeat with every event: rate limited, per source.
        let panics = kcache_reflector::LogLimiter::new();
        while let Some(event) = stream.next().await {
            // A user's map function that panics on one object skips that event, loudly; the
            // source goes on.
            if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::handler::dispatch(&handler, &event);
            })) && let Some(permit) = panics.allow()
            {
                let key = crate::handler_panic::object_key(&event);
                tracing::error!(
                    handler = handler.name(),
                    event = crate::handler_panic::event_kind(&event),
                    key = key.as_ref().map(tracing::field::display),
                    panic = crate::handler_panic::panic_message(&*panic),
                    suppressed = permit.suppressed(),
                    "mapping an event to keys panicked; the event is skipped"
                );
            }
        }
    });
    Ok(Source { what, synced, pump })
}
