//! In-cluster config on fixture files, and the rotating service account token.

use std::path::Path;

use kcache_client_http::{Auth, Config, Error, HttpListerWatcher, InClusterOptions};
use kcache_reflector::{ListOptions, ListerWatcher};
use kcache_store::DynamicObject;

use crate::support::{cert_and_key, pods, server, temp_dir, write};
use crate::transport::{auth_headers, recording_client};

fn options(dir: &Path, host: &str, port: &str) -> InClusterOptions {
    InClusterOptions {
        host: Some(host.to_owned()),
        port: Some(port.to_owned()),
        pod_namespace: None,
        token_path: dir.join("token"),
        ca_path: dir.join("ca.crt"),
        namespace_path: dir.join("namespace"),
    }
}

#[test]
fn service_account_files_make_the_config() {
    let dir = temp_dir();
    write(dir.path(), "token", "sa-token");
    write(dir.path(), "ca.crt", &cert_and_key("ca").0);
    write(dir.path(), "namespace", "team-b\n");
    let config = Config::from_in_cluster(&options(dir.path(), "10.96.0.1", "443")).unwrap();
    assert_eq!(config.cluster_url, "https://10.96.0.1:443/");
    assert_eq!(config.default_namespace, "team-b");
    assert_eq!(config.root_certificates.as_ref().unwrap().len(), 1);
    assert!(
        matches!(&config.auth, Auth::TokenFile { path, .. } if path == &dir.path().join("token"))
    );
    // POD_NAMESPACE wins; IPv6 hosts get brackets; no namespace file means `default`.
    let mut o = options(dir.path(), "fd00::1", "6443");
    o.pod_namespace = Some("from-env".into());
    let config = Config::from_in_cluster(&o).unwrap();
    assert_eq!(config.cluster_url, "https://[fd00::1]:6443/");
    assert_eq!(config.default_namespace, "from-env");
    std::fs::remove_file(dir.path().join("namespace")).unwrap();
    let config = Config::from_in_cluster(&options(dir.path(), "h", "1")).unwrap();
    assert_eq!(config.default_namespace, "default");
}

#[test]
fn not_in_cluster_and_bad_files_are_clear() {
    let dir = temp_dir();
    let mut o = options(dir.path(), "h", "1");
    o.port = None;
    let e = Config::from_in_cluster(&o).unwrap_err();
    assert!(matches!(e, Error::NotInCluster(_)), "{e}");
    let e = Config::from_in_cluster(&options(dir.path(), "h", "1")).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "could not read service account token {}",
            dir.path().join("token").display()
        )
    );
    write(dir.path(), "token", "t");
    write(dir.path(), "ca.crt", "garbage");
    let e = Config::from_in_cluster(&options(dir.path(), "h", "1")).unwrap_err();
    assert_eq!(e.to_string(), "malformed PEM in service account CA");
}

#[tokio::test]
async fn rotated_token_is_picked_up() {
    let server = server(true, 1).await;
    let dir = temp_dir();
    write(dir.path(), "token", "sa-1");
    write(dir.path(), "ca.crt", server.ca_pem().unwrap());
    let port = server.addr().port().to_string();
    let mut config = Config::from_in_cluster(&options(dir.path(), "127.0.0.1", &port)).unwrap();
    config.token_file_refresh = std::time::Duration::ZERO;
    let (client, seen) = recording_client(config);
    let lw = HttpListerWatcher::<DynamicObject>::builder(client.clone(), pods())
        .namespace(client.default_namespace())
        .build();
    assert_eq!(lw.namespace(), Some("default"));
    lw.list(&ListOptions::default()).await.unwrap();
    write(dir.path(), "token", "sa-2");
    lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(auth_headers(&seen), ["Bearer sa-1", "Bearer sa-2"]);
}
