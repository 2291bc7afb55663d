//! The runner: plays a scenario against the queue and the model in lockstep, with workers whose
//! waiting gets and drains are futures polled by hand, woken through flag wakers.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use kcache_queue::{TryGetError, WorkQueue};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use tokio::time::Instant;

use super::{WORKERS, WorkQueueModel, WorkQueueOp};

/// How many rounds of polling woken futures one settling may take.
const SETTLE_LIMIT: usize = 1000;
/// How many rounds of done and get the final drain may take.
const DRAIN_LIMIT: usize = 1000;

/// A waker that raises a flag.
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A future polled by hand, with the flag its waker raises.
struct Parked<T> {
    fut: Pin<Box<dyn Future<Output = T> + Send>>,
    flag: Arc<Flag>,
    waker: Waker,
}

impl<T> Parked<T> {
    fn new(fut: impl Future<Output = T> + Send + 'static) -> Self {
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        Self {
            fut: Box::pin(fut),
            waker: Waker::from(Arc::clone(&flag)),
            flag,
        }
    }

    fn poll(&mut self) -> Poll<T> {
        self.flag.0.store(false, Ordering::SeqCst);
        self.fut
            .as_mut()
            .poll(&mut Context::from_waker(&self.waker))
    }

    /// Whether it was woken since it was last polled.
    fn woken(&self) -> bool {
        self.flag.0.load(Ordering::SeqCst)
    }
}

/// What a worker is doing.
enum Worker {
    Idle,
    /// Waiting in a `get`.
    Waiting(Parked<Option<u32>>),
    /// Holding a key.
    Holding(u32),
}

/// A scenario under way.
struct Run {
    q: WorkQueue<u32>,
    model: WorkQueueModel,
    workers: Vec<Worker>,
    /// The `shut_down_with_drain` calls still waiting.
    drains: Vec<Parked<()>>,
    /// Counts adds and hand-outs, to order them.
    events: usize,
    /// For each key: when it was last added (an `add` taken, or a delay that passed).
    last_added: BTreeMap<u32, usize>,
    /// For each key: when it was last handed out.
    last_handed: BTreeMap<u32, usize>,
}

pub(super) async fn run(ops: &[WorkQueueOp]) -> Result<(), TestCaseError> {
    let mut run = Run {
        q: WorkQueue::builder()
            .rate_limiter(WorkQueueModel::rate_limiter())
            .name("model")
            .build(),
        model: WorkQueueModel::new(),
        workers: (0..WORKERS).map(|_| Worker::Idle).collect(),
        drains: Vec::new(),
        events: 0,
        last_added: BTreeMap::new(),
        last_handed: BTreeMap::new(),
    };
    for op in ops {
        run.play(*op).await?;
        run.settle()?;
        run.check()?;
    }
    run.finish().await
}

impl Run {
    /// Plays one step on the queue and the model.
    async fn play(&mut self, op: WorkQueueOp) -> Result<(), TestCaseError> {
        match op {
            WorkQueueOp::Add(k) => {
                self.q.add(k);
                if self.model.add(k) {
                    self.added(k);
                }
            }
            WorkQueueOp::AddAfter(k, ms) => {
                self.q.add_after(k, Duration::from_millis(ms));
                if self.model.add_after(k, ms) {
                    self.added(k);
                }
            }
            WorkQueueOp::AddRateLimited(k) => self.add_rate_limited(k)?,
            WorkQueueOp::Forget(k) => {
                self.q.forget(&k);
                self.model.forget(k);
            }
            WorkQueueOp::TryGet(w) => {
                if matches!(self.workers[w], Worker::Idle) {
                    let got = self.q.try_get();
                    prop_assert_eq!(got, self.model.try_get(), "try_get");
                    if let Ok(k) = got {
                        self.hand(w, k);
                    }
                }
            }
            WorkQueueOp::PollGet(w) => {
                if matches!(self.workers[w], Worker::Idle) {
                    let mut get = Parked::new(get(&self.q));
                    match get.poll() {
                        Poll::Ready(got) => self.got(w, got)?,
                        Poll::Pending => {
                            let expected = self.model.try_get();
                            prop_assert_eq!(expected, Err(TryGetError::Empty), "get waits");
                        }
                    }
                    // Dropped here: a cancelled get.
                }
            }
            WorkQueueOp::ParkGet(w) => {
                if matches!(self.workers[w], Worker::Idle) {
                    let mut get = Parked::new(get(&self.q));
                    match get.poll() {
                        Poll::Ready(got) => self.got(w, got)?,
                        Poll::Pending => {
                            let expected = self.model.try_get();
                            prop_assert_eq!(expected, Err(TryGetError::Empty), "get waits");
                            self.workers[w] = Worker::Waiting(get);
                        }
                    }
                }
            }
            WorkQueueOp::Done(w) => {
                if let Worker::Holding(k) = self.workers[w] {
                    self.q.forget(&k);
                    self.model.forget(k);
                    self.done(w, k);
                }
            }
            WorkQueueOp::Fail(w) => {
                if let Worker::Holding(k) = self.workers[w] {
                    self.add_rate_limited(k)?;
                    self.done(w, k);
                }
            }
            WorkQueueOp::Advance(ms) => self.advance(ms).await?,
            WorkQueueOp::ShutDown => {
                self.q.shut_down();
                self.model.shut_down(false);
            }
            WorkQueueOp::ShutDownWithDrain => {
                let q = self.q.clone();
                let mut drain = Parked::new(async move { q.shut_down_with_drain().await });
                self.model.shut_down(true);
                if drain.poll().is_ready() {
                    prop_assert!(self.model.drained(), "a drain returned with keys in flight");
                } else {
                    self.drains.push(drain);
                }
            }
        }
        Ok(())
    }

    /// `add_rate_limited(k)` on both; the limiter's counts must agree.
    fn add_rate_limited(&mut self, k: u32) -> Result<(), TestCaseError> {
        self.q.add_rate_limited(k);
        let (_, added) = self.model.add_rate_limited(k);
        if added {
            self.added(k);
        }
        prop_assert_eq!(
            self.q.num_requeues(&k),
            self.model.num_requeues(k),
            "num_requeues of {}",
            k
        );
        Ok(())
    }

    /// Moves paused time on by `ms` (the runtime's auto-advance fires the timers of waiting
    /// gets on the way), and the model's clock with it.
    async fn advance(&mut self, ms: u64) -> Result<(), TestCaseError> {
        let start = Instant::now();
        tokio::time::sleep(Duration::from_millis(ms)).await;
        prop_assert_eq!(
            start.elapsed(),
            Duration::from_millis(ms),
            "the runner needs a current-thread runtime with paused time"
        );
        for k in self.model.advance(ms) {
            self.added(k);
        }
        Ok(())
    }

    fn added(&mut self, k: u32) {
        self.events += 1;
        self.last_added.insert(k, self.events);
    }

    /// Worker `w` was handed `k`.
    fn hand(&mut self, w: usize, k: u32) {
        self.workers[w] = Worker::Holding(k);
        self.events += 1;
        self.last_handed.insert(k, self.events);
    }

    /// A `get` of worker `w` returned `got`: the model must hand out the same.
    fn got(&mut self, w: usize, got: Option<u32>) -> Result<(), TestCaseError> {
        let expected = self.model.try_get();
        if let Some(k) = got {
            prop_assert_eq!(Ok(k), expected, "get");
            self.hand(w, k);
        } else {
            prop_assert_eq!(Err(TryGetError::ShutDown), expected, "get returned None");
            self.workers[w] = Worker::Idle;
        }
        Ok(())
    }

    fn done(&mut self, w: usize, k: u32) {
        self.q.done(&k);
        self.model.done(k);
        self.workers[w] = Worker::Idle;
    }

    /// Polls every waiting get and drain that was woken, until none is.
    fn settle(&mut self) -> Result<(), TestCaseError> {
        for _ in 0..SETTLE_LIMIT {
            let mut progressed = false;
            for w in 0..self.workers.len() {
                let Worker::Waiting(get) = &mut self.workers[w] else {
                    continue;
                };
                if !get.woken() {
                    continue;
                }
                progressed = true;
                if let Poll::Ready(got) = get.poll() {
                    self.got(w, got)?;
                }
            }
            let mut i = 0;
            while i < self.drains.len() {
                if self.drains[i].woken() {
                    progressed = true;
                    if self.drains[i].poll().is_ready() {
                        prop_assert!(self.model.drained(), "a drain returned with keys in flight");
                        self.drains.swap_remove(i);
                        continue;
                    }
                }
                i += 1;
            }
            if !progressed {
                return Ok(());
            }
        }
        Err(TestCaseError::fail(
            "waiting futures kept waking each other",
        ))
    }

    /// Compares the queue with the model, and checks the rules.
    fn check(&self) -> Result<(), TestCaseError> {
        let (q, model) = (&self.q, &self.model);
        let mut held = BTreeSet::new();
        for w in &self.workers {
            if let Worker::Holding(k) = w {
                prop_assert!(held.insert(*k), "key {} held by two workers", k);
            }
        }
        let waiting = q.waiting_keys();
        let distinct: BTreeSet<_> = waiting.iter().collect();
        prop_assert_eq!(
            distinct.len(),
            waiting.len(),
            "a key waits twice: {:?}",
            waiting
        );
        prop_assert_eq!(&waiting, &model.waiting_keys(), "waiting keys, in order");
        prop_assert_eq!(q.len(), model.len(), "len");
        prop_assert_eq!(q.is_empty(), model.is_empty(), "is_empty");
        prop_assert_eq!(q.delayed_len(), model.delayed_len(), "delayed keys");
        prop_assert_eq!(
            q.processing_len(),
            model.processing_len(),
            "processing keys"
        );
        prop_assert_eq!(held.len(), model.processing_len(), "keys held by workers");
        prop_assert_eq!(
            q.is_shutting_down(),
            model.is_shutting_down(),
            "shutting down"
        );
        for k in 0..super::KEYS {
            prop_assert_eq!(
                q.num_requeues(&k),
                model.num_requeues(k),
                "num_requeues of {}",
                k
            );
        }
        let waiting_getter = self.workers.iter().any(|w| matches!(w, Worker::Waiting(_)));
        if waiting_getter {
            prop_assert!(
                model.is_empty() && !model.is_shutting_down(),
                "a get still waits with {:?} ready (shutting down: {})",
                model.waiting_keys(),
                model.is_shutting_down()
            );
        }
        if !self.drains.is_empty() {
            prop_assert!(
                !model.drained(),
                "a drain still waits with nothing in flight"
            );
        }
        for w in &self.workers {
            if let Worker::Waiting(get) = w {
                prop_assert!(!get.woken(), "checking the queue woke a waiting get");
            }
        }
        Ok(())
    }

    /// The ending: time runs past every delay (unless shut down: they were dropped), the
    /// workers finish and drain the queue, the queue shuts down and every get returns; then
    /// every key added was handed out after its last add.
    async fn finish(mut self) -> Result<(), TestCaseError> {
        if let Some(last) = self.model.last_deadline_ms() {
            self.advance(last - self.model.now_ms()).await?;
            self.settle()?;
            self.check()?;
        }
        for _ in 0..DRAIN_LIMIT {
            for w in 0..self.workers.len() {
                match self.workers[w] {
                    Worker::Holding(k) => {
                        self.q.forget(&k);
                        self.model.forget(k);
                        self.done(w, k);
                    }
                    Worker::Idle => {
                        let got = self.q.try_get();
                        prop_assert_eq!(got, self.model.try_get(), "try_get");
                        if let Ok(k) = got {
                            self.hand(w, k);
                        }
                    }
                    Worker::Waiting(_) => {}
                }
            }
            self.settle()?;
            self.check()?;
            let busy = self.workers.iter().any(|w| matches!(w, Worker::Holding(_)));
            if !busy && self.model.is_empty() {
                break;
            }
        }
        prop_assert_eq!(self.model.delayed_len(), 0, "every delay passed");
        self.q.shut_down();
        self.model.shut_down(false);
        self.settle()?;
        self.check()?;
        for w in &self.workers {
            prop_assert!(
                matches!(w, Worker::Idle),
                "every get returned after shutdown"
            );
        }
        prop_assert!(self.drains.is_empty(), "every drain returned");
        prop_assert_eq!(self.q.try_get(), Err(TryGetError::ShutDown));
        for (k, added) in &self.last_added {
            let handed = self.last_handed.get(k).copied().unwrap_or(0);
            prop_assert!(
                handed > *added,
                "key {} added (event {}) was not handed out after (last: event {})",
                k,
                added,
                handed
            );
        }
        Ok(())
    }
}

/// A `get` that owns its handle, so it can be kept across steps.
fn get(q: &WorkQueue<u32>) -> impl Future<Output = Option<u32>> + Send + 'static {
    let q = q.clone();
    async move { q.get().await }
}
