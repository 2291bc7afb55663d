//! The streaming list (`sendInitialEvents=true`): the initial events up to their bookmark,
//! retried with backoff and given up for a paginated list after a few attempts.

use std::collections::BTreeMap;
use std::sync::Arc;

use kcache_store::{Object, ObjectKey, meta_namespace_key};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::watch::{Item, Next};
use super::{AWAITING_BOOKMARK_WARNING, Reflector, cancellable, sleep_or_cancel};
use crate::{Error, EventType, ListOptions, ResourceVersionMatch, WatchEvent, WatchStream};

/// How a streaming list's initial phase ended without an error.
enum InitialEvents<T> {
    /// The initial-events-end bookmark arrived: the state and its RV.
    Synced(Vec<Arc<T>>, String),
    /// The cancellation token fired.
    Cancelled,
}

impl<T: Object> Reflector<T> {
    /// The streaming list. `Ok(Some(stream))` once the store holds the initial state (the
    /// stream then goes on as the watch), `Ok(None)` when cancelled, `Err` to fall back to a
    /// paginated list: at once for most errors (as client-go does), after
    /// `watch_list_attempts` tries for attempts that end, stall or hold an unreadable event
    /// before the initial-events bookmark, or fail with a 429, a 410 or a refused connection.
    /// Every failed attempt is reported; retries back off.
    pub(super) async fn watch_list(
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
            self.list_started();
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
                    if let Err(e) = self.store.replace_transformed(items, &rv) {
                        self.metrics.list_errors.increment(1);
                        return Err(Error::Store(e));
                    }
                    self.set_last_sync_rv(&rv);
                    self.filled(start);
                    // The stream goes on as the watch.
                    self.metrics.watches.increment(1);
                    return Ok(Some(stream));
                }
                Ok((InitialEvents::Cancelled, _)) => return Ok(None),
                Err(e) => e,
            };
            self.metrics.list_errors.increment(1);
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
                    let (key, _, _) = d.identity().ok_or_else(|| Error::Decode(d.clone()))?;
                    temp.remove(&key);
                    count += 1;
                    continue;
                }
                Item::Ended => return Err(Error::InitialEventsIncomplete { events: count }),
            };
            count += 1;
            if count > self.max_list_objects {
                return Err(Error::Limit(format!(
                    "the streaming list sent more than {} initial events without its \
                     initial-events bookmark (the reflector's max_list_objects)",
                    self.max_list_objects
                )));
            }
            match ev {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    self.keyable(&o, EventType::Added)?;
                    // The store's transform too, as each object arrives: nothing waits
                    // untransformed for the bookmark.
                    let o = self.store.transform_incoming(self.prepare(o));
                    let k = meta_namespace_key(&*o).map_err(|e| Error::Store(e.into()))?;
                    temp.insert(k, o);
                }
                WatchEvent::Deleted(o) => {
                    self.keyable(&o, EventType::Deleted)?;
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
}
