//! Impersonation: acting as another user, as a kubeconfig's `as`, `as-uid`, `as-groups` and
//! `as-user-extra` (or kubectl's `--as` flags) ask.
//!
//! The API server authenticates the client with its own credentials, checks that it may
//! `impersonate` the named user, groups, uid and extra values, and then authorizes the request
//! as that user. The headers are client-go's: `Impersonate-User`, `Impersonate-Uid`, one
//! `Impersonate-Group` per group and one `Impersonate-Extra-<key>` per extra value, the key
//! percent-encoded where a header name cannot hold a byte (and `%` itself).

use std::collections::BTreeMap;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::{Error, Result};

/// Who the client acts as.
///
/// ```
/// use kcache_client_http::{Config, Impersonate};
///
/// let mut config = Config::new("https://10.0.0.1:6443".parse()?);
/// config.impersonate = Some(
///     Impersonate::user("jane")
///         .group("developers")
///         .extra("scopes.example.com/project", ["shop"]),
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Impersonate {
    /// The user name (`Impersonate-User`); required.
    pub user: String,
    /// The user's uid (`Impersonate-Uid`).
    pub uid: Option<String>,
    /// Groups (`Impersonate-Group`, one header each).
    pub groups: Vec<String>,
    /// Extra user information (`Impersonate-Extra-<key>`, one header per value).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Impersonate {
    /// Acting as `user`, with no uid, groups or extra values.
    pub fn user(user: impl Into<String>) -> Self {
        Self {
            user: user.into(),
            ..Self::default()
        }
    }

    /// Sets the uid.
    #[must_use]
    pub fn uid(mut self, uid: impl Into<String>) -> Self {
        self.uid = Some(uid.into());
        self
    }

    /// Adds a group.
    #[must_use]
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.groups.push(group.into());
        self
    }

    /// Adds values of an extra key.
    #[must_use]
    pub fn extra<V: Into<String>>(
        mut self,
        key: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        self.extra
            .entry(key.into())
            .or_default()
            .extend(values.into_iter().map(Into::into));
        self
    }

    /// The request headers.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] without a user, with an empty extra key, or with a value a header
    /// cannot carry (a control character).
    pub(crate) fn headers(&self) -> Result<HeaderMap> {
        let field = "impersonation";
        if self.user.is_empty() {
            return Err(Error::invalid(
                field,
                "a uid, groups or extra values need a user to impersonate (`as`)",
            ));
        }
        let value = |what: &str, v: &str| {
            HeaderValue::from_str(v).map_err(|_| {
                Error::invalid(field, format!("{what} `{v}` cannot be sent in a header"))
            })
        };
        let mut headers = HeaderMap::new();
        headers.insert("impersonate-user", value("user", &self.user)?);
        if let Some(uid) = self.uid.as_deref().filter(|u| !u.is_empty()) {
            headers.insert("impersonate-uid", value("uid", uid)?);
        }
        for group in &self.groups {
            headers.append("impersonate-group", value("group", group)?);
        }
        for (key, values) in &self.extra {
            if key.is_empty() {
                return Err(Error::invalid(field, "an extra key is empty"));
            }
            let name =
                HeaderName::from_bytes(format!("impersonate-extra-{}", escape_key(key)).as_bytes())
                    .map_err(|_| {
                        Error::invalid(field, format!("extra key `{key}` cannot be sent"))
                    })?;
            for v in values {
                headers.append(name.clone(), value("extra value", v)?);
            }
        }
        Ok(headers)
    }
}

/// What an `Impersonate-Extra-` key escapes: every byte that is not an HTTP token character,
/// and `%` (so the server's unescaping cannot fail), as client-go does.
const NOT_TOKEN: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'!')
    .remove(b'#')
    .remove(b'$')
    .remove(b'&')
    .remove(b'\'')
    .remove(b'*')
    .remove(b'+')
    .remove(b'-')
    .remove(b'.')
    .remove(b'^')
    .remove(b'_')
    .remove(b'`')
    .remove(b'|')
    .remove(b'~');

/// `key`, percent-encoded for a header name (see [`NOT_TOKEN`]).
fn escape_key(key: &str) -> String {
    utf8_percent_encode(key, NOT_TOKEN).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(headers: &HeaderMap, name: &str) -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .map(|v| v.to_str().expect("ascii").to_owned())
            .collect()
    }

    #[test]
    fn every_field_becomes_its_headers() {
        let h = Impersonate::user("jane")
            .uid("42")
            .group("dev")
            .group("ops")
            .extra("scopes", ["a", "b"])
            .extra("example.com/Reason Code%", ["x"])
            .headers()
            .expect("headers");
        assert_eq!(all(&h, "Impersonate-User"), ["jane"]);
        assert_eq!(all(&h, "Impersonate-Uid"), ["42"]);
        assert_eq!(all(&h, "Impersonate-Group"), ["dev", "ops"]);
        assert_eq!(all(&h, "Impersonate-Extra-scopes"), ["a", "b"]);
        assert_eq!(
            all(&h, "Impersonate-Extra-example.com%2Freason%20code%25"),
            ["x"]
        );
        assert_eq!(h.len(), 7);
    }

    #[test]
    fn bad_impersonation_is_a_clear_error() {
        let no_user = Impersonate::default().group("dev").headers();
        assert!(
            no_user
                .expect_err("no user")
                .to_string()
                .contains("need a user")
        );
        let control = Impersonate::user("jane\n").headers();
        assert!(
            control
                .expect_err("newline")
                .to_string()
                .contains("cannot be sent")
        );
        let empty_key = Impersonate::user("jane").extra("", ["v"]).headers();
        assert!(
            empty_key
                .expect_err("empty")
                .to_string()
                .contains("extra key is empty")
        );
    }
}
