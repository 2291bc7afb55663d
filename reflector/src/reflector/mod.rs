//! [`Reflector`]: keeps a [`Store`] in step with the API server through a [`ListerWatcher`],
//! following client-go's list/watch rules exactly.
//!
//! This module holds the reflector, its state and its rounds (list-and-watch, then a backoff);
//! the parts of a round have a file each: `builder.rs` (the settings), `list.rs` (the pager and
//! the replace), `streaming_list.rs` (the initial events up to their bookmark) and `watch.rs`
//! (the watch loop).

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use kcache_store::{Object, Store};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

mod builder;
mod list;
mod streaming_list;
mod watch;

pub use self::builder::ReflectorBuilder;
use self::streaming_list::StreamingList;

use crate::metrics::ReflectorMetrics;
use crate::report::Reporter;
use crate::{Backoff, Error, ListOptions, ListerWatcher};

/// The page size of a paginated list (client-go's pager default).
pub const DEFAULT_PAGE_SIZE: i64 = 500;
/// The shortest watch timeout; each watch asks for a random one in `[min, 2 * min)`.
pub const MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(300);
/// The default idle timeout: a watch that delivers nothing (not even a bookmark, which servers
/// send about every minute) for this long is ended and re-opened from the last resource version.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// The most pages one list may take (500 objects each by default: five million objects); a
/// server that never ends a list is an error past this.
pub const DEFAULT_MAX_LIST_PAGES: usize = 10_000;
/// The most objects one list may bring, all pages together, and the most initial events a
/// streaming list may send before its bookmark: 300,000, twice the largest cluster Kubernetes
/// supports (150,000 pods). A list of realistic pods (4-6 KB of JSON each) that fits in 1 GiB
/// holds 175,000 to 260,000. It is what bounds the memory of a list that never ends: the
/// smallest pods a server can send cost about 5.8 KB each as typed k8s-openapi `Pod`s (the
/// structs are wide) and 0.7 KB as `Compact<Pod>`, so such a list stops at about 1.7 GiB and
/// 0.2 GiB. Raise it (the reflector's and the lister-watcher's `max_list_objects`) for a
/// resource with more objects.
pub const DEFAULT_MAX_LIST_OBJECTS: usize = 300_000;
/// How many streaming-list attempts that end (or stall) without their initial-events bookmark,
/// or fail with a retriable error, are made in one round before it falls back to a paginated
/// list.
pub const DEFAULT_WATCH_LIST_ATTEMPTS: u32 = 3;
/// How often a streaming list still waiting for its initial-events bookmark says so (client-go:
/// every 10 s).
const AWAITING_BOOKMARK_WARNING: Duration = Duration::from_secs(10);
/// A run of internal errors ends after this long without one (client-go: one minute).
const INTERNAL_ERROR_RESET: Duration = Duration::from_secs(60);
/// A watch that ends sooner than this with no event is a [`Error::VeryShortWatch`].
const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);

pub use kcache_store::TransformFn;
/// A hook asked, each resync period, whether to resync.
pub type ShouldResyncFn = Arc<dyn Fn() -> bool + Send + Sync>;

/// A hook awaited after a list has filled the store and before the watch behind it is read
/// (see [`ReflectorBuilder::after_list`]).
pub type AfterListFn =
    Arc<dyn Fn() -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Lists and watches one kind of object and writes what it sees into a [`Store`] (a cache or a
/// queue): client-go's `Reflector`.
///
/// The protocol, as client-go 1.36 speaks it:
/// - By default it starts with a streaming list (`sendInitialEvents=true`, RV `""`, match
///   `NotOlderThan`), collecting the initial events until the bookmark annotated
///   `k8s.io/initial-events-end: "true"`, then `replace`s the store and keeps the same stream
///   as its watch (logging a warning every 10 s while it waits for that bookmark). A 429, a
///   refused connection, a 410 or an attempt that ends or stalls before the bookmark is
///   retried (a 410 at once, the others after a backoff); any other error falls back to a
///   list at once. A 400 or 422 answer (a server that does not serve streaming lists) falls
///   back without a report: only a debug line, as client-go logs it at a low level.
/// - A list is at RV `"0"` first, then at the last synced RV; at `""` only after a 410 or a too
///   large RV (retried at once). Pages of 500 unless the RV is a real version (so the watch cache
///   can serve it) or an earlier RV `"0"` list came back paginated; an expired continue token
///   falls back to one full list at the requested RV.
/// - A watch asks for bookmarks and a random 5-10 minute `timeoutSeconds`, starts at the last
///   synced RV, and after a clean close (or a dropped connection) starts again from the last RV
///   without a relist. A 410 (event or answer) ends it and leads to a relist, as does a watch
///   that ends within a second with no event, or any other `ERROR` event. A 429 or a refused
///   connection waits (`Retry-After` when given, else the backoff) and watches again. A 500
///   `InternalError` event watches again at once while within
///   [`max_internal_error_retry_duration`](ReflectorBuilder::max_internal_error_retry_duration)
///   of the first of a run (zero by default: it relists).
/// - Every round of list-and-watch is followed by a backoff (800 ms doubling to 30 s with jitter,
///   reset after 2 quiet minutes).
/// - After each watch event it applies, the reflector tells the store the version reached
///   ([`Store::update_resource_version`], client-go's `ResourceVersionUpdater`, read before any
///   transform). A bookmark, or an undecodable event whose version could be read, is a
///   [`Store::bookmark`] instead, and only that: `bookmark` implies the version is recorded (a
///   store must make [`last_sync_resource_version`](Store::last_sync_resource_version) say it,
///   as `update_resource_version` would). The synthetic adds a watch from `""` or `"0"` starts
///   with tell the store nothing.
///
/// Never stale, never silent, never unbounded:
/// - An object that cannot be decoded is left out of the cache. A watch event whose type, name
///   and resource version can still be read removes that key (handlers hear a deletion of the
///   version the cache held) and the resource version moves on; one that cannot be read ends
///   the watch and the reflector relists (after the round's backoff, so repeated failures back
///   off). A list item that cannot be decoded, or has no name, is left out of the replace.
///   Each undecodable object version is reported once: to the decode-error hook (or the
///   watch-error hook when there is none), counted ([`decode_errors`](Self::decode_errors))
///   and logged at WARN with its path and a value-free reason.
/// - Every list and watch failure goes to the watch-error hook, is counted
///   ([`errors`](Self::errors)) and is logged at WARN with its whole cause chain on one line
///   (at most 10 lines a minute of each kind; the next line says how many were held back),
///   inside a span `reflector{resource="..."}`. The one exception is a streaming list the
///   server answers with a 400 or a 422: it does not serve streaming lists, which is not a
///   failure (the paginated list that follows reports any).
/// - A streaming list that ends or stalls without its bookmark is retried with backoff and
///   falls back to a paginated list after
///   [`watch_list_attempts`](ReflectorBuilder::watch_list_attempts) tries, after one more
///   backoff: every retry, streaming or not, waits the reflector's backoff (client-go's
///   `TestNewReflectorWithCustomBackoff`). A list that repeats
///   a continue token fails at once, and one longer than
///   [`max_list_pages`](ReflectorBuilder::max_list_pages) pages or
///   [`max_list_objects`](ReflectorBuilder::max_list_objects) objects fails. `Retry-After` is
///   honoured up to the backoff's cap (30 s).
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use kcache_reflector::Reflector;
/// use kcache_store::{Cache, DynamicObject, Store};
/// use kcache_testing::FakeListerWatcher;
/// use tokio_util::sync::CancellationToken;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let fake = FakeListerWatcher::<DynamicObject>::new();
/// fake.handle().add(DynamicObject::new(Some("ns"), "a"));
/// let cache = Arc::new(Cache::<DynamicObject>::new());
/// let reflector = Reflector::builder(Arc::new(fake.clone()), cache.clone())
///     .name("pods")
///     .build();
///
/// let cancel = CancellationToken::new();
/// tokio::join!(reflector.run(cancel.clone()), async {
///     fake.handle().wait_for_watches(1).await;
///     cancel.cancel();
/// });
/// assert_eq!(cache.len(), 1);
/// assert_eq!(reflector.last_sync_resource_version(), "1");
/// # }
/// ```
pub struct Reflector<T: Object> {
    name: String,
    lw: Arc<dyn ListerWatcher<T>>,
    store: Arc<dyn Store<T>>,
    resync_period: Option<Duration>,
    should_resync: Option<ShouldResyncFn>,
    reporter: Reporter,
    metrics: ReflectorMetrics,
    page_size: Option<i64>,
    max_list_pages: usize,
    max_list_objects: usize,
    use_watch_list: bool,
    watch_list_attempts: u32,
    min_watch_timeout: Duration,
    idle_timeout: Option<Duration>,
    max_internal_error_retry: Duration,
    base: ListOptions,
    transform: Option<TransformFn<T>>,
    after_list: Option<AfterListFn>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    last_sync_rv: String,
    /// A list (or streaming list) has filled the store once: later lists are relists.
    filled: bool,
    rv_unavailable: bool,
    paginated_result: bool,
    backoff: Backoff,
    rng: fastrand::Rng,
}

impl<T: Object> fmt::Debug for Reflector<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("name", &self.name)
            .field(
                "last_sync_resource_version",
                &self.last_sync_resource_version(),
            )
            .field("use_watch_list", &self.use_watch_list)
            .field("errors", &self.errors())
            .field("decode_errors", &self.decode_errors())
            .finish_non_exhaustive()
    }
}

/// Runs `f` unless `cancel` fires first.
async fn cancellable<F: Future>(cancel: &CancellationToken, f: F) -> Option<F::Output> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => None,
        v = f => Some(v),
    }
}

/// Sleeps `d`; `false` if `cancel` fired first.
async fn sleep_or_cancel(cancel: &CancellationToken, d: Duration) -> bool {
    cancellable(cancel, tokio::time::sleep(d)).await.is_some()
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl<T: Object> Reflector<T> {
    /// The reflector's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many list and watch failures have been reported.
    pub fn errors(&self) -> u64 {
        self.reporter.errors()
    }

    /// How many versions of undecodable objects have been reported (each left out of the
    /// cache).
    pub fn decode_errors(&self) -> u64 {
        self.reporter.decode_errors()
    }

    /// The resource version of the last list, event or bookmark applied (`""` before the first).
    pub fn last_sync_resource_version(&self) -> String {
        self.state().last_sync_rv.clone()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_last_sync_rv(&self, rv: &str) {
        let mut s = self.state();
        if s.last_sync_rv != rv {
            s.last_sync_rv.clear();
            s.last_sync_rv.push_str(rv);
            drop(s);
            self.metrics.synced_to(rv);
        }
    }

    /// A list (or streaming list) that started at `started` filled the store: its duration is
    /// recorded, and the lists after it are relists.
    fn filled(&self, started: Instant) {
        self.state().filled = true;
        self.metrics
            .list_duration
            .record(started.elapsed().as_secs_f64());
    }

    /// A list (or streaming-list attempt) starts.
    fn list_started(&self) {
        self.metrics.lists.increment(1);
    }

    fn set_rv_unavailable(&self, unavailable: bool) {
        self.state().rv_unavailable = unavailable;
    }

    /// The RV of a relist: `""` after a 410, `"0"` before the first sync, else the last one.
    fn relist_resource_version(&self) -> String {
        let s = self.state();
        if s.rv_unavailable {
            String::new()
        } else if s.last_sync_rv.is_empty() {
            "0".to_owned()
        } else {
            s.last_sync_rv.clone()
        }
    }

    /// The RV of a streaming list: `""` after a 410, else the last synced one.
    fn rewatch_resource_version(&self) -> String {
        let s = self.state();
        if s.rv_unavailable {
            String::new()
        } else {
            s.last_sync_rv.clone()
        }
    }

    fn next_backoff(&self) -> Duration {
        self.state().backoff.next_delay(Instant::now())
    }

    /// How long to wait after `e`: the server's `Retry-After` up to the backoff's cap, else the
    /// next backoff.
    fn retry_delay(&self, e: &Error) -> Duration {
        match e.retry_after() {
            Some(d) => d.min(self.state().backoff.cap()),
            None => self.next_backoff(),
        }
    }

    /// A random `timeoutSeconds` in `[min, 2 * min)`.
    fn watch_timeout_seconds(&self) -> i64 {
        let min = self.min_watch_timeout.as_secs().max(1);
        let secs = min + self.state().rng.u64(0..min);
        i64::try_from(secs).unwrap_or(i64::MAX)
    }

    fn options(&self) -> ListOptions {
        self.base.clone()
    }

    fn report(&self, e: &Error, what: &str) {
        self.reporter.error(e, what);
    }

    fn prepare(&self, obj: T) -> Arc<T> {
        Arc::new(match &self.transform {
            Some(f) => f(obj),
            None => obj,
        })
    }

    /// Lists and watches until the cancellation token fires, backing off between rounds.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops the reflector at once; nothing is left half-written (each store
    /// call is synchronous). Cancelling the token makes it return promptly, even from a backoff
    /// sleep or a stalled stream.
    pub async fn run(&self, cancel: CancellationToken) {
        // At WARN level, so that the span names the resource wherever its warnings are shown.
        let span = tracing::warn_span!("reflector", resource = %self.name);
        self.run_rounds(cancel).instrument(span).await;
    }

    async fn run_rounds(&self, cancel: CancellationToken) {
        loop {
            if cancel.is_cancelled() {
                return;
            }
            let failed = self.list_and_watch(&cancel).await.err();
            if cancel.is_cancelled() {
                return;
            }
            let delay = match &failed {
                Some(e) => {
                    self.report(e, "list and watch failed; retrying after a backoff");
                    self.retry_delay(e)
                }
                None => self.next_backoff(),
            };
            tracing::debug!(?delay, "backing off before the next list");
            if !sleep_or_cancel(&cancel, delay).await {
                return;
            }
        }
    }

    /// One round: a streaming list (or a list), then watches until one must relist. `Ok` when
    /// a relist is due or `cancel` fired.
    ///
    /// # Errors
    ///
    /// The list failed, a watch request failed with an error that calls for a relist, or the
    /// store refused a replace.
    pub async fn list_and_watch(&self, cancel: &CancellationToken) -> Result<(), Error> {
        if self.state().filled {
            self.metrics.relists.increment(1);
        }
        let mut stream = None;
        if self.use_watch_list && self.lw.supports_streaming_lists() {
            match self.watch_list(cancel).await {
                StreamingList::Synced(s) => stream = Some(s),
                StreamingList::Cancelled => return Ok(()),
                StreamingList::FallBack => {}
            }
        }
        if stream.is_none() && !self.list(cancel).await? {
            return Ok(());
        }
        if let Some(after_list) = &self.after_list
            && cancellable(cancel, after_list()).await.is_none()
        {
            return Ok(());
        }
        self.watch(stream, cancel).await
    }
}
