//! One registered handler or stream: its buffer, its delivery thread and its sync tracking.

use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::handler::dispatch;
use crate::{Event, ResourceEventHandler};

/// Pending events at which a slow handler is first reported (client-go traces at 1024 too).
const BEHIND_WARNING: usize = 1024;

/// The buffer of a thread-delivered listener.
struct Buffer<T> {
    events: VecDeque<Event<T>>,
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
    /// Set by the informer once its queue has processed the initial list.
    informer_synced: Arc<AtomicBool>,
    synced_latch: AtomicBool,
    closed: AtomicBool,
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
        let synced = self.informer_synced.load(Ordering::Acquire)
            && self.outstanding_initial.load(Ordering::Acquire) == 0;
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
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Bookkeeping once an event has been handed to its consumer.
    pub(crate) fn delivered(&self, initial: bool) {
        self.depth.fetch_sub(1, Ordering::AcqRel);
        if initial {
            self.outstanding_initial.fetch_sub(1, Ordering::AcqRel);
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
}

impl<T: Send + Sync + 'static> Listener<T> {
    fn shared(informer_synced: Arc<AtomicBool>) -> Arc<Shared<T>> {
        Arc::new(Shared {
            buffer: Mutex::new(Buffer {
                events: VecDeque::new(),
                closed: false,
                waiting: false,
            }),
            ready: Condvar::new(),
            depth: AtomicUsize::new(0),
            outstanding_initial: AtomicUsize::new(0),
            informer_synced,
            synced_latch: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        })
    }

    /// A listener that calls `handler` on a thread of its own.
    pub(crate) fn with_handler(
        id: u64,
        handler: Arc<dyn ResourceEventHandler<T>>,
        resync: Duration,
        informer_synced: Arc<AtomicBool>,
    ) -> std::io::Result<Self> {
        let shared = Self::shared(informer_synced);
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
        })
    }

    /// A listener feeding a channel, for event streams.
    pub(crate) fn with_channel(
        id: u64,
        tx: mpsc::UnboundedSender<Event<T>>,
        resync: Duration,
        informer_synced: Arc<AtomicBool>,
    ) -> Self {
        Self {
            id,
            shared: Self::shared(informer_synced),
            sink: Sink::Channel(tx),
            resync: Mutex::new(Resync {
                requested: resync,
                effective: resync,
                next: None,
                syncing: false,
            }),
            thread: Mutex::new(None),
        }
    }

    /// Queues `event`; never blocks on the consumer.
    pub(crate) fn push(&self, event: Event<T>) {
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
                let mut buf = self.shared.lock();
                buf.events.push_back(event);
                // Wake the delivery thread only if it sleeps, and only once: a notify is a system
                // call, and the thread takes everything queued by the time it runs.
                let wake = std::mem::replace(&mut buf.waiting, false);
                drop(buf);
                if wake {
                    self.shared.ready.notify_one();
                }
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
        self.shared.closed.store(true, Ordering::Release);
        let mut buf = self.shared.lock();
        buf.closed = true;
        buf.events.clear();
        drop(buf);
        self.shared.ready.notify_all();
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
fn deliver<T: 'static>(shared: &Shared<T>, handler: &dyn ResourceEventHandler<T>) {
    loop {
        let event = {
            let mut buf = shared.lock();
            loop {
                if buf.closed {
                    return;
                }
                if let Some(e) = buf.events.pop_front() {
                    break e;
                }
                buf.waiting = true;
                buf = shared
                    .ready
                    .wait(buf)
                    .unwrap_or_else(PoisonError::into_inner);
                buf.waiting = false;
            }
        };
        let initial = event.is_initial();
        if catch_unwind(AssertUnwindSafe(|| dispatch(handler, &event))).is_err() {
            tracing::error!("an event handler panicked; the event is skipped");
        }
        shared.delivered(initial);
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
