//! [`Controller`]: a reflector feeding a queue, and a loop popping it into a process function.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kcache_queue::{Deltas, ProcessError, Queue};
use kcache_reflector::{
    ErrorChain, ErrorHook, ListOptions, ListerWatcher, LogLimiter, Reflector, ReflectorBuilder,
};
use kcache_store::{Object, TransformFn};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::replace_signal::ReplaceSignal;

/// The function a controller hands every popped item to.
pub type ProcessDeltasFn<T> = Arc<dyn Fn(Deltas<T>) -> Result<(), ProcessError<T>> + Send + Sync>;

/// Adjusts the reflector a controller builds (backoff, page size, idle timeout, name...).
pub type ReflectorOptionsFn<T> = Box<dyn FnOnce(ReflectorBuilder<T>) -> ReflectorBuilder<T> + Send>;

/// What a [`Controller`] is made of (client-go's `cache.Config`).
pub struct ControllerConfig<T: Object> {
    /// The queue between the reflector and the process function.
    pub queue: Arc<dyn Queue<T>>,
    /// Where objects come from.
    pub lister_watcher: Arc<dyn ListerWatcher<T>>,
    /// Called with every popped item, synchronously, in order.
    pub process: ProcessDeltasFn<T>,
    /// How often to ask `should_resync` (zero: never resync).
    pub full_resync_period: Duration,
    /// Whether a resync is due now; `None` resyncs on every period.
    pub should_resync: Option<Arc<dyn Fn() -> bool + Send + Sync>>,
    /// Told of every list and watch error (and of decode errors without `decode_error_hook`).
    pub watch_error_hook: Option<ErrorHook>,
    /// Told of every object version that could not be decoded.
    pub decode_error_hook: Option<ErrorHook>,
    /// Applied to every object before it is queued.
    pub transform: Option<TransformFn<T>>,
    /// Selectors carried by every list and watch.
    pub list_options: ListOptions,
    /// Called once, as soon as the queue's initial items have been processed.
    pub on_synced: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Applied to the reflector's builder last, so it can override anything above.
    pub reflector_options: Option<ReflectorOptionsFn<T>>,
    /// Called after each batch of popped items has been processed (up to 256 items at a
    /// time): the place to wake consumers once per batch rather than once per item.
    pub after_batch: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl<T: Object> ControllerConfig<T> {
    /// A config with no resync, no hooks and no selectors.
    pub fn new(
        queue: Arc<dyn Queue<T>>,
        lister_watcher: Arc<dyn ListerWatcher<T>>,
        process: ProcessDeltasFn<T>,
    ) -> Self {
        Self {
            queue,
            lister_watcher,
            process,
            full_resync_period: Duration::ZERO,
            should_resync: None,
            watch_error_hook: None,
            decode_error_hook: None,
            transform: None,
            after_batch: None,
            list_options: ListOptions::default(),
            on_synced: None,
            reflector_options: None,
        }
    }
}

impl<T: Object> fmt::Debug for ControllerConfig<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerConfig")
            .field("full_resync_period", &self.full_resync_period)
            .field("list_options", &self.list_options)
            .finish_non_exhaustive()
    }
}

/// A reflector into a queue plus the loop that pops it (client-go's `controller`).
///
/// [`SharedIndexInformer`](crate::SharedIndexInformer) is built on it; use it directly for a
/// single consumer with its own process function.
pub struct Controller<T: Object> {
    queue: Arc<dyn Queue<T>>,
    process: ProcessDeltasFn<T>,
    reflector: Reflector<T>,
    on_synced: Option<Arc<dyn Fn() + Send + Sync>>,
    after_batch: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Notified after each replace: an empty initial list syncs the queue without a pop.
    replaced: Arc<Notify>,
    /// The rate limit of "the cache refused a change", which can repeat with every batch.
    refused: LogLimiter,
    /// Set once the queue's initial items have been processed; the reflector waits for it
    /// after its first list (see [`FIRST_SYNC_WAIT`]).
    synced: Arc<tokio::sync::watch::Sender<bool>>,
}

/// The most items one pop hands over (queues that cannot batch hand over one).
const POP_BATCH: usize = 256;

/// How long the reflector waits, after its first list, for the process loop to take the listed
/// items before it reads the watch behind them. Changes the server queued behind the initial
/// state then never delay the sync: without the wait, decoding them and taking the listed
/// items share the reflector's task (or its core), and the sync ends only once the decoder
/// lets the process loop catch up. Taking the items costs microseconds each, so the wait ends
/// long before this bound; the bound keeps a process function that blocks (or a controller
/// whose process loop is not run) from holding the watch unread.
pub const FIRST_SYNC_WAIT: Duration = Duration::from_secs(5);

impl<T: Object> Controller<T> {
    /// Builds the controller and its reflector.
    pub fn new(config: ControllerConfig<T>) -> Self {
        let replaced = Arc::new(Notify::new());
        let store = ReplaceSignal::new(Arc::clone(&config.queue), Arc::clone(&replaced));
        let mut builder = Reflector::builder(config.lister_watcher, Arc::new(store))
            .resync_period(config.full_resync_period)
            .list_options(config.list_options);
        if let Some(f) = config.should_resync {
            builder = builder.should_resync(move || f());
        }
        if let Some(h) = config.watch_error_hook {
            builder = builder.watch_error_handler(move |e| h(e));
        }
        if let Some(h) = config.decode_error_hook {
            builder = builder.decode_error_handler(move |e| h(e));
        }
        if let Some(t) = config.transform {
            builder = builder.transform(move |o| t(o));
        }
        let synced = Arc::new(tokio::sync::watch::Sender::new(false));
        {
            // Only the first list waits; later ones find the controller synced.
            let synced = Arc::clone(&synced);
            builder = builder.after_list(move || {
                let mut rx = synced.subscribe();
                Box::pin(async move {
                    let _ = tokio::time::timeout(FIRST_SYNC_WAIT, rx.wait_for(|s| *s)).await;
                })
            });
        }
        if let Some(f) = config.reflector_options {
            builder = f(builder);
        }
        Self {
            queue: config.queue,
            process: config.process,
            reflector: builder.build(),
            on_synced: config.on_synced,
            after_batch: config.after_batch,
            replaced,
            refused: LogLimiter::new(),
            synced,
        }
    }

    /// Whether the queue's initial items have been processed.
    pub fn has_synced(&self) -> bool {
        self.queue.has_synced()
    }

    /// The resource version the reflector last synced to.
    pub fn last_sync_resource_version(&self) -> Option<String> {
        let rv = self.reflector.last_sync_resource_version();
        (!rv.is_empty()).then_some(rv)
    }

    /// How many versions of undecodable objects the reflector left out of the cache.
    pub fn decode_errors(&self) -> u64 {
        self.reflector.decode_errors()
    }

    /// How many list and watch failures the reflector reported.
    pub fn errors(&self) -> u64 {
        self.reflector.errors()
    }

    /// Runs the reflector and the process loop until `cancel` fires; then closes the queue.
    ///
    /// A process error is logged and the item dropped (client-go 1.33+), unless the process
    /// function asked for a requeue. This is [`run_reflector`](Self::run_reflector) and
    /// [`run_processor`](Self::run_processor) joined on one task.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future loses no queued item: popping is cancel-safe.
    pub async fn run(&self, cancel: CancellationToken) {
        tokio::join!(
            self.run_reflector(cancel.clone()),
            self.run_processor(cancel)
        );
    }

    /// The producing half of [`run`](Self::run): lists, watches and decodes into the queue until
    /// `cancel` fires, then closes the queue. Spawn it apart from
    /// [`run_processor`](Self::run_processor) to decode and process on two cores.
    pub async fn run_reflector(&self, cancel: CancellationToken) {
        self.reflector.run(cancel).await;
        self.queue.close();
    }

    /// The consuming half of [`run`](Self::run): pops the queue into the process function until
    /// `cancel` fires or the queue is closed and drained.
    pub async fn run_processor(&self, cancel: CancellationToken) {
        let mut synced = false;
        let f = &*self.process;
        let mut process = |deltas| f(deltas);
        loop {
            let replaced = self.replaced.notified();
            tokio::pin!(replaced);
            if !synced {
                // Registered before the check, so a replace between the two still wakes us.
                replaced.as_mut().enable();
                if self.queue.has_synced() {
                    synced = true;
                    self.synced.send_replace(true);
                    if let Some(f) = &self.on_synced {
                        f();
                    }
                }
            }
            let popped = tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                r = self.queue.pop_batch(POP_BATCH, &mut process) => r,
                // Only while unsynced: an empty initial list syncs without a pop.
                () = replaced, if !synced => continue,
            };
            if let Some(f) = &self.after_batch {
                f();
            }
            match popped {
                Err(e) if e.is_closed() => break,
                Err(e) => {
                    if let Some(permit) = self.refused.allow() {
                        tracing::error!(
                            informer = %self.reflector.name(),
                            error = %ErrorChain(&e),
                            suppressed = permit.suppressed(),
                            "the cache refused a change; it is skipped and the next relist corrects it"
                        );
                    }
                }
                Ok(()) => {}
            }
        }
    }
}

impl<T: Object> fmt::Debug for Controller<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller").finish_non_exhaustive()
    }
}
