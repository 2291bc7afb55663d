//! Sans-IO request building: the URLs and headers of list and watch requests, and of the
//! single-object reads and writes of [`ObjectClient`](crate::ObjectClient), an object's
//! `status` and `scale` subresources included.
//!
//! Nothing here touches a socket, so it is unit-tested on its own.

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, USER_AGENT};
use http::{Method, Request};
use kcache_reflector::ListOptions;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::ApiResource;
use crate::transport::path_segment::{InvalidName, check_name};

/// The `Accept` header of every request: JSON only. No `Accept-Encoding` is sent: watch-list
/// responses would be multi-member gzip (one member per flush) and list bodies are decoded from
/// one buffer anyway, so compression would cost CPU on both ends for loopback-fast clusters and
/// needs a multi-member decoder to be correct.
pub(crate) const ACCEPT_JSON: &str = "application/json";

/// The `Content-Type` of a JSON request body (an object created or replaced, `DeleteOptions`).
pub(crate) const CONTENT_TYPE_JSON: &str = "application/json";

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

/// `base` (the server URL, which may carry a path prefix) and the path of `resource`'s
/// collection in `namespace` (ignored for cluster-scoped resources), without a query: the
/// start of every URL built here.
fn resource_url(base: &str, resource: &ApiResource, namespace: Option<&str>) -> String {
    let mut url = String::with_capacity(128);
    url.push_str(base.trim_end_matches('/'));
    url.push_str(&resource.collection_path(namespace));
    url
}

/// Appends the query parameter `name=value` to `url`, the value encoded: after `sep`, which
/// becomes `&` for the next one (start with `?`).
fn push_param(url: &mut String, sep: &mut char, name: &str, value: &str) {
    url.push(*sep);
    *sep = '&';
    url.push_str(name);
    url.push('=');
    encode_query_value(url, value);
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
    let mut url = resource_url(base, resource, namespace);
    push_query(&mut url, opts, watch);
    url
}

/// Appends the query of a list (`watch == false`) or watch request to `url`, a collection's URL
/// (or path) without a query: `?watch=1` for a watch, then every parameter `opts` sets, encoded
/// (a watch drops `limit` and `continue`).
pub(crate) fn push_query(url: &mut String, opts: &ListOptions, watch: bool) {
    let mut sep = '?';
    if watch {
        push_param(url, &mut sep, "watch", "1");
    }
    for (name, value) in opts.to_query() {
        // A watch has no pages: `limit` and `continue` mean nothing there.
        if watch && matches!(name, "limit" | "continue") {
            continue;
        }
        push_param(url, &mut sep, name, &value);
    }
}

/// A subresource of an object, served at one more path segment after the object's URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subresource {
    /// `<object>/status`: the object read whole, only its `status` written.
    Status,
    /// `<object>/scale`: the object's `autoscaling/v1` `Scale`.
    Scale,
}

impl Subresource {
    /// The path segment: `status` or `scale`.
    pub(crate) fn segment(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Scale => "scale",
        }
    }
}

/// The full URL of the object `name` of `resource` on `base` (of its collection without a
/// name), in `namespace` (ignored for cluster-scoped resources), the name percent-encoded as one
/// path segment, then `params` (names as given, values encoded).
///
/// # Errors
///
/// [`InvalidName`] when `name` cannot be one path segment ([`check_name`]): empty, `.`, `..`,
/// or with a `/` or `%`. This is the one place object names are checked, so no request is
/// ever sent for such a name (an empty one would make the collection's URL).
pub(crate) fn object_url(
    base: &str,
    resource: &ApiResource,
    namespace: Option<&str>,
    name: Option<&str>,
    params: &[(&str, &str)],
) -> Result<String, InvalidName> {
    url_of(
        base,
        resource,
        namespace,
        name.map(|name| (name, None)),
        params,
    )
}

/// The full URL of `subresource` of the object `name`: [`object_url`]'s, with the
/// subresource's segment after the name.
///
/// # Errors
///
/// [`InvalidName`] when `name` cannot be one path segment, as for [`object_url`]: a name such
/// as `..` or `a/b` would make the URL of another object's subresource, or of none.
pub(crate) fn subresource_url(
    base: &str,
    resource: &ApiResource,
    namespace: Option<&str>,
    name: &str,
    subresource: Subresource,
    params: &[(&str, &str)],
) -> Result<String, InvalidName> {
    url_of(
        base,
        resource,
        namespace,
        Some((name, Some(subresource))),
        params,
    )
}

/// The URL of [`object_url`] and [`subresource_url`]: the collection's, then the checked and
/// encoded name and the subresource's segment, if any, then `params`.
fn url_of(
    base: &str,
    resource: &ApiResource,
    namespace: Option<&str>,
    object: Option<(&str, Option<Subresource>)>,
    params: &[(&str, &str)],
) -> Result<String, InvalidName> {
    let mut url = resource_url(base, resource, namespace);
    if let Some((name, subresource)) = object {
        check_name(name)?;
        url.push('/');
        encode_query_value(&mut url, name);
        if let Some(subresource) = subresource {
            url.push('/');
            url.push_str(subresource.segment());
        }
    }
    let mut sep = '?';
    for (param, value) in params {
        push_param(&mut url, &mut sep, param, value);
    }
    Ok(url)
}

/// A GET request for `url` with the default headers.
///
/// # Errors
///
/// When `url` is not a valid URI.
pub(crate) fn get(url: &str, user_agent: &str) -> Result<Request<Bytes>, http::Error> {
    request(Method::GET, url, user_agent, None)
}

/// A `method` request for `url` with the default headers and, when given, a body of its
/// content type (`(content_type, body)`).
///
/// # Errors
///
/// When `url` is not a valid URI.
pub(crate) fn request(
    method: Method,
    url: &str,
    user_agent: &str,
    body: Option<(&'static str, Bytes)>,
) -> Result<Request<Bytes>, http::Error> {
    let builder = Request::builder()
        .method(method)
        .uri(url)
        .header(ACCEPT, ACCEPT_JSON)
        .header(USER_AGENT, user_agent);
    match body {
        Some((content_type, body)) => builder.header(CONTENT_TYPE, content_type).body(body),
        None => builder.body(Bytes::new()),
    }
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
    fn object_urls_encode_the_name_and_the_parameters() {
        assert_eq!(
            object_url("http://h/", &pods(), Some("ns"), Some("web-0"), &[]).unwrap(),
            "http://h/api/v1/namespaces/ns/pods/web-0"
        );
        let leases = ApiResource::new("coordination.k8s.io", "v1", "leases", true);
        assert_eq!(
            object_url(
                "http://h",
                &leases,
                Some("kube-system"),
                Some("a b:c"),
                &[("fieldManager", "my ctl"), ("force", "true")]
            )
            .unwrap(),
            "http://h/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/a%20b%3Ac\
             ?fieldManager=my%20ctl&force=true"
        );
        let nodes = ApiResource::new("", "v1", "nodes", false);
        assert_eq!(
            object_url("http://h", &nodes, Some("ns"), None, &[]).unwrap(),
            "http://h/api/v1/nodes"
        );
    }

    #[test]
    fn object_urls_refuse_names_that_are_not_one_segment() {
        for name in ["", ".", "..", "a/b", "50%"] {
            let e = object_url("http://h", &pods(), Some("ns"), Some(name), &[]).unwrap_err();
            assert!(e.to_string().starts_with("invalid object name"), "{e}");
            for sub in [Subresource::Status, Subresource::Scale] {
                let e =
                    subresource_url("http://h", &pods(), Some("ns"), name, sub, &[]).unwrap_err();
                assert!(e.to_string().starts_with("invalid object name"), "{e}");
            }
        }
    }

    #[test]
    fn subresource_urls_follow_the_encoded_name() {
        let deployments = ApiResource::new("apps", "v1", "deployments", true);
        assert_eq!(
            subresource_url(
                "http://h/",
                &deployments,
                Some("shop"),
                "web 1",
                Subresource::Scale,
                &[]
            )
            .unwrap(),
            "http://h/apis/apps/v1/namespaces/shop/deployments/web%201/scale"
        );
        let nodes = ApiResource::new("", "v1", "nodes", false);
        assert_eq!(
            subresource_url(
                "http://h",
                &nodes,
                Some("ns"),
                "n1",
                Subresource::Status,
                &[("fieldManager", "ctl"), ("force", "true")]
            )
            .unwrap(),
            "http://h/api/v1/nodes/n1/status?fieldManager=ctl&force=true"
        );
    }

    #[test]
    fn requests_with_a_body_carry_its_content_type() {
        let r = request(
            Method::PATCH,
            "http://h/api/v1/namespaces/ns/pods/a",
            "ua",
            Some(("application/merge-patch+json", Bytes::from_static(b"{}"))),
        )
        .unwrap();
        assert_eq!(r.method(), Method::PATCH);
        assert_eq!(r.headers()[CONTENT_TYPE], "application/merge-patch+json");
        assert_eq!(r.headers()[ACCEPT], "application/json");
        assert_eq!(&r.body()[..], b"{}");
        let r = request(Method::DELETE, "http://h/api/v1/nodes/n", "ua", None).unwrap();
        assert!(r.headers().get(CONTENT_TYPE).is_none() && r.body().is_empty());
    }

    #[test]
    fn get_sets_json_accept_and_no_encoding() {
        let r = get("http://h/api/v1/pods", "ua").unwrap();
        assert_eq!(r.headers()[ACCEPT], "application/json");
        assert!(r.headers().get(http::header::ACCEPT_ENCODING).is_none());
        assert!(get("not a url", "ua").is_err());
    }
}
