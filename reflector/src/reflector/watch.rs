//! The watch loop: events into the store, undecodable ones dealt with by key or by a relist,
//! resync ticks, idle and very short watches, 429s and internal errors.

use std::time::Duration;

use futures_util::StreamExt;
use kcache_store::Object;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::list::{has_name, nameless};
use super::{
    INTERNAL_ERROR_RESET, Reflector, VERY_SHORT_WATCH, cancellable, sleep_or_cancel,
    sleep_until_opt,
};
use crate::{
    DecodeError, Error, EventType, ListOptions, RetryWithDeadline, WatchEvent, WatchStream,
};

/// How a watch stream ended without an error.
enum WatchEnd {
    /// The server closed it (or the connection dropped): watch again from the last RV.
    Clean,
    /// The cancellation token fired.
    Cancelled,
}

/// The next item of a watch stream, or why there is none.
pub(super) enum Next<T> {
    Item(Option<Result<WatchEvent<T>, Error>>),
    /// The caller's timer fired (the resync period, or the bookmark warning).
    Tick,
    Idle(Duration),
    Cancelled,
}

/// A watch stream item, sorted by [`Reflector::classify`].
pub(super) enum Item<T> {
    Event(WatchEvent<T>),
    /// Undecodable.
    Undecodable(Box<DecodeError>),
    /// The stream ended (cleanly, or by a transport error or timeout).
    Ended,
}

impl<T: Object> Reflector<T> {
    /// `Ok` when `obj` has a name; else the nameless object is reported and the watch must
    /// end (no key can be made: which object changed is unknown). Takes the object by
    /// reference: the event's object is moved once, into its `Arc`.
    pub(super) fn keyable(&self, obj: &T, event_type: EventType) -> Result<(), Error> {
        if has_name(obj) {
            return Ok(());
        }
        let d = nameless("watch event", obj, Some(event_type));
        self.reporter.decode(&d);
        Err(Error::decode(d))
    }

    /// Sorts a watch stream's item: an event; a decode error; or the end of the stream, which
    /// is an error if it came before any event and too soon after `start` (client-go's "very
    /// short watch"). Other errors are returned.
    pub(super) fn classify(
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
            Some(Err(Error::Decode(d))) => Ok(Item::Undecodable(d)),
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
    pub(super) async fn next(
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
                    if matches!(item, Some(Ok(_) | Err(Error::Decode(_)))) {
                        self.metrics.events.increment(1);
                    }
                    return Next::Item(item);
                }
                () = cancel.cancelled() => return Next::Cancelled,
                () = sleep_until_opt(wake_at) => {}
            }
        }
    }

    /// The watch loop: watches (or goes on with the streaming list's stream) until a relist is
    /// due, re-watching from the last RV after clean closes.
    pub(super) async fn watch(
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
                    Some(Ok(s)) => {
                        self.metrics.watches.increment(1);
                        (s, !rv.is_empty() && rv != "0")
                    }
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
    ///
    /// The version an applied event reached is copied into one buffer, reused for the whole
    /// stream, and only once versions are propagated (never for the synthetic adds of a watch
    /// from `""` or `"0"`); it is read before the transform, which may drop it.
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
        let mut reached = String::new();
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
                    let (key, rv, ty) = d.identity().ok_or_else(|| Error::Decode(d.clone()))?;
                    if let Err(e) = self.store.delete_key(&key) {
                        self.reporter.store_write_failed(&e, Some(&key));
                    }
                    propagate |= ty != EventType::Added;
                    if propagate {
                        self.bookmarked(rv);
                    }
                    continue;
                }
                Item::Ended => return Ok(WatchEnd::Clean),
            };
            count += 1;
            reached.clear();
            let result = match ev {
                WatchEvent::Added(o) => {
                    self.keyable(&o, EventType::Added)?;
                    if propagate {
                        reached.push_str(o.resource_version().unwrap_or_default());
                    }
                    self.store.add(self.prepare(o))
                }
                WatchEvent::Modified(o) => {
                    self.keyable(&o, EventType::Modified)?;
                    propagate = true;
                    reached.push_str(o.resource_version().unwrap_or_default());
                    self.store.update(self.prepare(o))
                }
                WatchEvent::Deleted(o) => {
                    self.keyable(&o, EventType::Deleted)?;
                    propagate = true;
                    reached.push_str(o.resource_version().unwrap_or_default());
                    self.store.delete(self.prepare(o))
                }
                WatchEvent::Bookmark(b) => {
                    propagate = true;
                    if !b.resource_version.is_empty() {
                        self.bookmarked(&b.resource_version);
                    }
                    continue;
                }
                WatchEvent::Error(s) => return Err(Error::Api(s)),
            };
            if let Err(e) = result {
                self.reporter.store_write_failed(&e, None);
            }
            if !reached.is_empty() {
                self.reached(&reached);
            }
        }
    }
}

impl<T: Object> Reflector<T> {
    /// An applied event reached `rv`: the reflector re-watches from it, and the store is told
    /// ([`Store::update_resource_version`], client-go's `ResourceVersionUpdater`).
    ///
    /// [`Store::update_resource_version`]: kcache_store::Store::update_resource_version
    fn reached(&self, rv: &str) {
        self.set_last_sync_rv(rv);
        self.store.update_resource_version(rv);
    }

    /// The watch reached `rv` without an object to apply (a bookmark, or an undecodable event
    /// whose version could be read): the store records it with [`Store::bookmark`], which
    /// implies what [`Store::update_resource_version`] does, so that is not called too; the
    /// reflector re-watches from it.
    ///
    /// [`Store::bookmark`]: kcache_store::Store::bookmark
    /// [`Store::update_resource_version`]: kcache_store::Store::update_resource_version
    fn bookmarked(&self, rv: &str) {
        self.store.bookmark(rv);
        self.set_last_sync_rv(rv);
    }
}
