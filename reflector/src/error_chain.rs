//! [`ErrorChain`]: an error and all its causes on one line, for logs and messages.

use std::fmt;

/// Displays an error followed by each of its sources, joined with `: `, so that a log line
/// says *why* (`transport error: client error (Connect): tcp connect error: Connection refused
/// (os error 111)`) and not only *what*. A source whose text the previous line already ends
/// with is not repeated.
///
/// ```
/// use kcache_reflector::{Error, ErrorChain};
///
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// let e = Error::transport(refused);
/// assert_eq!(ErrorChain(&e).to_string(), "transport error: connection refused");
/// ```
#[derive(Clone, Copy)]
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut last = self.0.to_string();
        f.write_str(&last)?;
        let mut cur = self.0.source();
        while let Some(e) = cur {
            let text = e.to_string();
            if !text.is_empty() && !last.ends_with(&text) {
                write!(f, ": {text}")?;
            }
            last = text;
            cur = e.source();
        }
        Ok(())
    }
}

impl fmt::Debug for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrap(
        &'static str,
        Option<Box<dyn std::error::Error + Send + Sync>>,
    );
    impl fmt::Display for Wrap {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for Wrap {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn every_cause_once() {
        let inner = Wrap("invalid peer certificate: UnknownIssuer", None);
        let mid = Wrap(
            "tls handshake: invalid peer certificate: UnknownIssuer",
            Some(Box::new(inner)),
        );
        let top = Wrap("client error (Connect)", Some(Box::new(mid)));
        assert_eq!(
            ErrorChain(&top).to_string(),
            "client error (Connect): tls handshake: invalid peer certificate: UnknownIssuer"
        );
    }
}
