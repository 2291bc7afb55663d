//! [`SharedIndexInformer`]: one list/watch, one indexed cache, many handlers and streams.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kcache_queue::{DeltaFifo, Deltas, ProcessError, Queue, RealFifo};
use kcache_reflector::{ListOptions, ListerWatcher};
use kcache_store::{Cache, Indexers, Lister, Object, Store};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::controller::{Config, Controller, ReflectorOptionsFn};
use crate::listener::Listener;
use crate::process::process_deltas;
use crate::processor::{MINIMUM_RESYNC_PERIOD, Processor, determine_resync_period};
use crate::{
    Error, Event, EventStream, ReadOnlyIndexer, Registration, ResourceEventHandler, Result,
};

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
///   unbounded buffer ([`Registration::buffer_depth`] shows how far behind it is), so a slow or
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

    /// Adds a handler with the informer's default resync period.
    ///
    /// # Errors
    ///
    /// [`Error::Stopped`] after the informer stopped; [`Error::Thread`] if no thread can be had.
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<T>,
    ) -> Result<Registration<T>> {
        let resync = self.settings().default_handler_resync;
        self.add_event_handler_with_resync(handler, resync)
    }

    /// Adds a handler that asks to be resynced every `resync` (zero: never).
    ///
    /// # Errors
    ///
    /// As [`add_event_handler`](Self::add_event_handler).
    pub fn add_event_handler_with_resync(
        &self,
        handler: impl ResourceEventHandler<T>,
        resync: Duration,
    ) -> Result<Registration<T>> {
        let handler: Arc<dyn ResourceEventHandler<T>> = Arc::new(handler);
        self.register(resync, |id, synced| {
            Listener::with_handler(id, handler, resync, synced).map_err(Error::Thread)
        })
    }

    /// Subscribes to the events as a `Stream`, with the informer's default resync period.
    ///
    /// # Errors
    ///
    /// [`Error::Stopped`] after the informer stopped.
    pub fn subscribe(&self) -> Result<EventStream<T>> {
        let resync = self.settings().default_handler_resync;
        self.subscribe_with_resync(resync)
    }

    /// Subscribes to the events as a `Stream` that asks to be resynced every `resync`.
    ///
    /// # Errors
    ///
    /// [`Error::Stopped`] after the informer stopped.
    pub fn subscribe_with_resync(&self, resync: Duration) -> Result<EventStream<T>> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut shared = None;
        self.register(resync, |id, synced| {
            let l = Listener::with_channel(id, tx, resync, synced);
            shared = Some(Arc::clone(&l.shared));
            Ok(l)
        })?;
        let shared = shared.ok_or(Error::Stopped)?;
        Ok(EventStream::new(rx, shared))
    }

    /// client-go's `AddEventHandlerWithOptions`: reconciles the resync period, registers the
    /// listener and, after start, replays the cache to it.
    fn register(
        &self,
        requested: Duration,
        make: impl FnOnce(u64, Arc<AtomicBool>) -> Result<Listener<T>>,
    ) -> Result<Registration<T>> {
        let mut s = self.settings();
        if s.stopped {
            return Err(Error::Stopped);
        }
        let mut resync = requested;
        if !resync.is_zero() {
            resync = resync.max(MINIMUM_RESYNC_PERIOD);
            if resync < s.resync_check {
                if s.started {
                    tracing::warn!(
                        ?resync,
                        check = ?s.resync_check,
                        "resync period is shorter than the informer's check period; raised"
                    );
                    resync = s.resync_check;
                } else {
                    s.resync_check = resync;
                    self.inner.processor.reconcile(resync);
                }
            }
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let listener = make(id, Arc::clone(&self.inner.synced))?;
        {
            let mut r = listener
                .resync
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            r.requested = resync;
            r.effective = determine_resync_period(resync, s.resync_check);
            if s.started && !r.effective.is_zero() {
                r.next = Some(Instant::now() + r.effective);
            }
        }
        let listener = Arc::new(listener);
        let registration = Registration {
            id,
            informer: Arc::as_ptr(&self.inner) as usize,
            shared: Arc::clone(&listener.shared),
        };
        if s.started {
            // Join under the delta lock: every object arrives once, in the replay or later.
            let _block = self
                .inner
                .block_deltas
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for obj in self.inner.indexer.list() {
                listener.push(Event::Add {
                    obj,
                    is_in_initial_list: true,
                });
            }
            self.inner.processor.add(listener);
        } else {
            self.inner.processor.add(listener);
        }
        Ok(registration)
    }

    /// Removes a handler: its pending events are dropped; an event being handled finishes.
    /// Removing twice, or a registration of another informer, does nothing.
    pub fn remove_event_handler(&self, registration: &Registration<T>) {
        if registration.informer != Arc::as_ptr(&self.inner) as usize {
            return;
        }
        let _block = self
            .inner
            .block_deltas
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(l) = self.inner.processor.remove(registration.id) {
            l.close();
        }
    }

    /// True once the initial list has been processed into the cache (not that handlers saw it:
    /// ask their [`Registration`]s).
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

    /// Lists, watches and dispatches until `cancel` fires, then stops every handler.
    ///
    /// One future drives everything (reflector, queue processing, sync tracking); poll it on
    /// the task of your choice. Handlers run on their own threads.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] on a second call.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops the informer as cancelling does, except that handler threads
    /// are left to finish their current event on their own.
    pub async fn run(&self, cancel: CancellationToken) -> Result<()> {
        let (reflect, process) = self.run_parts(cancel)?;
        tokio::join!(reflect, process);
        Ok(())
    }

    /// [`run`](Self::run) on a thread of its own with a single-threaded tokio runtime: listing,
    /// watching, decoding, cache updates and dispatch all happen on that one thread (handlers
    /// keep their own threads). Returns once the informer has stopped.
    ///
    /// This is the fast way to run an informer on a multi-threaded runtime. There the future of
    /// [`run`](Self::run) moves between worker threads, so objects are decoded on one thread
    /// and freed (when replaced or deleted) on another, and common allocators free memory from
    /// a foreign thread far more slowly: glibc's malloc locks the other thread's arena for every
    /// chunk. On its own thread the informer allocates and frees in one place (handler threads
    /// hand their finished events back to it), which takes in watch events markedly faster
    /// (`cargo xtask bench` compares both; the README's bench section has the figures).
    ///
    /// Connections the lister-watcher opens from that thread are served by it; when the
    /// informer stops they close, and other users of a shared client (an HTTP/2 connection is
    /// shared) reconnect: their watches resume from their last resource version. Its futures
    /// must not depend on the caller's runtime; client-http's and the fakes in kcache-testing
    /// do not. Tokio's paused test clock does not reach the thread: tests that pause time use
    /// [`run`](Self::run).
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # use kcache_informer::SharedIndexInformer;
    /// # use kcache_store::DynamicObject;
    /// # use tokio_util::sync::CancellationToken;
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let informer = SharedIndexInformer::<DynamicObject>::new(
    /// #     Arc::new(kcache_testing::FakeListerWatcher::new()), Duration::ZERO);
    /// let cancel = CancellationToken::new();
    /// let running = tokio::spawn({
    ///     let (informer, cancel) = (informer.clone(), cancel.clone());
    ///     async move { informer.run_on_own_thread(cancel).await }
    /// });
    /// let synced = || informer.has_synced();
    /// assert!(kcache_informer::wait_for_cache_sync(&CancellationToken::new(), &[&synced]).await);
    /// cancel.cancel();
    /// running.await??;
    /// assert!(informer.is_stopped());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run); [`Error::Thread`] if the thread or its runtime cannot be made, or
    /// if the thread dies.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves the thread running until `cancel` fires.
    pub async fn run_on_own_thread(&self, cancel: CancellationToken) -> Result<()> {
        let (reflect, process) = self.run_parts(cancel)?;
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("kcache-informer".into())
            .spawn(move || {
                // `enable_all`: timers, and the I/O driver whenever tokio is built with it (as it
                // is wherever a network lister-watcher such as client-http is linked in).
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let result = runtime.map(|runtime| {
                    runtime.block_on(async {
                        tokio::join!(reflect, process);
                    });
                });
                let _ = done_tx.send(result);
            })
            .map_err(Error::Thread)?;
        match done_rx.await {
            Ok(result) => result.map_err(Error::Thread),
            Err(_) => Err(Error::Thread(std::io::Error::other(
                "the informer thread died",
            ))),
        }
    }

    /// [`run`](Self::run) as two futures, to poll on two tasks so that listing, watching and
    /// decoding (the first) run beside cache updates and dispatch (the second) on another core.
    /// Objects are then decoded on one thread and freed on another; with glibc's malloc that
    /// measured no faster than [`run`](Self::run) (`cargo xtask bench`), and
    /// [`run_on_own_thread`](Self::run_on_own_thread) is the fast way:
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # use kcache_informer::SharedIndexInformer;
    /// # use kcache_store::DynamicObject;
    /// # use tokio_util::sync::CancellationToken;
    /// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let informer = SharedIndexInformer::<DynamicObject>::new(
    /// #     Arc::new(kcache_testing::FakeListerWatcher::new()), Duration::ZERO);
    /// let cancel = CancellationToken::new();
    /// let (reflect, process) = informer.run_parts(cancel.clone())?;
    /// let (reflect, process) = (tokio::spawn(reflect), tokio::spawn(process));
    /// cancel.cancel();
    /// reflect.await?;
    /// process.await?; // the informer has stopped once this one is done
    /// assert!(informer.is_stopped());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// The informer stops (handlers shut down) when the second future ends.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] on a second call (of either method).
    pub fn run_parts(&self, cancel: CancellationToken) -> Result<(RunPart, RunPart)> {
        let controller = self.start()?;
        let reflect = {
            let (controller, cancel) = (Arc::clone(&controller), cancel.clone());
            Box::pin(async move { controller.run_reflector(cancel).await }) as RunPart
        };
        let inner = Arc::clone(&self.inner);
        let process = Box::pin(async move {
            controller.run_processor(cancel).await;
            inner
                .settings
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .stopped = true;
            inner.processor.shutdown();
        }) as RunPart;
        Ok((reflect, process))
    }

    /// Marks the informer started and builds its queue and controller.
    fn start(&self) -> Result<Arc<Controller<T>>> {
        let controller = {
            let mut s = self.settings();
            if s.started {
                return Err(Error::AlreadyStarted);
            }
            if s.stopped {
                return Err(Error::Stopped);
            }
            s.started = true;
            let known = Arc::clone(&self.inner.indexer);
            let queue: Arc<dyn Queue<T>> = match s.queue {
                QueueKind::RealFifo => Arc::new(RealFifo::builder().known_objects(known).build()),
                QueueKind::DeltaFifo => Arc::new(
                    DeltaFifo::builder()
                        .known_objects(known)
                        .emit_delta_type_replaced(true)
                        .build(),
                ),
            };
            let weak = Arc::downgrade(&self.inner);
            let process = move |deltas| match weak.upgrade() {
                Some(inner) => inner.handle_deltas(deltas),
                None => Ok(()),
            };
            let weak = Arc::downgrade(&self.inner);
            let mut config = Config::new(queue, Arc::clone(&self.inner.lw), Arc::new(process));
            config.full_resync_period = s.resync_check;
            config.should_resync = Some(Arc::new(move || {
                weak.upgrade()
                    .is_some_and(|i| i.processor.should_resync(Instant::now()))
            }));
            config
                .watch_error_handler
                .clone_from(&s.watch_error_handler);
            config.transform.clone_from(&s.transform);
            config.list_options = s.list_options.clone();
            config.reflector_options = s.reflector_options.take();
            let weak = Arc::downgrade(&self.inner);
            config.after_batch = Some(Arc::new(move || {
                if let Some(inner) = weak.upgrade() {
                    inner.processor.flush();
                }
            }));
            let flag = Arc::clone(&self.inner.synced);
            config.on_synced = Some(Arc::new(move || flag.store(true, Ordering::Release)));
            let controller = Arc::new(Controller::new(config));
            s.controller = Some(Arc::clone(&controller));
            let now = Instant::now();
            for l in self.inner.processor.listeners() {
                let mut r = l.resync.lock().unwrap_or_else(PoisonError::into_inner);
                if !r.effective.is_zero() {
                    r.next = Some(now + r.effective);
                }
            }
            controller
        };
        Ok(controller)
    }
}

/// One half of a running informer, from [`SharedIndexInformer::run_parts`].
pub type RunPart = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'static>>;

impl<T: Object> Inner<T> {
    /// client-go's `HandleDeltas`: update the cache, fan the events out.
    fn handle_deltas(&self, deltas: Deltas<T>) -> Result<(), ProcessError<T>> {
        let _block = self
            .block_deltas
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let result = process_deltas(&*self.indexer, deltas, |event, sync| {
            self.processor.distribute(&event, sync);
        });
        result.map_err(|e| {
            tracing::error!(error = %e, "the cache refused a change; the next relist corrects it");
            ProcessError::failed(e)
        })
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
