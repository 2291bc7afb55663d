//! Shared helpers: objects, a reflector over a fake, request normalisation, store comparison.

use std::future::Future;
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kcache_reflector::{ListOptions, Reflector, ReflectorBuilder, ResourceVersionMatch};
use kcache_store::{Cache, DynamicObject, ObjectKey, Store};
use kcache_testing::{FakeHandle, FakeListerWatcher, FakeRequest};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub(crate) type Obj = DynamicObject;

/// A pod in namespace `ns`.
pub(crate) fn pod(name: &str) -> Obj {
    DynamicObject::new(Some("ns"), name)
}

/// A store over a cache that counts `resync` calls and, when `transforming`, has a transform of
/// its own (as a queue with a transformer has) that counts its runs, stamps each object with
/// how often it was transformed (label `transforms`) and drops its resource version. It also
/// records the versions it is told of by `update_resource_version` (after applied events) and
/// by `bookmark`, apart.
#[derive(Debug, Default)]
pub(crate) struct CountingStore {
    pub(crate) cache: Cache<Obj>,
    pub(crate) resyncs: AtomicUsize,
    pub(crate) transforming: bool,
    pub(crate) transforms: AtomicUsize,
    /// `replace` calls (which transform) and `replace_transformed` calls (which do not).
    pub(crate) replaces: AtomicUsize,
    pub(crate) transformed_replaces: AtomicUsize,
    /// What `update_resource_version` was told.
    pub(crate) told_versions: Mutex<Vec<String>>,
    /// What `bookmark` was told.
    pub(crate) bookmarks: Mutex<Vec<String>>,
}

impl CountingStore {
    /// A store with a transform of its own.
    pub(crate) fn transforming() -> Self {
        Self {
            transforming: true,
            ..Self::default()
        }
    }

    /// How often the stored object `name` was transformed.
    pub(crate) fn times_transformed(&self, name: &str) -> usize {
        let obj = self.cache.get_by_key(&format!("ns/{name}")).unwrap();
        obj.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("transforms"))
            .map_or(0, |n| n.parse().unwrap())
    }
}

impl Store<Obj> for CountingStore {
    fn add(&self, obj: Arc<Obj>) -> kcache_store::Result<()> {
        self.cache.add(self.transform_incoming(obj))
    }
    fn update(&self, obj: Arc<Obj>) -> kcache_store::Result<()> {
        self.cache.update(self.transform_incoming(obj))
    }
    fn delete(&self, obj: Arc<Obj>) -> kcache_store::Result<()> {
        self.cache.delete(self.transform_incoming(obj))
    }
    fn list(&self) -> Vec<Arc<Obj>> {
        self.cache.list()
    }
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.cache.list_keys()
    }
    fn get(&self, obj: &Obj) -> kcache_store::Result<Option<Arc<Obj>>> {
        self.cache.get(obj)
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<Obj>> {
        self.cache.get_by_key(key)
    }
    fn transform_incoming(&self, obj: Arc<Obj>) -> Arc<Obj> {
        if !self.transforming {
            return obj;
        }
        self.transforms.fetch_add(1, Ordering::SeqCst);
        let mut o = Arc::unwrap_or_clone(obj);
        let labels = o.metadata.labels.get_or_insert_default();
        let n: usize = labels.get("transforms").map_or(0, |n| n.parse().unwrap());
        labels.insert("transforms".to_owned(), (n + 1).to_string());
        o.metadata.resource_version = None;
        Arc::new(o)
    }
    fn replace(&self, list: Vec<Arc<Obj>>, rv: &str) -> kcache_store::Result<()> {
        self.replaces.fetch_add(1, Ordering::SeqCst);
        let list = list
            .into_iter()
            .map(|o| self.transform_incoming(o))
            .collect();
        self.cache.replace(list, rv)
    }
    fn replace_transformed(&self, list: Vec<Arc<Obj>>, rv: &str) -> kcache_store::Result<()> {
        self.transformed_replaces.fetch_add(1, Ordering::SeqCst);
        self.cache.replace(list, rv)
    }
    fn update_resource_version(&self, rv: &str) {
        self.told_versions.lock().unwrap().push(rv.to_owned());
        self.cache.update_resource_version(rv);
    }
    fn resync(&self) -> kcache_store::Result<()> {
        self.resyncs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn bookmark(&self, rv: &str) {
        self.bookmarks.lock().unwrap().push(rv.to_owned());
        self.cache.bookmark(rv);
    }
    fn last_sync_resource_version(&self) -> Option<String> {
        self.cache.last_sync_resource_version()
    }
}

/// A fake, its handle, the store and the errors the hooks saw.
pub(crate) struct Env {
    pub(crate) fake: FakeListerWatcher<Obj>,
    pub(crate) handle: FakeHandle<Obj>,
    pub(crate) store: Arc<CountingStore>,
    pub(crate) errors: Arc<Mutex<Vec<String>>>,
    pub(crate) decode_errors: Arc<Mutex<Vec<String>>>,
}

impl Env {
    /// [`Env::with_pods`] over a [`CountingStore::transforming`] store.
    pub(crate) fn with_pods_and_store_transform(n: usize) -> Self {
        Self {
            store: Arc::new(CountingStore::transforming()),
            ..Self::with_pods(n)
        }
    }

    /// A fake holding pods `p1..=pn` (so at resource version `n`).
    pub(crate) fn with_pods(n: usize) -> Self {
        let fake = FakeListerWatcher::new();
        let handle = fake.handle();
        for i in 1..=n {
            handle.add(pod(&format!("p{i}")));
        }
        Self {
            fake,
            handle,
            store: Arc::new(CountingStore::default()),
            errors: Arc::default(),
            decode_errors: Arc::default(),
        }
    }

    /// A reflector over this fake with a fixed seed and hooks recording errors.
    pub(crate) fn builder(&self) -> ReflectorBuilder<Obj> {
        let errors = Arc::clone(&self.errors);
        let decode = Arc::clone(&self.decode_errors);
        Reflector::builder(Arc::new(self.fake.clone()), self.store.clone())
            .name("test")
            .seed(42)
            .watch_error_handler(move |e| errors.lock().unwrap().push(e.to_string()))
            .decode_error_handler(move |e| decode.lock().unwrap().push(e.to_string()))
    }

    /// [`Env::builder`] for the classic list-then-watch reflector.
    pub(crate) fn classic_builder(&self) -> ReflectorBuilder<Obj> {
        self.builder().use_watch_list(false)
    }

    /// The classic list-then-watch reflector.
    pub(crate) fn classic(&self) -> Reflector<Obj> {
        self.classic_builder().build()
    }

    /// Builds `builder`'s reflector, [`drive`]s it through `script` and hands it back.
    pub(crate) async fn run(
        &self,
        builder: ReflectorBuilder<Obj>,
        script: impl Future<Output = ()>,
    ) -> Reflector<Obj> {
        let reflector = builder.build();
        drive(&reflector, script).await;
        reflector
    }

    /// [`Env::run`] with the classic list-then-watch reflector.
    pub(crate) async fn run_classic(&self, script: impl Future<Output = ()>) -> Reflector<Obj> {
        self.run(self.classic_builder(), script).await
    }

    /// [`Env::run`] with the default reflector, which starts with a streaming list.
    pub(crate) async fn run_streaming(&self, script: impl Future<Output = ()>) -> Reflector<Obj> {
        self.run(self.builder(), script).await
    }

    /// The recorded requests, with each watch's random `timeoutSeconds` checked to be in
    /// `[300, 600)` and then blanked.
    pub(crate) fn requests(&self) -> Vec<FakeRequest> {
        self.handle
            .requests()
            .into_iter()
            .map(|r| match r {
                FakeRequest::Watch(mut o) => {
                    let t = o.timeout_seconds.take().expect("a watch timeout");
                    assert!((300..600).contains(&t), "timeoutSeconds {t}");
                    FakeRequest::Watch(o)
                }
                list @ FakeRequest::List(_) => list,
            })
            .collect()
    }

    /// Asserts that the recorded requests (see [`Env::requests`]) are exactly `want`, in order.
    #[track_caller]
    pub(crate) fn assert_requests(&self, want: &[FakeRequest]) {
        assert_eq!(self.requests(), want);
    }

    /// Asserts that the store holds exactly the fake's state.
    pub(crate) fn assert_store_matches(&self) {
        let mut stored: Vec<Obj> = self.store.list().iter().map(|o| (**o).clone()).collect();
        stored.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut want = self.handle.objects();
        want.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        assert_eq!(stored, want);
    }

    /// Waits until the store holds exactly the fake's state, less the objects no client can
    /// decode (see `FakeHandle::update_undecodable`).
    pub(crate) async fn wait_synced(&self) {
        let undecodable = self.handle.undecodable_keys();
        let want: Vec<Obj> = self
            .handle
            .objects()
            .into_iter()
            .filter(|o| {
                let key = format!("ns/{}", o.metadata.name.as_deref().unwrap_or_default());
                !undecodable.iter().any(|k| k.as_str() == key)
            })
            .collect();
        let store = Arc::clone(&self.store);
        kcache_testing::wait_until(Duration::from_secs(600), move || {
            want.iter().all(|o| {
                let key = format!("ns/{}", o.metadata.name.as_deref().unwrap_or_default());
                store.get_by_key(&key).is_some_and(|s| *s == *o)
            }) && store.len() == want.len()
        })
        .await;
    }

    /// The errors the watch-error hook saw.
    pub(crate) fn errors(&self) -> Vec<String> {
        self.errors.lock().unwrap().clone()
    }

    /// The one error the watch-error hook saw; fails unless there was exactly one.
    #[track_caller]
    pub(crate) fn only_error(&self) -> String {
        let errors = self.errors();
        assert_eq!(errors.len(), 1, "want exactly one error: {errors:?}");
        errors[0].clone()
    }

    /// Waits until the fake has served `n` watches; returns how long that took.
    pub(crate) async fn time_until_watches(&self, n: usize) -> Duration {
        let start = Instant::now();
        self.handle.wait_for_watches(n).await;
        start.elapsed()
    }

    /// Waits for each list count in `counts` in turn, returning the time each wait took (so
    /// the gaps between list attempts, the first measured from the call).
    pub(crate) async fn list_gaps(&self, counts: RangeInclusive<usize>) -> Vec<Duration> {
        let mut gaps = Vec::new();
        let mut last = Instant::now();
        for n in counts {
            self.handle.wait_for_lists(n).await;
            gaps.push(last.elapsed());
            last = Instant::now();
        }
        gaps
    }
}

/// Runs `reflector` while `script` runs, then cancels it and waits for it to stop.
pub(crate) async fn drive(reflector: &Reflector<Obj>, script: impl Future<Output = ()>) {
    let cancel = CancellationToken::new();
    tokio::join!(reflector.run(cancel.clone()), async {
        script.await;
        cancel.cancel();
    });
}

/// A fresh reflector's first list: at RV "0", paged at 500.
pub(crate) fn first_list() -> FakeRequest {
    list("0", Some(500))
}

/// An unpaged relist at `rv` (so the watch cache can serve it).
pub(crate) fn relist(rv: &str) -> FakeRequest {
    list(rv, None)
}

/// A list request at `rv` with `limit`.
pub(crate) fn list(rv: &str, limit: Option<i64>) -> FakeRequest {
    FakeRequest::List(ListOptions {
        resource_version: rv.into(),
        limit,
        ..ListOptions::default()
    })
}

/// A list request for the page after `token`.
pub(crate) fn list_continue(token: &str, limit: Option<i64>) -> FakeRequest {
    FakeRequest::List(ListOptions {
        continue_token: token.into(),
        limit,
        ..ListOptions::default()
    })
}

/// A plain watch from `rv` (timeout blanked).
pub(crate) fn watch(rv: &str) -> FakeRequest {
    FakeRequest::Watch(ListOptions {
        resource_version: rv.into(),
        allow_watch_bookmarks: true,
        ..ListOptions::default()
    })
}

/// A streaming list from `rv` (timeout blanked).
pub(crate) fn watch_list(rv: &str) -> FakeRequest {
    FakeRequest::Watch(ListOptions {
        resource_version: rv.into(),
        resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
        allow_watch_bookmarks: true,
        send_initial_events: Some(true),
        ..ListOptions::default()
    })
}

/// Three streaming lists that never got their initial-events bookmark, then the fallback: the
/// first paginated list and a watch from `rv`.
pub(crate) fn three_attempts_then_list(rv: &str) -> Vec<FakeRequest> {
    vec![
        watch_list(""),
        watch_list(""),
        watch_list(""),
        first_list(),
        watch(rv),
    ]
}

/// Sleeps `secs` seconds of (paused) tokio time.
pub(crate) async fn sleep_secs(secs: u64) {
    tokio::time::sleep(Duration::from_secs(secs)).await;
}

/// Asserts that `waited` is a first backoff step: 800 ms with up to 100% jitter.
#[track_caller]
pub(crate) fn assert_first_backoff(waited: Duration) {
    assert!(
        waited >= Duration::from_millis(800) && waited < Duration::from_millis(1600),
        "{waited:?}"
    );
}
