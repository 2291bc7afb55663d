//! Handlers and streams of a [`SharedIndexInformer`]: added before or after start (a late one
//! first receives the cache as initial adds), each with its own resync period, removable, and
//! shut down (removed, then waited for).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use kcache_store::{Object, Store};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::listener::{Listener, Reporting};
use crate::metrics::HandlerMetrics;
use crate::processor::{MINIMUM_RESYNC_PERIOD, determine_resync_period};
use crate::sync_signal::SyncSignal;
use crate::{Error, Event, EventStream, Registration, ResourceEventHandler, Result};

use super::SharedIndexInformer;

impl<T: Object> SharedIndexInformer<T> {
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
        let reporting = Reporting {
            logs: Arc::clone(&self.inner.logs),
            metrics: HandlerMetrics::new(&self.inner.name, handler.name()),
            key_of: Arc::clone(&self.inner.key_of),
        };
        self.register(resync, |id, synced| {
            Listener::with_handler(id, handler, resync, synced, reporting).map_err(Error::Thread)
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
            let l = Listener::with_channel(id, tx, resync, synced, Arc::clone(&self.inner.logs));
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
        make: impl FnOnce(u64, Arc<SyncSignal>) -> Result<Listener<T>>,
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
        let listener = make(id, Arc::clone(&self.inner.sync))?;
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

    /// How often the informer checks whether a handler's resync is due (client-go's
    /// `resyncCheckPeriod`): the builder's resync period, lowered before start to the shortest
    /// period a handler asked for (never below one second); fixed once the informer runs.
    pub fn resync_check_period(&self) -> Duration {
        self.settings().resync_check
    }

    /// The resync period in force for `registration`'s handler: what it asked for, raised to
    /// the check period (zero when either is zero). `None` once the handler was removed or the
    /// informer stopped, and for a registration of another informer.
    pub fn resync_period(&self, registration: &Registration<T>) -> Option<Duration> {
        if !self.owns(registration) {
            return None;
        }
        self.inner
            .processor
            .listeners()
            .iter()
            .find(|l| l.id == registration.id)
            .map(|l| {
                l.resync
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .effective
            })
    }

    /// Removes a handler: its pending events are dropped; an event being handled finishes, on
    /// its own (client-go's `RemoveEventHandler`; [`shut_down_event_handler`](Self::shut_down_event_handler)
    /// also waits for it). Removing twice, or a registration of another informer, does
    /// nothing. Safe to call from inside the handler's own callbacks.
    pub fn remove_event_handler(&self, registration: &Registration<T>) {
        if !self.owns(registration) {
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

    /// Removes a handler, as [`remove_event_handler`](Self::remove_event_handler) does, at
    /// once, and returns a future that resolves when the handler is gone: the callback it was
    /// running (if any) has returned, its thread has exited and the handler has been dropped
    /// (client-go's `ShutDownEventHandler`). After that the handler is never called again.
    ///
    /// The future is woken by the handler's thread as it exits, never polls and never blocks
    /// the runtime while a slow callback runs; it owns what it needs, so it can be spawned.
    /// It resolves at once for a handler whose thread is already gone (a second call, an
    /// informer that stopped), and does nothing for a registration of another informer. It
    /// works whether or not the informer ever ran.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use kcache_informer::{HandlerFuncs, SharedIndexInformer};
    /// # use kcache_store::{DynamicObject, Object};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let api = kcache_testing::FakeListerWatcher::<DynamicObject>::new();
    /// let informer = SharedIndexInformer::builder(Arc::new(api)).build();
    /// let (keys, received) = std::sync::mpsc::channel();
    /// let registration = informer.add_event_handler(
    ///     HandlerFuncs::new().on_added(move |pod: &Arc<DynamicObject>, _| drop(keys.send(pod.key()))),
    /// )?;
    /// informer.shut_down_event_handler(&registration).await?;
    /// assert!(registration.is_closed());
    /// // The handler, and the sender it held, are gone.
    /// assert!(received.recv().is_err());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::ShutdownFromHandler`] when the future is polled on the handler's own thread,
    /// from inside one of its callbacks, where it would wait for itself forever: the handler is
    /// removed all the same, and its thread exits once that callback returns.
    pub fn shut_down_event_handler(
        &self,
        registration: &Registration<T>,
    ) -> impl Future<Output = Result<()>> + Send + 'static {
        let shared = self.owns(registration).then(|| {
            self.remove_event_handler(registration);
            Arc::clone(&registration.shared)
        });
        async move {
            match shared {
                Some(shared) => shared.owned_exited().await,
                None => Ok(()),
            }
        }
    }

    /// Whether `registration` came from this informer.
    fn owns(&self, registration: &Registration<T>) -> bool {
        registration.informer == Arc::as_ptr(&self.inner) as usize
    }
}
