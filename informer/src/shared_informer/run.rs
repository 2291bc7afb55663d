//! Running a [`SharedIndexInformer`]: on the caller's task, on a thread of its own, or as two
//! parts; and the start that builds its queue and controller.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use kcache_queue::{DeltaFifo, Deltas, ProcessError, Queue, RealFifo};
use kcache_store::Object;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::controller::{Config, Controller};
use crate::process::process_deltas;
use crate::{Error, Result};

use super::{Inner, QueueKind, SharedIndexInformer};

impl<T: Object> SharedIndexInformer<T> {
    /// Lists, watches and dispatches until `cancel` fires, then stops every handler.
    ///
    /// On a multi-threaded tokio runtime the informer runs on a thread of its own, as
    /// [`run_on_own_thread`](Self::run_on_own_thread) explains: that is the fastest and leanest
    /// way there (`cargo xtask bench` measures both). On a current-thread runtime (tokio's
    /// default for `#[tokio::test]`, and the one whose clock tests can pause) it runs on the
    /// caller's task, as [`run_inline`](Self::run_inline). Handlers run on their own threads
    /// either way.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] on a second call; [`Error::Thread`] as
    /// [`run_on_own_thread`](Self::run_on_own_thread).
    ///
    /// # Cancel safety
    ///
    /// As [`run_inline`](Self::run_inline) on a current-thread runtime, as
    /// [`run_on_own_thread`](Self::run_on_own_thread) on a multi-threaded one.
    pub async fn run(&self, cancel: CancellationToken) -> Result<()> {
        let multi_threaded = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread);
        if multi_threaded {
            self.run_on_own_thread(cancel).await
        } else {
            self.run_inline(cancel).await
        }
    }

    /// Lists, watches and dispatches on the caller's task until `cancel` fires, then stops
    /// every handler.
    ///
    /// One future drives everything (reflector, queue processing, sync tracking); poll it on
    /// the task of your choice. Handlers run on their own threads. On a multi-threaded runtime
    /// the future moves between worker threads, which costs throughput and memory (see
    /// [`run_on_own_thread`](Self::run_on_own_thread)); [`run`](Self::run) picks for you.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyStarted`] on a second call.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops the informer as cancelling does, except that handler threads
    /// are left to finish their current event on their own.
    pub async fn run_inline(&self, cancel: CancellationToken) -> Result<()> {
        let (reflect, process) = self.run_parts(cancel)?;
        tokio::join!(reflect, process);
        Ok(())
    }

    /// [`run_inline`](Self::run_inline) on a thread of its own with a single-threaded tokio runtime: listing,
    /// watching, decoding, cache updates and dispatch all happen on that one thread (handlers
    /// keep their own threads). Returns once the informer has stopped.
    ///
    /// This is the fast way to run an informer on a multi-threaded runtime, and what
    /// [`run`](Self::run) does there. There the future of
    /// [`run_inline`](Self::run_inline) moves between worker threads, so objects are decoded on one thread
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
    /// do not. Tokio's paused test clock does not reach the thread: tests that pause time run
    /// on a current-thread runtime, where [`run`](Self::run) stays on the caller's task.
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
    /// As [`run_inline`](Self::run_inline); [`Error::Thread`] if the thread or its runtime cannot be made, or
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

    /// [`run_inline`](Self::run_inline) as two futures, to poll on two tasks so that listing, watching and
    /// decoding (the first) run beside cache updates and dispatch (the second) on another core.
    /// Objects are then decoded on one thread and freed on another; with glibc's malloc that
    /// measured no faster than [`run_inline`](Self::run_inline) (`cargo xtask bench`), and
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
