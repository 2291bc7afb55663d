//! Helpers: servers, clients, fixtures.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::StreamExt;
use kcache_client_http::{ApiResource, Client, Config, HttpListerWatcher};
use kcache_reflector::{Error, WatchEvent, WatchStream};
use kcache_store::DynamicObject;
use kcache_testing_server::FakeApiServer;

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
    let server = FakeApiServer::builder().tls(tls).start().await.unwrap();
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
