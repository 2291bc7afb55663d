//! One registered handler or stream: its buffer, its delivery thread and its sync tracking.

use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use crate::handler::dispatch;
use crate::sync_signal::SyncSignal;
use crate::{Event, ResourceEventHandler};

/// Pending events at which a slow handler is first reported (client-go traces at 1024 too).
const BEHIND_WARNING: usize = 1024;

/// Handled events the delivery thread hands back at most, for the pushing side to drop.
const SPENT_LIMIT: usize = 1024;

/// How long a delivery thread whose buffer ran dry waits for more before it sleeps.
const SPIN: Duration = Duration::from_micros(50);

/// How long handed-back events wait for the pushing side before the delivery thread drops them.
const SPENT_LINGER: Duration = Duration::from_millis(100);

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
    /// How long handed-back events wait for a push before the delivery thread drops them.
    linger: Duration,
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

    /// Bookkeeping once an event has been handed to its consumer.
    pub(crate) fn delivered(&self, initial: bool) {
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

/// A registered handler or stream.
pub(crate) struct Listener<T> {
    pub(crate) id: u64,
    pub(crate) shared: Arc<Shared<T>>,
    sink: Sink<T>,
    pub(crate) resync: Mutex<Resync>,
    thread: Mutex<Option<thread::JoinHandle<()>>>,
    /// The pushing side's end of the handed-back events: swapped with `Buffer::spent` on each
    /// push, emptied outside the buffer's lock, so that no push allocates a new vector.
    drained: Mutex<Vec<Event<T>>>,
}

impl<T: Send + Sync + 'static> Listener<T> {
    fn shared(informer: Arc<SyncSignal>, linger: Duration) -> Arc<Shared<T>> {
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
            linger,
        })
    }

    /// A listener that calls `handler` on a thread of its own.
    pub(crate) fn with_handler(
        id: u64,
        handler: Arc<dyn ResourceEventHandler<T>>,
        resync: Duration,
        informer: Arc<SyncSignal>,
    ) -> std::io::Result<Self> {
        Self::with_handler_linger(id, handler, resync, informer, SPENT_LINGER)
    }

    fn with_handler_linger(
        id: u64,
        handler: Arc<dyn ResourceEventHandler<T>>,
        resync: Duration,
        informer: Arc<SyncSignal>,
        linger: Duration,
    ) -> std::io::Result<Self> {
        let shared = Self::shared(informer, linger);
        let worker = Arc::clone(&shared);
        let thread = thread::Builder::new()
            .name(format!("kcache-handler-{id}"))
            .spawn(move || deliver(&worker, &*handler))?;
        Ok(Self {
            id,
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

    /// A listener feeding a channel, for event streams.
    pub(crate) fn with_channel(
        id: u64,
        tx: mpsc::UnboundedSender<Event<T>>,
        resync: Duration,
        informer: Arc<SyncSignal>,
    ) -> Self {
        Self {
            id,
            shared: Self::shared(informer, SPENT_LINGER),
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
        let depth = self.shared.depth.fetch_add(1, Ordering::AcqRel) + 1;
        // The buffer is unbounded so that nobody blocks; say so when a handler falls far behind
        // (at 1024 pending events, then at every doubling).
        if depth >= BEHIND_WARNING && depth.is_power_of_two() {
            tracing::warn!(
                handler = self.id,
                pending = depth,
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

    /// Stops delivery: pending events are dropped, an event being handled finishes.
    pub(crate) fn close(&self) {
        self.shared.mark_closed();
        let mut buf = self.shared.lock();
        buf.closed = true;
        let pending = std::mem::take(&mut buf.events);
        let spent = std::mem::take(&mut buf.spent);
        drop(buf);
        self.shared.ready.notify_all();
        drop((pending, spent));
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
fn deliver<T: 'static>(shared: &Shared<T>, handler: &dyn ResourceEventHandler<T>) {
    // Whether the thread already waited briefly since the buffer ran dry.
    let mut spun = false;
    loop {
        let mut buf = shared.lock();
        if buf.closed {
            return;
        }
        if let Some(event) = buf.events.pop_front() {
            drop(buf);
            spun = false;
            let initial = event.is_initial();
            if catch_unwind(AssertUnwindSafe(|| dispatch(handler, &event))).is_err() {
                tracing::error!("an event handler panicked; the event is skipped");
            }
            shared.delivered(initial);
            let mut buf = shared.lock();
            if buf.spent.len() < SPENT_LIMIT && !buf.closed {
                buf.spent.push(event);
            } else {
                drop(buf);
                drop(event);
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
            .wait_timeout(buf, shared.linger)
            .unwrap_or_else(PoisonError::into_inner);
        buf.waiting = false;
        if buf.events.is_empty() && !buf.spent.is_empty() {
            let spent = std::mem::take(&mut buf.spent);
            drop(buf);
            drop(spent);
        }
    }
}

/// Yields the processor for up to [`SPIN`], until an event is queued or the listener closes.
fn spin_for_events<T>(shared: &Shared<T>) {
    let until = std::time::Instant::now() + SPIN;
    while shared.depth() == 0 && !shared.is_closed() && std::time::Instant::now() < until {
        thread::yield_now();
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
        let funcs = HandlerFuncs::new().on_updated(move |_: &Arc<String>, _: &Arc<String>| {
            count.fetch_add(1, Ordering::SeqCst);
        });
        let listener = Listener::with_handler_linger(
            1,
            Arc::new(funcs),
            Duration::ZERO,
            Arc::new(crate::sync_signal::SyncSignal::default()),
            linger,
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
}
