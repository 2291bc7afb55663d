//! The streaming list (`sendInitialEvents=true`): the initial events up to their bookmark,
//! retried with backoff and given up for a paginated list after a few attempts; a server that
//! does not serve streaming lists is listed at once, without a report.

use std::sync::Arc;

use kcache_store::{Object, ObjectKey};
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

    /// Fails once a streaming list has sent more than `max_list_objects` events (undecodable
    /// ones included: each is kept until the bookmark) without its bookmark.
    fn within_initial_limit(&self, count: usize) -> Result<(), Error> {
        if count > self.max_list_objects {
            return Err(Error::Limit(format!(
                "the streaming list sent more than {} initial events without its \
                 initial-events bookmark (the reflector's max_list_objects)",
                self.max_list_objects
            )));
        }
        Ok(())
    }

    /// Collects a streaming list's initial events until the initial-events-end bookmark.
    async fn initial_events(
        &self,
        stream: &mut WatchStream<T>,
        start: Instant,
        cancel: &CancellationToken,
    ) -> Result<InitialEvents<T>, Error> {
        let mut initial = Initial::default();
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
                        .awaiting_bookmark(initial.len(), last_event.elapsed().as_secs());
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
                    count += 1;
                    self.within_initial_limit(count)?;
                    initial.remove(&key);
                    continue;
                }
                Item::Ended => return Err(Error::InitialEventsIncomplete { events: count }),
            };
            count += 1;
            self.within_initial_limit(count)?;
            match ev {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    self.keyable(&o, EventType::Added)?;
                    // The store's transform too, as each object arrives: nothing waits
                    // untransformed for the bookmark.
                    initial.put(self.store.transform_incoming(self.prepare(o)));
                }
                WatchEvent::Deleted(o) => {
                    self.keyable(&o, EventType::Deleted)?;
                    initial.delete(&o);
                }
                WatchEvent::Bookmark(b) => {
                    if b.initial_events_end {
                        return Ok(InitialEvents::Synced(
                            initial.into_state(),
                            b.resource_version,
                        ));
                    }
                }
                WatchEvent::Error(s) => return Err(Error::Api(s)),
            }
        }
    }
}

/// A streaming list's initial events as they arrive, in order, without a key made for each:
/// the state they describe is worked out once, at the bookmark ([`into_state`]). A server
/// sends each object once, as `ADDED`; a later event of the same key (a change, a deletion, an
/// undecodable version) replaces what came before it.
///
/// [`into_state`]: Initial::into_state
struct Initial<T> {
    events: Vec<InitialEvent<T>>,
}

impl<T> Default for Initial<T> {
    fn default() -> Self {
        Self { events: Vec::new() }
    }
}

/// One initial event: an object, or a key left out (deleted, or undecodable).
enum InitialEvent<T> {
    Object(Arc<T>),
    Gone {
        namespace: Option<String>,
        name: String,
    },
}

impl<T: Object> InitialEvent<T> {
    /// The key's parts: the namespace (`None` for none or an empty one) and the name.
    fn key(&self) -> (Option<&str>, &str) {
        match self {
            Self::Object(o) => (
                o.namespace().filter(|ns| !ns.is_empty()),
                o.name().unwrap_or_default(),
            ),
            Self::Gone { namespace, name } => (namespace.as_deref(), name),
        }
    }
}

impl<T: Object> Initial<T> {
    /// Events collected so far (an upper bound on the objects, before repeats are resolved).
    fn len(&self) -> usize {
        self.events.len()
    }

    fn put(&mut self, obj: Arc<T>) {
        self.events.push(InitialEvent::Object(obj));
    }

    fn delete(&mut self, obj: &T) {
        self.events.push(InitialEvent::Gone {
            namespace: obj
                .namespace()
                .filter(|ns| !ns.is_empty())
                .map(str::to_owned),
            name: obj.name().unwrap_or_default().to_owned(),
        });
    }

    /// An undecodable event of `key`: that key is left out.
    fn remove(&mut self, key: &ObjectKey) {
        let (namespace, name) = match key.as_ref().split_once('/') {
            Some((ns, name)) => (Some(ns.to_owned()), name.to_owned()),
            None => (None, key.as_ref().to_owned()),
        };
        self.events.push(InitialEvent::Gone { namespace, name });
    }

    /// The state the events describe: for each key its last event, if that is an object, in
    /// the order the events came. Keys are compared by sorting the events' positions (no key
    /// is built).
    fn into_state(self) -> Vec<Arc<T>> {
        let events = self.events;
        let mut order: Vec<usize> = (0..events.len()).collect();
        order.sort_by(|a, b| events[*a].key().cmp(&events[*b].key()).then(a.cmp(b)));
        // An event is kept when no later event has its key (the next in `order` does not).
        let mut keep = vec![false; events.len()];
        for (i, at) in order.iter().enumerate() {
            keep[*at] = order
                .get(i + 1)
                .is_none_or(|next| events[*next].key() != events[*at].key());
        }
        events
            .into_iter()
            .zip(keep)
            .filter_map(|(event, keep)| match (keep, event) {
                (true, InitialEvent::Object(o)) => Some(o),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use kcache_store::DynamicObject;

    use super::*;

    fn obj(ns: &str, name: &str, rv: &str) -> Arc<DynamicObject> {
        let mut o = DynamicObject::new((!ns.is_empty()).then_some(ns), name);
        o.metadata.resource_version = Some(rv.to_owned());
        Arc::new(o)
    }

    fn state(initial: Initial<DynamicObject>) -> Vec<(String, String)> {
        initial
            .into_state()
            .iter()
            .map(|o| {
                (
                    kcache_store::meta_namespace_key(&**o).unwrap().to_string(),
                    o.resource_version().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn each_key_keeps_its_last_event_in_arrival_order() {
        let mut i = Initial::default();
        i.put(obj("b", "x", "1"));
        i.put(obj("a", "x", "2"));
        i.put(obj("", "c", "3"));
        assert_eq!(
            state(i),
            [
                ("b/x".into(), "1".into()),
                ("a/x".into(), "2".into()),
                ("c".into(), "3".into())
            ]
        );
        let mut i = Initial::default();
        i.put(obj("a", "x", "1"));
        i.put(obj("a", "y", "2"));
        i.put(obj("a", "x", "3"));
        i.delete(&obj("a", "y", "4"));
        i.put(obj("a", "z", "5"));
        i.remove(&ObjectKey::new(Some("a"), "z"));
        i.put(obj("", "w", "6"));
        i.remove(&ObjectKey::new(None, "v"));
        assert_eq!(
            state(i),
            [("a/x".into(), "3".into()), ("w".into(), "6".into())]
        );
        // A server repeating an ADDED: the last one wins.
        let mut i = Initial::default();
        i.put(obj("a", "x", "1"));
        i.put(obj("a", "x", "2"));
        assert_eq!(state(i), [("a/x".into(), "2".into())]);
    }
}
