//! [`FakeHandle`]: scripts a fake (state changes, faults) and reads back its requests, and
//! [`wait_until`] and [`poll_until`], the polling helpers every test of the fakes uses.

use std::fmt;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use kcache_reflector::{Bookmark, DecodeError, Error, Status, WatchEvent};
use kcache_store::ObjectKey;

use super::{
    FakeObject, FakeRequest, Inner, Shared, Undecodable, WatchFault, WatchListSupport, lock,
};

/// Scripts a [`FakeListerWatcher`](super::FakeListerWatcher): changes its state (delivered to open watches), injects
/// faults, and reads back the requests.
pub struct FakeHandle<T> {
    pub(super) shared: Arc<Shared<T>>,
}

impl<T> Clone for FakeHandle<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> fmt::Debug for FakeHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeHandle").finish_non_exhaustive()
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
    /// is [`Undecodable::Readable`]), and lists put it in [`ObjectList::skipped`](kcache_reflector::ObjectList::skipped) until the
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

    /// How watches with `sendInitialEvents=true` are answered.
    pub fn watch_list(&self) -> WatchListSupport {
        self.inner().watch_list
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
pub async fn wait_until(limit: Duration, cond: impl FnMut() -> bool) {
    poll_until("condition", limit, Duration::from_millis(1), cond).await;
}

/// Polls `cond` every `every` (of tokio time) until it holds; panics after `limit`, naming
/// `what` it waited for. For conditions too costly to check every millisecond (a walk over
/// thousands of cached objects).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// use std::time::Duration;
///
/// let start = tokio::time::Instant::now();
/// kcache_testing::poll_until("a second to pass", Duration::from_secs(5), Duration::from_millis(100), || {
///     start.elapsed() >= Duration::from_secs(1)
/// })
/// .await;
/// # });
/// ```
///
/// # Panics
///
/// When `cond` still does not hold after `limit`.
pub async fn poll_until(
    what: &str,
    limit: Duration,
    every: Duration,
    mut cond: impl FnMut() -> bool,
) {
    let deadline = tokio::time::Instant::now() + limit;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(every).await;
    }
}
