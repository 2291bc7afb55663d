//! [`LeaderElector`]: client-go's leader election on a Lease. Candidates take the Lease with
//! the server's optimistic concurrency; the holder renews it and does the work only while it
//! holds it; a holder that cannot renew stops its work before any other candidate may take
//! over.

mod config;
mod sharded_caches;
mod shards;

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use kcache_reflector::{
    ErrorChain, LeaseLock, LeaseRecord, LogLimiter, VersionedLease, micro_time,
};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use self::config::JITTER_FACTOR;
pub use self::config::{
    DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD, LeaderElectorBuilder,
};
pub use self::sharded_caches::{SHARD_RESTART_DELAY, ShardScope, ShardedCaches};
pub use self::shards::{ShardFilter, ShardedElection, shard_of};

/// Runs for leadership of one Lease, as client-go's `LeaderElector`.
///
/// [`run`](Self::run) tries to acquire the Lease every retry period (jittered) until it holds
/// it, then starts the work it is given with a cancellation token and renews the Lease every
/// retry period. When a renewal has not succeeded within the renew deadline, or `run`'s own
/// token is cancelled, the work's token is cancelled and `run` waits for the work to return
/// before it stops leading (and, with `release_on_cancel`, releases the Lease). So a leader
/// cut off from the server stops by `renew deadline + retry period` after its last renewal,
/// while another candidate waits `lease duration` from when it saw that renewal: with the
/// defaults (15 s, 10 s, 2 s) a margin of 3 s for the work to stop and for the two clocks to
/// drift. Each candidate measures expiry on its own clock from when it saw the record change,
/// never from the times written in it.
///
/// Like client-go's, `run` returns once leadership is lost; call it again to stand again.
///
/// ```
/// use kcache_informer::LeaderElector;
/// use kcache_testing::FakeLease;
/// use tokio_util::sync::CancellationToken;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let lease = FakeLease::new("kube-system/my-controller");
/// let elector = LeaderElector::builder(lease.lock("replica-a"), "replica-a").build()?;
/// let cancel = CancellationToken::new();
/// let stop = cancel.clone();
/// let led = elector
///     .run(cancel, move |leading: CancellationToken| async move {
///         // Leading: run the controller until `leading` is cancelled.
///         stop.cancel(); // (here: stop at once)
///         leading.cancelled().await;
///     })
///     .await;
/// assert!(led);
/// assert_eq!(lease.holders()[0], "replica-a");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct LeaderElector {
    inner: Arc<Inner>,
}

struct Inner {
    lock: Arc<dyn LeaseLock>,
    identity: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    release_on_cancel: bool,
    state: Mutex<State>,
    leader: watch::Sender<Option<String>>,
    /// The rate limit of "leader election: ... failed", which repeats every retry period
    /// while the server cannot be reached.
    failures: LogLimiter,
}

/// What this candidate last saw of the Lease, and when (on its own clock).
struct State {
    observed: Option<VersionedLease>,
    observed_at: Instant,
    rng: fastrand::Rng,
}

/// What one `tryAcquireOrRenew` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attempt {
    /// This candidate holds the Lease (acquired or renewed).
    Held,
    /// Another candidate holds a valid Lease.
    HeldByOther,
    /// The server could not be asked, or a write lost a race.
    Failed,
}

/// How the renewing ended.
enum Renewal {
    Cancelled,
    Lost,
}

impl LeaderElector {
    /// An elector for `lock` standing as `identity` (unique among the candidates: a pod name,
    /// with a random suffix if pods can restart under the same name).
    pub fn builder(lock: Arc<dyn LeaseLock>, identity: impl Into<String>) -> LeaderElectorBuilder {
        LeaderElectorBuilder {
            lock,
            identity: identity.into(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            release_on_cancel: false,
            seed: None,
        }
    }

    pub(super) fn from_builder(b: LeaderElectorBuilder) -> Self {
        let rng = b
            .seed
            .map_or_else(fastrand::Rng::new, fastrand::Rng::with_seed);
        Self {
            inner: Arc::new(Inner {
                lock: b.lock,
                identity: b.identity,
                lease_duration: b.lease_duration,
                renew_deadline: b.renew_deadline,
                retry_period: b.retry_period,
                release_on_cancel: b.release_on_cancel,
                state: Mutex::new(State {
                    observed: None,
                    observed_at: Instant::now(),
                    rng,
                }),
                leader: watch::channel(None).0,
                failures: LogLimiter::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.inner.identity
    }

    /// The holder this candidate last saw (client-go's `GetLeader`).
    pub fn leader(&self) -> Option<String> {
        self.inner.leader.borrow().clone()
    }

    /// Whether this candidate last saw itself holding the Lease (client-go's `IsLeader`).
    pub fn is_leader(&self) -> bool {
        self.leader().as_deref() == Some(self.identity())
    }

    /// The holder as seen by this candidate, updated whenever it changes (client-go's
    /// `OnNewLeader`); `None` before the Lease was first read, or once it was released.
    pub fn watch_leader(&self) -> watch::Receiver<Option<String>> {
        self.inner.leader.subscribe()
    }

    /// Stands for election until `cancel` fires or leadership is lost. Once leading, `lead`
    /// is started on a task of its own with a token that is cancelled when leadership ends;
    /// `run` returns only after `lead` has returned (so the work has stopped before the Lease
    /// can pass on), and after releasing the Lease if so configured.
    ///
    /// Returns whether it led.
    pub async fn run<F, Fut>(&self, cancel: CancellationToken, lead: F) -> bool
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        if !self.acquire(&cancel).await {
            return false;
        }
        let lease = self.inner.lock.describe();
        tracing::info!(identity = %self.inner.identity, %lease, "became leader");
        let leading = CancellationToken::new();
        // Dropping `run` stops the work too: nothing keeps working on a Lease nobody renews.
        let _stop_work = leading.clone().drop_guard();
        let mut work = tokio::spawn(lead(leading.clone()));
        let mut renewal = self.renew(&cancel).await;
        leading.cancel();
        if let Renewal::Cancelled = renewal {
            // Keep the Lease while the work drains, so that no other candidate takes over
            // before it has stopped.
            let never = CancellationToken::new();
            tokio::select! {
                finished = &mut work => self.work_ended(finished),
                _ = self.renew(&never) => {
                    renewal = Renewal::Lost;
                    self.work_ended(work.await);
                }
            }
        } else {
            self.work_ended(work.await);
        }
        match renewal {
            Renewal::Lost => tracing::warn!(
                identity = %self.inner.identity,
                %lease,
                deadline = ?self.inner.renew_deadline,
                "stopped leading: the lease could not be renewed within the renew deadline"
            ),
            Renewal::Cancelled => {
                tracing::info!(identity = %self.inner.identity, %lease, "stopped leading");
            }
        }
        if self.inner.release_on_cancel {
            self.release().await;
        }
        true
    }

    fn work_ended(&self, finished: Result<(), tokio::task::JoinError>) {
        if let Err(e) = finished {
            tracing::error!(
                identity = %self.inner.identity,
                lease = %self.inner.lock.describe(),
                error = %e,
                "the leader's work ended abnormally"
            );
        }
    }

    /// Tries until it holds the Lease (`true`) or `cancel` fires (`false`).
    async fn acquire(&self, cancel: &CancellationToken) -> bool {
        loop {
            if cancel.is_cancelled() {
                return false;
            }
            // Each server call is bounded on its own (`bounded`), as client-go's client
            // timeout bounds each request.
            let acquired = tokio::select! {
                () = cancel.cancelled() => return false,
                a = self.try_acquire_or_renew() => a == Attempt::Held,
            };
            if acquired {
                return true;
            }
            let jitter = self.state().rng.f64() * JITTER_FACTOR;
            let wait = self.inner.retry_period.mul_f64(1.0 + jitter);
            tokio::select! {
                () = cancel.cancelled() => return false,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Renews every retry period; a round that has not succeeded within the renew deadline
    /// loses the lease.
    async fn renew(&self, cancel: &CancellationToken) -> Renewal {
        loop {
            let deadline = Instant::now() + self.inner.renew_deadline;
            loop {
                // Calls are bounded one by one; the round, by its deadline.
                let left = deadline.saturating_duration_since(Instant::now());
                let attempt = tokio::time::timeout(left, self.try_acquire_or_renew());
                let attempt = tokio::select! {
                    () = cancel.cancelled() => return Renewal::Cancelled,
                    r = attempt => r.unwrap_or(Attempt::Failed),
                };
                match attempt {
                    Attempt::Held => break,
                    // Another candidate holds a valid Lease: it is lost, no use retrying.
                    Attempt::HeldByOther => return Renewal::Lost,
                    Attempt::Failed => {}
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Renewal::Lost;
                }
                tokio::select! {
                    () = cancel.cancelled() => return Renewal::Cancelled,
                    () = tokio::time::sleep(self.inner.retry_period.min(left)) => {}
                }
            }
            tokio::select! {
                () = cancel.cancelled() => return Renewal::Cancelled,
                () = tokio::time::sleep(self.inner.retry_period) => {}
            }
        }
    }

    /// `call` bounded by [`call_timeout`](Self::call_timeout): a call that does not answer in
    /// time fails with [`Timeout`](kcache_reflector::Error::Timeout).
    async fn bounded<T>(
        &self,
        call: impl Future<Output = Result<T, kcache_reflector::Error>>,
    ) -> Result<T, kcache_reflector::Error> {
        tokio::time::timeout(self.call_timeout(), call)
            .await
            .unwrap_or(Err(kcache_reflector::Error::Timeout))
    }

    /// How long one call to the server may take (client-go's client timeout: half the renew
    /// deadline, at least a second, and never past the deadline itself).
    fn call_timeout(&self) -> Duration {
        (self.inner.renew_deadline / 2)
            .max(Duration::from_secs(1))
            .min(self.inner.renew_deadline)
    }

    /// Whether the Lease last seen is still valid: it changed less than its duration ago.
    fn valid(state: &State, now: Instant) -> bool {
        let secs = state
            .observed
            .as_ref()
            .and_then(|l| l.record.lease_duration_seconds)
            .unwrap_or(0);
        let duration = Duration::from_secs(u64::try_from(secs).unwrap_or(0));
        state.observed_at + duration > now
    }

    /// Records `lease` as seen `now` (only a changed record resets the clock) and reports its
    /// holder.
    fn observe(&self, lease: VersionedLease, now: Instant) {
        let mut st = self.state();
        let changed = st
            .observed
            .as_ref()
            .is_none_or(|o| o.record != lease.record);
        let holder = lease.record.holder().map(str::to_owned);
        if changed {
            st.observed_at = now;
        }
        st.observed = Some(lease);
        drop(st);
        self.inner.leader.send_if_modified(|h| {
            let modified = *h != holder;
            if modified {
                h.clone_from(&holder);
            }
            modified
        });
    }

    /// client-go's `tryAcquireOrRenew`. A record read from the server is dated when the read
    /// returns (dating it earlier could let this candidate take over early); this candidate's
    /// own writes are dated before they are sent (so it gives up early, never late).
    async fn try_acquire_or_renew(&self) -> Attempt {
        let me = self.inner.identity.as_str();
        let now = Instant::now();
        let secs = i32::try_from(self.inner.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let mut desired = LeaseRecord::held_by(me, secs, SystemTime::now());
        let lock = &self.inner.lock;
        // The fast path: renew the Lease as last written, without reading it first.
        let fast = {
            let st = self.state();
            st.observed
                .clone()
                .filter(|o| o.record.holder() == Some(me) && Self::valid(&st, now))
        };
        if let Some(mine) = fast {
            let mut record = desired.clone();
            record.acquire_time.clone_from(&mine.record.acquire_time);
            record.lease_transitions = mine.record.lease_transitions;
            if let Ok(written) = self.bounded(lock.update(&mine, &record)).await {
                self.observe(written, now);
                return Attempt::Held;
            }
        }
        let current = match self.bounded(lock.get()).await {
            Ok(Some(current)) => current,
            Ok(None) => {
                return match self.bounded(lock.create(&desired)).await {
                    Ok(created) => {
                        self.observe(created, now);
                        Attempt::Held
                    }
                    Err(e) => {
                        self.failed("create", &e);
                        Attempt::Failed
                    }
                };
            }
            Err(e) => {
                self.failed("get", &e);
                return Attempt::Failed;
            }
        };
        let seen = Instant::now();
        self.observe(current.clone(), seen);
        if let Some(holder) = current.record.holder()
            && holder != me
            && Self::valid(&self.state(), seen)
        {
            return Attempt::HeldByOther;
        }
        if current.record.holder() == Some(me) {
            desired
                .acquire_time
                .clone_from(&current.record.acquire_time);
            desired.lease_transitions = current.record.lease_transitions;
        } else {
            desired.lease_transitions = Some(current.record.lease_transitions.unwrap_or(0) + 1);
        }
        match self.bounded(lock.update(&current, &desired)).await {
            Ok(written) => {
                self.observe(written, now);
                Attempt::Held
            }
            Err(e) => {
                self.failed("update", &e);
                Attempt::Failed
            }
        }
    }

    /// Logs a failed call: at debug for a lost race (a 409: another candidate wrote first,
    /// the normal way to lose), at warn for anything else (the server refuses or cannot be
    /// reached: an operator must hear of it, or a candidate that can never lead stays silent),
    /// at most ten lines a minute, the next one saying how many were held back.
    fn failed(&self, what: &str, e: &kcache_reflector::Error) {
        let lease = self.inner.lock.describe();
        if e.is_conflict() {
            tracing::debug!(identity = %self.inner.identity, %lease, error = %ErrorChain(e), "leader election: {what} lost a race");
        } else if let Some(permit) = self.inner.failures.allow() {
            tracing::warn!(
                identity = %self.inner.identity,
                %lease,
                error = %ErrorChain(e),
                suppressed = permit.suppressed(),
                "leader election: {what} failed"
            );
        }
    }

    /// Gives the Lease up (an empty holder, so another candidate takes it at once), if this
    /// candidate still holds it; retried on a conflict until the renew deadline.
    async fn release(&self) {
        let lock = &self.inner.lock;
        let attempt = async {
            loop {
                let current = match lock.get().await {
                    Ok(Some(current)) => current,
                    Ok(None) => return,
                    Err(e) => {
                        self.failed("release (get)", &e);
                        return;
                    }
                };
                if current.record.holder() != Some(self.identity()) {
                    return;
                }
                let t = micro_time(SystemTime::now());
                let mut record = current.record.clone();
                record.holder_identity = Some(String::new());
                record.lease_duration_seconds = Some(1);
                record.acquire_time = Some(t.clone());
                record.renew_time = Some(t);
                match lock.update(&current, &record).await {
                    Ok(written) => {
                        self.observe(written, Instant::now());
                        tracing::info!(identity = %self.inner.identity, lease = %lock.describe(), "released the lease");
                        return;
                    }
                    Err(e) if e.is_conflict() => {}
                    Err(e) => {
                        self.failed("release", &e);
                        return;
                    }
                }
            }
        };
        if tokio::time::timeout(self.inner.renew_deadline, attempt)
            .await
            .is_err()
        {
            tracing::warn!(identity = %self.inner.identity, lease = %lock.describe(), "could not release the lease within the renew deadline");
        }
    }
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("identity", &self.inner.identity)
            .field("lease", &self.inner.lock.describe())
            .field("leader", &self.leader())
            .finish_non_exhaustive()
    }
}
