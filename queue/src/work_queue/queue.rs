//! [`WorkQueue`]: client-go's rate-limiting work queue of keys for controllers.

use std::fmt;
use std::future::{Future, poll_fn};
use std::hash::Hash;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::Poll;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::{Instant, MissedTickBehavior};

use super::locked::Locked;
use super::metrics::{IN_FLIGHT_PERIOD, WorkQueueMetrics};
use super::state::{State, Take};
use super::{RateLimiter, WorkQueueBuilder, default_rate_limiter};
use crate::TryGetError;

/// The longest delay the queue keeps a key for (about 30 years): a longer one, such as a
/// limiter's [`Duration::MAX`] for "never", is clamped to it.
const NEVER: Duration = Duration::from_secs(30 * 365 * 86_400);

/// client-go's rate-limiting work queue (`util/workqueue`): the queue between a controller's
/// event handlers, which add keys, and its workers, which reconcile them.
///
/// - **Dedupe.** A key is queued at most once: adding a key that is already waiting does
///   nothing (it keeps its place, and is neither cloned nor allocated).
/// - **One worker per key.** [`get`](Self::get) hands a key out and marks it processing until
///   [`done`](Self::done). A key added while it is processing is marked dirty and queued again
///   by `done`, so it is never handed to two workers at once, and any number of adds while it
///   is processing make exactly one more run.
/// - **Order.** Keys are handed out first in, first out.
/// - **Delays.** [`add_after`](Self::add_after) queues a key once its delay has passed; a key
///   delayed again moves to the earlier deadline only (a later one is ignored). The delay runs
///   on its own, apart from the queue: a key both waiting and delayed is handed out now, and
///   again when its delay passes if it is not waiting any more. [`get`](Self::get) itself
///   sleeps until the earliest deadline: delays need no background task or thread.
/// - **Rate limiting.** [`add_rate_limited`](Self::add_rate_limited) delays a key by what the
///   [`RateLimiter`] says ([`default_rate_limiter`] unless the builder names another);
///   [`forget`](Self::forget) resets it, and does not call `done`.
/// - **Shutdown.** After [`shut_down`](Self::shut_down), adds are ignored and delayed keys are
///   dropped, but the keys already waiting are still handed out (client-go's `Get` reports
///   shutdown only once the queue is empty), and a key added while processing is still queued
///   by `done`; then `get` returns `None`. [`shut_down_with_drain`](Self::shut_down_with_drain)
///   also waits until no key is processing.
///
/// - **Metrics.** A named queue records client-go's work-queue [metrics](crate::metrics). Its
///   two in-flight gauges are recomputed every 500 ms by the future
///   [`in_flight_metrics`](Self::in_flight_metrics) returns, which the application spawns (the
///   runtime is the application's; a `ReconcileRunner` spawns it for its queue), so they keep
///   rising while every worker is stuck; until it runs, `get` and `done` recompute them.
///
/// Time is tokio's (`tokio::time::Instant`, `sleep_until`): delays, backoff, the token bucket
/// and the metrics task all follow paused and advanced time in tests. The queue is a handle:
/// clones share it.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// use std::time::Duration;
/// use kcache_queue::WorkQueue;
///
/// let queue = WorkQueue::<String>::new();
/// queue.add("ns/a".to_owned());
/// queue.add("ns/b".to_owned());
/// queue.add("ns/a".to_owned()); // already waiting: no-op
/// assert_eq!(queue.len(), 2);
///
/// let key = queue.get().await.unwrap();
/// assert_eq!(key, "ns/a");
/// queue.add(key.clone()); // while processing: queued again on `done`
/// assert_eq!(queue.len(), 1);
/// queue.done(&key);
/// assert_eq!(queue.waiting_keys(), ["ns/b", "ns/a"]);
///
/// let b = queue.get().await.unwrap();
/// queue.done(&b);
/// let a = queue.get().await.unwrap();
/// // The reconcile failed: retry after a backoff (5 ms, then 10 ms, ...).
/// queue.add_rate_limited(a.clone());
/// queue.done(&a);
/// let start = tokio::time::Instant::now();
/// let a = queue.get().await.unwrap();
/// assert_eq!(start.elapsed(), Duration::from_millis(5));
/// queue.forget(&a); // it succeeded: reset its backoff
/// queue.done(&a);
///
/// queue.add_after("ns/c".to_owned(), Duration::from_secs(1));
/// let start = tokio::time::Instant::now();
/// assert_eq!(queue.get().await.as_deref(), Some("ns/c"));
/// assert_eq!(start.elapsed(), Duration::from_secs(1));
/// queue.done(&"ns/c".to_owned());
///
/// queue.shut_down_with_drain().await;
/// assert_eq!(queue.get().await, None);
/// # });
/// ```
pub struct WorkQueue<K> {
    inner: Arc<Inner<K>>,
}

struct Inner<K> {
    state: Mutex<State<K>>,
    /// Wakes getters: one per key queued, all on shutdown or when the earliest deadline moves.
    ready: Notify,
    /// Wakes drains: when nothing is processing any more, and on shutdown.
    idle: Notify,
    limiter: Arc<dyn RateLimiter<K>>,
    name: Option<String>,
    metrics: WorkQueueMetrics,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K: Clone + Eq + Hash + Send + Sync + 'static> Default for WorkQueue<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Clone + Eq + Hash + Send + Sync + 'static> WorkQueue<K> {
    /// A queue with [`default_rate_limiter`] and no name.
    #[must_use]
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A builder, to choose the rate limiter and the name.
    pub fn builder() -> WorkQueueBuilder<K> {
        WorkQueueBuilder::new()
    }

    pub(super) fn from_parts(
        limiter: Option<Arc<dyn RateLimiter<K>>>,
        name: Option<String>,
    ) -> Self {
        let metrics = WorkQueueMetrics::new(name.as_deref());
        let inner = Arc::new(Inner {
            state: Mutex::new(State::new(metrics.enabled())),
            ready: Notify::new(),
            idle: Notify::new(),
            limiter: limiter.unwrap_or_else(default_rate_limiter),
            name,
            metrics,
        });
        Self { inner }
    }

    fn lock(&self) -> Locked<'_, K> {
        self.inner.lock()
    }

    /// [`State::take`], recording how long the key waited and the queue's depth.
    fn take(&self) -> Take<K> {
        let mut st = self.lock();
        let taken = st.take();
        if let Take::Key(_, waited) = &taken {
            let m = &self.inner.metrics;
            m.handed_out(*waited);
            m.depth(st.len());
            if let Some((unfinished, longest)) = st.in_flight_on_operation() {
                m.in_flight(unfinished, longest);
            }
        }
        taken
    }

    /// Queues `key` unless it is waiting already (then nothing happens, nothing is cloned) or
    /// processing (then it is queued again when [`done`](Self::done)). Ignored after
    /// [`shut_down`](Self::shut_down).
    pub fn add(&self, key: K) {
        let mut st = self.lock();
        Self::add_locked(&mut st, &self.inner.metrics, key);
    }

    /// [`add`](Self::add) under the lock.
    fn add_locked(st: &mut Locked<'_, K>, metrics: &WorkQueueMetrics, key: K) {
        if st.add(key) {
            metrics.queued(1, st.len());
            st.wake(1);
        }
    }

    /// Queues `key` once `delay` has passed, as [`add`](Self::add) then; a zero delay is an
    /// `add` now. A key already delayed keeps the earlier of its two deadlines. Ignored after
    /// [`shut_down`](Self::shut_down), and delayed keys are dropped by it.
    ///
    /// Every call before shutdown counts as a retry in the
    /// [metrics](crate::metrics::WORKQUEUE_RETRIES_TOTAL), a zero delay included (client-go's
    /// `AddAfter`).
    ///
    /// A delay longer than about 30 years (such as [`Duration::MAX`]) is cut to that.
    pub fn add_after(&self, key: K, delay: Duration) {
        let mut st = self.lock();
        if st.is_shutting_down() {
            return;
        }
        let metrics = &self.inner.metrics;
        metrics.retried();
        if delay.is_zero() {
            Self::add_locked(&mut st, metrics, key);
            return;
        }
        let Some(deadline) = Instant::now().checked_add(delay.min(NEVER)) else {
            return;
        };
        let head_moved = st.add_at(key, deadline);
        drop(st);
        if head_moved {
            // Waiting getters sleep until the earliest deadline: they re-arm their timers.
            self.inner.ready.notify_waiters();
        }
    }

    /// Queues `key` after the delay the rate limiter gives it ([`RateLimiter::when`], which
    /// counts one more failure of `key`): client-go's `AddRateLimited`.
    pub fn add_rate_limited(&self, key: K) {
        let delay = self.inner.limiter.when(&key);
        self.add_after(key, delay);
    }

    /// Tells the rate limiter to stop tracking `key` (its backoff starts over). It does not
    /// call [`done`](Self::done).
    pub fn forget(&self, key: &K) {
        self.inner.limiter.forget(key);
    }

    /// How many times `key` was rate limited since it was last forgotten.
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.inner.limiter.num_requeues(key)
    }

    /// Waits for a key and hands it out; it is processing until [`done`](Self::done) is called
    /// with it. `None` once the queue is shut down and no key is waiting: the worker should
    /// stop. (Keys waiting at shutdown are still handed out first.)
    ///
    /// A key whose delay has passed is handed out without anything else waking the queue: `get`
    /// sleeps until the earliest deadline.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a key is taken out of the queue only in the poll that returns it, so
    /// dropping the future loses nothing, and a wake-up it received goes to another getter.
    ///
    /// # Panics
    ///
    /// When delayed keys are pending, `get` sleeps with tokio's timer, which panics outside a
    /// runtime with the time driver enabled (as [`tokio::time::sleep`] does).
    pub async fn get(&self) -> Option<K> {
        loop {
            // First look without registering as a waiter: the common case, a key is waiting.
            match self.take() {
                Take::Key(key, _) => return Some(key),
                Take::ShutDown => return None,
                Take::Wait(_) => {}
            }
            // Registered before looking, so no wake-up between the look and the wait is lost.
            let mut notified = pin!(self.inner.ready.notified());
            notified.as_mut().enable();
            let deadline = match self.take() {
                Take::Key(key, _) => return Some(key),
                Take::ShutDown => return None,
                Take::Wait(deadline) => deadline,
            };
            match deadline {
                None => notified.await,
                Some(deadline) => {
                    let mut sleep = pin!(tokio::time::sleep_until(deadline));
                    poll_fn(|cx| {
                        if notified.as_mut().poll(cx).is_ready()
                            || sleep.as_mut().poll(cx).is_ready()
                        {
                            Poll::Ready(())
                        } else {
                            Poll::Pending
                        }
                    })
                    .await;
                }
            }
        }
    }

    /// [`get`](Self::get) without waiting: a key if one is waiting now (delayed keys whose
    /// deadline has passed included).
    ///
    /// # Errors
    ///
    /// [`TryGetError::Empty`] when no key is waiting, [`TryGetError::ShutDown`] when no key is
    /// waiting and the queue is shut down.
    pub fn try_get(&self) -> Result<K, TryGetError> {
        match self.take() {
            Take::Key(key, _) => Ok(key),
            Take::ShutDown => Err(TryGetError::ShutDown),
            Take::Wait(_) => Err(TryGetError::Empty),
        }
    }

    /// Marks `key` as processed. If it was added while processing, it is queued again (even
    /// after shutdown). A key that is not processing is ignored.
    pub fn done(&self, key: &K) {
        let mut st = self.lock();
        let (requeued, drained, worked) = st.done(key);
        let m = &self.inner.metrics;
        m.done(worked);
        if requeued {
            m.queued(1, st.len());
            st.wake(1);
        }
        if let Some((unfinished, longest)) = st.in_flight_on_operation() {
            m.in_flight(unfinished, longest);
        }
        drop(st);
        if drained {
            self.inner.idle.notify_waiters();
        }
    }

    /// How many keys are waiting to be handed out (neither delayed nor processing).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no key is waiting to be handed out.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys waiting to be handed out, in the order they will be: a copy, for tests and
    /// diagnostics.
    pub fn waiting_keys(&self) -> Vec<K> {
        self.lock().waiting_keys()
    }

    /// How many keys are delayed: added with [`add_after`](Self::add_after) (or rate limited)
    /// and not yet due.
    pub fn delayed_len(&self) -> usize {
        self.lock().delayed_len()
    }

    /// How many keys are processing: handed out and not yet [`done`](Self::done).
    pub fn processing_len(&self) -> usize {
        self.lock().processing_len()
    }

    /// The queue's name, if the builder gave one.
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    /// A future that keeps a named queue's in-flight gauges (unfinished work, longest running)
    /// current: every 500 ms it recomputes them, so they keep rising while every worker is
    /// stuck and no operation comes (client-go's `updateUnfinishedWorkLoop`). Spawn it on the
    /// application's runtime (`tokio::spawn(queue.in_flight_metrics())`); it holds the queue
    /// weakly and ends once the queue is dropped or shut down. Until it first runs, and for a
    /// queue whose application does not spawn it, `get` and `done` recompute the gauges
    /// instead. For an unnamed queue it ends at once.
    pub fn in_flight_metrics(&self) -> impl Future<Output = ()> + Send + 'static {
        let queue = self
            .inner
            .metrics
            .enabled()
            .then(|| Arc::downgrade(&self.inner));
        async move {
            if let Some(queue) = queue {
                tick_in_flight(queue).await;
            }
        }
    }

    /// Shuts the queue down: later adds are ignored, delayed keys are dropped, and every
    /// waiting [`get`](Self::get) wakes up. Keys already waiting are still handed out. It does
    /// not wait for workers, and it releases a waiting
    /// [`shut_down_with_drain`](Self::shut_down_with_drain).
    pub fn shut_down(&self) {
        self.lock().shut_down(false);
        self.inner.ready.notify_waiters();
        self.inner.idle.notify_waiters();
    }

    /// Shuts the queue down as [`shut_down`](Self::shut_down), then waits until no key is
    /// processing: every key handed out is [`done`](Self::done). It does not wait for the keys
    /// still waiting. A later `shut_down` stops the wait; a key that is never done blocks it
    /// forever, as in client-go.
    ///
    /// # Cancel safety
    ///
    /// The queue is shut down at the first poll; dropping the future then only stops waiting.
    pub async fn shut_down_with_drain(&self) {
        self.lock().shut_down(true);
        self.inner.ready.notify_waiters();
        loop {
            let mut idle = pin!(self.inner.idle.notified());
            idle.as_mut().enable();
            if self.lock().drained() {
                return;
            }
            idle.await;
        }
    }

    /// Whether [`shut_down`](Self::shut_down) (or `shut_down_with_drain`) was called.
    pub fn is_shutting_down(&self) -> bool {
        self.lock().is_shutting_down()
    }
}

impl<K: Clone + Eq + Hash> Inner<K> {
    /// The state, locked, with the delayed keys that are due moved to the queue (and as many
    /// getters woken once it is unlocked).
    fn lock(&self) -> Locked<'_, K> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut st = Locked::new(state, &self.ready);
        let pushed = st.promote_due();
        if pushed > 0 {
            self.metrics.queued(pushed, st.len());
            st.wake(pushed);
        }
        st
    }

    /// Recomputes the in-flight gauges, unless the queue is shutting down (they freeze then,
    /// as client-go's). Returns whether it did.
    fn tick_in_flight(&self) -> bool {
        // The plain lock: reading the gauges queues no due key and wakes nobody.
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if st.is_shutting_down() {
            return false;
        }
        st.start_ticking();
        if let Some((unfinished, longest)) = st.in_flight() {
            self.metrics.in_flight(unfinished, longest);
        }
        true
    }
}

/// See [`WorkQueue::in_flight_metrics`].
async fn tick_in_flight<K: Clone + Eq + Hash>(queue: Weak<Inner<K>>) {
    let mut ticks = tokio::time::interval(IN_FLIGHT_PERIOD);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(inner) = queue.upgrade() else {
            return;
        };
        if !inner.tick_in_flight() {
            return;
        }
    }
}

impl<K> fmt::Debug for WorkQueue<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `try_lock`: never block (or deadlock) in Debug.
        let st = self.inner.state.try_lock().ok();
        f.debug_struct("WorkQueue")
            .field("name", &self.inner.name)
            .field("len", &st.as_ref().map(|s| s.len()))
            .field("shutting_down", &st.as_ref().map(|s| s.is_shutting_down()))
            .finish_non_exhaustive()
    }
}
