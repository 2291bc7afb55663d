//! [`EventRecorder`]: records `events.k8s.io/v1` Events about objects without ever waiting on
//! the API server: [`record`](EventRecorder::record) folds repeats into series, applies the
//! per-object rate limit and queues the write; a background task (`writer`) sends it.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use kcache_reflector::LogLimiter;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::builder::EventRecorderBuilder;
use super::event::{EventWrite, MAX_NOTE_BYTES, MAX_REASON_BYTES, Reporter, truncate};
use super::event_type::EventType;
use super::name::Names;
use super::rate_limit::RateLimits;
use super::reference::ObjectReference;
use super::series::{Repeat, SeriesCache, SeriesKey};
use super::stats::{Counters, RecorderStats};
use crate::{Client, Error};

/// The wall clock Events are stamped with (`eventTime`, `series.lastObservedTime`, names).
pub(crate) type WallClock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// Records Events about objects, as `kubectl describe` and `kubectl events` show them: client-go's
/// `tools/events` `EventRecorder` and its broadcaster in one, writing `events.k8s.io/v1` Events
/// through a [`Client`].
///
/// - **Never waits**: [`record`](Self::record) is a plain function that returns at once. It
///   decides what the event comes to (a new Event, a repeat, a drop) under a short lock, and
///   puts a write on a bounded queue; a background task on the tokio runtime the recorder was
///   built on sends the writes one at a time. A full queue drops the event and counts it.
/// - **Series**: an event like one recorded before (same regarding and related objects, type,
///   reason, action and note) is a repeat: the first repeat patches the Event's `series`
///   (`count: 2`, `lastObservedTime`) at once; later ones are counted and written every
///   [`series_refresh`](EventRecorderBuilder::series_refresh) (30 minutes) and when the series
///   ends, once no repeat came for [`series_finish`](EventRecorderBuilder::series_finish) (6
///   minutes; looked for every 6 minutes, so 6 to 12 minutes). Then it is forgotten: the next
///   such event is a new Event. A series patch that finds its Event gone (expired) creates it
///   again, series included.
/// - **Rate limit**: each new Event about an object (and type) takes a token from its bucket:
///   25 at first, one more every 5 minutes
///   ([`rate_limit`](EventRecorderBuilder::rate_limit)). Without one the event is dropped and
///   counted. Repeats take none: a series costs one write at once and one per refresh.
/// - **Bounded**: the queue holds at most 1000 writes, the series cache 4096 Events and the
///   rate-limit cache 4096 objects (the least recently seen forgotten first); all
///   configurable. Each holds one Event's strings (a note is cut to [`MAX_NOTE_BYTES`],
///   reason and action to 128 bytes; a queued write shares its series entry's), so with the
///   defaults the recorder keeps at most some 5,000 Events' worth: a few MiB.
/// - **Errors**: a write that fails for a reason that may pass (no connection, a timeout, a
///   429 or 5xx answer) is retried up to 12 times, 10 to 12.5 seconds apart; any other answer
///   (an invalid Event) is not retried. Failures are logged with their cause (`tracing`, at
///   most 10 lines a minute per cause) and counted ([`stats`](Self::stats)).
/// - **Shutdown**: [`shutdown`](Self::shutdown), or dropping the last clone, stops the task:
///   it writes what is queued and the series counts the server lacks, one attempt each,
///   within [`flush_timeout`](EventRecorderBuilder::flush_timeout) (5 seconds), and ends.
///
/// Cheap to clone: every clone records through the same queue and caches.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use kcache_client_http::{Client, Config, EventRecorder, EventType, ObjectReference, Recorded};
/// use kcache_store::DynamicObject;
/// use kcache_testing_server::{FakeApiServer, ServedResource};
///
/// let server = FakeApiServer::start().await?;
/// let client = Client::new(Config::new(server.url().parse()?))?;
/// let recorder = EventRecorder::new(client, "example.com/widget-controller", "widgets-7d9f")?;
///
/// let widget = DynamicObject::new(Some("shop"), "blue");
/// let blue = ObjectReference::from_object(&widget, "example.com/v1", "Widget");
/// let note = "quota exceeded";
/// let first = recorder.record(&blue, None, EventType::Warning, "SyncFailed", "Sync", note);
/// assert_eq!(first, Recorded::New);
/// let again = recorder.record(&blue, None, EventType::Warning, "SyncFailed", "Sync", note);
/// assert_eq!(again, Recorded::Repeat { count: 2 });
///
/// // Writes what is queued (and the series' last counts), then stops.
/// recorder.shutdown().await;
/// let events = server.list(&ServedResource::events_k8s_io());
/// assert_eq!(events.len(), 1, "one Event, with a series");
/// assert_eq!(events[0].data["series"]["count"], 2);
/// assert_eq!(events[0].data["reportingController"], "example.com/widget-controller");
/// assert_eq!(events[0].metadata.namespace.as_deref(), Some("shop"));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct EventRecorder {
    inner: Arc<Handle>,
}

/// The recorder's side of the writer: dropped with the last clone, which stops the writer.
struct Handle {
    queue: mpsc::Sender<EventWrite>,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    done: watch::Receiver<bool>,
}

/// What the recorder and its writer share.
pub(crate) struct Shared {
    pub(crate) client: Client,
    pub(crate) settings: Settings,
    pub(crate) state: Mutex<State>,
    pub(crate) counters: Counters,
    pub(crate) names: Names,
    pub(crate) clock: WallClock,
    /// Set on shutdown: no more events are taken.
    pub(crate) closed: AtomicBool,
    pub(crate) logs: Logs,
}

/// The recorder's caches, under one lock.
pub(crate) struct State {
    pub(crate) series: SeriesCache,
    pub(crate) limits: RateLimits,
}

/// How the writer works.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) reporter: Reporter,
    pub(crate) series_finish: Duration,
    pub(crate) series_refresh: Duration,
    pub(crate) write_attempts: u32,
    pub(crate) retry_interval: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) flush_timeout: Duration,
}

/// The limits of the log lines that can repeat per event.
#[derive(Debug, Default)]
pub(crate) struct Logs {
    /// Events dropped for a full queue.
    pub(crate) queue_full: LogLimiter,
    /// Writes failed, to be retried.
    pub(crate) retry: LogLimiter,
    /// Writes given up.
    pub(crate) failed: LogLimiter,
}

/// What [`EventRecorder::record`] did with an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recorded {
    /// A new Event, queued to be created.
    New,
    /// A repeat of an Event recorded before: its series now counts `count` (the first repeat
    /// is written at once, the others later).
    Repeat {
        /// How many times the event has been seen, this one included.
        count: u32,
    },
    /// Dropped: the rate limit of the regarding object is spent.
    RateLimited,
    /// Dropped: the queue is full (the API server is slow or down).
    QueueFull,
    /// Dropped: the recorder has shut down.
    Closed,
}

impl Recorded {
    /// Whether the event was dropped.
    pub fn is_dropped(self) -> bool {
        matches!(self, Self::RateLimited | Self::QueueFull | Self::Closed)
    }
}

impl Shared {
    /// The caches, locked (never across an `.await`).
    pub(crate) fn lock_state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl EventRecorder {
    /// A recorder with the defaults, writing as `reporting_controller` (e.g.
    /// `example.com/widget-controller`) and `reporting_instance` (e.g. the pod's name).
    ///
    /// # Errors
    ///
    /// As [`EventRecorderBuilder::build`].
    pub fn new(
        client: Client,
        reporting_controller: impl Into<String>,
        reporting_instance: impl Into<String>,
    ) -> Result<Self, Error> {
        Self::builder(client, reporting_controller, reporting_instance).build()
    }

    /// A builder, to change the bounds, the rate limit, the timing or the clock.
    pub fn builder(
        client: Client,
        reporting_controller: impl Into<String>,
        reporting_instance: impl Into<String>,
    ) -> EventRecorderBuilder {
        EventRecorderBuilder::new(
            client,
            reporting_controller.into(),
            reporting_instance.into(),
        )
    }

    /// Wraps the shared state and the writer's channels.
    pub(crate) fn from_parts(
        queue: mpsc::Sender<EventWrite>,
        shared: Arc<Shared>,
        stop: watch::Sender<bool>,
        done: watch::Receiver<bool>,
    ) -> Self {
        Self {
            inner: Arc::new(Handle {
                queue,
                shared,
                stop,
                done,
            }),
        }
    }

    /// Records that `action` was taken on (or failed for) `regarding`, with `related` as the
    /// other object involved if any, of `event_type`, for `reason` (`UpperCamelCase`, such as
    /// `SyncFailed`), with a human-readable `note`. Returns at once, never waiting on the
    /// server; what became of the event is the [`Recorded`] returned (the write itself
    /// happens later, in the background).
    ///
    /// The Event goes to `regarding`'s namespace (`default` for a cluster-scoped object), named
    /// `<regarding name>.<time in hex>`, stamped with the wall clock's `eventTime`. A note
    /// longer than [`MAX_NOTE_BYTES`] is cut to it; a reason or action longer than 128 bytes,
    /// to 128.
    pub fn record(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        event_type: EventType,
        reason: &str,
        action: &str,
        note: &str,
    ) -> Recorded {
        let shared = &*self.inner.shared;
        if shared.closed.load(Ordering::Acquire) {
            Counters::bump(&shared.counters.closed);
            return Recorded::Closed;
        }
        let key = SeriesKey {
            regarding: regarding.clone(),
            related: related.cloned(),
            event_type,
            reason: truncate(reason, MAX_REASON_BYTES).to_owned(),
            action: truncate(action, MAX_REASON_BYTES).to_owned(),
            note: truncate(note, MAX_NOTE_BYTES).to_owned(),
        };
        let now = Instant::now();
        let wall = (shared.clock)();
        // The writes are queued under the lock, so a series' patch never precedes its create.
        let mut state = shared.lock_state();
        match state.series.repeat(&key, now, wall) {
            Some(Repeat::Counted(count)) => {
                Counters::bump(&shared.counters.repeats);
                return Recorded::Repeat { count };
            }
            Some(Repeat::Started(patch)) => {
                Counters::bump(&shared.counters.repeats);
                // Not lost if the queue is full: the count is written when the series ends.
                let _ = self.inner.queue.try_send(patch);
                return Recorded::Repeat { count: 2 };
            }
            None => {}
        }
        if !state.limits.try_take(&key.regarding, event_type, now) {
            Counters::bump(&shared.counters.rate_limited);
            return Recorded::RateLimited;
        }
        let name = shared.names.next(&key.regarding.name, wall);
        let (create, evicted) = state.series.insert(Arc::new(key), name.into(), now, wall);
        if let Some(last_count) = evicted {
            self.enqueue(last_count);
        }
        self.enqueue(create)
    }

    /// Queues `write`, or counts and logs why it could not be.
    fn enqueue(&self, write: EventWrite) -> Recorded {
        let shared = &*self.inner.shared;
        match self.inner.queue.try_send(write) {
            Ok(()) => Recorded::New,
            Err(TrySendError::Full(write)) => {
                Counters::bump(&shared.counters.queue_full);
                if let Some(permit) = shared.logs.queue_full.allow() {
                    let regarding = &write.key.regarding;
                    tracing::warn!(
                        kind = %regarding.kind,
                        namespace = regarding.namespace.as_deref().unwrap_or_default(),
                        name = %regarding.name,
                        reason = %write.key.reason,
                        capacity = self.inner.queue.max_capacity(),
                        suppressed = permit.suppressed(),
                        "event dropped: the event queue is full (the API server is slow or down)"
                    );
                }
                Recorded::QueueFull
            }
            Err(TrySendError::Closed(_)) => {
                Counters::bump(&shared.counters.closed);
                Recorded::Closed
            }
        }
    }

    /// What the recorder did so far, and how full its queue and caches are.
    pub fn stats(&self) -> RecorderStats {
        let shared = &*self.inner.shared;
        let mut stats = shared.counters.snapshot();
        stats.queue_capacity = self.inner.queue.max_capacity();
        stats.queued = stats.queue_capacity - self.inner.queue.capacity();
        let caches = shared.lock_state();
        stats.series = caches.series.len();
        stats.rate_limited_objects = caches.limits.len();
        stats
    }

    /// Events and series updates lost so far (rate limited, queue full, failed, after
    /// shutdown): [`RecorderStats::dropped`].
    pub fn dropped(&self) -> u64 {
        self.inner.shared.counters.snapshot().dropped()
    }

    /// The `reportingController` written.
    pub fn reporting_controller(&self) -> &str {
        &self.inner.shared.settings.reporter.controller
    }

    /// The `reportingInstance` written.
    pub fn reporting_instance(&self) -> &str {
        &self.inner.shared.settings.reporter.instance
    }

    /// Stops the recorder, from any clone: events recorded from now on are dropped
    /// ([`Recorded::Closed`]); the background task writes what is queued and the series
    /// counts the server lacks (one attempt each, within the
    /// [`flush_timeout`](EventRecorderBuilder::flush_timeout); what is left is counted as
    /// failed) and ends. Returns once it has. Dropping every clone stops it the same way,
    /// without waiting.
    ///
    /// # Cancel safety
    ///
    /// Cancelling the wait does not stop the shutdown: the task still flushes and ends.
    pub async fn shutdown(&self) {
        self.inner.shared.closed.store(true, Ordering::Release);
        self.inner.stop.send_replace(true);
        let mut done = self.inner.done.clone();
        // An error is a task that is gone already.
        let _ = done.wait_for(|done| *done).await;
    }
}

impl fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let handle = &*self.inner;
        f.debug_struct("EventRecorder")
            .field("shared", &handle.shared)
            .field("queue", &handle.queue)
            .field("stop", &handle.stop)
            .field("done", &handle.done)
            .finish()
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (series, objects) = {
            let state = self.lock_state();
            (state.series.len(), state.limits.len())
        };
        f.debug_struct("Shared")
            .field("client", &self.client)
            .field("settings", &self.settings)
            .field(
                "state",
                &format_args!("{series} series, {objects} rate-limited objects"),
            )
            .field("counters", &self.counters)
            .field("names", &self.names)
            .field("clock", &"fn() -> SystemTime")
            .field("closed", &self.closed)
            .field("logs", &self.logs)
            .finish()
    }
}
