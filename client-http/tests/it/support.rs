//! Helpers: servers, clients, fixtures.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use kcache_client_http::{
    ApiResource, BoxError, Client, Config, HttpListerWatcher, HyperTransport, ResponseBody,
    Transport,
};
use kcache_reflector::{Error, ListerWatcher, WatchEvent, WatchStream};
use kcache_store::DynamicObject;
use kcache_testing_server::{FakeApiServer, FakeApiServerBuilder};
use serde_json::Value;

/// The core pods resource, as the client names it.
pub(crate) fn pods() -> ApiResource {
    ApiResource::new("", "v1", "pods", true)
}

/// The fake server's pods resource.
pub(crate) fn fake_pods() -> kcache_testing_server::ServedResource {
    kcache_testing_server::ServedResource::pods()
}

/// A server (plain or TLS) with `n` pods in namespace `ns`, named `p0`, `p1`, ...
pub(crate) async fn server(tls: bool, n: usize) -> FakeApiServer {
    server_from(FakeApiServer::builder().tls(tls), n).await
}

/// The server of `builder` with `n` pods in namespace `ns`, named `p0`, `p1`, ...
pub(crate) async fn server_from(builder: FakeApiServerBuilder, n: usize) -> FakeApiServer {
    let server = builder.start().await.unwrap();
    for i in 0..n {
        server
            .create(
                &fake_pods(),
                DynamicObject::new(Some("ns"), &format!("p{i}")),
            )
            .unwrap();
    }
    server
}

/// The config of the server's own kubeconfig (CA included for TLS).
pub(crate) fn config(server: &FakeApiServer) -> Config {
    let kc = kcache_client_http::Kubeconfig::from_yaml(&server.kubeconfig("ns")).unwrap();
    kc.config(&kcache_client_http::KubeconfigOptions::default())
        .unwrap()
}

pub(crate) fn client(server: &FakeApiServer) -> Client {
    Client::new(config(server)).unwrap()
}

pub(crate) fn lw(server: &FakeApiServer) -> HttpListerWatcher<DynamicObject> {
    HttpListerWatcher::dynamic(client(server), pods())
}

/// Which lister-watcher a test of the shared contract runs on: client-http's own client, or
/// (with the `kube` feature) kube-rs's client carrying client-http's requests and decoders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// `HttpListerWatcher`.
    Http,
    /// `KubeListerWatcher` over a kube-rs client made from the server's kubeconfig.
    #[cfg(feature = "kube")]
    Kube,
}

/// Every backend this build has.
pub(crate) const BACKENDS: &[Backend] = &[
    Backend::Http,
    #[cfg(feature = "kube")]
    Backend::Kube,
];

/// What a test sets on the lister-watcher (the defaults otherwise).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Settings {
    /// Only this namespace (all of them by default).
    pub(crate) namespace: Option<&'static str>,
    pub(crate) max_event_size: Option<usize>,
    pub(crate) max_list_bytes: Option<usize>,
}

/// Applies the size limits of `settings` to either backend's builder (their setters share
/// names).
macro_rules! with_limits {
    ($builder:expr, $settings:expr) => {{
        let mut b = $builder;
        if let Some(n) = $settings.max_event_size {
            b = b.max_event_size(n);
        }
        if let Some(n) = $settings.max_list_bytes {
            b = b.max_list_bytes(n);
        }
        b
    }};
}

impl Backend {
    /// The server modes it is tested on: client-http over plain HTTP and TLS; kube-rs over
    /// plain HTTP only, since these tests enable no TLS stack of kube-rs (kcache-testing-e2e
    /// runs it over TLS).
    pub(crate) fn tls_modes(self) -> &'static [bool] {
        match self {
            Self::Http => &[false, true],
            #[cfg(feature = "kube")]
            Self::Kube => &[false],
        }
    }

    /// A lister-watcher of pods in every namespace of `server`, decoded as `DynamicObject`s.
    pub(crate) async fn pods(
        self,
        server: &FakeApiServer,
    ) -> Box<dyn ListerWatcher<DynamicObject>> {
        self.lister_watcher(server, &pods(), Settings::default())
            .await
    }

    /// A lister-watcher of `resource` on `server`, with `settings`.
    #[cfg_attr(
        not(feature = "kube"),
        expect(clippy::unused_async, reason = "only the kube-rs backend awaits")
    )]
    pub(crate) async fn lister_watcher(
        self,
        server: &FakeApiServer,
        resource: &ApiResource,
        settings: Settings,
    ) -> Box<dyn ListerWatcher<DynamicObject>> {
        match self {
            Self::Http => {
                let b = HttpListerWatcher::builder(client(server), resource.clone());
                let b = match settings.namespace {
                    Some(ns) => b.namespace(ns),
                    None => b,
                };
                Box::new(with_limits!(b, settings).build())
            }
            #[cfg(feature = "kube")]
            Self::Kube => {
                let resource = kube_resource(resource);
                let client = kube_client_for(server, false).await;
                let api = match settings.namespace {
                    Some(ns) => {
                        kube_client::Api::<kube_client::core::DynamicObject>::namespaced_with(
                            client, ns, &resource,
                        )
                    }
                    None => kube_client::Api::all_with(client, &resource),
                };
                let b = kcache_client_http::KubeListerWatcher::builder_with(api, &resource);
                Box::new(with_limits!(b, settings).build())
            }
        }
    }
}

/// `resource` as kube-rs names it (the path comes from the plural; the kind is what the
/// lister-watcher expects objects and lists to be).
#[cfg(feature = "kube")]
pub(crate) fn kube_resource(resource: &ApiResource) -> kube_client::core::ApiResource {
    let kind = match resource.plural.as_str() {
        "pods" => "Pod",
        "configmaps" => "ConfigMap",
        "secrets" => "Secret",
        "deployments" => "Deployment",
        "leases" => "Lease",
        // A resource the server does not serve: any kind.
        other => other,
    };
    let gvk = kube_client::core::GroupVersionKind::gvk(&resource.group, &resource.version, kind);
    kube_client::core::ApiResource::from_gvk_with_plural(&gvk, &resource.plural)
}

/// A kube-rs client of `server`, from its kubeconfig (CA included for TLS), with kube-rs's own
/// retries off unless `retries` (the reflector retries with its own backoff).
#[cfg(feature = "kube")]
pub(crate) async fn kube_client_for(server: &FakeApiServer, retries: bool) -> kube_client::Client {
    let kubeconfig = kube_client::config::Kubeconfig::from_yaml(&server.kubeconfig("ns")).unwrap();
    let mut config = kube_client::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube_client::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    config.default_retry = retries;
    kube_client::Client::try_from(config).unwrap()
}

/// The next item of a watch stream, failing after 10 s.
pub(crate) async fn next<T>(stream: &mut WatchStream<T>) -> Option<Result<WatchEvent<T>, Error>> {
    tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("a watch item within 10 s")
}

/// The name of an ADDED/MODIFIED/DELETED event, or the type of another one.
pub(crate) fn describe(event: &WatchEvent<DynamicObject>) -> String {
    match event {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => format!(
            "{:?} {}",
            event.event_type(),
            o.metadata.name.clone().unwrap_or_default()
        ),
        WatchEvent::Bookmark(b) => format!("BOOKMARK end={}", b.initial_events_end),
        WatchEvent::Error(s) => format!("ERROR {:?}", s.code),
    }
}

/// A fresh temporary directory.
pub(crate) fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// Writes `text` to `dir/name` and returns the path.
pub(crate) fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A self-signed certificate and key (PEM).
pub(crate) fn cert_and_key(name: &str) -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec![name.to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    (cert.pem(), key.serialize_pem())
}

/// Standard base64.
pub(crate) fn b64(data: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// The names of the pods a list of `config`'s returns, or the full error chain.
pub(crate) async fn list_names(config: Config) -> Result<Vec<String>, String> {
    let lw = HttpListerWatcher::<DynamicObject>::dynamic(Client::new(config).unwrap(), pods());
    match kcache_reflector::ListerWatcher::list(&lw, &kcache_reflector::ListOptions::default())
        .await
    {
        Ok(list) => Ok(list
            .items
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect()),
        Err(e) => Err(crate::support_chain(&e)),
    }
}

/// A request as it left the client: the server receives the same bytes.
#[derive(Debug, Clone)]
pub(crate) struct Sent {
    pub(crate) content_type: Option<String>,
    pub(crate) body: Bytes,
}

impl Sent {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// The default transport, recording each request's content type and body.
#[derive(Debug)]
pub(crate) struct Recording {
    pub(crate) inner: HyperTransport,
    pub(crate) sent: Arc<Mutex<Vec<Sent>>>,
}

#[async_trait::async_trait]
impl Transport for Recording {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, BoxError> {
        let content_type = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_owned());
        self.sent.lock().unwrap().push(Sent {
            content_type,
            body: request.body().clone(),
        });
        self.inner.send(request).await
    }
}
