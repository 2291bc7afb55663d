//! [`Secret`]: a credential that never shows up in `Debug`, `Display`, errors or logs.

use std::fmt;

/// A credential (bearer token, password, private key): its `Debug` prints `Secret([redacted])`
/// and it has no `Display`, so it cannot leak through formatting, errors or tracing fields.
///
/// Read it with [`expose`](Self::expose), only where it is put on the wire.
///
/// ```
/// use kcache_client_http::Secret;
///
/// let token = Secret::new("s3cr3t".to_owned());
/// assert_eq!(format!("{token:?}"), "Secret([redacted])");
/// assert_eq!(token.expose(), "s3cr3t");
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret<T = String>(T);

impl<T> Secret<T> {
    /// Wraps a credential.
    pub fn new(value: T) -> Self {
        Self(value)
    }

    /// The credential itself.
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> From<T> for Secret<T> {
    fn from(value: T) -> Self {
        Self(value)
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Secret<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(Self)
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_redacted() {
        let s = Secret::new(b"key".to_vec());
        assert_eq!(
            format!("{s:?} {s:#?}"),
            "Secret([redacted]) Secret([redacted])"
        );
    }
}
