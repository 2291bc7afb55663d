//! One registered handler or stream: its buffer, its delivery thread and its sync tracking.

use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::thread::{self, ThreadId};
use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use crate::handler::dispatch;
use crate::handler_panic::{self, KeyOf, PANIC_PAUSE};
use crate::informer_logs::InformerLogs;
use crate::metrics::HandlerMetrics;
use crate::sync_signal::SyncSignal;
use crate::{Error, Event, ResourceEventHandler};

/// Pending events at which a slow handler is first reported (client-go traces at 1024 too),
/// then at every doubling; each time the buffer fills up again it is reported again, within
/// the informer's rate limit ([`InformerLogs::behind`]).
const BEHIND_WARNING: usize = 1024;

/// Handled events the delivery thread hands back at most, for the pushing side to drop.
const SPENT_LIMIT: usize = 1024;

/// How long a delivery thread whose buffer ran dry waits for more before it sleeps.
const SPIN: Duration = Duration::from_micros(50);

/// How long handed-back events wait for the pushing side before the delivery thread drops them.
const SPENT_LINGER: Duration = Duration::from_millis(100);

/// How a delivery thread paces itself; tests shorten or lengthen the waits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pacing {
    /// How long handed-back events wait for a push before the delivery thread drops them.
    pub(crate) linger: Duration,
    /// How long the thread waits after a callback panicked (see [`handler_panic`]).
    pub(crate) panic_pause: Duration,
}

impl Default for Pacing {
    fn default() -> Self {
        Self {
            linger: SPENT_LINGER,
            panic_pause: PANIC_PAUSE,
        }
    }
}

/// The buffer of a thread-delivered listener.
struct Buffer<T> {
    events: VecDeque<Event<T>>,
    /// Events already handled, handed back for the pushing thread to drop (see [`deliver`]).
    spent: Vec<Event<T>>,
    closed: bool,
    /// The delivery thread is waiting on the condition variable.
    waiting: bool,
}

/// State shared by a listener, its delivery side and its registration handle.
pub(crate) struct Shared<T> {
    buffer: Mutex<Buffer<T>>,
    ready: Condvar,
    /// Events queued and not yet delivered.
    depth: AtomicUsize,
    /// Initial-list adds queued and not yet delivered.
    outstanding_initial: AtomicUsize,
    /// The informer's own sync state: synced once its queue has processed the initial list.
    informer: Arc<SyncSignal>,
    synced_latch: AtomicBool,
    closed: AtomicBool,
    /// Notified when the last initial-list add is delivered and when the listener closes.
    changed: Notify,
    pacing: Pacing,
    /// The delivery thread, set by the thread itself before it delivers anything; never set
    /// for a stream, which has none.
    delivery_thread: OnceLock<ThreadId>,
    /// Whether the delivery thread has exited (and dropped its handler): latched, and set
    /// from the start for a stream.
    exited: AtomicBool,
    /// Notified when the delivery thread exits.
    exit: Notify,
    /// The handler's buffer-depth gauge (moved with `depth`) and panic counter.
    metrics: HandlerMetrics,
    /// The informer's rate limits of repeated lines, shared by its listeners.
    logs: Arc<InformerLogs>,
}

impl<T> Shared<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Buffer<T>> {
        self.buffer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Synced: the informer has synced and every initial-list add reached the handler. Latched.
    pub(crate) fn has_synced(&self) -> bool {
        if self.synced_latch.load(Ordering::Acquire) {
            return true;
        }
        let synced =
            self.informer.is_synced() && self.outstanding_initial.load(Ordering::Acquire) == 0;
        if synced {
            self.synced_latch.store(true, Ordering::Release);
        }
        synced
    }

    pub(crate) fn depth(&self) -> usize {
        self.depth.load(Ordering::Acquire)
    }

    pub(crate) fn mark_closed(&self) {
        self.closed.store(true, Ordering::Release);
        self.changed.notify_waiters();
    }

    /// Resolves with `true` once [`has_synced`](Self::has_synced), `false` once the listener
    /// closed (removed, dropped, or its informer stopped) without having synced. Woken by the
    /// informer's sync, the last initial-list delivery and the close; never polls. The future
    /// owns a handle on the listener's state, so the registration or stream it came from can
    /// be dropped or polled meanwhile.
    pub(crate) fn owned_synced(self: &Arc<Self>) -> impl Future<Output = bool> + Send + 'static
    where
        T: Send + Sync + 'static,
    {
        let shared = Arc::clone(self);
        async move { shared.synced().await }
    }

    /// See [`owned_synced`](Self::owned_synced), borrowing.
    async fn synced(&self) -> bool {
        loop {
            let own = self.changed.notified();
            let informer = self.informer.changed().notified();
            tokio::pin!(own, informer);
            own.as_mut().enable();
            informer.as_mut().enable();
            if self.has_synced() {
                return true;
            }
            if self.is_closed() || self.informer.is_stopped() {
                return false;
            }
            tokio::select! {
                () = own => {}
                () = informer => {}
            }
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Resolves once the delivery thread has exited, its handler dropped; at once for a
    /// stream. Woken by the thread's exit, never polls. The future owns a handle on the
    /// listener's state.
    ///
    /// Polled on the delivery thread itself (from inside a callback), where the wait could
    /// never end, it resolves with [`Error::ShutdownFromHandler`] instead.
    pub(crate) fn owned_exited(
        self: &Arc<Self>,
    ) -> impl Future<Output = crate::Result<()>> + Send + 'static
    where
        T: Send + Sync + 'static,
    {
        let shared = Arc::clone(self);
        async move {
            loop {
                let exit = shared.exit.notified();
                tokio::pin!(exit);
                exit.as_mut().enable();
                if shared.exited.load(Ordering::Acquire) {
                    return Ok(());
                }
                // Thread ids are never reused, so only a running delivery thread matches.
                if shared.delivery_thread.get() == Some(&thread::current().id()) {
                    return Err(Error::ShutdownFromHandler);
                }
                exit.await;
            }
        }
    }

    /// Waits `pause` on the buffer's condition variable, or less if the listener closes
    /// meanwhile (so that a pause never delays a removal or a stop).
    fn pause(&self, pause: Duration) {
        let deadline = std::time::Instant::now().checked_add(pause);
        let mut buf = self.lock();
        while !buf.closed {
            let left = match deadline {
                Some(deadline) => deadline.saturating_duration_since(std::time::Instant::now()),
                None => pause,
            };
            if left.is_zero() {
                break;
            }
            // Pushes do not notify: `waiting` is false. Closing does.
            buf = self
                .ready
                .wait_timeout(buf, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Bookkeeping once an event has been handed to its consumer. The gauge moves first, so
    /// whoever sees the depth (or the sync) move sees the gauge moved.
    pub(crate) fn delivered(&self, initial: bool) {
        self.metrics.buffer_depth.decrement(1.0);
        self.depth.fetch_sub(1, Ordering::AcqRel);
        if initial && self.outstanding_initial.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.changed.notify_waiters();
        }
    }
}

/// Where a listener's events go.
enum Sink<T> {
    /// A handler called from the listener's own thread.
    Thread,
    /// An event stream; the subscriber's task is the consumer.
    Channel(mpsc::UnboundedSender<Event<T>>),
}

/// Resync bookkeeping (client-go's `processorListener` resync fields).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resync {
    /// What the handler asked for.
    pub(crate) requested: Duration,
    /// The period in force after reconciliation with the informer's check period.
    pub(crate) effective: Duration,
    pub(crate) next: Option<Instant>,
    /// Whether this listener takes part in the current resync round.
    pub(crate) syncing: bool,
}

/// How a listener reports what goes wrong: the informer's log limits, the handler's metrics and
/// how a panic report names the event's object.
pub(crate) struct Reporting<T> {
    pub(crate) logs: Arc<InformerLogs>,
    pub(crate) metrics: HandlerMetrics,
    pub(crate) key_of: KeyOf<T>,
}

/// A registered handler or stream.
pub(crate) struct Listener<T> {
    pub(crate) id: u64,
    /// The handler's name (`stream` for a stream), for the lines it logs.
    name: String,
    pub(crate) shared: Arc<Shared<T>>,
    sink: Sink<T>,
    pub(crate) resync: Mutex<Resync>,
    thread: Mutex<Option<thread::JoinHandle<()>>>,
    /// The pushing side's end of the handed-back events: swapped with `Buffer::spent` on each
    /// push, emptied outside the buffer's lock, so that no push allocates a new vector.
    drained: Mutex<Vec<Event<T>>>,
}

impl<T: Send + Sync + 'static> Listener<T> {
    fn shared(
        informer: Arc<SyncSignal>,
        pacing: Pacing,
        threaded: bool,
        metrics: HandlerMetrics,
        logs: Arc<InformerLogs>,
    ) -> Arc<Shared<T>> {
        Arc::new(Shared {
            buffer: Mutex::new(Buffer {
                events: VecDeque::new(),
                spent: Vec::new(),
                closed: false,
                waiting: false,
            }),
            ready: Condvar::new(),
            depth: AtomicUsize::new(0),
            outstanding_initial: AtomicUsize::new(0),
            informer,
            synced_latch: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            changed: Notify::new(),
            pacing,
            delivery_thread: OnceLock::new(),
            exited: AtomicBool::new(!threaded),
            exit: Notify::new(),
            metrics,
            logs,
        })
    }

    /// A listener that calls `handler` on a thread of its own, reporting through `reporting`
    /// (its buffer depth and panics go to the metrics, a panic report names the object by its
    /// `key_of`).
    pub(crate) fn with_handler(
        id: u64,
        handler: Arc<dyn ResourceEventHandler<T>>,
        resync: Duration,
        informer: Arc<SyncSignal>,
        reporting: Reporting<T>,
    ) -> std::io::Result<Self> {
        Self::with_handler_paced(id, handler, resync, informer, reporting, Pacing::default())
    }

    fn with_handler_paced(
        id: u64,
        handler: Arc<dyn ResourceEventHandler<T>>,
        resync: Duration,
        informer: Arc<SyncSignal>,
        reporting: Reporting<T>,
        pacing: Pacing,
    ) -> std::io::Result<Self> {
        let Reporting {
            logs,
            metrics,
            key_of,
        } = reporting;
        let name = handler.name().to_owned();
        let shared = Self::shared(informer, pacing, true, metrics, logs);
        let worker = Arc::clone(&shared);
        let thread = thread::Builder::new()
            .name(format!("kcache-handler-{id}"))
            .spawn(move || {
                // Declared first, dropped last: the exit is signalled once the handler is gone.
                let _exit = ExitSignal(&worker);
                let handler = handler;
                let _ = worker.delivery_thread.set(thread::current().id());
                deliver(&worker, &*handler, &key_of);
            })?;
        Ok(Self {
            id,
            name,
            shared,
            sink: Sink::Thread,
            resync: Mutex::new(Resync {
                requested: resync,
                effective: resync,
                next: None,
                syncing: false,
            }),
            thread: Mutex::new(Some(thread)),
            drained: Mutex::new(Vec::new()),
        })
    }

    /// A listener feeding a channel, for event streams; it logs within the informer's `logs`.
    pub(crate) fn with_channel(
        id: u64,
        tx: mpsc::UnboundedSender<Event<T>>,
        resync: Duration,
        informer: Arc<SyncSignal>,
        logs: Arc<InformerLogs>,
    ) -> Self {
        Self {
            id,
            name: "stream".to_owned(),
            shared: Self::shared(
                informer,
                Pacing::default(),
                false,
                HandlerMetrics::noop(),
                logs,
            ),
            sink: Sink::Channel(tx),
            resync: Mutex::new(Resync {
                requested: resync,
                effective: resync,
                next: None,
                syncing: false,
            }),
            thread: Mutex::new(None),
            drained: Mutex::new(Vec::new()),
        }
    }

    /// Queues `event` and wakes the consumer; never blocks on it.
    pub(crate) fn push(&self, event: Event<T>) {
        self.enqueue(event, true);
    }

    /// Queues `event` without waking a sleeping delivery thread: the caller pushes a batch,
    /// then calls [`flush`](Self::flush) once. A handler faster than the informer would
    /// otherwise sleep and be woken (a system call on each side) for every single event.
    pub(crate) fn push_deferred(&self, event: Event<T>) {
        self.enqueue(event, false);
    }

    /// Wakes the delivery thread if it sleeps with events queued.
    pub(crate) fn flush(&self) {
        if let Sink::Thread = self.sink {
            let mut buf = self.shared.lock();
            let wake = buf.waiting && !buf.events.is_empty();
            if wake {
                buf.waiting = false;
            }
            drop(buf);
            if wake {
                self.shared.ready.notify_one();
            }
        }
    }

    fn enqueue(&self, event: Event<T>, wake_now: bool) {
        if self.shared.is_closed() {
            return;
        }
        let initial = event.is_initial();
        self.shared.metrics.buffer_depth.increment(1.0);
        let depth = self.shared.depth.fetch_add(1, Ordering::AcqRel) + 1;
        // The buffer is unbounded so that nobody blocks; say so when a handler falls far behind
        // (at 1024 pending events, then at every doubling), within the informer's rate limit.
        if depth >= BEHIND_WARNING
            && depth.is_power_of_two()
            && let Some(permit) = self.shared.logs.behind.allow()
        {
            tracing::warn!(
                informer = %self.shared.logs.informer,
                handler = %self.name,
                pending = depth,
                suppressed = permit.suppressed(),
                "an event handler is falling behind; its buffer keeps growing"
            );
        }
        if initial {
            self.shared
                .outstanding_initial
                .fetch_add(1, Ordering::AcqRel);
        }
        match &self.sink {
            Sink::Thread => {
                // Only pushers take `drained` (always before the buffer), so it is uncontended.
                let mut drained = self.drained.lock().unwrap_or_else(PoisonError::into_inner);
                let mut buf = self.shared.lock();
                if buf.closed {
                    // Closed since the check above: nobody will deliver it.
                    drop(buf);
                    self.shared.metrics.buffer_depth.decrement(1.0);
                    self.shared.depth.fetch_sub(1, Ordering::AcqRel);
                    drop(event);
                    return;
                }
                buf.events.push_back(event);
                // Wake the delivery thread only if it sleeps, and only once: a notify is a system
                // call, and the thread takes everything queued by the time it runs.
                let wake = wake_now && std::mem::replace(&mut buf.waiting, false);
                std::mem::swap(&mut buf.spent, &mut *drained);
                drop(buf);
                if wake {
                    self.shared.ready.notify_one();
                }
                // Freed here, outside the buffer's lock, on the thread that decodes objects.
                drained.clear();
            }
            Sink::Channel(tx) => {
                if tx.send(event).is_err() {
                    // The stream was dropped: nobody will consume this.
                    self.shared.delivered(initial);
                }
            }
        }
    }

    /// Closes and waits for the delivery thread to finish its current event.
    pub(crate) fn shutdown(&self) {
        self.close();
        let handle = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(handle) = handle
            && handle.thread().id() != thread::current().id()
        {
            // The thread catches handler panics, so joining only fails if it was killed.
            let _ = handle.join();
        }
    }
}

/// Marks the delivery thread exited when dropped: when it returns, and when it unwinds.
struct ExitSignal<'a, T>(&'a Shared<T>);

impl<T> Drop for ExitSignal<'_, T> {
    fn drop(&mut self) {
        self.0.exited.store(true, Ordering::Release);
        self.0.exit.notify_waiters();
    }
}

/// The delivery loop of a handler thread.
///
/// The last reference to an object that was replaced or deleted is usually the event that told
/// the handler about it, so dropping an event can free a whole object: hundreds of allocations
/// made by the thread that decoded it. Freeing them on another thread is slow with common
/// allocators (glibc's malloc locks the owning thread's arena for each chunk, and the decoding
/// thread stops reusing its own freed memory; the header of `cargo xtask bench` measures it). So
/// a handled event is handed back to the pushing side (the informer's processing, next to where
/// objects are decoded) and dropped there on its next push. When no push comes within [`SPENT_LINGER`],
/// the delivery thread drops what it handed back itself: nothing handled outlives a quiet spell.
///
/// A callback that panics is reported (see [`handler_panic`]); the event counts as delivered,
/// and the thread pauses before the next one.
fn deliver<T: 'static>(
    shared: &Shared<T>,
    handler: &dyn ResourceEventHandler<T>,
    key_of: &KeyOf<T>,
) {
    // Whether the thread already waited briefly since the buffer ran dry.
    let mut spun = false;
    // The handler's panics so far.
    let mut panics: u64 = 0;
    loop {
        let mut buf = shared.lock();
        if buf.closed {
            return;
        }
        if let Some(event) = buf.events.pop_front() {
            drop(buf);
            spun = false;
            let initial = event.is_initial();
            let panicked = match catch_unwind(AssertUnwindSafe(|| dispatch(handler, &event))) {
                Ok(()) => false,
                Err(payload) => {
                    panics += 1;
                    shared.metrics.panics.increment(1);
                    handler_panic::report(
                        &shared.logs,
                        handler.name(),
                        &event,
                        key_of,
                        &*payload,
                        panics,
                    );
                    true
                }
            };
            shared.delivered(initial);
            hand_back(shared, event);
            if panicked {
                shared.pause(shared.pacing.panic_pause);
            }
            continue;
        }
        if !spun {
            // Under load the next event is usually microseconds away: wait for it briefly
            // before sleeping, which would cost a wake-up (a system call on each side).
            spun = true;
            drop(buf);
            spin_for_events(shared);
            continue;
        }
        spun = false;
        buf.waiting = true;
        if buf.spent.is_empty() {
            let mut buf = shared
                .ready
                .wait(buf)
                .unwrap_or_else(PoisonError::into_inner);
            buf.waiting = false;
            continue;
        }
        let (mut buf, _) = shared
            .ready
            .wait_timeout(buf, shared.pacing.linger)
            .unwrap_or_else(PoisonError::into_inner);
        buf.waiting = false;
        if buf.events.is_empty() && !buf.spent.is_empty() {
            let spent = std::mem::take(&mut buf.spent);
            drop(buf);
            drop(spent);
        }
    }
}

/// Hands a handled event back for the pushing side to drop, or drops it here when too many
/// wait already or the listener closed.
fn hand_back<T>(shared: &Shared<T>, event: Event<T>) {
    let mut buf = shared.lock();
    if buf.spent.len() < SPENT_LIMIT && !buf.closed {
        buf.spent.push(event);
    } else {
        drop(buf);
        drop(event);
    }
}

/// Yields the processor for up to [`SPIN`], until an event is queued or the listener closes.
fn spin_for_events<T>(shared: &Shared<T>) {
    let until = std::time::Instant::now() + SPIN;
    while shared.depth() == 0 && !shared.is_closed() && std::time::Instant::now() < until {
        thread::yield_now();
    }
}

impl<T> Listener<T> {
    /// Stops delivery: pending events are dropped (and no longer counted in the depth), an
    /// event being handled finishes.
    pub(crate) fn close(&self) {
        self.shared.mark_closed();
        let mut buf = self.shared.lock();
        buf.closed = true;
        let pending = std::mem::take(&mut buf.events);
        let spent = std::mem::take(&mut buf.spent);
        #[expect(
            clippy::cast_precision_loss,
            reason = "a buffer length, exact below 2^53"
        )]
        let dropped = pending.len() as f64;
        self.shared.metrics.buffer_depth.decrement(dropped);
        self.shared.depth.fetch_sub(pending.len(), Ordering::AcqRel);
        drop(buf);
        self.shared.ready.notify_all();
        drop((pending, spent));
    }
}

/// A listener dropped without being removed (its informer dropped, never run or stopped) still
/// ends its delivery thread, which would otherwise wait for events forever.
impl<T> Drop for Listener<T> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<T> fmt::Debug for Listener<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listener")
            .field("id", &self.id)
            .field("depth", &self.shared.depth())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Weak;
    use std::time::Instant as StdInstant;

    use super::*;
    use crate::HandlerFuncs;

    fn update(old: &Arc<String>, new: &Arc<String>) -> Event<String> {
        Event::Update {
            old: Arc::clone(old),
            new: Arc::clone(new),
        }
    }

    /// Polls `cond` for up to five seconds.
    fn eventually(what: &str, cond: impl Fn() -> bool) {
        let deadline = StdInstant::now() + Duration::from_secs(5);
        while !cond() {
            assert!(StdInstant::now() < deadline, "timed out waiting for {what}");
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// Pushes an update from `from` to `to`; only the event refers to the old object, whose
    /// weak reference is returned.
    fn push_update(listener: &Listener<String>, from: &str, to: &str) -> Weak<String> {
        let (old, new) = (Arc::new(from.to_owned()), Arc::new(to.to_owned()));
        listener.push(update(&old, &new));
        Arc::downgrade(&old)
    }

    fn spent(listener: &Listener<String>) -> usize {
        listener.shared.lock().spent.len()
    }

    fn counting(linger: Duration) -> (Listener<String>, Arc<AtomicUsize>) {
        let handled = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&handled);
        let also = Arc::clone(&handled);
        let funcs = HandlerFuncs::new()
            .on_updated(move |_: &Arc<String>, _: &Arc<String>| {
                count.fetch_add(1, Ordering::SeqCst);
            })
            .on_added(move |_: &Arc<String>, _| {
                also.fetch_add(1, Ordering::SeqCst);
            });
        let listener = Listener::with_handler_paced(
            1,
            Arc::new(funcs),
            Duration::ZERO,
            Arc::new(SyncSignal::default()),
            reporting(),
            Pacing {
                linger,
                ..Pacing::default()
            },
        )
        .unwrap();
        (listener, handled)
    }

    #[test]
    fn the_next_push_drops_handled_events() {
        // A linger far longer than the test: only a push can drop what was handed back.
        let (listener, handled) = counting(Duration::from_secs(3600));

        // Once the event is dropped, so is `old`.
        let old = push_update(&listener, "v1", "v2");
        eventually("the first event to be handed back", || {
            spent(&listener) == 1
        });
        assert_eq!(handled.load(Ordering::SeqCst), 1);
        assert!(old.upgrade().is_some(), "handed back, not dropped yet");

        // The next push takes the handed-back event and drops it on the pushing thread.
        let second = push_update(&listener, "v2", "v3");
        assert!(
            old.upgrade().is_none(),
            "dropped by push, before it returned"
        );
        eventually("the second event to be handed back", || {
            spent(&listener) == 1
        });
        assert!(second.upgrade().is_some());
        listener.shutdown();
        assert!(second.upgrade().is_none(), "shutdown drops what is left");
        assert_eq!(handled.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_quiet_spell_drops_handled_events_on_the_delivery_thread() {
        let (listener, handled) = counting(Duration::from_millis(20));
        let old = push_update(&listener, "v1", "v2");
        eventually("the quiet spell to drop the event", || {
            old.upgrade().is_none()
        });
        assert_eq!(handled.load(Ordering::SeqCst), 1);
        assert_eq!(spent(&listener), 0);
        listener.shutdown();
    }

    #[test]
    fn deferred_pushes_wait_for_flush() {
        let (listener, handled) = counting(SPENT_LINGER);
        eventually("the delivery thread to sleep", || {
            listener.shared.lock().waiting
        });
        let obj = Arc::new("v".to_owned());
        for _ in 0..3 {
            listener.push_deferred(update(&obj, &obj));
        }
        thread::sleep(Duration::from_millis(50));
        assert_eq!(handled.load(Ordering::SeqCst), 0, "not woken before flush");
        assert_eq!(listener.shared.depth(), 3);
        listener.flush();
        eventually("all three events", || handled.load(Ordering::SeqCst) == 3);
        listener.shutdown();
    }

    fn no_key(_: &Event<String>) -> Option<kcache_store::ObjectKey> {
        None
    }

    fn reporting() -> Reporting<String> {
        Reporting {
            logs: InformerLogs::new("test"),
            metrics: HandlerMetrics::noop(),
            key_of: Arc::new(no_key),
        }
    }

    fn add(name: &str, initial: bool) -> Event<String> {
        Event::Add {
            obj: Arc::new(name.to_owned()),
            is_in_initial_list: initial,
        }
    }

    /// A listener whose handler notes when each add reaches it, then panics; it pauses
    /// `pause` after each panic.
    fn panicking(
        pause: Duration,
        informer: Arc<SyncSignal>,
    ) -> (Listener<String>, Arc<Mutex<Vec<StdInstant>>>) {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&calls);
        let funcs =
            HandlerFuncs::new()
                .named("always-panics")
                .on_added(move |_: &Arc<String>, _| {
                    seen.lock().unwrap().push(StdInstant::now());
                    panic!("handler bug");
                });
        let listener = Listener::with_handler_paced(
            2,
            Arc::new(funcs),
            Duration::ZERO,
            informer,
            reporting(),
            Pacing {
                panic_pause: pause,
                ..Pacing::default()
            },
        )
        .unwrap();
        (listener, calls)
    }

    /// client-go's `processorListener` recovers a handler panic and sleeps a second before the
    /// next notification: here the next call comes a whole pause after the previous one (a
    /// lower bound, which cannot flake).
    #[test]
    fn a_panicking_handler_is_called_at_most_once_per_pause() {
        let pause = Duration::from_millis(100);
        let (listener, calls) = panicking(pause, Arc::new(SyncSignal::default()));
        for name in ["a", "b", "c", "d"] {
            listener.push(add(name, false));
        }
        eventually("every add", || calls.lock().unwrap().len() == 4);
        let calls = calls.lock().unwrap().clone();
        for pair in calls.windows(2) {
            let gap = pair[1] - pair[0];
            assert!(gap >= pause, "{gap:?} between two panicking calls");
        }
        listener.shutdown();
    }

    /// A panicking initial add counts as delivered (where client-go's never syncs,
    /// kubernetes/kubernetes#129024), so a handler that panics on every initial add syncs.
    #[test]
    fn panicking_initial_adds_still_count_as_delivered() {
        let sync = Arc::new(SyncSignal::default());
        sync.set_synced();
        let (listener, calls) = panicking(Duration::from_millis(10), sync);
        for name in ["a", "b", "c"] {
            listener.push(add(name, true));
        }
        eventually("sync", || listener.shared.has_synced());
        assert_eq!(calls.lock().unwrap().len(), 3);
        assert_eq!(listener.shared.depth(), 0);
        listener.shutdown();
    }

    /// The pause after a panic holds back only the panicking handler, and closing the listener
    /// ends it at once (an hour-long pause: the test would hang otherwise), as client-go's
    /// `ShutDownEventHandler` ends a listener whatever it is doing.
    #[tokio::test]
    async fn a_panic_pause_holds_back_only_its_handler_and_closing_ends_it() {
        let sync = Arc::new(SyncSignal::default());
        sync.set_synced();
        let (paused, calls) = panicking(Duration::from_secs(3600), Arc::clone(&sync));
        let (other, handled) = counting(SPENT_LINGER);
        for name in ["a", "b", "c"] {
            paused.push(add(name, true));
            other.push(add(name, true));
        }
        eventually("the other handler to see everything", || {
            handled.load(Ordering::SeqCst) == 3
        });
        // The first add was handled; the pause holds the other two back.
        eventually("the first panic", || paused.shared.depth() == 2);
        assert_eq!(calls.lock().unwrap().len(), 1);
        assert!(!paused.shared.has_synced());

        let exited = paused.shared.owned_exited();
        paused.close();
        exited.await.unwrap();
        paused.shutdown();
        assert_eq!(calls.lock().unwrap().len(), 1);
        other.shutdown();
    }

    /// A stream has no thread: waiting for it to exit ends at once.
    #[test]
    fn a_stream_has_no_thread_to_wait_for() {
        use futures_util::FutureExt as _;

        let (tx, _rx) = mpsc::unbounded_channel();
        let stream = Listener::<String>::with_channel(
            3,
            tx,
            Duration::ZERO,
            Arc::new(SyncSignal::default()),
            InformerLogs::new("test"),
        );
        assert!(matches!(
            stream.shared.owned_exited().now_or_never(),
            Some(Ok(()))
        ));
    }
}
