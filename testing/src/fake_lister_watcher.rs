//! [`FakeListerWatcher`]: an in-memory, scriptable [`ListerWatcher`] that records every request.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use kcache_reflector::{
    Bookmark, DecodeError, Error, EventType, ListOptions, ListerWatcher, ObjectList, ObjectRef,
    Status, WatchEvent, WatchStream, reason,
};
use kcache_store::{DynamicObject, Object, ObjectKey, Selector, meta_namespace_key};
use tokio::sync::{Notify, mpsc};

/// An object whose resource version the fake can stamp, as the API server does on each write.
pub trait FakeObject: Object + Clone {
    /// Sets `metadata.resourceVersion`.
    fn set_resource_version(&mut self, rv: &str);
}

impl FakeObject for DynamicObject {
    fn set_resource_version(&mut self, rv: &str) {
        self.metadata.resource_version = Some(rv.to_owned());
    }
}

/// How the fake answers a watch with `sendInitialEvents=true`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WatchListSupport {
    /// Streams the state as `ADDED` events, then the `k8s.io/initial-events-end` bookmark (when
    /// bookmarks are allowed), then live events. The default.
    #[default]
    Supported,
    /// Answers 422 Invalid, as a server with the `WatchList` feature gate off does.
    Refuse,
    /// Ignores `sendInitialEvents` and serves a plain watch, as a server too old to know it does.
    Ignore,
    /// Streams the state as `ADDED` events, then ends the stream without the
    /// `k8s.io/initial-events-end` bookmark (a broken server or proxy).
    NoBookmark,
}

/// One request the fake received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeRequest {
    /// A `list` call.
    List(ListOptions),
    /// A `watch` call.
    Watch(ListOptions),
}

impl FakeRequest {
    /// The options of the call.
    pub fn options(&self) -> &ListOptions {
        match self {
            Self::List(o) | Self::Watch(o) => o,
        }
    }

    /// Whether it is a watch.
    pub fn is_watch(&self) -> bool {
        matches!(self, Self::Watch(_))
    }
}

/// How an object the fake holds reaches clients that cannot decode it (see
/// [`FakeHandle::update_undecodable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undecodable {
    /// The body does not fit the type, but the event's type and the object's namespace, name and
    /// resource version can be read: a client can remove just that key.
    Readable,
    /// Nothing can be read of it: a client must relist.
    Unreadable,
}

impl Undecodable {
    /// The decode error a client would report for `obj` in a watch event of type `ty` (or in a
    /// list when `ty` is `None`).
    fn error<T: Object>(self, obj: &T, ty: Option<EventType>) -> DecodeError {
        let context = if ty.is_some() {
            "watch event"
        } else {
            "list item"
        };
        match self {
            Self::Readable => DecodeError::new(context, "invalid type: string \"…\", expected u32")
                .with_event_type(ty)
                .with_path(Some("object.spec.replicas".to_owned()))
                .with_object(Some(ObjectRef::new(
                    obj.namespace(),
                    obj.name().unwrap_or_default(),
                    obj.resource_version().unwrap_or_default(),
                ))),
            Self::Unreadable => DecodeError::new(context, "expected value"),
        }
    }
}

/// A scripted answer to the next watch call.
enum WatchFault {
    Fail(Error),
    Expired,
    Stall,
    Close,
}

/// The sending side of a fake watch.
type WatchSender<T> = mpsc::UnboundedSender<Result<WatchEvent<T>, Error>>;

struct Watcher<T> {
    tx: mpsc::UnboundedSender<Result<WatchEvent<T>, Error>>,
    bookmarks: bool,
    selector: Selector,
}

struct Snapshot<T> {
    items: Vec<T>,
    rv: String,
}

struct Inner<T> {
    objects: BTreeMap<ObjectKey, T>,
    /// Objects whose current version clients cannot decode.
    poisoned: HashMap<ObjectKey, Undecodable>,
    rv: u64,
    history: Vec<(u64, WatchEvent<T>, Option<Undecodable>)>,
    compacted: u64,
    watchers: Vec<Watcher<T>>,
    stalled: Vec<mpsc::UnboundedSender<Result<WatchEvent<T>, Error>>>,
    requests: Vec<FakeRequest>,
    list_faults: VecDeque<Error>,
    watch_faults: VecDeque<WatchFault>,
    watch_list: WatchListSupport,
    watch_cache: bool,
    snapshots: HashMap<u64, Snapshot<T>>,
    next_snapshot: u64,
    expire_next_continue: bool,
}

struct Shared<T> {
    inner: Mutex<Inner<T>>,
    notify: Notify,
}

/// An in-memory [`ListerWatcher`] with one global resource version counter, scripted through a
/// [`FakeHandle`], recording every [`ListOptions`] it receives.
///
/// It behaves like the API server where the reflector can tell: lists at RV `"0"` ignore `limit`
/// (the watch cache; switch it off with [`FakeHandle::set_watch_cache`]), other lists are paged
/// with continue tokens, a watch from RV `""`/`"0"` starts with synthetic `ADDED` events, a watch
/// from RV N replays the changes after N (or sends a 410 `ERROR` when N was compacted), a
/// streaming list ends its initial events with the annotated bookmark, and invalid option
/// combinations get the server's 400/422 answers. Label selectors are applied to lists and watches.
///
/// Clones share the state.
///
/// ```
/// use kcache_reflector::{ListOptions, ListerWatcher};
/// use kcache_store::DynamicObject;
/// use kcache_testing::{FakeListerWatcher, FakeRequest};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), kcache_reflector::Error> {
/// let fake = FakeListerWatcher::<DynamicObject>::new();
/// fake.handle().add(DynamicObject::new(Some("ns"), "a"));
/// let list = fake.list(&ListOptions::default()).await?;
/// assert_eq!((list.items.len(), list.resource_version.as_str()), (1, "1"));
/// assert_eq!(fake.handle().requests(), [FakeRequest::List(ListOptions::default())]);
/// # Ok(())
/// # }
/// ```
pub struct FakeListerWatcher<T> {
    shared: Arc<Shared<T>>,
}

/// Scripts a [`FakeListerWatcher`]: changes its state (delivered to open watches), injects
/// faults, and reads back the requests.
pub struct FakeHandle<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for FakeListerWatcher<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> Clone for FakeHandle<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T: FakeObject> Default for FakeListerWatcher<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for FakeListerWatcher<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeListerWatcher").finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for FakeHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeHandle").finish_non_exhaustive()
    }
}

fn lock<T>(shared: &Shared<T>) -> MutexGuard<'_, Inner<T>> {
    shared.inner.lock().unwrap_or_else(PoisonError::into_inner)
}

fn bad_request(message: &str) -> Error {
    Error::api(Status::failure(400, reason::BAD_REQUEST, message))
}

fn invalid(message: &str) -> Error {
    Error::api(Status::failure(422, reason::INVALID, message))
}

impl<T: FakeObject> FakeListerWatcher<T> {
    /// An empty fake at resource version 0.
    #[must_use]
    pub fn new() -> Self {
        Self {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner {
                    objects: BTreeMap::new(),
                    poisoned: HashMap::new(),
                    rv: 0,
                    history: Vec::new(),
                    compacted: 0,
                    watchers: Vec::new(),
                    stalled: Vec::new(),
                    requests: Vec::new(),
                    list_faults: VecDeque::new(),
                    watch_faults: VecDeque::new(),
                    watch_list: WatchListSupport::default(),
                    watch_cache: true,
                    snapshots: HashMap::new(),
                    next_snapshot: 0,
                    expire_next_continue: false,
                }),
                notify: Notify::new(),
            }),
        }
    }

    /// The handle that scripts this fake.
    #[must_use]
    pub fn handle(&self) -> FakeHandle<T> {
        FakeHandle {
            shared: Arc::clone(&self.shared),
        }
    }

    fn record(&self, req: FakeRequest) -> MutexGuard<'_, Inner<T>> {
        let mut inner = lock(&self.shared);
        inner.requests.push(req);
        self.shared.notify.notify_waiters();
        inner
    }
}

fn parse_rv(rv: &str) -> Result<u64, Error> {
    rv.parse()
        .map_err(|_| invalid(&format!("invalid resource version: {rv}")))
}

fn parse_selector(s: &str) -> Result<Selector, Error> {
    Selector::parse(s).map_err(|e| bad_request(&e.to_string()))
}

impl<T: FakeObject> Inner<T> {
    fn page(&mut self, items: Vec<T>, rv: String, offset: usize, limit: usize) -> ObjectList<T> {
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
    fn poison(&self, mut list: ObjectList<T>) -> ObjectList<T> {
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
    fn item(ev: &WatchEvent<T>, poison: Option<Undecodable>) -> Result<WatchEvent<T>, Error> {
        match (poison, ev) {
            (Some(u), WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) => {
                Err(Error::decode(u.error(o, Some(ev.event_type()))))
            }
            _ => Ok(ev.clone()),
        }
    }

    fn list(&mut self, opts: &ListOptions) -> Result<ObjectList<T>, Error> {
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

    fn watch(&mut self, opts: &ListOptions) -> Result<WatchStream<T>, Error> {
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
                WatchListSupport::Refuse => {
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
    fn send_state(&self, tx: &WatchSender<T>, selector: &Selector) {
        for (k, o) in self
            .objects
            .iter()
            .filter(|(_, o)| selector.matches_object(*o))
        {
            let ev = WatchEvent::Added(o.clone());
            let _ = tx.send(Self::item(&ev, self.poisoned.get(k).copied()));
        }
    }

    fn too_old(&self, rv: &str) -> Status {
        Status::expired(&format!(
            "too old resource version: {rv} ({})",
            self.compacted.saturating_sub(1)
        ))
    }

    fn broadcast(&mut self, ev: &WatchEvent<T>, poison: Option<Undecodable>) {
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

    fn write(
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

fn event_matches<T: Object>(ev: &WatchEvent<T>, selector: &Selector) -> bool {
    match ev {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
            selector.matches_object(o)
        }
        WatchEvent::Bookmark(_) | WatchEvent::Error(_) => true,
    }
}

#[async_trait::async_trait]
impl<T: FakeObject> ListerWatcher<T> for FakeListerWatcher<T> {
    async fn list(&self, opts: &ListOptions) -> Result<ObjectList<T>, Error> {
        self.record(FakeRequest::List(opts.clone())).list(opts)
    }

    async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<T>, Error> {
        self.record(FakeRequest::Watch(opts.clone())).watch(opts)
    }
}

/// The stream of one fake watch: ends when the fake closes it.
struct FakeWatchStream<T> {
    rx: mpsc::UnboundedReceiver<Result<WatchEvent<T>, Error>>,
}

impl<T> Stream for FakeWatchStream<T> {
    type Item = Result<WatchEvent<T>, Error>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl<T: FakeObject> FakeHandle<T> {
    fn inner(&self) -> MutexGuard<'_, Inner<T>> {
        lock(&self.shared)
    }

    /// Creates or replaces `obj` (by key) at a new resource version; open watches see `ADDED`
    /// or `MODIFIED`. Returns the stored object.
    pub fn add(&self, obj: T) -> T {
        self.apply(obj)
    }

    /// Same as [`add`](Self::add): the event is `MODIFIED` when the key exists.
    pub fn update(&self, obj: T) -> T {
        self.apply(obj)
    }

    fn apply(&self, obj: T) -> T {
        self.apply_as(obj, None)
    }

    fn apply_as(&self, obj: T, poison: Option<Undecodable>) -> T {
        match self.inner().write(obj.clone(), false, poison) {
            Some(WatchEvent::Added(o) | WatchEvent::Modified(o)) => o,
            _ => obj,
        }
    }

    /// Deletes the object with `obj`'s key at a new resource version; open watches see
    /// `DELETED` with its last state. `false` when there was no such object.
    pub fn delete(&self, obj: &T) -> bool {
        self.inner().write(obj.clone(), true, None).is_some()
    }

    /// Like [`update`](Self::update) (or [`add`](Self::add)), but clients cannot decode the new
    /// version: open watches get an `Err(Error::Decode)` (with the event's identity when `how`
    /// is [`Undecodable::Readable`]), and lists put it in [`ObjectList::skipped`] until the
    /// object is written again normally.
    pub fn update_undecodable(&self, obj: T, how: Undecodable) -> T {
        self.apply_as(obj, Some(how))
    }

    /// Like [`delete`](Self::delete), but clients cannot decode the `DELETED` event.
    pub fn delete_undecodable(&self, obj: &T, how: Undecodable) -> bool {
        self.inner().write(obj.clone(), true, Some(how)).is_some()
    }

    /// The keys of the objects whose current version clients cannot decode.
    pub fn undecodable_keys(&self) -> Vec<ObjectKey> {
        let mut keys: Vec<_> = self.inner().poisoned.keys().cloned().collect();
        keys.sort();
        keys
    }

    /// Sends a `BOOKMARK` at the current resource version to the watches that allow bookmarks.
    pub fn bookmark(&self) {
        let mut inner = self.inner();
        let ev = WatchEvent::Bookmark(Bookmark::new(inner.rv.to_string()));
        inner.broadcast(&ev, None);
    }

    /// Moves the resource version on without an object change (a write to another resource).
    pub fn bump_resource_version(&self) -> String {
        let mut inner = self.inner();
        inner.rv += 1;
        inner.rv.to_string()
    }

    /// Sends `event` as is to every open watch.
    pub fn send_event(&self, event: &WatchEvent<T>) {
        self.inner().broadcast(event, None);
    }

    /// Sends an undecodable event ([`Error::Decode`]) of which nothing can be read to every
    /// open watch (the server's state does not change).
    pub fn send_decode_error(&self) {
        self.send_decode_error_of(&DecodeError::new("watch event", "expected value"));
    }

    /// Sends `Err(Error::Decode(error))` to every open watch (the server's state does not
    /// change).
    pub fn send_decode_error_of(&self, error: &DecodeError) {
        self.inner()
            .watchers
            .retain(|w| w.tx.send(Err(Error::decode(error.clone()))).is_ok());
    }

    /// Sends an `ERROR` event with `status` to every open watch, then closes them.
    pub fn send_error(&self, status: &Status) {
        let mut inner = self.inner();
        for w in inner.watchers.drain(..) {
            let _ = w.tx.send(Ok(WatchEvent::Error(Box::new(status.clone()))));
        }
    }

    /// Compacts the history at the current resource version and ends every open watch with a
    /// 410 `ERROR` event, as a watch cache that fell behind does.
    pub fn expire_watches(&self) {
        self.compact();
        let mut inner = self.inner();
        let status = inner.too_old("0");
        for w in inner.watchers.drain(..) {
            let _ = w.tx.send(Ok(WatchEvent::Error(Box::new(status.clone()))));
        }
    }

    /// Forgets the history before the current resource version: a later watch from an older
    /// resource version gets a 410 `ERROR` event.
    pub fn compact(&self) {
        let mut inner = self.inner();
        inner.compacted = inner.rv;
        let floor = inner.compacted;
        inner.history.retain(|(rv, _, _)| *rv > floor);
    }

    /// Closes every open watch cleanly (as a server timeout does).
    pub fn close_watches(&self) {
        let mut inner = self.inner();
        inner.watchers.clear();
        inner.stalled.clear();
    }

    /// Breaks every open watch: a transport error, then the end of the stream.
    pub fn drop_watches(&self) {
        let mut inner = self.inner();
        for w in inner.watchers.drain(..) {
            let _ = w.tx.send(Err(Error::transport(std::io::Error::from(
                std::io::ErrorKind::ConnectionReset,
            ))));
        }
    }

    /// The next list call fails with `error`. Calls queue up.
    pub fn fail_next_list(&self, error: Error) {
        self.inner().list_faults.push_back(error);
    }

    /// The next list call is answered with `status`.
    pub fn fail_next_list_with_status(&self, status: Status) {
        self.fail_next_list(Error::api(status));
    }

    /// The next watch call fails with `error` (a direct HTTP error). Calls queue up.
    pub fn fail_next_watch(&self, error: Error) {
        self.inner().watch_faults.push_back(WatchFault::Fail(error));
    }

    /// The next watch call is answered with `status`.
    pub fn fail_next_watch_with_status(&self, status: Status) {
        self.fail_next_watch(Error::api(status));
    }

    /// The next watch starts, sends one 410 `ERROR` event and ends, as the server does for a
    /// too old resource version.
    pub fn expire_next_watch(&self) {
        self.inner().watch_faults.push_back(WatchFault::Expired);
    }

    /// The next watch starts and then never delivers anything (a hung connection).
    pub fn stall_next_watch(&self) {
        self.inner().watch_faults.push_back(WatchFault::Stall);
    }

    /// The next watch starts and ends at once with no event.
    pub fn close_next_watch(&self) {
        self.inner().watch_faults.push_back(WatchFault::Close);
    }

    /// How `sendInitialEvents` is answered.
    pub fn set_watch_list(&self, support: WatchListSupport) {
        self.inner().watch_list = support;
    }

    /// Whether a list at RV `"0"` is served as if from the watch cache, ignoring `limit` (the
    /// default). Off, it is paged like any other.
    pub fn set_watch_cache(&self, on: bool) {
        self.inner().watch_cache = on;
    }

    /// Expires every continue token handed out so far: using one gets a 410 `Expired`.
    pub fn expire_continue_tokens(&self) {
        self.inner().snapshots.clear();
    }

    /// The next list call that carries a continue token gets a 410 `Expired`, as if the token's
    /// snapshot had been compacted meanwhile.
    pub fn expire_next_continue_token(&self) {
        self.inner().expire_next_continue = true;
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<FakeRequest> {
        self.inner().requests.clone()
    }

    /// Forgets the requests recorded so far.
    pub fn clear_requests(&self) {
        self.inner().requests.clear();
    }

    /// How many list calls so far.
    pub fn list_count(&self) -> usize {
        self.inner()
            .requests
            .iter()
            .filter(|r| !r.is_watch())
            .count()
    }

    /// How many watch calls so far.
    pub fn watch_count(&self) -> usize {
        self.inner()
            .requests
            .iter()
            .filter(|r| r.is_watch())
            .count()
    }

    /// How many watches are open (not counting stalled ones).
    pub fn open_watches(&self) -> usize {
        let mut inner = self.inner();
        inner.watchers.retain(|w| !w.tx.is_closed());
        inner.watchers.len()
    }

    /// The current state, in key order.
    pub fn objects(&self) -> Vec<T> {
        self.inner().objects.values().cloned().collect()
    }

    /// The current resource version.
    pub fn resource_version(&self) -> String {
        self.inner().rv.to_string()
    }

    /// Waits until `pred` holds for the recorded requests.
    pub async fn wait_for(&self, mut pred: impl FnMut(&[FakeRequest]) -> bool) {
        loop {
            let notified = self.shared.notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if pred(&self.inner().requests) {
                return;
            }
            notified.await;
        }
    }

    /// Waits until at least `n` requests (lists and watches) were made.
    pub async fn wait_for_requests(&self, n: usize) {
        self.wait_for(|r| r.len() >= n).await;
    }

    /// Waits until at least `n` watch calls were made.
    pub async fn wait_for_watches(&self, n: usize) {
        self.wait_for(|r| r.iter().filter(|r| r.is_watch()).count() >= n)
            .await;
    }

    /// Waits until at least `n` list calls were made.
    pub async fn wait_for_lists(&self, n: usize) {
        self.wait_for(|r| r.iter().filter(|r| !r.is_watch()).count() >= n)
            .await;
    }
}

/// Polls `cond` every millisecond (of tokio time, so paused-time tests advance instantly) until
/// it holds; panics after `limit` of tokio time.
///
/// # Panics
///
/// When `cond` still does not hold after `limit`.
pub async fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition still false after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
