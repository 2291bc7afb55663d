//! [`EventRecorderBuilder`]: an [`EventRecorder`]'s reporter, bounds, rate limit, timing and
//! clock; `build` starts its writer on the current tokio runtime.

use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::sync::{mpsc, watch};

use super::event::{MAX_REASON_BYTES, Reporter};
use super::name::Names;
use super::rate_limit::{Limit, RateLimits};
use super::recorder::{EventRecorder, Logs, Settings, Shared, State, WallClock};
use super::series::SeriesCache;
use super::stats::Counters;
use super::writer::Writer;
use crate::{Client, Error};

/// The shortest series timing accepted: the writer's timers need a period.
const MIN_PERIOD: Duration = Duration::from_millis(1);
/// The longest series timing accepted (a year), so that the timers' deadlines stay in range.
const MAX_PERIOD: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// Builds an [`EventRecorder`]; see [`EventRecorder::builder`]. The defaults are client-go's
/// where it has one.
#[must_use]
pub struct EventRecorderBuilder {
    client: Client,
    settings: Settings,
    queue_capacity: usize,
    max_series: usize,
    max_rate_limited_objects: usize,
    rate_limit: Option<Limit>,
    clock: WallClock,
}

impl fmt::Debug for EventRecorderBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventRecorderBuilder")
            .field("client", &self.client)
            .field("settings", &self.settings)
            .field("queue_capacity", &self.queue_capacity)
            .field("max_series", &self.max_series)
            .field("max_rate_limited_objects", &self.max_rate_limited_objects)
            .field("rate_limit", &self.rate_limit)
            .field("clock", &"fn() -> SystemTime")
            .finish()
    }
}

impl EventRecorderBuilder {
    pub(crate) fn new(client: Client, controller: String, instance: String) -> Self {
        Self {
            client,
            settings: Settings {
                reporter: Reporter {
                    controller,
                    instance,
                },
                series_finish: Duration::from_secs(6 * 60),
                series_refresh: Duration::from_secs(30 * 60),
                write_attempts: 12,
                retry_interval: Duration::from_secs(10),
                write_timeout: Duration::from_secs(10),
                flush_timeout: Duration::from_secs(5),
            },
            queue_capacity: 1000,
            max_series: 4096,
            max_rate_limited_objects: 4096,
            rate_limit: Some(Limit {
                burst: 25,
                refill: Duration::from_secs(300),
            }),
            clock: Arc::new(SystemTime::now),
        }
    }

    /// How many writes wait at most for the background task (default 1000, client-go's
    /// `maxQueuedEvents`; at least 1). Past it events are dropped
    /// ([`Recorded::QueueFull`](crate::Recorded::QueueFull)).
    pub fn queue_capacity(mut self, writes: usize) -> Self {
        self.queue_capacity = writes.max(1);
        self
    }

    /// How many Events are remembered for their series at most (default 4096, the size of
    /// client-go's old library caches; at least 1). Past it the least recently seen is
    /// forgotten (its last count written first if the server lacks it), and its next repeat
    /// is a new Event.
    pub fn max_series(mut self, events: usize) -> Self {
        self.max_series = events.max(1);
        self
    }

    /// How many objects' rate-limit buckets are kept at most (default 4096; at least 1). Past
    /// it the bucket of the object seen least recently is forgotten: that object starts with
    /// a full bucket again, as with client-go's spam filter.
    pub fn max_rate_limited_objects(mut self, objects: usize) -> Self {
        self.max_rate_limited_objects = objects.max(1);
        self
    }

    /// The rate limit of new Events per object and type: `burst` at first (at least 1), then
    /// one more each `refill` (default 25 and 5 minutes, client-go's spam filter's).
    pub fn rate_limit(mut self, burst: u32, refill: Duration) -> Self {
        self.rate_limit = Some(Limit {
            burst: burst.max(1),
            refill,
        });
        self
    }

    /// No rate limit: every new Event is queued.
    pub fn no_rate_limit(mut self) -> Self {
        self.rate_limit = None;
        self
    }

    /// How long without a repeat ends a series (default 6 minutes, client-go's `finishTime`;
    /// 1 ms to a year): the writer looks for ended series this often, writes their last count
    /// and forgets them.
    pub fn series_finish(mut self, quiet: Duration) -> Self {
        self.settings.series_finish = quiet.clamp(MIN_PERIOD, MAX_PERIOD);
        self
    }

    /// How often the counts of running series are written (default 30 minutes, client-go's
    /// `refreshTime`, which also keeps them from expiring on the server; 1 ms to a year).
    pub fn series_refresh(mut self, every: Duration) -> Self {
        self.settings.series_refresh = every.clamp(MIN_PERIOD, MAX_PERIOD);
        self
    }

    /// How many times a write is tried when it fails for a reason that may pass (default 12,
    /// client-go's `maxTriesPerEvent`; at least 1).
    pub fn write_attempts(mut self, attempts: u32) -> Self {
        self.settings.write_attempts = attempts.max(1);
        self
    }

    /// The wait between two attempts of a write, to which up to a quarter is added at random
    /// (default 10 s, client-go's; a longer `Retry-After` from the server, up to 5 minutes,
    /// wins).
    pub fn retry_interval(mut self, interval: Duration) -> Self {
        self.settings.retry_interval = interval;
        self
    }

    /// The bound on each write request (default 10 s).
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.settings.write_timeout = timeout;
        self
    }

    /// The bound on the flush at shutdown (default 5 s): what is not written by then is
    /// counted as failed.
    pub fn flush_timeout(mut self, timeout: Duration) -> Self {
        self.settings.flush_timeout = timeout;
        self
    }

    /// The wall clock of `eventTime`, `series.lastObservedTime` and the time stamp of names
    /// (default `SystemTime::now`); a fixed one makes them predictable in tests. When series
    /// end, and the rate limit, follow tokio's clock instead (which a test can pause).
    pub fn wall_clock(mut self, clock: impl Fn() -> SystemTime + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The recorder, its writer started on the current tokio runtime.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] when the reporting controller or instance is empty, or one is longer
    /// than the API accepts (253 and 128 bytes), or when called outside a tokio runtime.
    pub fn build(self) -> Result<EventRecorder, Error> {
        let invalid = |field: &str, message: &str| Error::Invalid {
            field: field.to_owned(),
            message: message.to_owned(),
        };
        let Reporter {
            controller,
            instance,
        } = &self.settings.reporter;
        if controller.is_empty() || controller.len() > 253 {
            return Err(invalid(
                "reporting controller",
                "must be 1 to 253 bytes long (e.g. `example.com/widget-controller`)",
            ));
        }
        if instance.is_empty() || instance.len() > MAX_REASON_BYTES {
            return Err(invalid(
                "reporting instance",
                "must be 1 to 128 bytes long (e.g. the pod's name)",
            ));
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            invalid(
                "event recorder",
                "built outside a tokio runtime (its writer runs on the current one)",
            )
        })?;
        let shared = Arc::new(Shared {
            client: self.client,
            settings: self.settings,
            state: Mutex::new(State {
                series: SeriesCache::new(self.max_series),
                limits: RateLimits::new(self.rate_limit, self.max_rate_limited_objects),
            }),
            counters: Counters::default(),
            names: Names::default(),
            clock: self.clock,
            closed: AtomicBool::new(false),
            logs: Logs::default(),
        });
        let (queue, writes) = mpsc::channel(self.queue_capacity);
        let (stop, stopped) = watch::channel(false);
        let (finished, done) = watch::channel(false);
        runtime.spawn(Writer::new(Arc::clone(&shared), writes, stopped, finished).run());
        Ok(EventRecorder::from_parts(queue, shared, stop, done))
    }
}
