//! PEM decoding of certificates and keys (rustls-pki-types' decoder), with clear errors.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::Error;

/// Every certificate of a PEM bundle; an error if there is none or one is malformed.
pub(crate) fn certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Pem {
            what: what.to_owned(),
            source: Some(Box::new(e)),
        })?;
    if certs.is_empty() {
        return Err(Error::Pem {
            what: what.to_owned(),
            source: Some("no CERTIFICATE block found".into()),
        });
    }
    Ok(certs)
}

/// The first private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
pub(crate) fn private_key(pem: &[u8], what: &str) -> Result<PrivateKeyDer<'static>, Error> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|e| Error::Pem {
        what: what.to_owned(),
        source: Some(match e {
            rustls::pki_types::pem::Error::NoItemsFound => "no PRIVATE KEY block found".into(),
            // The decoder's other messages name markers and positions, never key material.
            other => Box::new(other),
        }),
    })
}
