//! [`SharedIndexInformer`]: one list/watch, one indexed cache, many handlers and streams.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kcache_reflector::{ListOptions, ListerWatcher};
use kcache_store::{Cache, Indexers, Lister, Object};

use crate::controller::{Controller, ReflectorOptionsFn};
use crate::processor::Processor;
use crate::{Error, ReadOnlyIndexer, Result};

mod handlers;
mod run;

pub use self::run::RunPart;

/// Which queue sits between the reflector and the cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum QueueKind {
    /// client-go's current default: every event in order, relists as one atomic `ReplacedAll`.
    #[default]
    RealFifo,
    /// The classic queue: deltas merged per key, tombstones for deletions found by relisting.
    DeltaFifo,
}

/// A function applied to every object before it enters the cache (client-go's `TransformFunc`).
pub type TransformFn<T> = Arc<dyn Fn(T) -> T + Send + Sync>;

/// Called with every list or watch error (client-go's `WatchErrorHandler`).
pub type WatchErrorHandler = Arc<dyn Fn(&kcache_reflector::Error) + Send + Sync>;

/// Everything that may change before `run`.
struct Settings<T: Object> {
    started: bool,
    stopped: bool,
    /// How often the reflector asks whether a resync is due (client-go's `resyncCheckPeriod`).
    resync_check: Duration,
    /// The resync period handlers get unless they ask for another.
    default_handler_resync: Duration,
    queue: QueueKind,
    transform: Option<TransformFn<T>>,
    watch_error_handler: Option<WatchErrorHandler>,
    list_options: ListOptions,
    reflector_options: Option<ReflectorOptionsFn<T>>,
    controller: Option<Arc<Controller<T>>>,
}

struct Inner<T: Object> {
    lw: Arc<dyn ListerWatcher<T>>,
    indexer: Arc<Cache<T>>,
    processor: Processor<T>,
    synced: Arc<AtomicBool>,
    settings: Mutex<Settings<T>>,
    /// Held while a popped item is processed and while a late handler joins, so a new handler
    /// sees every object exactly once: in its replay or as a later event.
    block_deltas: Mutex<()>,
    next_id: AtomicU64,
}

/// One list/watch of a resource shared by many handlers, with an indexed cache
/// (client-go's `SharedIndexInformer`).
///
/// - Handlers can be added before or after [`run`](Self::run); a late one first receives the
///   current cache as adds with `is_in_initial_list` set. Each runs on its own thread with an
///   unbounded buffer ([`Registration::buffer_depth`](crate::Registration::buffer_depth) shows how far behind it is), so a slow or
///   panicking handler delays neither the others nor the reflector. The price of never blocking
///   is memory: a handler that stops consuming grows its buffer (a warning is logged at 1024
///   pending events and at every doubling after that).
/// - [`subscribe`](Self::subscribe) gives the same events as a `Stream`.
/// - Resync periods per handler follow client-go: at least one second, at least the informer's
///   check period, and never when the informer was built with a resync period of zero.
///
/// Cloning is cheap and shares the informer.
pub struct SharedIndexInformer<T: Object> {
    inner: Arc<Inner<T>>,
}

impl<T: Object> SharedIndexInformer<T> {
    /// An informer over `lw` whose handlers resync every `resync` (zero: never).
    pub fn new(lw: Arc<dyn ListerWatcher<T>>, resync: Duration) -> Self {
        Self::with_indexers(lw, resync, Indexers::new())
    }

    /// An informer with `indexers` on its cache.
    pub fn with_indexers(
        lw: Arc<dyn ListerWatcher<T>>,
        resync: Duration,
        indexers: Indexers<T>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                lw,
                indexer: Arc::new(Cache::with_indexers(indexers)),
                processor: Processor::new(),
                synced: Arc::new(AtomicBool::new(false)),
                settings: Mutex::new(Settings {
                    started: false,
                    stopped: false,
                    resync_check: resync,
                    default_handler_resync: resync,
                    queue: QueueKind::default(),
                    transform: None,
                    watch_error_handler: None,
                    list_options: ListOptions::default(),
                    reflector_options: None,
                    controller: None,
                }),
                block_deltas: Mutex::new(()),
                next_id: AtomicU64::new(1),
            }),
        }
    }

    fn settings(&self) -> std::sync::MutexGuard<'_, Settings<T>> {
        self.inner
            .settings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn before_start(&self, f: impl FnOnce(&mut Settings<T>)) -> Result<()> {
        let mut s = self.settings();
        if s.started {
            return Err(Error::AlreadyStarted);
        }
        f(&mut s);
        Ok(())
    }

    /// Chooses the queue ([`QueueKind::RealFifo`] by default).
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] after `run`.
    pub fn set_queue(&self, kind: QueueKind) -> Result<()> {
        self.before_start(|s| s.queue = kind)
    }

    /// Sets a function applied to every listed or watched object before it is cached, such as
    /// [`strip_managed_fields`](crate::strip_managed_fields). It must be idempotent.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] after `run`.
    pub fn set_transform(&self, transform: impl Fn(T) -> T + Send + Sync + 'static) -> Result<()> {
        self.before_start(|s| s.transform = Some(Arc::new(transform)))
    }

    /// Sets the function told of every list and watch error (the informer retries with backoff).
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] after `run`.
    pub fn set_watch_error_handler(
        &self,
        handler: impl Fn(&kcache_reflector::Error) + Send + Sync + 'static,
    ) -> Result<()> {
        self.before_start(|s| s.watch_error_handler = Some(Arc::new(handler)))
    }

    /// Sets the label/field selectors every list and watch carries.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] after `run`.
    pub fn set_list_options(&self, options: ListOptions) -> Result<()> {
        self.before_start(|s| s.list_options = options)
    }

    /// Adjusts the reflector this informer will build: backoff, page size, streaming list,
    /// idle timeout, name (see [`ReflectorBuilder`](kcache_reflector::ReflectorBuilder)).
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # use kcache_informer::SharedIndexInformer;
    /// # use kcache_store::DynamicObject;
    /// # let informer = SharedIndexInformer::<DynamicObject>::new(
    /// #     Arc::new(kcache_testing::FakeListerWatcher::new()), Duration::ZERO);
    /// informer.set_reflector_options(|b| b.name("pods").page_size(1000))?;
    /// # Ok::<(), kcache_informer::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] after `run`.
    pub fn set_reflector_options(
        &self,
        f: impl FnOnce(kcache_reflector::ReflectorBuilder<T>) -> kcache_reflector::ReflectorBuilder<T>
        + Send
        + 'static,
    ) -> Result<()> {
        self.before_start(|s| s.reflector_options = Some(Box::new(f)))
    }

    /// Adds indexes, before or after start; objects already cached are indexed at once.
    ///
    /// # Errors
    ///
    /// [`Error::Stopped`] after the informer stopped, or the indexer's conflict error.
    pub fn add_indexers(&self, indexers: Indexers<T>) -> Result<()> {
        if self.settings().stopped {
            return Err(Error::Stopped);
        }
        Ok(kcache_store::Indexer::add_indexers(
            &*self.inner.indexer,
            indexers,
        )?)
    }

    /// True once the initial list has been processed into the cache (not that handlers saw it:
    /// ask their [`Registration`](crate::Registration)s).
    pub fn has_synced(&self) -> bool {
        self.inner.synced.load(Ordering::Acquire)
    }

    /// Whether the informer has stopped.
    pub fn is_stopped(&self) -> bool {
        self.settings().stopped
    }

    /// The resource version the reflector last synced to, once running.
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.settings()
            .controller
            .as_ref()
            .and_then(|r| r.last_sync_resource_version())
    }

    /// How many versions of objects could not be decoded and were left out of the cache (each
    /// also reported to the watch-error handler and logged): 0 before start.
    pub fn decode_errors(&self) -> u64 {
        self.settings()
            .controller
            .as_ref()
            .map_or(0, |c| c.decode_errors())
    }

    /// How many list and watch failures were reported (each to the watch-error handler and the
    /// log): 0 before start.
    pub fn errors(&self) -> u64 {
        self.settings()
            .controller
            .as_ref()
            .map_or(0, |c| c.errors())
    }

    /// A read-only view of the cache.
    pub fn indexer(&self) -> ReadOnlyIndexer<T> {
        ReadOnlyIndexer::new(Arc::clone(&self.inner.indexer))
    }

    /// A lister over the cache.
    pub fn lister(&self) -> Lister<T> {
        Lister::new(Arc::clone(&self.inner.indexer) as Arc<dyn kcache_store::Indexer<T>>)
    }
}

impl<T: Object> Clone for SharedIndexInformer<T> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T: Object> fmt::Debug for SharedIndexInformer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("synced", &self.inner.synced.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}
