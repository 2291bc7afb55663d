//! The rustls client configuration: trust roots, insecure mode, client certificates, ALPN.

use std::sync::{Arc, RwLock};

use rustls::client::ResolvesClientCert;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, InconsistentKeys, RootCertStore, SignatureScheme};

use crate::{Config, Error, Identity};

/// The client certificate presented on new connections; an exec plugin may replace it.
#[derive(Debug, Default)]
pub(crate) struct CertSlot {
    current: RwLock<Option<Arc<CertifiedKey>>>,
}

impl CertSlot {
    /// Sets the certificate for new connections.
    pub(crate) fn set(&self, key: Arc<CertifiedKey>) {
        let mut current = self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *current = Some(key);
    }

    fn get(&self) -> Option<Arc<CertifiedKey>> {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl ResolvesClientCert for CertSlot {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        self.get()
    }

    fn has_certs(&self) -> bool {
        self.get().is_some()
    }
}

/// The crypto provider: ring (it builds with a C compiler alone).
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A rustls key for `identity`, checked: a key that is not the certificate's is an error now,
/// not a failed handshake (`DecryptError`) on every connection later.
pub(crate) fn certified_key(identity: &Identity) -> Result<Arc<CertifiedKey>, Error> {
    let tls_err = |what: &str| {
        let what = what.to_owned();
        move |e: rustls::Error| Error::Tls {
            what,
            source: Box::new(e),
        }
    };
    let key = provider()
        .key_provider
        .load_private_key(identity.key.expose().clone_key())
        .map_err(tls_err("unusable client key"))?;
    let certified = CertifiedKey::new(identity.chain.clone(), key);
    match certified.keys_match() {
        // ring's keys all know their public key; a provider's key that does not is not
        // refused for it.
        Ok(()) | Err(rustls::Error::InconsistentKeys(InconsistentKeys::Unknown)) => {}
        Err(e @ rustls::Error::InconsistentKeys(_)) => {
            return Err(tls_err("client key does not match client certificate")(e));
        }
        Err(e) => return Err(tls_err("unusable client certificate")(e)),
    }
    Ok(Arc::new(certified))
}

/// The rustls configuration for `config`; the client certificate comes from `slot`, which is
/// filled here from the config's static identity.
pub(crate) fn client_config(
    config: &Config,
    slot: Arc<CertSlot>,
) -> Result<rustls::ClientConfig, Error> {
    let tls_err = |what: &str| {
        let what = what.to_owned();
        move |e: rustls::Error| Error::Tls {
            what,
            source: Box::new(e),
        }
    };
    let provider = provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(tls_err("no usable TLS version"))?;
    let builder = if config.insecure_skip_tls_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
    } else {
        builder.with_root_certificates(root_store(config)?)
    };
    if let Some(identity) = &config.identity {
        slot.set(certified_key(identity)?);
    }
    let mut tls = builder.with_client_cert_resolver(slot);
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tls)
}

fn root_store(config: &Config) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    if let Some(certs) = &config.root_certificates {
        for der in certs {
            roots
                .add(CertificateDer::from(der.clone()))
                .map_err(|e| Error::Tls {
                    what: "unusable certificate authority".to_owned(),
                    source: Box::new(e),
                })?;
        }
    } else {
        let found = rustls_native_certs::load_native_certs();
        for e in &found.errors {
            tracing::warn!(error = %e, "could not load a system root certificate");
        }
        let (added, ignored) = roots.add_parsable_certificates(found.certs);
        tracing::debug!(added, ignored, "loaded system root certificates");
    }
    Ok(roots)
}

/// `insecure-skip-tls-verify`: any certificate is accepted (signatures are still checked, so
/// the handshake itself is sound; the peer is simply not authenticated).
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
