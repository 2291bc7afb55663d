//! A kubeconfig pointing at the fake server, for kubectl and other clients.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

use super::tls::ClientCertificate;

/// A kubeconfig (JSON, which is valid YAML) with one cluster, user and context named
/// `kcache-fake`. HTTPS configs embed the CA as `certificate-authority-data`; a `client`
/// certificate goes in as `client-certificate-data` and `client-key-data`.
pub(crate) fn render(
    url: &str,
    ca_pem: Option<&str>,
    client: Option<&ClientCertificate>,
    namespace: &str,
) -> String {
    let mut cluster = json!({"server": url});
    if let Some(ca) = ca_pem {
        cluster["certificate-authority-data"] = json!(STANDARD.encode(ca.as_bytes()));
    }
    let mut user = json!({"token": "kcache-fake-token"});
    if let Some(client) = client {
        user["client-certificate-data"] = json!(STANDARD.encode(client.certificate_pem.as_bytes()));
        user["client-key-data"] = json!(STANDARD.encode(client.key_pem.as_bytes()));
    }
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "kcache-fake",
        "clusters": [{"name": "kcache-fake", "cluster": cluster}],
        "users": [{"name": "kcache-fake", "user": user}],
        "contexts": [{"name": "kcache-fake", "context": {
            "cluster": "kcache-fake", "user": "kcache-fake", "namespace": namespace}}],
        "preferences": {},
    });
    serde_json::to_string_pretty(&config).unwrap_or_default()
}
