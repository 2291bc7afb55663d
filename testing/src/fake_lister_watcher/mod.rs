//! [`FakeListerWatcher`]: an in-memory, scriptable [`ListerWatcher`] that records every request.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use futures_core::Stream;
use kcache_reflector::{Error, ListOptions, ListerWatcher, ObjectList, WatchEvent, WatchStream};
use kcache_store::{Compact, DynamicObject, Object, ObjectKey, Selector};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::{Notify, mpsc};

mod handle;
mod server;
mod undecodable;

pub use self::handle::{FakeHandle, poll_until, wait_until};
pub use self::undecodable::Undecodable;

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

/// A compact object is stamped by decoding it, stamping the typed object and encoding it
/// again (a fake's cost, not a cache's). One that does not decode as a `K` (never the case for
/// objects built from a `K`) keeps its old resource version.
impl<K> FakeObject for Compact<K>
where
    K: FakeObject + Serialize + DeserializeOwned,
{
    fn set_resource_version(&mut self, rv: &str) {
        let Ok(mut typed) = self.typed() else {
            return;
        };
        typed.set_resource_version(rv);
        if let Ok(stamped) = Compact::from_typed(&typed) {
            *self = stamped;
        }
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
    /// Declares that it cannot serve streaming lists
    /// ([`supports_streaming_lists`](ListerWatcher::supports_streaming_lists) is `false`), and
    /// answers 422 Invalid if asked anyway.
    Unsupported,
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

impl<T> Clone for FakeListerWatcher<T> {
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

fn lock<T>(shared: &Shared<T>) -> MutexGuard<'_, Inner<T>> {
    shared.inner.lock().unwrap_or_else(PoisonError::into_inner)
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

#[async_trait::async_trait]
impl<T: FakeObject> ListerWatcher<T> for FakeListerWatcher<T> {
    async fn list(&self, opts: &ListOptions) -> Result<ObjectList<T>, Error> {
        self.record(FakeRequest::List(opts.clone())).list(opts)
    }

    async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<T>, Error> {
        self.record(FakeRequest::Watch(opts.clone())).watch(opts)
    }

    fn supports_streaming_lists(&self) -> bool {
        self.handle().watch_list() != WatchListSupport::Unsupported
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
