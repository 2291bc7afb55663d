//! Sans-IO request building: the URL and headers of list and watch requests.
//!
//! Nothing here touches a socket, so it is unit-tested on its own.

use bytes::Bytes;
use http::header::{ACCEPT, USER_AGENT};
use http::{Method, Request};
use kcache_reflector::ListOptions;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::ApiResource;

/// The `Accept` header of every request: JSON only. No `Accept-Encoding` is sent: watch-list
/// responses would be multi-member gzip (one member per flush) and list bodies are decoded from
/// one buffer anyway, so compression would cost CPU on both ends for loopback-fast clusters and
/// needs a multi-member decoder to be correct.
pub(crate) const ACCEPT_JSON: &str = "application/json";

/// The user agent sent by default.
pub(crate) const DEFAULT_USER_AGENT: &str = concat!("kcache/", env!("CARGO_PKG_VERSION"));

/// What a URL query value escapes: everything but unreserved characters.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Appends `value` to `out`, percent-encoded for a URL query (everything but unreserved
/// characters is escaped).
pub(crate) fn encode_query_value(out: &mut String, value: &str) {
    out.extend(utf8_percent_encode(value, QUERY_VALUE));
}

/// How the reflector's logs name a resource: `plural`, or `plural.group` outside the core
/// group (`pods`, `deployments.apps`), as kubectl does.
pub(crate) fn resource_name(plural: &str, group: &str) -> String {
    if group.is_empty() {
        plural.to_owned()
    } else {
        format!("{plural}.{group}")
    }
}

/// The full URL of a list (`watch == false`) or watch request on `base` (the server URL, which
/// may carry a path prefix).
pub(crate) fn collection_url(
    base: &str,
    resource: &ApiResource,
    namespace: Option<&str>,
    opts: &ListOptions,
    watch: bool,
) -> String {
    let mut url = String::with_capacity(128);
    url.push_str(base.trim_end_matches('/'));
    url.push_str(&resource.collection_path(namespace));
    push_query(&mut url, opts, watch);
    url
}

/// Appends the query of a list (`watch == false`) or watch request to `url`, a collection's URL
/// (or path) without a query: `?watch=1` for a watch, then every parameter `opts` sets, encoded
/// (a watch drops `limit` and `continue`).
pub(crate) fn push_query(url: &mut String, opts: &ListOptions, watch: bool) {
    let mut sep = '?';
    if watch {
        url.push_str("?watch=1");
        sep = '&';
    }
    for (name, value) in opts.to_query() {
        // A watch has no pages: `limit` and `continue` mean nothing there.
        if watch && matches!(name, "limit" | "continue") {
            continue;
        }
        url.push(sep);
        sep = '&';
        url.push_str(name);
        url.push('=');
        encode_query_value(url, &value);
    }
}

/// A GET request for `url` with the default headers.
///
/// # Errors
///
/// When `url` is not a valid URI.
pub(crate) fn get(url: &str, user_agent: &str) -> Result<Request<Bytes>, http::Error> {
    Request::builder()
        .method(Method::GET)
        .uri(url)
        .header(ACCEPT, ACCEPT_JSON)
        .header(USER_AGENT, user_agent)
        .body(Bytes::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcache_reflector::ResourceVersionMatch;

    fn pods() -> ApiResource {
        ApiResource::new("", "v1", "pods", true)
    }

    #[test]
    fn list_url_with_selectors_is_encoded() {
        let opts = ListOptions {
            limit: Some(500),
            resource_version: "0".into(),
            ..ListOptions::default()
        }
        .with_label_selector("app in (a,b),!x")
        .with_field_selector("spec.nodeName=n 1");
        assert_eq!(
            collection_url("https://h:6443/", &pods(), Some("ns"), &opts, false),
            "https://h:6443/api/v1/namespaces/ns/pods?fieldSelector=spec.nodeName%3Dn%201\
             &labelSelector=app%20in%20%28a%2Cb%29%2C%21x&limit=500&resourceVersion=0"
        );
    }

    #[test]
    fn watch_url_drops_paging_and_keeps_the_rest() {
        let opts = ListOptions {
            limit: Some(500),
            continue_token: "tok".into(),
            allow_watch_bookmarks: true,
            send_initial_events: Some(true),
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            timeout_seconds: Some(300),
            ..ListOptions::default()
        };
        let crd = ApiResource::new("example.com", "v1", "widgets", false);
        assert_eq!(
            collection_url("http://h/prefix", &crd, Some("ns"), &opts, true),
            "http://h/prefix/apis/example.com/v1/widgets?watch=1&allowWatchBookmarks=true\
             &resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=300"
        );
    }

    #[test]
    fn all_namespaces_and_no_options() {
        assert_eq!(
            collection_url("http://h", &pods(), None, &ListOptions::default(), false),
            "http://h/api/v1/pods"
        );
    }

    #[test]
    fn get_sets_json_accept_and_no_encoding() {
        let r = get("http://h/api/v1/pods", "ua").unwrap();
        assert_eq!(r.headers()[ACCEPT], "application/json");
        assert!(r.headers().get(http::header::ACCEPT_ENCODING).is_none());
        assert!(get("not a url", "ua").is_err());
    }
}
