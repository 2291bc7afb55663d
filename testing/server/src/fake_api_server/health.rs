//! The health endpoints: `/healthz`, `/livez` and `/readyz`, each with its named checks
//! (`/readyz/ping`) and `?verbose`, answered in plain text as kube-apiserver answers them.
//!
//! The fake server is always healthy once it serves: every check passes. A check named in
//! `exclude` is reported as excluded; a path naming no check is 404.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};

use super::body::ResponseBody;
use super::params::truthy;

/// The checks of each endpoint: `livez` and `healthz` report the server's own liveness and its
/// storage, `readyz` also that its caches are in sync and it is not shutting down.
fn checks(endpoint: &str) -> Option<&'static [&'static str]> {
    match endpoint {
        "healthz" | "livez" => Some(&["ping", "log", "etcd"]),
        "readyz" => Some(&[
            "ping",
            "log",
            "etcd",
            "etcd-readiness",
            "informer-sync",
            "shutdown",
        ]),
        _ => None,
    }
}

/// The answer to GET `segs` (the path's segments) if it is a health path, else `None`.
pub(crate) fn response(
    segs: &[&str],
    query: &[(String, String)],
) -> Option<Response<ResponseBody>> {
    let (endpoint, check) = match segs {
        [endpoint] => (*endpoint, None),
        [endpoint, check] => (*endpoint, Some(*check)),
        _ => return None,
    };
    let checks = checks(endpoint)?;
    if let Some(check) = check {
        return Some(if checks.contains(&check) {
            text(StatusCode::OK, "ok")
        } else {
            text(StatusCode::NOT_FOUND, "404 page not found\n")
        });
    }
    let verbose = query
        .iter()
        .any(|(k, v)| k == "verbose" && (v.is_empty() || truthy(v)));
    if !verbose {
        return Some(text(StatusCode::OK, "ok"));
    }
    let excluded: Vec<&str> = query
        .iter()
        .filter(|(k, _)| k == "exclude")
        .map(|(_, v)| v.as_str())
        .collect();
    let mut out = String::new();
    for check in checks {
        let excluded = if excluded.contains(check) {
            " excluded:"
        } else {
            ""
        };
        out.push_str("[+]");
        out.push_str(check);
        out.push_str(excluded);
        out.push_str(" ok\n");
    }
    out.push_str(endpoint);
    out.push_str(" check passed\n");
    Some(text(StatusCode::OK, &out))
}

/// A plain-text answer.
fn text(code: StatusCode, body: &str) -> Response<ResponseBody> {
    let mut resp = Response::new(ResponseBody::full(Bytes::from(body.to_owned())));
    *resp.status_mut() = code;
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}
