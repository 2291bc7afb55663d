//! [`SharedIndexInformer`]: one list/watch, one indexed cache, many handlers and streams.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use kcache_reflector::{ErrorHook, ListOptions, ListerWatcher};
use kcache_store::{Cache, Indexers, KeyFunc, Lister, Object, TransformFn};

use crate::controller::{Controller, ReflectorOptionsFn};
use crate::handler_panic::{KeyOf, keyed_by};
use crate::informer_logs::InformerLogs;
use crate::metrics::InformerMetrics;
use crate::processor::Processor;
use crate::sync_signal::SyncSignal;
use crate::{Error, ReadOnlyIndexer, Result};

mod builder;
mod handlers;
mod run;

pub use self::builder::InformerBuilder;
pub use self::run::RunMode;

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

/// The informer's settings and lifecycle: what the builder chose (taken at start) and what
/// handlers change before start.
struct Settings<T: Object> {
    started: bool,
    stopped: bool,
    /// How often the reflector asks whether a resync is due (client-go's `resyncCheckPeriod`).
    resync_check: Duration,
    /// The resync period handlers get unless they ask for another.
    default_handler_resync: Duration,
    queue: QueueKind,
    transform: Option<TransformFn<T>>,
    key_func: Option<KeyFunc<T>>,
    watch_error_hook: Option<ErrorHook>,
    decode_error_hook: Option<ErrorHook>,
    list_options: ListOptions,
    reflector_options: Option<ReflectorOptionsFn<T>>,
    run_mode: RunMode,
    controller: Option<Arc<Controller<T>>>,
}

struct Inner<T: Object> {
    /// The informer's name: its metrics' `name` label, its reflector's and queue's name.
    name: String,
    lw: Arc<dyn ListerWatcher<T>>,
    indexer: Arc<Cache<T>>,
    processor: Processor<T>,
    sync: Arc<SyncSignal>,
    settings: Mutex<Settings<T>>,
    /// Held while a popped item is processed and while a late handler joins, so a new handler
    /// sees every object exactly once: in its replay or as a later event.
    block_deltas: Mutex<()>,
    next_id: AtomicU64,
    /// The informer's own metrics, registered when it starts.
    metrics: OnceLock<InformerMetrics>,
    /// The rate limits of the lines its handlers can repeat, shared by them.
    logs: Arc<InformerLogs>,
    /// How a handler's panic report names an object: by the informer's key function.
    key_of: KeyOf<T>,
}

/// One list/watch of a resource shared by many handlers, with an indexed cache
/// (client-go's `SharedIndexInformer`).
///
/// - Handlers can be added before or after [`run`](Self::run); a late one first receives the
///   current cache as adds with `is_in_initial_list` set. Each runs on its own thread with an
///   unbounded buffer ([`Registration::buffer_depth`](crate::Registration::buffer_depth) shows how far behind it is), so a slow or
///   panicking handler delays neither the others nor the reflector. The price of never blocking
///   is memory: a handler that stops consuming grows its buffer (a warning is logged at 1024
///   pending events and at every doubling after that, each time the buffer fills up again, at
///   most ten lines a minute per informer, the next one saying how many were held back).
/// - A handler's panic is caught on its thread: the event is skipped (an initial-list add still
///   counts as delivered), one error is logged at error level naming the handler
///   ([`ResourceEventHandler::name`](crate::ResourceEventHandler::name)), the event, the
///   object's key, the panic and the handler's panic count, and the handler's thread waits one
///   second before its next event. So at most one panic is handled per second per handler,
///   and at most ten lines are logged a minute per informer (the next one says how many were
///   held back): a handler that panics on every event cannot flood the log, and the other
///   handlers are not affected.
/// - [`remove_event_handler`](Self::remove_event_handler) removes a handler without waiting
///   for the callback it may be running; [`shut_down_event_handler`](Self::shut_down_event_handler)
///   removes it and resolves once that callback has returned and its thread has exited (a
///   panic pause ends at once). Stopping the informer shuts every handler down.
/// - [`subscribe`](Self::subscribe) gives the same events as a `Stream`.
/// - Resync periods per handler follow client-go: at least one second, at least the informer's
///   check period, and never when the informer was built with a resync period of zero.
/// - It records [metrics](crate::metrics) labelled with its [name](Self::name): its
///   reflector's and queue's, the size of its cache, the events distributed, and each
///   handler's buffer depth and panics.
///
/// Cloning is cheap and shares the informer.
pub struct SharedIndexInformer<T: Object> {
    inner: Arc<Inner<T>>,
}

impl<T: Object> SharedIndexInformer<T> {
    /// Starts building an informer over `lister_watcher`: see [`InformerBuilder`] for the
    /// settings and their defaults.
    pub fn builder(lister_watcher: Arc<dyn ListerWatcher<T>>) -> InformerBuilder<T> {
        InformerBuilder::new(lister_watcher)
    }

    fn from_builder(b: InformerBuilder<T>) -> Self {
        let mut indexers = b.indexers;
        if b.namespace_index && !indexers.contains(kcache_store::NAMESPACE_INDEX) {
            indexers = indexers.with_namespace();
        }
        let cache = match &b.key_func {
            Some(key_func) => Cache::with_key_func(Arc::clone(key_func), indexers),
            None => Cache::with_indexers(indexers),
        };
        let name = b
            .name
            .or_else(|| b.lw.resource())
            .unwrap_or_else(|| "informer".to_owned());
        let key_of = keyed_by(
            b.key_func
                .clone()
                .unwrap_or_else(kcache_store::default_key_func),
        );
        Self {
            inner: Arc::new(Inner {
                logs: InformerLogs::new(&name),
                key_of,
                name,
                lw: b.lw,
                indexer: Arc::new(cache),
                processor: Processor::new(),
                sync: Arc::new(SyncSignal::default()),
                settings: Mutex::new(Settings {
                    started: false,
                    stopped: false,
                    resync_check: b.resync,
                    default_handler_resync: b.resync,
                    queue: b.queue,
                    transform: b.transform,
                    key_func: b.key_func,
                    watch_error_hook: b.watch_error_hook,
                    decode_error_hook: b.decode_error_hook,
                    list_options: b.list_options,
                    reflector_options: b.reflector_options,
                    run_mode: b.run_mode,
                    controller: None,
                }),
                block_deltas: Mutex::new(()),
                next_id: AtomicU64::new(1),
                metrics: OnceLock::new(),
            }),
        }
    }

    /// The informer's name ([`InformerBuilder::name`]): the `name` label of its
    /// [metrics](crate::metrics).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    fn settings(&self) -> std::sync::MutexGuard<'_, Settings<T>> {
        self.inner
            .settings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
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
        self.inner.sync.is_synced()
    }

    /// Resolves with `true` once the initial list has been processed into the cache, `false`
    /// if the informer stops first. Woken by the informer, never polled; the future owns what
    /// it needs, so several can be joined (`tokio::join!(pods.synced(), nodes.synced())`) or
    /// raced against a cancellation.
    pub fn synced(&self) -> impl Future<Output = bool> + Send + 'static {
        let sync = Arc::clone(&self.inner.sync);
        async move { sync.wait().await }
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
            .field("name", &self.inner.name)
            .field("synced", &self.inner.sync.is_synced())
            .finish_non_exhaustive()
    }
}
