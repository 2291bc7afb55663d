//! Certificates for HTTPS mode: a self-signed CA, a server certificate for 127.0.0.1 and
//! localhost, and (with client authentication) client certificates, all generated at start.

use std::io;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

/// A client certificate signed by a [`FakeApiServer`](super::FakeApiServer)'s CA, as PEM: what
/// a kubeconfig's `client-certificate-data`/`client-key-data` (base64 of these) or
/// `Identity::from_pem` take.
///
/// `Debug` omits the key.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCertificate {
    /// The certificate chain (PEM): the client certificate alone, the CA being the server's.
    pub certificate_pem: String,
    /// The private key (PKCS#8 PEM).
    pub key_pem: String,
}

impl std::fmt::Debug for ClientCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCertificate")
            .field("certificate_pem", &self.certificate_pem)
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

/// The generated CA (PEM and signing key), the rustls server config using the server
/// certificate, and the kubeconfig's client certificate when client certificates are required.
#[derive(Debug)]
pub(crate) struct Tls {
    pub(crate) ca_pem: String,
    pub(crate) ca_der: CertificateDer<'static>,
    pub(crate) issuer: Issuer<'static, KeyPair>,
    pub(crate) config: Arc<ServerConfig>,
    /// The certificate the written kubeconfig presents, when client certificates are required.
    pub(crate) kubeconfig_client: Option<ClientCertificate>,
}

/// The common name of the client certificate in the kubeconfig of a server requiring one.
pub(crate) const KUBECONFIG_CLIENT_CN: &str = "kcache-fake";

fn io_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("fake API server TLS setup: {e}"))
}

/// A CA, a server certificate and the server config; with `client_auth`, the server requires
/// a client certificate signed by that CA.
pub(crate) fn generate(client_auth: bool) -> io::Result<Tls> {
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
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(io_err)?;
    let builder = if client_auth {
        let mut roots = RootCertStore::empty();
        roots.add(ca_cert.der().clone()).map_err(io_err)?;
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(io_err)?;
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let mut config = builder
        .with_single_cert(vec![cert.der().clone(), ca_cert.der().clone()], key_der)
        .map_err(io_err)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let kubeconfig_client = if client_auth {
        Some(issue(&issuer, KUBECONFIG_CLIENT_CN)?)
    } else {
        None
    };
    Ok(Tls {
        ca_pem: ca_cert.pem(),
        ca_der: ca_cert.der().clone(),
        issuer,
        config: Arc::new(config),
        kubeconfig_client,
    })
}

/// A client certificate (extended key usage `clientAuth`) for `common_name`, signed by
/// `issuer`. Kubernetes reads the user name from the common name.
pub(crate) fn issue(
    issuer: &Issuer<'static, KeyPair>,
    common_name: &str,
) -> io::Result<ClientCertificate> {
    let key = KeyPair::generate().map_err(io_err)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(io_err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, issuer).map_err(io_err)?;
    Ok(ClientCertificate {
        certificate_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}
