//! A kubeconfig pointing at the fake server, for kubectl and other clients.

use serde_json::json;

use super::util::base64_std;

/// A kubeconfig (JSON, which is valid YAML) with one cluster, user and context named
/// `kcache-fake`. HTTPS configs embed the CA as `certificate-authority-data`.
pub(crate) fn render(url: &str, ca_pem: Option<&str>, namespace: &str) -> String {
    let mut cluster = json!({"server": url});
    if let Some(ca) = ca_pem {
        cluster["certificate-authority-data"] = json!(base64_std(ca.as_bytes()));
    }
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "kcache-fake",
        "clusters": [{"name": "kcache-fake", "cluster": cluster}],
        "users": [{"name": "kcache-fake", "user": {"token": "kcache-fake-token"}}],
        "contexts": [{"name": "kcache-fake", "context": {
            "cluster": "kcache-fake", "user": "kcache-fake", "namespace": namespace}}],
        "preferences": {},
    });
    serde_json::to_string_pretty(&config).unwrap_or_default()
}
