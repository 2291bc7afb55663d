//! User-info in URLs (`https://user:password@host`): split off a server URL into basic
//! authentication credentials, and hidden wherever a URL is shown.
//!
//! Go's HTTP client, and so client-go, sends the user-info of a request URL as basic
//! authentication when the request has no `Authorization` header of its own, and never puts it
//! on the wire otherwise. Here the server URL loses its user-info as soon as a [`Config`] is
//! made from it, so it cannot reach hyper (whose trace logs print pool keys), `Debug`, errors
//! or logs.
//!
//! [`Config`]: crate::Config

use std::borrow::Cow;

use http::Uri;

use crate::Secret;

/// Basic authentication credentials taken from a URL's user-info, percent-decoded.
pub(crate) struct UrlCredentials {
    pub(crate) username: String,
    pub(crate) password: Secret,
}

/// `uri` without its user-info, and the credentials that user-info held (`user` alone means an
/// empty password, as in Go's `url.Userinfo`).
pub(crate) fn split(uri: Uri) -> (Uri, Option<UrlCredentials>) {
    let Some(authority) = uri.authority() else {
        return (uri, None);
    };
    let Some((userinfo, host_port)) = authority.as_str().rsplit_once('@') else {
        return (uri, None);
    };
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let credentials = UrlCredentials {
        username: percent_decode(user),
        password: Secret::new(percent_decode(password)),
    };
    let mut parts = uri.clone().into_parts();
    // `host[:port]` of a valid authority is a valid authority.
    let Ok(authority) = host_port.parse() else {
        return (uri, None);
    };
    parts.authority = Some(authority);
    match Uri::from_parts(parts) {
        Ok(stripped) => (stripped, Some(credentials)),
        Err(_) => (uri, None),
    }
}

/// `uri` as it may be shown: any user-info replaced by `<redacted>`.
pub(crate) fn redacted_uri(uri: &Uri) -> String {
    redact(&uri.to_string()).into_owned()
}

/// The user-info of the URL `url` (`scheme://userinfo@host...`, or `userinfo@host...` without
/// a scheme), located by text alone so that it also works on URLs that do not parse: the
/// range of `userinfo@` in `url`.
fn userinfo_range(url: &str) -> Option<std::ops::Range<usize>> {
    let start = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[start..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let at = authority.rfind('@')?;
    Some(start..start + at + 1)
}

/// `url` with its user-info replaced by `<redacted>` (`http://<redacted>@proxy:3128`).
pub(crate) fn redact(url: &str) -> Cow<'_, str> {
    match userinfo_range(url) {
        Some(range) => {
            let mut out = String::with_capacity(url.len());
            out.push_str(&url[..range.start]);
            out.push_str("<redacted>@");
            out.push_str(&url[range.end..]);
            Cow::Owned(out)
        }
        None => Cow::Borrowed(url),
    }
}

/// `url` without its user-info (`http://host:port/...`).
pub(crate) fn strip(url: &str) -> Cow<'_, str> {
    match userinfo_range(url) {
        Some(range) => Cow::Owned(format!("{}{}", &url[..range.start], &url[range.end..])),
        None => Cow::Borrowed(url),
    }
}

/// Decodes `%XX` escapes; an invalid escape stays as written, and bytes that are not UTF-8 are
/// replaced (a credential that is not UTF-8 cannot be held here).
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_is_split_off_and_decoded() {
        let (uri, creds) = split(
            "https://us%40er:p%3Aw%2F@10.0.0.1:6443/prefix"
                .parse()
                .unwrap(),
        );
        assert_eq!(uri, "https://10.0.0.1:6443/prefix");
        let creds = creds.unwrap();
        assert_eq!(creds.username, "us@er");
        assert_eq!(creds.password.expose(), "p:w/");

        let (uri, creds) = split("http://token@h".parse().unwrap());
        assert_eq!(uri, "http://h/");
        let creds = creds.unwrap();
        assert_eq!(creds.username, "token");
        assert_eq!(creds.password.expose(), "");

        let (uri, creds) = split("https://h:1/x?y=a@b".parse().unwrap());
        assert_eq!(uri, "https://h:1/x?y=a@b");
        assert!(creds.is_none());
    }

    #[test]
    fn escapes_that_are_not_escapes_stay() {
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("a%zz%41"), "a%zzA");
        assert_eq!(percent_decode("%C3%A9"), "é");
        assert_eq!(percent_decode("%FF"), "\u{FFFD}");
    }

    #[test]
    fn urls_are_redacted_and_stripped_as_text() {
        assert_eq!(
            redact("http://u:secret@proxy:3128"),
            "http://<redacted>@proxy:3128"
        );
        assert_eq!(
            redact("u:secret@proxy:3128/x@y"),
            "<redacted>@proxy:3128/x@y"
        );
        assert_eq!(redact("https://h/a@b"), "https://h/a@b");
        assert_eq!(strip("https://u:p@h:6443/x"), "https://h:6443/x");
        assert_eq!(strip("https://h:6443"), "https://h:6443");
        let uri: Uri = "https://u:p@h:6443/x".parse().unwrap();
        assert_eq!(redacted_uri(&uri), "https://<redacted>@h:6443/x");
    }
}
