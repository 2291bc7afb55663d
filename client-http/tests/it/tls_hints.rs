//! The two TLS failures users meet most say what to check: an `https://` URL to a plain-HTTP
//! port (the scheme), and a server presenting its CA certificate as its own (the chain). The
//! TLS library's own words stay at the end of the cause chain.

use std::sync::Arc;

use kcache_client_http::Config;
use kcache_testing_server::FakeApiServer;
use tokio::net::TcpListener;

use crate::support::list_names;

#[tokio::test]
async fn https_to_a_plain_http_port_says_to_check_the_scheme() {
    let server = FakeApiServer::start().await.unwrap();
    let plain = server.url().to_owned();
    assert!(plain.starts_with("http://"), "{plain}");
    let https = plain.replacen("http://", "https://", 1);
    let e = list_names(Config::new(https.parse().unwrap()))
        .await
        .unwrap_err();
    assert!(e.contains("Check the URL's scheme"), "{e}");
    assert!(
        e.contains("InvalidContentType"),
        "the TLS library's words are kept: {e}"
    );
}

#[tokio::test]
async fn a_ca_certificate_served_as_the_server_s_says_to_check_the_chain() {
    // A CA certificate, valid for 127.0.0.1, that the server presents as its own.
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = params.self_signed(&key).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![ca.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            // The handshake fails on the client's side; nothing is served.
            let _ = acceptor.accept(tcp).await;
        }
    });
    let config = Config::new(format!("https://{addr}").parse().unwrap())
        .with_root_certificates_pem(ca.pem().as_bytes())
        .unwrap();
    let e = list_names(config).await.unwrap_err();
    assert!(e.contains("Check the server's certificate chain"), "{e}");
    assert!(
        e.contains("CaUsedAsEndEntity"),
        "the TLS library's words are kept: {e}"
    );
}
