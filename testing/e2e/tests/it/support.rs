//! Helpers: the pods resource as client and server name it, a client config for the fake
//! server, temporary directories.

use kcache_client_http::{ApiResource, Config, Kubeconfig, KubeconfigOptions};
use kcache_testing_server::FakeApiServer;

/// The core pods resource, as the client names it.
pub(crate) fn pods() -> ApiResource {
    ApiResource::new("", "v1", "pods", true)
}

/// The fake server's pods resource.
pub(crate) fn fake_pods() -> kcache_testing_server::ServedResource {
    kcache_testing_server::ServedResource::pods()
}

/// The config of the server's own kubeconfig (CA included for TLS).
pub(crate) fn config(server: &FakeApiServer) -> Config {
    let kc = Kubeconfig::from_yaml(&server.kubeconfig("ns")).unwrap();
    kc.config(&KubeconfigOptions::default()).unwrap()
}

/// A temporary directory, removed when dropped.
pub(crate) fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}
