//! Sharding past one leader: a stable hash splits the keys into shards, each guarded by a
//! Lease of its own; a replica reconciles only the keys of the shards it holds
//! ([`ShardFilter`]), and [`ShardedElection`] stands for the shards.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use kcache_reflector::{shard_hash, shard_index};

use super::{LeaderElector, LeaderElectorBuilder};

/// The shard of `key` among `shards`: FNV-1a (64 bits) of the key, modulo `shards` (at least
/// 1). Stable across processes and versions: the same key always lands in the same shard.
///
/// ```
/// use kcache_informer::shard_of;
/// assert_eq!(shard_of("shop/web", 3), shard_of("shop/web", 3));
/// assert!(shard_of("shop/web", 3) < 3);
/// ```
#[must_use]
pub fn shard_of(key: &str, shards: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    u32::try_from(h % u64::from(shards.max(1))).unwrap_or(0)
}

/// The shards this replica holds, shared by its [`ShardedElection`] and its
/// [`ReconcileRunner`](crate::ReconcileRunner) (`ReconcileRunnerBuilder::shards`).
///
/// A key is reconciled only while its shard is held, checked when it is queued and again when
/// a worker takes it. Giving a shard up (the replica is cancelled) waits for the reconciles of
/// its keys that are running while the Lease is still renewed, so no other replica starts on
/// those keys before they end. A shard whose Lease could not be renewed in time is lost at
/// once: no new reconcile of its keys starts, and one still running must end within the
/// election's margin (lease duration − renew deadline − retry period: 3 s with the defaults)
/// or it may overlap the next holder's, as with client-go's leader election.
#[derive(Clone)]
pub struct ShardFilter {
    inner: Arc<FilterInner>,
}

struct FilterInner {
    shards: u32,
    /// How a key maps to its shard.
    by: KeyShard,
    state: Mutex<Held>,
    /// Notified when a reconcile ends.
    idle: Notify,
    /// Bumped whenever a shard is acquired.
    acquired: watch::Sender<u64>,
    /// Bumped whenever a shard is acquired or given up.
    changed: watch::Sender<u64>,
}

/// How a [`ShardFilter`] maps a key to its shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyShard {
    /// [`shard_of`] the whole key.
    Key,
    /// The hash range of the key's namespace, as a namespace-sharded cache splits objects.
    Namespace,
}

/// The shards held, and the reconciles running per shard (a shard being released keeps its
/// count until they end).
#[derive(Default)]
struct Held {
    shards: HashSet<u32>,
    running: HashMap<u32, usize>,
}

/// A reconcile of a held shard's key, running: dropping it ends it.
pub(crate) struct InFlight {
    filter: ShardFilter,
    shard: u32,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(n) = self.filter.held().running.get_mut(&self.shard) {
            *n = n.saturating_sub(1);
        }
        self.filter.inner.idle.notify_waiters();
    }
}

impl ShardFilter {
    /// A filter over `shards` shards (at least 1), holding none yet; a key's shard is
    /// [`shard_of`] the key.
    #[must_use]
    pub fn new(shards: u32) -> Self {
        Self::with(shards, KeyShard::Key)
    }

    /// A filter over `shards` shards whose keys map as a cache sharded by namespace splits its
    /// objects: a key's shard is the one of `shards` equal hash ranges its namespace's FNV-1a
    /// hash falls in ([`ShardSelector::shard`](kcache_reflector::ShardSelector::shard) over
    /// `object.metadata.namespace`). Use it with [`ShardedCaches`](crate::ShardedCaches) and
    /// [`ShardField::Namespace`](kcache_reflector::ShardField::Namespace), so that the work and
    /// the cache split the same way.
    ///
    /// ```
    /// use kcache_informer::ShardFilter;
    /// use kcache_reflector::{ShardField, ShardSelector};
    ///
    /// let filter = ShardFilter::by_namespace(4);
    /// let shard = filter.shard_of("shop/web");
    /// assert!(ShardSelector::shard(ShardField::Namespace, shard, 4).matches_value("shop"));
    /// assert_eq!(filter.shard_of("shop/db"), shard, "one namespace, one shard");
    /// ```
    #[must_use]
    pub fn by_namespace(shards: u32) -> Self {
        Self::with(shards, KeyShard::Namespace)
    }

    fn with(shards: u32, by: KeyShard) -> Self {
        Self {
            inner: Arc::new(FilterInner {
                shards: shards.max(1),
                by,
                state: Mutex::new(Held::default()),
                idle: Notify::new(),
                acquired: watch::channel(0).0,
                changed: watch::channel(0).0,
            }),
        }
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// How many shards the keys are split into.
    #[must_use]
    pub fn shards(&self) -> u32 {
        self.inner.shards
    }

    /// The shard of `key`.
    #[must_use]
    pub fn shard_of(&self, key: &str) -> u32 {
        match self.inner.by {
            KeyShard::Key => shard_of(key, self.inner.shards),
            KeyShard::Namespace => {
                // A cluster-scoped key has no namespace: the server hashes "".
                let namespace = key.split_once('/').map_or("", |(ns, _)| ns);
                shard_index(shard_hash(namespace), self.inner.shards)
            }
        }
    }

    /// Whether this replica holds `key`'s shard now.
    #[must_use]
    pub fn owns(&self, key: &str) -> bool {
        self.held().shards.contains(&self.shard_of(key))
    }

    /// The shards held now, sorted.
    #[must_use]
    pub fn held_shards(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.held().shards.iter().copied().collect();
        v.sort_unstable();
        v
    }

    /// Changes whenever a shard is acquired (the runner then queues the held shards' keys).
    pub(crate) fn watch_acquired(&self) -> watch::Receiver<u64> {
        self.inner.acquired.subscribe()
    }

    /// Changes whenever a shard is acquired or given up.
    pub(crate) fn watch_changed(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// Starts work on all of `shard` if it is held: the shard is not given up (its Lease not
    /// released) until the returned guard is dropped.
    pub(crate) fn begin_shard(&self, shard: u32) -> Option<InFlight> {
        let mut held = self.held();
        if !held.shards.contains(&shard) {
            return None;
        }
        *held.running.entry(shard).or_default() += 1;
        Some(InFlight {
            filter: self.clone(),
            shard,
        })
    }

    /// Starts a reconcile of `key` if its shard is held.
    pub(crate) fn begin(&self, key: &str) -> Option<InFlight> {
        self.begin_shard(self.shard_of(key))
    }

    /// `shard` is held from now on.
    pub(crate) fn acquire(&self, shard: u32) {
        self.held().shards.insert(shard);
        self.inner.acquired.send_modify(|n| *n += 1);
        self.inner.changed.send_modify(|n| *n += 1);
    }

    /// `shard` is no longer held: no reconcile of its keys starts any more; resolves once the
    /// running ones have ended.
    async fn release(&self, shard: u32) {
        self.held().shards.remove(&shard);
        self.inner.changed.send_modify(|n| *n += 1);
        loop {
            let idle = self.inner.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.held().running.get(&shard).is_none_or(|n| *n == 0) {
                return;
            }
            idle.await;
        }
    }
}

impl std::fmt::Debug for ShardFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardFilter")
            .field("shards", &self.inner.shards)
            .field("held", &self.held_shards())
            .finish()
    }
}

/// Stands for every shard's Lease on behalf of one replica (the step past one leader): each
/// shard has an elector of its own; the replica stands at once for its preferred shards and,
/// after one lease duration, for the others, so that replicas started together split the
/// shards and a dead replica's shards move to the living once their Leases expire.
///
/// Holding a shard adds it to the [`ShardFilter`]; losing it removes it and waits for the
/// running reconciles of its keys before the Lease can pass on.
pub struct ShardedElection {
    filter: ShardFilter,
    /// Each shard's elector (shard `i` at index `i`) and whether it is preferred.
    electors: Vec<(LeaderElector, bool)>,
    /// The longest lease duration among them: how long to wait before standing for a shard
    /// that is not preferred.
    lease_duration: Duration,
}

impl ShardedElection {
    /// An election over `filter`'s shards: `elector(shard)` builds each shard's elector (its
    /// own Lease, this replica's identity), `preferred(shard)` says which shards to stand for at
    /// once (e.g. `shard % replicas == my index`).
    ///
    /// # Errors
    ///
    /// The first elector's configuration error.
    pub fn new(
        filter: &ShardFilter,
        elector: impl Fn(u32) -> LeaderElectorBuilder,
        preferred: impl Fn(u32) -> bool,
    ) -> crate::Result<Self> {
        let mut electors = Vec::new();
        let mut lease_duration = Duration::ZERO;
        for shard in 0..filter.shards() {
            let b = elector(shard);
            lease_duration = lease_duration.max(b.lease_duration);
            electors.push((b.build()?, preferred(shard)));
        }
        Ok(Self {
            filter: filter.clone(),
            electors,
            lease_duration,
        })
    }

    /// Stands for every shard until `cancel` fires; returns once every shard's work has stopped.
    pub async fn run(&self, cancel: CancellationToken) {
        let mut standing = JoinSet::new();
        for (shard, (elector, preferred)) in (0..).zip(&self.electors) {
            let (elector, preferred) = (elector.clone(), *preferred);
            let (filter, cancel, patience) =
                (self.filter.clone(), cancel.clone(), self.lease_duration);
            standing.spawn(async move {
                if !preferred {
                    tokio::select! {
                        () = cancel.cancelled() => return,
                        () = tokio::time::sleep(patience) => {}
                    }
                }
                while !cancel.is_cancelled() {
                    let filter = filter.clone();
                    elector
                        .run(cancel.clone(), move |leading| hold(filter, shard, leading))
                        .await;
                }
            });
        }
        while standing.join_next().await.is_some() {}
    }
}

/// The work of holding `shard`: in the filter until `leading` is cancelled, then out of it
/// once its running reconciles have ended.
fn hold(filter: ShardFilter, shard: u32, leading: CancellationToken) -> impl Future<Output = ()> {
    filter.acquire(shard);
    async move {
        leading.cancelled().await;
        filter.release(shard).await;
    }
}

impl std::fmt::Debug for ShardedElection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedElection")
            .field("filter", &self.filter)
            .finish_non_exhaustive()
    }
}
