//! The harness of the hostile-server tests: a typed `Pod` (a wrongly typed `spec` field breaks
//! it while its metadata stays readable), a `SharedIndexInformer` over client-http (its own
//! client or kube-rs's, see [`Backend`]) against a
//! [`ScriptedServer`](kcache_testing_server::ScriptedServer), a handler recording what it hears and a
//! watch-error hook recording what it is told.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kcache_client_http::{HttpListerWatcher, KubeListerWatcher};
use kcache_informer::{ResourceEventHandler, SharedIndexInformer};
use kcache_reflector::{BackoffConfig, Error, ErrorChain, ListerWatcher, ReflectorBuilder};
use kcache_store::{Object, ObjectMeta, ObjectOrTombstone, deletion_handling_key};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::support::{Backend, http_client, kube_pods, pods};

/// A typed pod, as a controller would declare it: a `spec` whose fields have types.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Pod {
    pub(crate) metadata: ObjectMeta,
    pub(crate) spec: PodSpec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodSpec {
    pub(crate) containers: Vec<Container>,
    #[serde(default)]
    #[allow(dead_code, reason = "decoded, to be checked")]
    pub(crate) restart_policy: Option<RestartPolicy>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Container {
    #[allow(dead_code, reason = "decoded, to be checked")]
    pub(crate) name: String,
    pub(crate) image: String,
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub(crate) enum RestartPolicy {
    Always,
    OnFailure,
    Never,
}

impl Object for Pod {
    fn name(&self) -> Option<&str> {
        self.metadata.name.as_deref()
    }
    fn namespace(&self) -> Option<&str> {
        self.metadata.namespace.as_deref()
    }
    fn resource_version(&self) -> Option<&str> {
        self.metadata.resource_version.as_deref()
    }
}

/// A pod `ns/name` at `rv` running `image`, as the server sends it.
pub(crate) fn pod(name: &str, rv: &str, image: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "uid": format!("uid-{name}")},
        "spec": {"containers": [{"name": "main", "image": image}], "restartPolicy": "Always"},
    })
}

/// `pod(name, rv, _)` with `spec` replaced: the same identity, a body a `Pod` cannot hold.
pub(crate) fn broken_pod(name: &str, rv: &str, spec: Value) -> Value {
    let mut p = pod(name, rv, "unused");
    p["spec"] = spec;
    p
}

/// key -> (resourceVersion, image of the first container).
pub(crate) type State = BTreeMap<String, (String, String)>;

fn key(p: &Pod) -> String {
    kcache_store::meta_namespace_key(p).unwrap().to_string()
}

fn entry(p: &Pod) -> (String, String) {
    (
        p.resource_version().unwrap_or_default().to_owned(),
        p.spec
            .containers
            .first()
            .map(|c| c.image.clone())
            .unwrap_or_default(),
    )
}

/// `(key, rv, image)` triples as a [`State`].
pub(crate) fn state(entries: &[(&str, &str, &str)]) -> State {
    entries
        .iter()
        .map(|(k, rv, image)| ((*k).to_owned(), ((*rv).to_owned(), (*image).to_owned())))
        .collect()
}

/// What a handler heard, in order (`add ns/a@10`, `update ns/a@10->12`, `delete ns/a`), and the
/// state it rebuilt from it.
#[derive(Clone, Default)]
pub(crate) struct Heard(Arc<Mutex<(Vec<String>, State)>>);

impl Heard {
    pub(crate) fn events(&self) -> Vec<String> {
        self.0.lock().unwrap().0.clone()
    }
    pub(crate) fn state(&self) -> State {
        self.0.lock().unwrap().1.clone()
    }
}

impl ResourceEventHandler<Pod> for Heard {
    fn on_add(&self, obj: &Arc<Pod>, _: bool) {
        let (events, state) = &mut *self.0.lock().unwrap();
        events.push(format!("add {}@{}", key(obj), entry(obj).0));
        state.insert(key(obj), entry(obj));
    }
    fn on_update(&self, old: &Arc<Pod>, new: &Arc<Pod>) {
        let (events, state) = &mut *self.0.lock().unwrap();
        events.push(format!(
            "update {}@{}->{}",
            key(new),
            entry(old).0,
            entry(new).0
        ));
        state.insert(key(new), entry(new));
    }
    fn on_delete(&self, obj: &ObjectOrTombstone<Pod>) {
        let (events, state) = &mut *self.0.lock().unwrap();
        let k = deletion_handling_key(obj).unwrap().to_string();
        events.push(format!("delete {k}"));
        state.remove(&k);
    }
}

/// One error the watch-error hook was told about.
#[derive(Debug, Clone)]
pub(crate) struct Reported {
    /// The error and its causes on one line.
    pub(crate) chain: String,
    /// Its `Debug` form (every field).
    pub(crate) debug: String,
    /// The serde path of a decode error.
    pub(crate) path: Option<String>,
    /// `Decode`, `Limit`, `TooManyRequests`, `ConnectionRefused`, `InitialEventsIncomplete`,
    /// `WatchIdle` or `Other`.
    pub(crate) kind: &'static str,
    /// When the hook was told (tokio's clock).
    pub(crate) at: tokio::time::Instant,
}

fn reported(e: &Error) -> Reported {
    let kind = match e {
        Error::Decode(_) => "Decode",
        Error::Limit(_) => "Limit",
        Error::InitialEventsIncomplete { .. } => "InitialEventsIncomplete",
        Error::WatchIdle(_) => "WatchIdle",
        e if e.is_too_many_requests() => "TooManyRequests",
        e if e.is_connection_refused() => "ConnectionRefused",
        _ => "Other",
    };
    Reported {
        chain: ErrorChain(e).to_string(),
        debug: format!("{e:?}"),
        path: e.as_decode().and_then(|d| d.path.clone()),
        kind,
        at: tokio::time::Instant::now(),
    }
}

/// A running informer of typed pods over client-http, its handler and its hook.
pub(crate) struct Running {
    pub(crate) informer: SharedIndexInformer<Pod>,
    pub(crate) heard: Heard,
    hook: Arc<Mutex<Vec<Reported>>>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

/// The lister-watcher's limits a test may set (the defaults where `None`), on either backend.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Limits {
    /// `max_event_size`.
    pub(crate) max_event_size: Option<usize>,
    /// `max_list_bytes`.
    pub(crate) max_list_bytes: Option<usize>,
    /// `max_list_objects` (the lister-watcher's and the reflector's).
    pub(crate) max_list_objects: Option<usize>,
    /// Only this namespace (the lister-watcher's `namespace`, or a namespaced kube-rs `Api`).
    pub(crate) namespace: Option<&'static str>,
    /// Ask for protobuf (`.protobuf()`).
    pub(crate) protobuf: bool,
}

/// Typed pods of every namespace at `url` over `backend`, with `limits`.
fn lister_watcher(backend: Backend, url: &str, limits: Limits) -> Arc<dyn ListerWatcher<Pod>> {
    match backend {
        Backend::Http => {
            let mut b = HttpListerWatcher::<Pod>::builder(http_client(url), pods()).kind("Pod");
            if let Some(n) = limits.max_event_size {
                b = b.max_event_size(n);
            }
            if let Some(n) = limits.max_list_bytes {
                b = b.max_list_bytes(n);
            }
            if let Some(n) = limits.max_list_objects {
                b = b.max_list_objects(n);
            }
            if let Some(ns) = limits.namespace {
                b = b.namespace(ns);
            }
            if limits.protobuf {
                b = b.protobuf();
            }
            Arc::new(b.build())
        }
        Backend::Kube => {
            let api = match limits.namespace {
                Some(ns) => kube_client::Api::namespaced(crate::support::kube_client(url), ns),
                None => kube_pods(url),
            };
            let mut b = KubeListerWatcher::<Pod>::builder(api);
            if let Some(n) = limits.max_event_size {
                b = b.max_event_size(n);
            }
            if let Some(n) = limits.max_list_bytes {
                b = b.max_list_bytes(n);
            }
            if let Some(n) = limits.max_list_objects {
                b = b.max_list_objects(n);
            }
            if limits.protobuf {
                b = b.protobuf();
            }
            Arc::new(b.build())
        }
    }
}

/// Short, seeded backoff (5 ms doubling to 100 ms) for tests on the real clock: a failed round
/// is retried at once, and `Retry-After` is capped at 100 ms.
pub(crate) fn quick(b: ReflectorBuilder<Pod>) -> ReflectorBuilder<Pod> {
    b.seed(7).backoff(BackoffConfig {
        initial: Duration::from_millis(5),
        cap: Duration::from_millis(100),
        ..BackoffConfig::default()
    })
}

impl Running {
    /// Starts an informer of pods at `url` (all namespaces) over `backend` on this runtime's
    /// current task set.
    pub(crate) fn start(
        backend: Backend,
        url: &str,
        limits: Limits,
        reflector: impl FnOnce(ReflectorBuilder<Pod>) -> ReflectorBuilder<Pod> + Send + 'static,
    ) -> Self {
        let lw = lister_watcher(backend, url, limits);
        let hook = Arc::new(Mutex::new(Vec::new()));
        let h = Arc::clone(&hook);
        let max_list_objects = limits.max_list_objects;
        let informer = SharedIndexInformer::builder(lw)
            .on_watch_error(move |e| h.lock().unwrap().push(reported(e)))
            .reflector_options(move |b| {
                let b = match max_list_objects {
                    Some(n) => b.max_list_objects(n),
                    None => b,
                };
                reflector(b)
            })
            .build();
        let heard = Heard::default();
        informer.add_event_handler(heard.clone()).unwrap();
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (informer, cancel) = (informer.clone(), cancel.clone());
            async move { informer.run(cancel).await.unwrap() }
        });
        Self {
            informer,
            heard,
            hook,
            cancel,
            task,
        }
    }

    /// The cache.
    pub(crate) fn cache(&self) -> State {
        self.informer
            .indexer()
            .list()
            .iter()
            .map(|p| (key(p), entry(p)))
            .collect()
    }

    /// What the watch-error hook was told, in order.
    pub(crate) fn reported(&self) -> Vec<Reported> {
        self.hook.lock().unwrap().clone()
    }

    /// What the hook was told of `kind`.
    pub(crate) fn reported_of(&self, kind: &str) -> Vec<Reported> {
        self.reported()
            .into_iter()
            .filter(|r| r.kind == kind)
            .collect()
    }

    /// Waits (on the tokio clock) until the cache, and the handler's rebuilt view, equal
    /// `want`.
    pub(crate) async fn converge(&self, limit: Duration, want: &State) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let (cache, heard) = (self.cache(), self.heard.state());
            if &cache == want && &heard == want {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no convergence after {limit:?}\nwant  {want:?}\ncache {cache:?}\nheard {heard:?}\nevents {:?}\nreported {:?}",
                self.heard.events(),
                self.reported()
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Stops the informer and waits for it.
    pub(crate) async fn stop(self) {
        self.cancel.cancel();
        self.task.await.unwrap();
    }
}
