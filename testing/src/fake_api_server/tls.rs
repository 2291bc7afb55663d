//! Certificates for HTTPS mode: a self-signed CA and a server certificate for 127.0.0.1 and
//! localhost, generated at start.

use std::io;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The generated CA (PEM) and the rustls server config using the server certificate.
#[derive(Debug)]
pub(crate) struct Tls {
    pub(crate) ca_pem: String,
    pub(crate) ca_der: CertificateDer<'static>,
    pub(crate) config: Arc<ServerConfig>,
}

fn io_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("fake API server TLS setup: {e}"))
}

pub(crate) fn generate() -> io::Result<Tls> {
    let ca_key = KeyPair::generate().map_err(io_err)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(io_err)?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "kcache fake API server CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(io_err)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate().map_err(io_err)?;
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .map_err(io_err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "kcache-fake-apiserver");
    let cert = params.signed_by(&key, &issuer).map_err(io_err)?;

    let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io_err)?
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone(), ca_cert.der().clone()], key_der)
        .map_err(io_err)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Tls {
        ca_pem: ca_cert.pem(),
        ca_der: ca_cert.der().clone(),
        config: Arc::new(config),
    })
}
