//! What to check when a connection fails: [`explain`] puts a sentence for the user in front of
//! transport errors whose cause is a known misconfiguration, keeping the error itself as the
//! cause (so the whole chain still reads `...: received corrupt message of type
//! InvalidContentType`).
//!
//! TLS libraries name what went wrong in their own terms; a user needs to know what to change:
//! the URL's scheme, the CA, the certificate chain, the server name.

use std::error::Error as StdError;
use std::fmt;

use rustls::{CertificateError, InvalidMessage};

use crate::error::BoxError;

/// A transport error with what the user should check.
#[derive(Debug)]
pub(crate) struct Explained {
    hint: &'static str,
    source: BoxError,
}

impl fmt::Display for Explained {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.hint)
    }
}

impl StdError for Explained {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.source)
    }
}

/// `error` with a hint in front when its cause is one kcache can name, else `error` itself.
pub(crate) fn explain(error: BoxError) -> BoxError {
    match hint(&*error) {
        Some(hint) => Box::new(Explained {
            hint,
            source: error,
        }),
        None => error,
    }
}

/// The hint for the first rustls error in `error`'s chain (rustls errors arrive inside an
/// `io::Error`, perhaps inside another, whose `source` skips them: each `io::Error` is opened).
fn hint(error: &(dyn StdError + 'static)) -> Option<&'static str> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return tls_hint(tls);
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
        {
            if let Some(tls) = inner.downcast_ref::<rustls::Error>() {
                return tls_hint(tls);
            }
            next = Some(inner);
            continue;
        }
        next = e.source();
    }
    None
}

fn tls_hint(error: &rustls::Error) -> Option<&'static str> {
    Some(match error {
        rustls::Error::InvalidMessage(InvalidMessage::InvalidContentType) => {
            "TLS handshake failed: the server did not answer in TLS. Does it speak plain HTTP? \
             Check the URL's scheme (https:// needs a TLS port; use http:// for a plain one)"
        }
        rustls::Error::InvalidCertificate(cert) => match cert {
            CertificateError::UnknownIssuer => {
                "the server's certificate is not signed by a trusted CA. Check the certificate \
                 authority of the cluster (certificate-authority or certificate-authority-data \
                 in the kubeconfig)"
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                "the server's certificate is not valid for the host connected to. Check the \
                 server URL's host, or set tls-server-name to a name in the certificate"
            }
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. } => {
                "the server's certificate is outside its validity period. Check the server's \
                 certificate and this machine's clock"
            }
            CertificateError::Other(other) if other.to_string().contains("CaUsedAsEndEntity") => {
                "the server presented a CA certificate as its own. Check the server's \
                 certificate chain: it must start with a server (end-entity) certificate \
                 signed by the CA, not with the CA itself"
            }
            _ => return None,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcache_reflector::ErrorChain;

    #[test]
    fn a_hint_goes_in_front_and_the_cause_is_kept() {
        let io = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidMessage(InvalidMessage::InvalidContentType),
        );
        let explained = explain(Box::new(io));
        let line = ErrorChain(&*explained).to_string();
        assert!(
            line.starts_with("TLS handshake failed: the server did not answer in TLS."),
            "{line}"
        );
        assert!(
            line.ends_with(": received corrupt message of type InvalidContentType"),
            "{line}"
        );
        // Errors without a known cause are left as they are.
        let plain: BoxError = Box::new(std::io::Error::other("refused"));
        assert_eq!(explain(plain).to_string(), "refused");
    }
}
