//! [`InformerBuilder`]: every setting of a [`SharedIndexInformer`] that must be chosen before
//! it starts, in one place.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kcache_reflector::{ErrorHook, ListOptions, ListerWatcher, ReflectorBuilder};
use kcache_store::{Indexers, KeyFunc, Object, TransformFn};

use crate::controller::ReflectorOptionsFn;

use super::{QueueKind, RunMode, SharedIndexInformer};

/// Builds a [`SharedIndexInformer`]: `SharedIndexInformer::builder(lister_watcher)`, the
/// settings that differ from the defaults, then [`build`](Self::build).
///
/// The defaults are the ones `cargo xtask bench` measured as fastest and leanest: no resync, a
/// namespace index, client-go's [`RealFifo`](QueueKind::RealFifo), and [`RunMode::Auto`].
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use kcache_informer::{QueueKind, SharedIndexInformer, strip_managed_fields};
/// use kcache_store::{DynamicObject, Indexers, Object};
///
/// let api = kcache_testing::FakeListerWatcher::<DynamicObject>::new();
/// let informer = SharedIndexInformer::builder(Arc::new(api))
///     .resync(Duration::from_secs(300))
///     .indexers(Indexers::new().with("by-app", |o: &DynamicObject| {
///         Ok(o.labels().and_then(|l| l.get("app")).cloned().into_iter().collect())
///     }))
///     .queue(QueueKind::DeltaFifo)
///     .transform(strip_managed_fields)
///     .name("widgets")
///     .reflector_options(|r| r.page_size(500))
///     .on_watch_error(|e| eprintln!("list/watch failed: {e}"))
///     .build();
/// assert!(!informer.has_synced());
/// ```
#[must_use = "an informer builder does nothing until `build`"]
pub struct InformerBuilder<T: Object> {
    pub(super) lw: Arc<dyn ListerWatcher<T>>,
    pub(super) name: Option<String>,
    pub(super) resync: Duration,
    pub(super) indexers: Indexers<T>,
    pub(super) namespace_index: bool,
    pub(super) queue: QueueKind,
    pub(super) transform: Option<TransformFn<T>>,
    pub(super) key_func: Option<KeyFunc<T>>,
    pub(super) list_options: ListOptions,
    pub(super) reflector_options: Option<ReflectorOptionsFn<T>>,
    pub(super) watch_error_hook: Option<ErrorHook>,
    pub(super) decode_error_hook: Option<ErrorHook>,
    pub(super) run_mode: RunMode,
}

impl<T: Object> InformerBuilder<T> {
    pub(super) fn new(lw: Arc<dyn ListerWatcher<T>>) -> Self {
        Self {
            lw,
            name: None,
            resync: Duration::ZERO,
            indexers: Indexers::new(),
            namespace_index: true,
            queue: QueueKind::default(),
            transform: None,
            key_func: None,
            list_options: ListOptions::default(),
            reflector_options: None,
            watch_error_hook: None,
            decode_error_hook: None,
            run_mode: RunMode::default(),
        }
    }

    /// The informer's name: the `name` label of its [metrics](crate::metrics), and the name of
    /// its reflector (the `resource` of its log span `reflector{resource=...}`) and of its
    /// queue. Default: what the lister-watcher serves
    /// ([`ListerWatcher::resource`](kcache_reflector::ListerWatcher::resource), e.g. `pods`),
    /// else `informer`. A name given to the reflector through
    /// [`reflector_options`](Self::reflector_options) renames the reflector alone.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into()).filter(|n| !n.is_empty());
        self
    }

    /// How often handlers are resynced unless they ask for another period (zero, the default:
    /// never). Also the period at which the informer checks whether a resync is due.
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = period;
        self
    }

    /// Indexes on the cache, beside the namespace index (more can be added after start with
    /// [`SharedIndexInformer::add_indexers`]).
    pub fn indexers(mut self, indexers: Indexers<T>) -> Self {
        for (name, f) in indexers {
            self.indexers.insert(name, f);
        }
        self
    }

    /// Whether the cache keeps its namespace index (on by default), which makes
    /// `lister().namespace(ns)` a lookup rather than a scan of every object. Turn it off only
    /// for cluster-scoped resources or caches never read by namespace.
    pub fn namespace_index(mut self, on: bool) -> Self {
        self.namespace_index = on;
        self
    }

    /// The queue between the reflector and the cache ([`QueueKind::RealFifo`] by default).
    pub fn queue(mut self, kind: QueueKind) -> Self {
        self.queue = kind;
        self
    }

    /// A function applied to every listed or watched object before it is cached, such as
    /// [`strip_managed_fields`](crate::strip_managed_fields). It must keep the object's key and
    /// be idempotent.
    pub fn transform(mut self, transform: impl Fn(T) -> T + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(transform));
        self
    }

    /// The function that keys objects in the cache and the queue (client-go's `KeyFunc`;
    /// `namespace/name` by default). Handlers and listers then see these keys.
    pub fn key_func(mut self, key_func: KeyFunc<T>) -> Self {
        self.key_func = Some(key_func);
        self
    }

    /// The label and field selectors every list and watch carries.
    pub fn list_options(mut self, options: ListOptions) -> Self {
        self.list_options = options;
        self
    }

    /// Adjusts the reflector the informer builds: page size, streaming lists, backoff, idle
    /// timeout (see [`ReflectorBuilder`]). Applied last, so it overrides the settings above
    /// (the reflector's name too; [`name`](Self::name) names the whole informer).
    pub fn reflector_options(
        mut self,
        f: impl FnOnce(ReflectorBuilder<T>) -> ReflectorBuilder<T> + Send + 'static,
    ) -> Self {
        self.reflector_options = Some(Box::new(f));
        self
    }

    /// Told of every list and watch failure (client-go's `WatchErrorHandler`); the informer
    /// retries with backoff either way, and logs each failure with its cause.
    pub fn on_watch_error(
        mut self,
        hook: impl Fn(&kcache_reflector::Error) + Send + Sync + 'static,
    ) -> Self {
        self.watch_error_hook = Some(Arc::new(hook));
        self
    }

    /// Told of every object version that could not be decoded and was left out of the cache
    /// (without this hook such failures go to [`on_watch_error`](Self::on_watch_error)).
    pub fn on_decode_error(
        mut self,
        hook: impl Fn(&kcache_reflector::Error) + Send + Sync + 'static,
    ) -> Self {
        self.decode_error_hook = Some(Arc::new(hook));
        self
    }

    /// Where [`run`](SharedIndexInformer::run) runs the informer ([`RunMode::Auto`] by
    /// default).
    pub fn run_mode(mut self, mode: RunMode) -> Self {
        self.run_mode = mode;
        self
    }

    /// The informer, ready for handlers and [`run`](SharedIndexInformer::run).
    pub fn build(self) -> SharedIndexInformer<T> {
        SharedIndexInformer::from_builder(self)
    }
}

impl<T: Object> fmt::Debug for InformerBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerBuilder")
            .field("name", &self.name)
            .field("resync", &self.resync)
            .field("namespace_index", &self.namespace_index)
            .field("queue", &self.queue)
            .field("list_options", &self.list_options)
            .field("run_mode", &self.run_mode)
            .finish_non_exhaustive()
    }
}
