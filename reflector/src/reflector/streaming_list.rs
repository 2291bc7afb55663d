//! The streaming list (`sendInitialEvents=true`): the initial events up to their bookmark,
//! retried with backoff and given up for a paginated list after a few attempts; a server that
//! does not serve streaming lists is listed at once, without a report.

use std::collections::BTreeMap;
use std::sync::Arc;

use kcache_store::{Object, ObjectKey, meta_namespace_key};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::watch::{Item, Next};
use super::{AWAITING_BOOKMARK_WARNING, Reflector, cancellable, sleep_or_cancel};
use crate::{
    Error, ErrorChain, EventType, ListOptions, ResourceVersionMatch, WatchEvent, WatchStream,
};

/// How a streaming list ended.
pub(super) enum StreamingList<T> {
    /// The store holds the initial state; the stream goes on as the watch.
    Synced(WatchStream<T>),
    /// The cancellation token fired.
    Cancelled,
    /// Fall back to a paginated list now: the failure was reported (unless the server does not
    /// serve streaming lists) and, if it was one to retry, waited out with a backoff.
    FallBack,
}

/// How a streaming-list attempt's initial phase ended without an error.
enum InitialEvents<T> {
    /// The initial-events-end bookmark arrived: the state and its RV.
    Synced(Vec<Arc<T>>, String),
    /// The cancellation token fired.
    Cancelled,
}

/// Whether the answer to a streaming-list request says that the server does not serve
/// streaming lists: a 422 `Invalid` (kube-apiserver with the `WatchList` feature off says
/// "`sendInitialEvents` is forbidden for watch unless the `WatchList` feature gate is
/// enabled") or a 400 `BadRequest` (a server or proxy that rejects the parameters). Only the answer to the
/// request counts, never an `ERROR` event in the stream. Nothing is lost by not reporting it:
/// the paginated list that follows carries the same selectors and fails, and is reported, if
/// the request itself was at fault.
fn streaming_lists_unserved(e: &Error) -> bool {
    e.is_invalid() || e.is_bad_request()
}

impl<T: Object> Reflector<T> {
    /// The streaming list: [`Synced`](StreamingList::Synced) once the store holds the initial
    /// state, [`FallBack`](StreamingList::FallBack) to fall back to a paginated list:
    /// - at once and silently (a debug line) when the server answers the request with a 400
    ///   or a 422: it does not serve streaming lists (client-go logs this at a low level too);
    /// - at once for other errors that a retry would not mend (as client-go does);
    /// - after `watch_list_attempts` tries for attempts that end, stall or hold an unreadable
    ///   event before the initial-events bookmark, or fail with a 429, a 410 or a refused
    ///   connection.
    ///
    /// Every other failed attempt is reported. Each retry waits the reflector's backoff (or the
    /// server's `Retry-After`), and so does the paginated list that follows the last retriable
    /// failure: only a 410 is retried at once (at RV `""`), as client-go does.
    ///
    /// A store that refuses the replace is reported, and the paginated list follows at once
    /// (as in client-go).
    pub(super) async fn watch_list(&self, cancel: &CancellationToken) -> StreamingList<T> {
        let mut attempts = 0u32;
        loop {
            if cancel.is_cancelled() {
                return StreamingList::Cancelled;
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
                None => return StreamingList::Cancelled,
                Some(Ok(mut stream)) => self
                    .initial_events(&mut stream, start, cancel)
                    .await
                    .map(|o| (o, stream)),
                Some(Err(e)) if streaming_lists_unserved(&e) => {
                    self.metrics.list_errors.increment(1);
                    tracing::debug!(
                        error = %ErrorChain(&e),
                        "the server does not serve streaming lists; falling back to a paginated list"
                    );
                    return StreamingList::FallBack;
                }
                Some(Err(e)) => Err(e),
            };
            let e = match outcome {
                Ok((InitialEvents::Synced(items, rv), stream)) => {
                    self.set_rv_unavailable(false);
                    if let Err(e) = self.store.replace_transformed(items, &rv) {
                        self.metrics.list_errors.increment(1);
                        self.report(
                            &Error::Store(e),
                            "streaming list failed; falling back to a paginated list",
                        );
                        return StreamingList::FallBack;
                    }
                    self.set_last_sync_rv(&rv);
                    self.filled(start);
                    // The stream goes on as the watch.
                    self.metrics.watches.increment(1);
                    return StreamingList::Synced(stream);
                }
                Ok((InitialEvents::Cancelled, _)) => return StreamingList::Cancelled,
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
            if !retriable {
                self.report(
                    &e,
                    "streaming list failed; falling back to a paginated list",
                );
                return StreamingList::FallBack;
            }
            let last = attempts >= self.watch_list_attempts;
            self.report(
                &e,
                match (gone, last) {
                    (true, false) => {
                        "streaming list failed; trying again at once from the latest version"
                    }
                    (true, true) => "streaming list failed; falling back to a paginated list",
                    (false, false) => "streaming list failed; trying again after a backoff",
                    (false, true) => {
                        "streaming list failed; falling back to a paginated list after a backoff"
                    }
                },
            );
            if gone {
                // A fresh start at RV "": at once, as client-go does.
                self.set_rv_unavailable(true);
            } else if !sleep_or_cancel(cancel, self.retry_delay(&e)).await {
                return StreamingList::Cancelled;
            }
            if last {
                return StreamingList::FallBack;
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
                    self.reporter
                        .awaiting_bookmark(temp.len(), last_event.elapsed().as_secs());
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
