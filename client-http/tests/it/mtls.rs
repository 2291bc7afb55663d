//! Client certificates over the wire: a fake API server that requires one (mutual TLS), and
//! the identity of a `Config`, a kubeconfig's `client-certificate-data` and an exec plugin's
//! `clientCertificateData` presented to it.

use std::path::Path;

use http::Version;
use kcache_client_http::{Auth, Client, Config, HttpListerWatcher, Identity, Kubeconfig};
use kcache_reflector::{ListOptions, ListerWatcher};
use kcache_store::DynamicObject;
use kcache_testing_server::FakeApiServer;
use kcache_testing_server::fake_api_server::ClientCertificate;

use crate::support::{cert_and_key, list_names as list, pods, server_from, temp_dir, write};

/// A TLS server requiring client certificates, with `n` pods in namespace `ns`.
async fn mtls_server(n: usize) -> FakeApiServer {
    server_from(FakeApiServer::builder().tls(true).client_auth(true), n).await
}

/// A config trusting the server's CA, with no credentials at all.
fn bare_config(server: &FakeApiServer) -> Config {
    Config::new(server.url().parse().unwrap())
        .with_root_certificates_pem(server.ca_pem().unwrap().as_bytes())
        .unwrap()
}

fn identity(cert: &ClientCertificate) -> Identity {
    Identity::from_pem(cert.certificate_pem.as_bytes(), cert.key_pem.as_bytes()).unwrap()
}

fn lw(config: Config) -> HttpListerWatcher<DynamicObject> {
    HttpListerWatcher::dynamic(Client::new(config).unwrap(), pods())
}

/// Whether `message` says the server ended the TLS handshake with an alert (rustls reports
/// `received fatal alert: <AlertDescription>`).
fn is_refusal(message: &str) -> bool {
    message.contains("transport error") && message.contains("received fatal alert")
}

#[tokio::test]
async fn an_identity_signed_by_the_server_ca_lists_over_http2() {
    let server = mtls_server(2).await;
    let cert = server.issue_client_certificate("alice").unwrap().unwrap();
    assert!(
        cert.certificate_pem
            .starts_with("-----BEGIN CERTIFICATE-----")
    );
    assert!(cert.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
    assert!(
        !format!("{cert:?}").contains(&cert.key_pem),
        "Debug hides the key"
    );
    let mut config = bare_config(&server);
    config.identity = Some(identity(&cert));

    assert_eq!(list(config.clone()).await.unwrap(), ["p0", "p1"]);
    assert_eq!(server.requests().last().unwrap().version, "HTTP/2.0");

    // The raw transport too: h2 negotiated by ALPN on the mutually authenticated connection.
    let transport = kcache_client_http::HyperTransport::new(&config).unwrap();
    let request = http::Request::get(format!("{}/api/v1/pods", server.url()))
        .body(bytes::Bytes::new())
        .unwrap();
    let response = kcache_client_http::Transport::send(&transport, request)
        .await
        .unwrap();
    assert_eq!(response.version(), Version::HTTP_2);
    assert!(response.status().is_success());
}

#[tokio::test]
async fn watches_run_on_the_mutually_authenticated_connection() {
    let server = mtls_server(1).await;
    let cert = server.issue_client_certificate("alice").unwrap().unwrap();
    let mut config = bare_config(&server);
    config.identity = Some(identity(&cert));
    let lw = lw(config);
    let mut stream = lw
        .watch(&ListOptions::default().with_resource_version("0"))
        .await
        .unwrap();
    assert_eq!(
        crate::support::describe(&crate::support::next(&mut stream).await.unwrap().unwrap()),
        "Added p0"
    );
}

#[tokio::test]
async fn without_an_identity_the_handshake_is_refused() {
    let server = mtls_server(1).await;
    let e = list(bare_config(&server)).await.unwrap_err();
    eprintln!("no client certificate: {e}");
    assert!(is_refusal(&e), "{e}");
    assert!(e.ends_with("CertificateRequired"), "{e}");
    // A token alone does not help: the TLS layer refuses before any HTTP.
    let config = bare_config(&server).with_auth(Auth::Bearer(kcache_client_http::Secret::new(
        "kcache-fake-token".to_owned(),
    )));
    let e = list(config).await.unwrap_err();
    assert!(is_refusal(&e), "{e}");
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

#[tokio::test]
async fn a_certificate_of_another_ca_is_refused() {
    let server = mtls_server(1).await;
    // Signed by another fake server's CA, with the right key usages. That CA has the same name as
    // the server's, so the chain is built and its signature found bad.
    let other = FakeApiServer::builder().tls(true).start().await.unwrap();
    let foreign = other.issue_client_certificate("mallory").unwrap().unwrap();
    let mut config = bare_config(&server);
    config.identity = Some(identity(&foreign));
    let e = list(config).await.unwrap_err();
    eprintln!("certificate of another CA: {e}");
    assert!(is_refusal(&e), "{e}");
    assert!(e.ends_with("DecryptError"), "{e}");

    // A self-signed certificate.
    let (cert, key) = cert_and_key("mallory");
    let mut config = bare_config(&server);
    config.identity = Some(Identity::from_pem(cert.as_bytes(), key.as_bytes()).unwrap());
    let e = list(config).await.unwrap_err();
    eprintln!("self-signed certificate: {e}");
    assert!(is_refusal(&e), "{e}");
    assert!(e.ends_with("UnknownCA"), "{e}");
    assert!(server.requests().is_empty(), "{:?}", server.requests());

    // The same identity is fine once the server asks for no certificate.
    let mut config = bare_config(&other);
    config.identity = Some(identity(&foreign));
    assert_eq!(list(config).await.unwrap(), Vec::<String>::new());
}

#[tokio::test]
async fn the_servers_kubeconfig_carries_a_working_client_certificate() {
    let server = mtls_server(1).await;
    let text = server.kubeconfig("ns");
    assert!(text.contains("client-certificate-data"), "{text}");
    assert!(text.contains("client-key-data"), "{text}");
    let dir = temp_dir();
    let path = dir.path().join("config");
    server.write_kubeconfig(&path).unwrap();

    let config = Config::from_kubeconfig_path(&path).unwrap();
    assert!(config.identity.is_some());
    assert!(
        !format!("{config:?}").contains("PRIVATE KEY"),
        "Debug hides the key"
    );
    assert_eq!(config.default_namespace, "default");
    assert_eq!(list(config).await.unwrap(), ["p0"]);

    // The same file without its client certificate is refused.
    let mut kc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let user = kc["users"][0]["user"].as_object_mut().unwrap();
    user.remove("client-certificate-data");
    user.remove("client-key-data");
    let stripped = write(dir.path(), "stripped", &kc.to_string());
    let e = list(Config::from_kubeconfig_path(&stripped).unwrap())
        .await
        .unwrap_err();
    assert!(is_refusal(&e), "{e}");

    // A plain TLS server's kubeconfig has none.
    let plain = FakeApiServer::builder().tls(true).start().await.unwrap();
    assert!(!plain.kubeconfig("ns").contains("client-certificate-data"));
}

/// An exec plugin printing `dir/credential.json`.
fn cat_plugin(dir: &Path) -> String {
    use std::os::unix::fs::PermissionsExt as _;
    let script = write(
        dir,
        "plugin.sh",
        &format!(
            "#!/bin/sh\ncat '{}'\n",
            dir.join("credential.json").display()
        ),
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script.display().to_string()
}

#[tokio::test]
async fn an_exec_plugins_client_certificate_is_presented() {
    let server = mtls_server(1).await;
    let cert = server
        .issue_client_certificate("exec-user")
        .unwrap()
        .unwrap();
    let dir = temp_dir();
    let credential = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {
            "clientCertificateData": cert.certificate_pem,
            "clientKeyData": cert.key_pem,
            "expirationTimestamp": "2999-01-01T00:00:00Z",
        },
    });
    write(dir.path(), "credential.json", &credential.to_string());
    let mut kc: serde_json::Value = serde_json::from_str(&server.kubeconfig("ns")).unwrap();
    kc["users"][0]["user"] = serde_json::json!({"exec": {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": cat_plugin(dir.path()),
        "interactiveMode": "Never",
    }});
    let config = Kubeconfig::from_yaml(&kc.to_string())
        .unwrap()
        .config(&kcache_client_http::KubeconfigOptions::default())
        .unwrap();
    assert!(
        config.identity.is_none(),
        "the certificate comes from the plugin"
    );
    assert_eq!(list(config).await.unwrap(), ["p0"]);
}

#[tokio::test]
async fn client_auth_needs_tls() {
    let e = FakeApiServer::builder()
        .client_auth(true)
        .start()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    let plain = FakeApiServer::start().await.unwrap();
    assert!(plain.issue_client_certificate("alice").unwrap().is_none());
}
