//! [`Reflector`]: keeps a [`Store`] in step with the API server through a [`ListerWatcher`],
//! following client-go's list/watch rules exactly.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use kcache_store::{Object, ObjectKey, Store, meta_namespace_key};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::report::{ErrorHook, Reporter};
use crate::{
    Backoff, BackoffConfig, DecodeError, Error, ErrorChain, EventType, ListOptions, ListerWatcher,
    ObjectList, ObjectRef, ResourceVersionMatch, RetryWithDeadline, WatchEvent, WatchStream,
};

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

/// A transform applied to each object before it is wrapped in an `Arc` and stored.
pub type TransformFn<T> = Arc<dyn Fn(T) -> T + Send + Sync>;
/// A hook asked, each resync period, whether to resync.
pub type ShouldResyncFn = Arc<dyn Fn() -> bool + Send + Sync>;

/// Lists and watches one kind of object and writes what it sees into a [`Store`] (a cache or a
/// queue): client-go's `Reflector`.
///
/// The protocol, as client-go 1.36 speaks it:
/// - By default it starts with a streaming list (`sendInitialEvents=true`, RV `""`, match
///   `NotOlderThan`), collecting the initial events until the bookmark annotated
///   `k8s.io/initial-events-end: "true"`, then `replace`s the store and keeps the same stream
///   as its watch (logging a warning every 10 s while it waits for that bookmark). Any error
///   other than a 429, a refused connection or a 410 falls back to a list.
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
///   inside a span `reflector{resource="..."}`.
/// - A streaming list that ends or stalls without its bookmark is retried with backoff and
///   falls back to a paginated list after
///   [`watch_list_attempts`](ReflectorBuilder::watch_list_attempts) tries. A list that repeats
///   a continue token fails at once, and one longer than
///   [`max_list_pages`](ReflectorBuilder::max_list_pages) pages fails. `Retry-After` is
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
    page_size: Option<i64>,
    max_list_pages: usize,
    use_watch_list: bool,
    watch_list_attempts: u32,
    retry_after_cap: Duration,
    min_watch_timeout: Duration,
    idle_timeout: Option<Duration>,
    max_internal_error_retry: Duration,
    base: ListOptions,
    transform: Option<TransformFn<T>>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    last_sync_rv: String,
    rv_unavailable: bool,
    paginated_result: bool,
    backoff: Backoff,
    rng: fastrand::Rng,
}

/// Builds a [`Reflector`]; see [`Reflector::builder`].
#[must_use]
pub struct ReflectorBuilder<T: Object> {
    lw: Arc<dyn ListerWatcher<T>>,
    store: Arc<dyn Store<T>>,
    name: Option<String>,
    resync_period: Option<Duration>,
    should_resync: Option<ShouldResyncFn>,
    watch_error_hook: Option<ErrorHook>,
    decode_error_hook: Option<ErrorHook>,
    page_size: Option<i64>,
    max_list_pages: usize,
    use_watch_list: bool,
    watch_list_attempts: u32,
    backoff: BackoffConfig,
    seed: Option<u64>,
    min_watch_timeout: Duration,
    idle_timeout: Option<Duration>,
    max_internal_error_retry: Duration,
    base: ListOptions,
    transform: Option<TransformFn<T>>,
}

impl<T: Object> ReflectorBuilder<T> {
    /// The name used in logs and errors: the `resource` of the span `reflector{resource=...}`.
    /// Default: what the lister-watcher says it serves
    /// ([`ListerWatcher::resource`]), else `reflector`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Calls `store.resync()` every `period` while watching; zero turns resync off (the default).
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = (!period.is_zero()).then_some(period);
        self
    }

    /// Asked at each resync tick; `false` skips that resync (client-go's `ShouldResync`).
    pub fn should_resync(mut self, f: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.should_resync = Some(Arc::new(f));
        self
    }

    /// Told about every list or watch error (client-go's `WatchErrorHandler`): failed rounds,
    /// failed streaming-list attempts, watches ended by an error, retried watch requests; and
    /// about undecodable objects when no
    /// [`decode_error_handler`](Self::decode_error_handler) is set. It never changes what
    /// happens next.
    pub fn watch_error_handler(mut self, f: impl Fn(&Error) + Send + Sync + 'static) -> Self {
        self.watch_error_hook = Some(Arc::new(f));
        self
    }

    /// Told once about every version of an object that could not be decoded (an
    /// [`Error::Decode`]): list items and watch events, each left out of the cache.
    pub fn decode_error_handler(mut self, f: impl Fn(&Error) + Send + Sync + 'static) -> Self {
        self.decode_error_hook = Some(Arc::new(f));
        self
    }

    /// An explicit list page size (client-go's `WatchListPageSize`). Without it the page size is
    /// automatic: 500, except for a list at a real resource version, which is unpaginated so the
    /// watch cache can serve it.
    pub fn page_size(mut self, size: i64) -> Self {
        self.page_size = (size > 0).then_some(size);
        self
    }

    /// The most pages one paginated list may take (default [`DEFAULT_MAX_LIST_PAGES`], at least
    /// 1). A list that goes past it fails (and is retried after the backoff), as does one whose
    /// server repeats a continue token.
    pub fn max_list_pages(mut self, pages: usize) -> Self {
        self.max_list_pages = pages.max(1);
        self
    }

    /// How many streaming-list attempts one round makes before it falls back to a paginated
    /// list (default [`DEFAULT_WATCH_LIST_ATTEMPTS`], at least 1): attempts that end or stall
    /// without the initial-events bookmark, hold an unreadable event, or fail with a 429, a 410
    /// or a refused connection. Other errors fall back at once, as in client-go.
    pub fn watch_list_attempts(mut self, attempts: u32) -> Self {
        self.watch_list_attempts = attempts.max(1);
        self
    }

    /// Whether to start with a streaming list (`sendInitialEvents`); on by default.
    pub fn use_watch_list(mut self, on: bool) -> Self {
        self.use_watch_list = on;
        self
    }

    /// The backoff numbers (default: client-go's). Its cap also caps a server's `Retry-After`.
    pub fn backoff(mut self, config: BackoffConfig) -> Self {
        self.backoff = config;
        self
    }

    /// Seeds the random jitter and watch timeouts, so runs are reproducible.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The shortest watch timeout; honoured only above 5 minutes, as in client-go.
    pub fn min_watch_timeout(mut self, min: Duration) -> Self {
        self.min_watch_timeout = min.max(MIN_WATCH_TIMEOUT);
        self
    }

    /// Ends a watch that delivered nothing for this long (`None`: never). Default 5 minutes.
    pub fn idle_timeout(mut self, idle: Option<Duration>) -> Self {
        self.idle_timeout = idle.filter(|d| !d.is_zero());
        self
    }

    /// How long to keep re-watching (without a relist) while watches end with 500
    /// `InternalError`s, counted from the first of a run of them (client-go's
    /// `MaxInternalErrorRetryDuration`). Default zero: the first one relists. A run ends when a
    /// minute passes without one.
    pub fn max_internal_error_retry_duration(mut self, max: Duration) -> Self {
        self.max_internal_error_retry = max;
        self
    }

    /// The label and field selectors of every request (other fields are ignored).
    pub fn list_options(mut self, base: ListOptions) -> Self {
        self.base = ListOptions {
            label_selector: base.label_selector,
            field_selector: base.field_selector,
            ..ListOptions::default()
        };
        self
    }

    /// Transforms each object before it is stored (e.g. to drop `managedFields`).
    pub fn transform(mut self, f: impl Fn(T) -> T + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(f));
        self
    }

    /// The reflector.
    #[must_use]
    pub fn build(self) -> Reflector<T> {
        let seed = self.seed.unwrap_or_else(|| fastrand::u64(..));
        let name = self
            .name
            .or_else(|| self.lw.resource())
            .unwrap_or_else(|| "reflector".to_owned());
        Reflector {
            name,
            lw: self.lw,
            store: self.store,
            resync_period: self.resync_period,
            should_resync: self.should_resync,
            reporter: Reporter::new(self.watch_error_hook, self.decode_error_hook),
            page_size: self.page_size,
            max_list_pages: self.max_list_pages,
            use_watch_list: self.use_watch_list,
            watch_list_attempts: self.watch_list_attempts,
            retry_after_cap: self.backoff.cap,
            min_watch_timeout: self.min_watch_timeout,
            idle_timeout: self.idle_timeout,
            max_internal_error_retry: self.max_internal_error_retry,
            base: self.base,
            transform: self.transform,
            state: Mutex::new(State {
                last_sync_rv: String::new(),
                rv_unavailable: false,
                paginated_result: false,
                backoff: Backoff::new(self.backoff, seed),
                rng: fastrand::Rng::with_seed(seed.wrapping_add(0x9E37_79B9_7F4A_7C15)),
            }),
        }
    }
}

impl<T: Object> fmt::Debug for ReflectorBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorBuilder")
            .field("name", &self.name)
            .field("resync_period", &self.resync_period)
            .field("page_size", &self.page_size)
            .field("max_list_pages", &self.max_list_pages)
            .field("use_watch_list", &self.use_watch_list)
            .field("watch_list_attempts", &self.watch_list_attempts)
            .field("backoff", &self.backoff)
            .field("idle_timeout", &self.idle_timeout)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
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

/// How a watch stream ended without an error.
enum WatchEnd {
    /// The server closed it (or the connection dropped): watch again from the last RV.
    Clean,
    /// The cancellation token fired.
    Cancelled,
}

/// How a streaming list's initial phase ended without an error.
enum InitialEvents<T> {
    /// The initial-events-end bookmark arrived: the state and its RV.
    Synced(Vec<Arc<T>>, String),
    /// The cancellation token fired.
    Cancelled,
}

/// The next item of a watch stream, or why there is none.
enum Next<T> {
    Item(Option<Result<WatchEvent<T>, Error>>),
    /// The caller's timer fired (the resync period, or the bookmark warning).
    Tick,
    Idle(Duration),
    Cancelled,
}

/// A watch stream item, sorted by [`Reflector::classify`].
enum Item<T> {
    Event(WatchEvent<T>),
    /// Undecodable.
    Undecodable(DecodeError),
    /// The stream ended (cleanly, or by a transport error or timeout).
    Ended,
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
    /// A builder writing what `lw` lists and watches into `store`.
    pub fn builder(lw: Arc<dyn ListerWatcher<T>>, store: Arc<dyn Store<T>>) -> ReflectorBuilder<T> {
        ReflectorBuilder {
            lw,
            store,
            name: None,
            resync_period: None,
            should_resync: None,
            watch_error_hook: None,
            decode_error_hook: None,
            page_size: None,
            max_list_pages: DEFAULT_MAX_LIST_PAGES,
            use_watch_list: true,
            watch_list_attempts: DEFAULT_WATCH_LIST_ATTEMPTS,
            backoff: BackoffConfig::default(),
            seed: None,
            min_watch_timeout: MIN_WATCH_TIMEOUT,
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            max_internal_error_retry: Duration::ZERO,
            base: ListOptions::default(),
            transform: None,
        }
    }

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
        }
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
            Some(d) => d.min(self.retry_after_cap),
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

    /// Leaves out (and reports) objects without a name: no key can be made for them.
    fn named(&self, items: Vec<T>) -> Vec<T> {
        if items.iter().all(has_name) {
            return items;
        }
        items
            .into_iter()
            .enumerate()
            .filter_map(|(i, o)| {
                if has_name(&o) {
                    return Some(o);
                }
                self.reporter
                    .decode(&nameless(format!("list item {i}"), &o, None));
                None
            })
            .collect()
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
        let mut stream = None;
        if self.use_watch_list {
            match self.watch_list(cancel).await {
                Ok(Some(s)) => stream = Some(s),
                Ok(None) => return Ok(()),
                Err(e) => self.report(
                    &e,
                    "streaming list failed; falling back to a paginated list",
                ),
            }
        }
        if stream.is_none() && !self.list(cancel).await? {
            return Ok(());
        }
        self.watch(stream, cancel).await
    }

    /// Lists into the store. `Ok(false)` when cancelled.
    async fn list(&self, cancel: &CancellationToken) -> Result<bool, Error> {
        let rv = self.relist_resource_version();
        let page_size = match self.page_size {
            Some(n) => n,
            None if self.state().paginated_result => DEFAULT_PAGE_SIZE,
            None if !rv.is_empty() && rv != "0" => 0,
            None => DEFAULT_PAGE_SIZE,
        };
        let opts = ListOptions {
            resource_version: rv.clone(),
            ..self.options()
        };
        let Some(result) = cancellable(cancel, self.pager_list(opts, page_size)).await else {
            return Ok(false);
        };
        let (list, paginated) = match result {
            Err(e) if e.is_gone() || e.is_too_large_rv() => {
                tracing::debug!(error = %ErrorChain(&e), "relisting at the latest version");
                self.set_rv_unavailable(true);
                let opts = ListOptions {
                    resource_version: self.relist_resource_version(),
                    ..self.options()
                };
                match cancellable(cancel, self.pager_list(opts, page_size)).await {
                    None => return Ok(false),
                    Some(r) => r?,
                }
            }
            r => r?,
        };
        {
            let mut s = self.state();
            if rv == "0" && paginated {
                s.paginated_result = true;
            }
            s.rv_unavailable = false;
        }
        for d in &list.skipped {
            self.reporter.decode(d);
        }
        let items: Vec<Arc<T>> = self
            .named(list.items)
            .into_iter()
            .map(|o| self.prepare(o))
            .collect();
        self.store
            .replace(items, &list.resource_version)
            .map_err(Error::Store)?;
        self.set_last_sync_rv(&list.resource_version);
        Ok(true)
    }

    /// client-go's pager: follows continue tokens, clears the RV on later pages, and after an
    /// expired continue token lists everything at once at the requested RV. Also says whether
    /// the result came in pages.
    async fn pager_list(
        &self,
        mut opts: ListOptions,
        page_size: i64,
    ) -> Result<(ObjectList<T>, bool), Error> {
        if opts.limit.unwrap_or(0) == 0 {
            opts.limit = (page_size > 0).then_some(page_size);
        }
        let requested_rv = opts.resource_version.clone();
        let requested_rvm = opts.resource_version_match;
        let mut acc: Option<ObjectList<T>> = None;
        let mut paginated = false;
        let mut tokens = HashSet::new();
        loop {
            if tokens.len() >= self.max_list_pages {
                return Err(Error::Limit(format!(
                    "the list did not end within {} pages (the reflector's max_list_pages)",
                    self.max_list_pages
                )));
            }
            let page = match self.lw.list(&opts).await {
                Ok(page) => page,
                Err(e) if e.is_expired() && !opts.continue_token.is_empty() => {
                    tracing::debug!("continue token expired, listing everything at once");
                    opts.limit = None;
                    opts.continue_token.clear();
                    opts.resource_version = requested_rv;
                    opts.resource_version_match = requested_rvm;
                    return Ok((self.lw.list(&opts).await?, paginated));
                }
                Err(e) => return Err(e),
            };
            let next = page.next_page_token().map(str::to_owned);
            let page = match acc.take() {
                None => page,
                Some(mut all) => {
                    all.items.extend(page.items);
                    all.skipped.extend(page.skipped);
                    all
                }
            };
            match next {
                None => {
                    let mut page = page;
                    page.continue_token = None;
                    return Ok((page, paginated));
                }
                Some(token) => {
                    acc = Some(page);
                    if !tokens.insert(token.clone()) {
                        return Err(Error::Limit(format!(
                            "the server repeated the continue token of an earlier page (after {} pages)",
                            tokens.len()
                        )));
                    }
                    opts.continue_token = token;
                    opts.resource_version.clear();
                    opts.resource_version_match = None;
                    paginated = true;
                }
            }
        }
    }

    /// The streaming list. `Ok(Some(stream))` once the store holds the initial state (the
    /// stream then goes on as the watch), `Ok(None)` when cancelled, `Err` to fall back to a
    /// paginated list: at once for most errors (as client-go does), after
    /// `watch_list_attempts` tries for attempts that end, stall or hold an unreadable event
    /// before the initial-events bookmark, or fail with a 429, a 410 or a refused connection.
    /// Every failed attempt is reported; retries back off.
    async fn watch_list(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Option<WatchStream<T>>, Error> {
        let mut attempts = 0u32;
        loop {
            if cancel.is_cancelled() {
                return Ok(None);
            }
            let opts = ListOptions {
                resource_version: self.rewatch_resource_version(),
                resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
                allow_watch_bookmarks: true,
                send_initial_events: Some(true),
                timeout_seconds: Some(self.watch_timeout_seconds()),
                ..self.options()
            };
            let start = Instant::now();
            let outcome = match cancellable(cancel, self.lw.watch(&opts)).await {
                None => return Ok(None),
                Some(Ok(mut stream)) => self
                    .initial_events(&mut stream, start, cancel)
                    .await
                    .map(|o| (o, stream)),
                Some(Err(e)) => Err(e),
            };
            let e = match outcome {
                Ok((InitialEvents::Synced(items, rv), stream)) => {
                    self.set_rv_unavailable(false);
                    self.store.replace(items, &rv).map_err(Error::Store)?;
                    self.set_last_sync_rv(&rv);
                    return Ok(Some(stream));
                }
                Ok((InitialEvents::Cancelled, _)) => return Ok(None),
                Err(e) => e,
            };
            attempts += 1;
            let gone = e.is_gone() || e.is_too_large_rv();
            let retriable = gone
                || e.is_watch_retriable()
                || matches!(
                    e,
                    Error::InitialEventsIncomplete { .. }
                        | Error::VeryShortWatch { .. }
                        | Error::WatchIdle(_)
                        | Error::Decode(_)
                );
            if !retriable || attempts >= self.watch_list_attempts {
                return Err(e);
            }
            self.report(&e, "streaming list failed; trying again");
            if gone {
                self.set_rv_unavailable(true);
            } else if !sleep_or_cancel(cancel, self.retry_delay(&e)).await {
                return Ok(None);
            }
        }
    }

    /// Collects a streaming list's initial events until the initial-events-end bookmark.
    async fn initial_events(
        &self,
        stream: &mut WatchStream<T>,
        start: Instant,
        cancel: &CancellationToken,
    ) -> Result<InitialEvents<T>, Error> {
        let mut temp: BTreeMap<ObjectKey, Arc<T>> = BTreeMap::new();
        let mut count = 0usize;
        let mut last_event = Instant::now();
        let mut warn_at = Instant::now() + AWAITING_BOOKMARK_WARNING;
        loop {
            let item = match self
                .next(stream, Some(warn_at), &mut last_event, cancel)
                .await
            {
                Next::Item(item) => item,
                Next::Tick => {
                    // client-go's ticker: say why the informer is not synced yet.
                    tracing::warn!(
                        objects = temp.len(),
                        last_event_secs_ago = last_event.elapsed().as_secs(),
                        "still waiting for the bookmark that ends the streaming list's initial events"
                    );
                    warn_at = Instant::now() + AWAITING_BOOKMARK_WARNING;
                    continue;
                }
                Next::Idle(d) => return Err(Error::WatchIdle(d)),
                Next::Cancelled => return Ok(InitialEvents::Cancelled),
            };
            let ev = match self.classify(item, count, start)? {
                Item::Event(ev) => ev,
                Item::Undecodable(d) => {
                    // A readable identity: leave that key out; else the attempt fails.
                    self.reporter.decode(&d);
                    let (key, _, _) = d.identity().ok_or_else(|| Error::decode(d.clone()))?;
                    temp.remove(&key);
                    count += 1;
                    continue;
                }
                Item::Ended => return Err(Error::InitialEventsIncomplete { events: count }),
            };
            count += 1;
            match ev {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    let o = self.prepare(self.keyable(o, EventType::Added)?);
                    let k = meta_namespace_key(&*o).map_err(|e| Error::Store(e.into()))?;
                    temp.insert(k, o);
                }
                WatchEvent::Deleted(o) => {
                    let o = self.keyable(o, EventType::Deleted)?;
                    if let Ok(k) = meta_namespace_key(&o) {
                        temp.remove(&k);
                    }
                }
                WatchEvent::Bookmark(b) => {
                    if b.initial_events_end {
                        return Ok(InitialEvents::Synced(
                            temp.into_values().collect(),
                            b.resource_version,
                        ));
                    }
                }
                WatchEvent::Error(s) => return Err(Error::Api(s)),
            }
        }
    }

    /// `obj` when it has a name; else the nameless object is reported and the watch must end
    /// (no key can be made: which object changed is unknown).
    fn keyable(&self, obj: T, event_type: EventType) -> Result<T, Error> {
        if has_name(&obj) {
            return Ok(obj);
        }
        let d = nameless("watch event", &obj, Some(event_type));
        self.reporter.decode(&d);
        Err(Error::decode(d))
    }

    /// Sorts a watch stream's item: an event; a decode error; or the end of the stream, which
    /// is an error if it came before any event and too soon after `start` (client-go's "very
    /// short watch"). Other errors are returned.
    fn classify(
        &self,
        item: Option<Result<WatchEvent<T>, Error>>,
        count: usize,
        start: Instant,
    ) -> Result<Item<T>, Error> {
        match item {
            None | Some(Err(Error::Transport(_) | Error::Timeout)) => {
                if count == 0 && start.elapsed() < VERY_SHORT_WATCH {
                    return Err(Error::VeryShortWatch {
                        name: self.name.clone(),
                    });
                }
                Ok(Item::Ended)
            }
            Some(Err(Error::Decode(d))) => Ok(Item::Undecodable(*d)),
            Some(Err(e)) => Err(e),
            Some(Ok(ev)) => Ok(Item::Event(ev)),
        }
    }

    /// Waits for the next stream item, the caller's timer (`tick_at`), the idle timeout or
    /// cancellation. A due timer wins over a ready item (the tick before the idle timeout), so a
    /// busy stream cannot starve a resync.
    ///
    /// One timer at most, and only while the stream has nothing ready: in a burst of events
    /// neither a timer nor a cancellation waiter is registered.
    async fn next(
        &self,
        stream: &mut WatchStream<T>,
        tick_at: Option<Instant>,
        last_event: &mut Instant,
        cancel: &CancellationToken,
    ) -> Next<T> {
        loop {
            if cancel.is_cancelled() {
                return Next::Cancelled;
            }
            let idle_at = self.idle_timeout.map(|d| *last_event + d);
            let now = Instant::now();
            if tick_at.is_some_and(|t| now >= t) {
                return Next::Tick;
            }
            if let (Some(d), Some(at)) = (self.idle_timeout, idle_at)
                && now >= at
            {
                return Next::Idle(d);
            }
            let wake_at = match (tick_at, idle_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            // The stream first: cancellation was checked above, and the waits below are only
            // polled (registered) when the stream is pending; the loop then sees what happened.
            tokio::select! {
                biased;
                item = stream.next() => {
                    *last_event = Instant::now();
                    return Next::Item(item);
                }
                () = cancel.cancelled() => return Next::Cancelled,
                () = sleep_until_opt(wake_at) => {}
            }
        }
    }

    /// The watch loop: watches (or goes on with the streaming list's stream) until a relist is
    /// due, re-watching from the last RV after clean closes.
    async fn watch(
        &self,
        mut stream: Option<WatchStream<T>>,
        cancel: &CancellationToken,
    ) -> Result<(), Error> {
        let mut resync_at = self.resync_period.map(|p| Instant::now() + p);
        let mut internal_errors =
            RetryWithDeadline::new(self.max_internal_error_retry, INTERNAL_ERROR_RESET);
        loop {
            if cancel.is_cancelled() {
                return Ok(());
            }
            let start = Instant::now();
            let (s, propagate) = if let Some(s) = stream.take() {
                (s, true)
            } else {
                let rv = self.last_sync_resource_version();
                let opts = ListOptions {
                    resource_version: rv.clone(),
                    timeout_seconds: Some(self.watch_timeout_seconds()),
                    allow_watch_bookmarks: true,
                    ..self.options()
                };
                match cancellable(cancel, self.lw.watch(&opts)).await {
                    None => return Ok(()),
                    Some(Ok(s)) => (s, !rv.is_empty() && rv != "0"),
                    Some(Err(e)) if e.is_watch_retriable() => {
                        self.report(&e, "watch request failed; retrying after a backoff");
                        if !sleep_or_cancel(cancel, self.retry_delay(&e)).await {
                            return Ok(());
                        }
                        continue;
                    }
                    Some(Err(e)) => return Err(e),
                }
            };
            let ended = self
                .handle_watch(s, propagate, start, &mut resync_at, cancel)
                .await;
            if let Err(e) = &ended {
                internal_errors.after(e);
            }
            match ended {
                Ok(WatchEnd::Clean) => {}
                Ok(WatchEnd::Cancelled) => return Ok(()),
                Err(e) if e.is_too_many_requests() => {
                    self.report(
                        &e,
                        "watch ended; watching again after the server's Retry-After",
                    );
                    if !sleep_or_cancel(cancel, self.retry_delay(&e)).await {
                        return Ok(());
                    }
                }
                Err(e) if e.is_internal_error() && internal_errors.should_retry() => {
                    // Re-watch from the last RV at once, as client-go does.
                    self.report(&e, "watch ended; watching again");
                }
                Err(e @ Error::WatchIdle(_)) => self.report(&e, "watch ended; watching again"),
                Err(e) => {
                    // A 410, an unreadable event and everything else: relist (after the
                    // round's backoff).
                    self.report(&e, "watch ended; relisting");
                    return Ok(());
                }
            }
        }
    }

    /// Applies one watch stream's events to the store until it ends.
    async fn handle_watch(
        &self,
        mut stream: WatchStream<T>,
        mut propagate: bool,
        start: Instant,
        resync_at: &mut Option<Instant>,
        cancel: &CancellationToken,
    ) -> Result<WatchEnd, Error> {
        let mut count = 0usize;
        let mut last_event = Instant::now();
        loop {
            let item = match self
                .next(&mut stream, *resync_at, &mut last_event, cancel)
                .await
            {
                Next::Item(item) => item,
                Next::Tick => {
                    *resync_at = self.resync_period.map(|p| Instant::now() + p);
                    if self.should_resync.as_ref().is_none_or(|f| f()) {
                        tracing::debug!("resync");
                        self.store.resync().map_err(Error::Store)?;
                    }
                    continue;
                }
                Next::Idle(d) => return Err(Error::WatchIdle(d)),
                Next::Cancelled => return Ok(WatchEnd::Cancelled),
            };
            let ev = match self.classify(item, count, start)? {
                Item::Event(ev) => ev,
                Item::Undecodable(d) => {
                    count += 1;
                    self.reporter.decode(&d);
                    // Without a readable identity the cache may hold a version the server has
                    // replaced or deleted: end the watch and relist.
                    let (key, rv, ty) = d.identity().ok_or_else(|| Error::decode(d.clone()))?;
                    if let Err(e) = self.store.delete_key(&key) {
                        tracing::warn!(error = %ErrorChain(&e), key = %key, "store write failed");
                    }
                    propagate |= ty != EventType::Added;
                    if propagate {
                        self.store.bookmark(rv);
                        self.set_last_sync_rv(rv);
                    }
                    continue;
                }
                Item::Ended => return Ok(WatchEnd::Clean),
            };
            count += 1;
            let (obj, result) = match ev {
                WatchEvent::Added(o) => {
                    let o = self.prepare(self.keyable(o, EventType::Added)?);
                    (Some(Arc::clone(&o)), self.store.add(o))
                }
                WatchEvent::Modified(o) => {
                    let o = self.prepare(self.keyable(o, EventType::Modified)?);
                    propagate = true;
                    (Some(Arc::clone(&o)), self.store.update(o))
                }
                WatchEvent::Deleted(o) => {
                    let o = self.prepare(self.keyable(o, EventType::Deleted)?);
                    propagate = true;
                    (Some(Arc::clone(&o)), self.store.delete(o))
                }
                WatchEvent::Bookmark(b) => {
                    propagate = true;
                    if !b.resource_version.is_empty() {
                        self.store.bookmark(&b.resource_version);
                        self.set_last_sync_rv(&b.resource_version);
                    }
                    continue;
                }
                WatchEvent::Error(s) => return Err(Error::Api(s)),
            };
            if let Err(e) = result {
                tracing::warn!(error = %ErrorChain(&e), "store write failed");
            }
            if propagate
                && let Some(rv) = obj.as_deref().and_then(T::resource_version)
                && !rv.is_empty()
            {
                self.set_last_sync_rv(rv);
            }
        }
    }
}

/// Whether `obj` has a name (without one no key can be made).
fn has_name<T: Object>(obj: &T) -> bool {
    obj.name().is_some_and(|n| !n.is_empty())
}

/// The report of an object without a name.
fn nameless<T: Object>(
    context: impl Into<String>,
    obj: &T,
    event_type: Option<EventType>,
) -> DecodeError {
    DecodeError::new(context, "metadata.name is missing or empty")
        .with_event_type(event_type)
        .with_path(Some("metadata.name".to_owned()))
        .with_object(Some(ObjectRef {
            namespace: obj.namespace().map(str::to_owned),
            resource_version: obj.resource_version().map(str::to_owned),
            uid: obj.uid().map(str::to_owned),
            ..ObjectRef::default()
        }))
}
