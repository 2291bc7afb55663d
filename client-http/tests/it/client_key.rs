//! A client key that is not the client certificate's: a configuration error when the client
//! is built (or the exec plugin's credential is taken), not a failed handshake later.

use std::error::Error as _;

use kcache_client_http::{Client, Config, HyperTransport, Identity, Kubeconfig, KubeconfigOptions};

use crate::support::{b64, list_names, server, temp_dir, write};

const MISMATCH: &str = "client key does not match client certificate";

/// A certificate of a fresh key pair (PEM), and the PEM of another key of algorithm `alg`.
fn cert_and_other_key(alg: &'static rcgen::SignatureAlgorithm) -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["client".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let other = rcgen::KeyPair::generate_for(alg).unwrap();
    (cert.pem(), other.serialize_pem())
}

/// The base64 lines of a PEM block (key material).
fn pem_body(pem: &str) -> Vec<String> {
    pem.lines()
        .filter(|l| !l.starts_with("-----"))
        .map(str::to_owned)
        .collect()
}

fn assert_no_key_material(text: &str, key: &str) {
    for line in pem_body(key) {
        assert!(!text.contains(&line), "key material in:\n{text}");
    }
}

#[tokio::test]
async fn a_mismatched_identity_fails_when_the_client_is_built() {
    for alg in [&rcgen::PKCS_ECDSA_P256_SHA256, &rcgen::PKCS_ED25519] {
        let (cert, other_key) = cert_and_other_key(alg);
        // Parsing each on its own is fine: only the pair is wrong.
        let identity = Identity::from_pem(cert.as_bytes(), other_key.as_bytes()).unwrap();
        let mut config = Config::new("https://127.0.0.1:6443".parse().unwrap());
        config.identity = Some(identity);

        let e = Client::new(config.clone()).unwrap_err();
        let shown = format!("{e} {e:?} {}", crate::support_chain(&e));
        assert!(
            matches!(e, kcache_client_http::Error::Tls { .. }),
            "{shown}"
        );
        assert!(e.to_string().contains(MISMATCH), "{shown}");
        assert!(
            e.source().is_some(),
            "the TLS library's error is the source"
        );
        assert_no_key_material(&shown, &other_key);

        let e = HyperTransport::new(&config).unwrap_err();
        assert!(e.to_string().contains(MISMATCH), "{e}");
    }
}

#[tokio::test]
async fn a_mismatched_kubeconfig_user_fails_when_the_client_is_built() {
    let (cert, other_key) = cert_and_other_key(&rcgen::PKCS_ECDSA_P256_SHA256);
    let kc = Kubeconfig::from_yaml(&format!(
        "current-context: c\nclusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:6443'}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\nusers: [{{name: u, user: {{client-certificate-data: {}, client-key-data: {}}}}}]\n",
        b64(&cert),
        b64(&other_key)
    ))
    .unwrap();
    let config = kc.config(&KubeconfigOptions::default()).unwrap();
    let e = Client::new(config).unwrap_err();
    assert!(e.to_string().contains(MISMATCH), "{e}");
    assert_no_key_material(&format!("{e:?}"), &other_key);
}

#[tokio::test]
async fn a_mismatched_exec_credential_is_an_error_naming_the_mismatch() {
    use std::os::unix::fs::PermissionsExt as _;
    let server = server(false, 1).await;
    let (cert, other_key) = cert_and_other_key(&rcgen::PKCS_ECDSA_P256_SHA256);
    let dir = temp_dir();
    let credential = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"clientCertificateData": cert, "clientKeyData": other_key},
    });
    write(dir.path(), "credential.json", &credential.to_string());
    let script = write(
        dir.path(),
        "plugin.sh",
        &format!(
            "#!/bin/sh\ncat '{}'\n",
            dir.path().join("credential.json").display()
        ),
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut kc: serde_json::Value = serde_json::from_str(&server.kubeconfig("ns")).unwrap();
    kc["users"][0]["user"] = serde_json::json!({"exec": {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": script.display().to_string(),
        "interactiveMode": "Never",
    }});
    let config = Kubeconfig::from_yaml(&kc.to_string())
        .unwrap()
        .config(&KubeconfigOptions::default())
        .unwrap();
    let chain = list_names(config).await.unwrap_err();
    assert!(chain.contains(MISMATCH), "{chain}");
    assert_no_key_material(&chain, &other_key);
}
