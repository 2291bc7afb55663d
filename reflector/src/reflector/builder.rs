//! [`ReflectorBuilder`]: every setting of a [`Reflector`], with client-go's defaults.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kcache_store::{Object, Store};

use super::{
    AfterListFn, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_LIST_OBJECTS, DEFAULT_MAX_LIST_PAGES,
    DEFAULT_WATCH_LIST_ATTEMPTS, MIN_WATCH_TIMEOUT, Reflector, ShouldResyncFn, State, TransformFn,
};
use crate::metrics::ReflectorMetrics;
use crate::report::{ErrorHook, Reporter};
use crate::{Backoff, BackoffConfig, Error, ListOptions, ListerWatcher};

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
            max_list_objects: DEFAULT_MAX_LIST_OBJECTS,
            use_watch_list: true,
            watch_list_attempts: DEFAULT_WATCH_LIST_ATTEMPTS,
            backoff: BackoffConfig::default(),
            seed: None,
            min_watch_timeout: MIN_WATCH_TIMEOUT,
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            max_internal_error_retry: Duration::ZERO,
            base: ListOptions::default(),
            transform: None,
            after_list: None,
        }
    }
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
    max_list_objects: usize,
    use_watch_list: bool,
    watch_list_attempts: u32,
    backoff: BackoffConfig,
    seed: Option<u64>,
    min_watch_timeout: Duration,
    idle_timeout: Option<Duration>,
    max_internal_error_retry: Duration,
    base: ListOptions,
    transform: Option<TransformFn<T>>,
    after_list: Option<AfterListFn>,
}

impl<T: Object> ReflectorBuilder<T> {
    /// The name used in logs, errors and metrics: the `resource` of the span
    /// `reflector{resource=...}` and the `name` label of its [metrics](crate::metrics).
    /// Default: what the lister-watcher says it serves ([`ListerWatcher::resource`]), else
    /// `reflector`.
    ///
    /// Give each reflector of a program its own name: the metrics of two reflectors with the
    /// same name (two of one resource, with the default) are one series, their counts added
    /// up. Nothing checks it.
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

    /// The most objects one list may bring, its pages together (undecodable items counted),
    /// and the most initial events a streaming list may send before its bookmark (default
    /// [`DEFAULT_MAX_LIST_OBJECTS`], at least 1). Past it the list fails with
    /// [`Error::Limit`] and is retried after the backoff (a streaming list falls back to a
    /// paginated one), and what it brought is dropped: this is what bounds the memory a list
    /// that never ends can take. Keep the lister-watcher's own bound on one response (an HTTP
    /// lister-watcher's `max_list_objects`) at least as high.
    pub fn max_list_objects(mut self, objects: usize) -> Self {
        self.max_list_objects = objects.max(1);
        self
    }

    /// How many streaming-list attempts one round makes before it falls back to a paginated
    /// list (default [`DEFAULT_WATCH_LIST_ATTEMPTS`], at least 1): attempts that end or stall
    /// without the initial-events bookmark, hold an unreadable event, or fail with a 429, a 410
    /// or a refused connection. Each retry waits the backoff, and so does the paginated list
    /// after the last one (a 410 is retried at once). Other errors fall back at once, as in
    /// client-go. (client-go retries a 429 or a refused connection without a bound; kcache
    /// lists after these attempts, with the same backoff between every two requests.)
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

    /// Awaited after every list (paginated or streaming) has filled the store, before the
    /// watch behind it is read: a watch that already carries changes (a busy server sends them
    /// right behind a streaming list's initial-events bookmark) waits until the future ends.
    /// The reflector's consumer uses it to take the listed objects first; an informer does, so
    /// that the changes queued behind its initial list never delay its sync. The future should
    /// end within seconds: the server buffers the watch meanwhile, and may close it (the
    /// reflector then watches again from the list's resource version). Cancelling the
    /// reflector ends the wait.
    pub fn after_list(
        mut self,
        f: impl Fn() -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync + 'static,
    ) -> Self {
        self.after_list = Some(Arc::new(f));
        self
    }

    /// The reflector. Its [metrics](crate::metrics) are registered now, with the recorder in
    /// place.
    #[must_use]
    pub fn build(self) -> Reflector<T> {
        let seed = self.seed.unwrap_or_else(|| fastrand::u64(..));
        let name = self
            .name
            .or_else(|| self.lw.resource())
            .unwrap_or_else(|| "reflector".to_owned());
        let (metrics, error_counters) = ReflectorMetrics::new(&name);
        Reflector {
            name,
            lw: self.lw,
            store: self.store,
            resync_period: self.resync_period,
            should_resync: self.should_resync,
            reporter: Reporter::new(
                self.watch_error_hook,
                self.decode_error_hook,
                error_counters,
            ),
            metrics,
            page_size: self.page_size,
            max_list_pages: self.max_list_pages,
            max_list_objects: self.max_list_objects,
            use_watch_list: self.use_watch_list,
            watch_list_attempts: self.watch_list_attempts,
            min_watch_timeout: self.min_watch_timeout,
            idle_timeout: self.idle_timeout,
            max_internal_error_retry: self.max_internal_error_retry,
            base: self.base,
            transform: self.transform,
            after_list: self.after_list,
            state: Mutex::new(State {
                last_sync_rv: String::new(),
                filled: false,
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
            .field("max_list_objects", &self.max_list_objects)
            .field("use_watch_list", &self.use_watch_list)
            .field("watch_list_attempts", &self.watch_list_attempts)
            .field("backoff", &self.backoff)
            .field("idle_timeout", &self.idle_timeout)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}
