//! The fake's server side: lists with pages and snapshots, watches with history, selectors,
//! compaction and undecodable objects, and the API server's answers to invalid options.

use kcache_reflector::{
    Bookmark, Error, ListOptions, ObjectList, Status, WatchEvent, WatchStream, reason,
};
use kcache_store::{Object, Selector, meta_namespace_key};
use tokio::sync::mpsc;

use super::{
    FakeObject, FakeWatchStream, Inner, Snapshot, Undecodable, WatchFault, WatchListSupport,
    WatchSender, Watcher,
};
pub(super) fn bad_request(message: &str) -> Error {
    Error::api(Status::failure(400, reason::BAD_REQUEST, message))
}

pub(super) fn invalid(message: &str) -> Error {
    Error::api(Status::failure(422, reason::INVALID, message))
}

pub(super) fn parse_rv(rv: &str) -> Result<u64, Error> {
    rv.parse()
        .map_err(|_| invalid(&format!("invalid resource version: {rv}")))
}

pub(super) fn parse_selector(s: &str) -> Result<Selector, Error> {
    Selector::parse(s).map_err(|e| bad_request(&e.to_string()))
}

impl<T: FakeObject> Inner<T> {
    pub(super) fn page(
        &mut self,
        items: Vec<T>,
        rv: String,
        offset: usize,
        limit: usize,
    ) -> ObjectList<T> {
        let end = offset.saturating_add(limit).min(items.len());
        let page: Vec<T> = items.get(offset..end).unwrap_or_default().to_vec();
        if end >= items.len() {
            return ObjectList::new(page, rv);
        }
        let remaining = i64::try_from(items.len() - end).ok();
        let id = self.next_snapshot;
        self.next_snapshot += 1;
        let token = format!("snap-{id}-{end}");
        self.snapshots.insert(
            id,
            Snapshot {
                items,
                rv: rv.clone(),
            },
        );
        let mut list = ObjectList::new(page, rv);
        list.continue_token = Some(token);
        list.remaining_item_count = remaining;
        list
    }

    /// Moves the undecodable objects of a page to its `skipped`, as a decoding client would.
    pub(super) fn poison(&self, mut list: ObjectList<T>) -> ObjectList<T> {
        if self.poisoned.is_empty() {
            return list;
        }
        let items = std::mem::take(&mut list.items);
        for o in items {
            match meta_namespace_key(&o)
                .ok()
                .and_then(|k| self.poisoned.get(&k))
            {
                Some(u) => list.skipped.push(u.error(&o, None)),
                None => list.items.push(o),
            }
        }
        list
    }

    /// The watch item of `ev`: an undecodable one when `poison` says so.
    pub(super) fn item(
        ev: &WatchEvent<T>,
        poison: Option<Undecodable>,
    ) -> Result<WatchEvent<T>, Error> {
        match (poison, ev) {
            (Some(u), WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) => {
                Err(Error::decode(u.error(o, Some(ev.event_type()))))
            }
            _ => Ok(ev.clone()),
        }
    }

    pub(super) fn list(&mut self, opts: &ListOptions) -> Result<ObjectList<T>, Error> {
        if let Some(e) = self.list_faults.pop_front() {
            return Err(e);
        }
        if opts.send_initial_events.is_some() {
            return Err(invalid("sendInitialEvents is forbidden for list"));
        }
        if opts.resource_version_match.is_some() && opts.resource_version.is_empty() {
            return Err(invalid(
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if opts.resource_version_match.is_some() && !opts.continue_token.is_empty() {
            return Err(invalid(
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        let limit = opts
            .limit
            .filter(|&l| l > 0)
            .and_then(|l| usize::try_from(l).ok());
        if !opts.continue_token.is_empty() {
            if !(opts.resource_version.is_empty() || opts.resource_version == "0") {
                return Err(bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            let (id, offset) = opts
                .continue_token
                .strip_prefix("snap-")
                .and_then(|t| t.split_once('-'))
                .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<usize>().ok()?)))
                .ok_or_else(|| bad_request("invalid continue token"))?;
            let expire = std::mem::take(&mut self.expire_next_continue);
            let snap = self.snapshots.remove(&id).filter(|_| !expire);
            let Some(snap) = snap else {
                return Err(Error::api(Status::expired(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                )));
            };
            let page = self.page(snap.items, snap.rv, offset, limit.unwrap_or(usize::MAX));
            return Ok(self.poison(page));
        }
        let rv = opts.resource_version.as_str();
        if !(rv.is_empty() || rv == "0") {
            let n = parse_rv(rv)?;
            if n > self.rv {
                return Err(Error::api(Status::too_large_resource_version(n, self.rv)));
            }
            if limit.is_some() && n < self.compacted {
                return Err(Error::api(Status::expired(
                    "The resourceVersion for the provided list is too old.",
                )));
            }
        }
        let selector = parse_selector(&opts.label_selector)?;
        let items: Vec<T> = self
            .objects
            .values()
            .filter(|o| selector.matches_object(*o))
            .cloned()
            .collect();
        let list_rv = self.rv.to_string();
        let served_by_cache = rv == "0" && self.watch_cache;
        let list = match limit {
            Some(limit) if !served_by_cache => self.page(items, list_rv, 0, limit),
            _ => ObjectList::new(items, list_rv),
        };
        Ok(self.poison(list))
    }

    pub(super) fn watch(&mut self, opts: &ListOptions) -> Result<WatchStream<T>, Error> {
        let (tx, rx) = mpsc::unbounded_channel();
        let stream = FakeWatchStream { rx };
        match self.watch_faults.pop_front() {
            Some(WatchFault::Fail(e)) => return Err(e),
            Some(WatchFault::Expired) => {
                let _ = tx.send(Ok(WatchEvent::Error(Box::new(
                    self.too_old(&opts.resource_version),
                ))));
                return Ok(Box::pin(stream));
            }
            Some(WatchFault::Stall) => {
                self.stalled.push(tx);
                return Ok(Box::pin(stream));
            }
            Some(WatchFault::Close) => return Ok(Box::pin(stream)),
            None => {}
        }
        if opts.resource_version_match.is_some() && opts.send_initial_events.is_none() {
            return Err(invalid(
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        let selector = parse_selector(&opts.label_selector)?;
        let mut initial_events = opts.send_initial_events == Some(true);
        if initial_events {
            match self.watch_list {
                WatchListSupport::Supported => {}
                WatchListSupport::Refuse | WatchListSupport::Unsupported => {
                    return Err(invalid(
                        "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
                    ));
                }
                WatchListSupport::Ignore => initial_events = false,
                WatchListSupport::NoBookmark => {
                    self.send_state(&tx, &selector);
                    return Ok(Box::pin(stream));
                }
            }
        }
        let rv = opts.resource_version.as_str();
        if initial_events || rv.is_empty() || rv == "0" {
            self.send_state(&tx, &selector);
            if initial_events && opts.allow_watch_bookmarks {
                let _ = tx.send(Ok(WatchEvent::Bookmark(Bookmark::initial_events_end(
                    self.rv.to_string(),
                ))));
            }
        } else {
            let n = parse_rv(rv)?;
            if n < self.compacted {
                let _ = tx.send(Ok(WatchEvent::Error(Box::new(self.too_old(rv)))));
                return Ok(Box::pin(stream));
            }
            for (_, ev, poison) in self.history.iter().filter(|(at, _, _)| *at > n) {
                if event_matches(ev, &selector) {
                    let _ = tx.send(Self::item(ev, *poison));
                }
            }
        }
        self.watchers.push(Watcher {
            tx,
            bookmarks: opts.allow_watch_bookmarks,
            selector,
        });
        Ok(Box::pin(stream))
    }

    /// Sends the selected state as `ADDED` events (undecodable ones as such).
    pub(super) fn send_state(&self, tx: &WatchSender<T>, selector: &Selector) {
        for (k, o) in self
            .objects
            .iter()
            .filter(|(_, o)| selector.matches_object(*o))
        {
            let ev = WatchEvent::Added(o.clone());
            let _ = tx.send(Self::item(&ev, self.poisoned.get(k).copied()));
        }
    }

    pub(super) fn too_old(&self, rv: &str) -> Status {
        Status::expired(&format!(
            "too old resource version: {rv} ({})",
            self.compacted.saturating_sub(1)
        ))
    }

    pub(super) fn broadcast(&mut self, ev: &WatchEvent<T>, poison: Option<Undecodable>) {
        self.watchers.retain(|w| {
            if !event_matches(ev, &w.selector) {
                return !w.tx.is_closed();
            }
            if matches!(ev, WatchEvent::Bookmark(_)) && !w.bookmarks {
                return !w.tx.is_closed();
            }
            w.tx.send(Self::item(ev, poison)).is_ok()
        });
    }

    pub(super) fn write(
        &mut self,
        mut obj: T,
        deleted: bool,
        poison: Option<Undecodable>,
    ) -> Option<WatchEvent<T>> {
        let key = meta_namespace_key(&obj).ok()?;
        if deleted || poison.is_none() {
            self.poisoned.remove(&key);
        }
        if let (false, Some(u)) = (deleted, poison) {
            self.poisoned.insert(key.clone(), u);
        }
        self.rv += 1;
        let rv = self.rv;
        obj.set_resource_version(&rv.to_string());
        let ev = if deleted {
            let mut last = self.objects.remove(&key)?;
            last.set_resource_version(&rv.to_string());
            WatchEvent::Deleted(last)
        } else if self.objects.insert(key, obj.clone()).is_some() {
            WatchEvent::Modified(obj)
        } else {
            WatchEvent::Added(obj)
        };
        self.history.push((rv, ev.clone(), poison));
        self.broadcast(&ev, poison);
        Some(ev)
    }
}

pub(super) fn event_matches<T: Object>(ev: &WatchEvent<T>, selector: &Selector) -> bool {
    match ev {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
            selector.matches_object(o)
        }
        WatchEvent::Bookmark(_) | WatchEvent::Error(_) => true,
    }
}
