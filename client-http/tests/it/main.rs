//! Integration tests of kcache-client-http: the lister-watcher against the fake API server over
//! HTTP and HTTPS (client certificates included), the writes (`status` and `scale` subresources included) and the Lease lock, kubeconfig and in-cluster loading on fixture
//! files, credentials (exec plugin bounds, client key checks, URL user-info, redaction), proxies,
//! impersonation, HTTP/2 stream limits and the event recorder; with the `kube` feature, the same lists and watches over kube-rs's client. (Informers over HTTP are tested in kcache-testing-e2e.)
#![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

mod auth;
mod client_key;
// The event recorder: series, rate limit, bounds, retries, shutdown.
mod events;
// Typed k8s-openapi pods.
#[cfg(feature = "k8s-openapi")]
mod exact_capacity;
mod exec_limits;
mod failure_chain;
mod finalizer;
// HTTP/2 stream limits: more connections, clear errors, HTTP/1.1 over TLS.
mod h2_streams;
mod impersonate;
mod in_cluster;
// The kube-rs backend.
#[cfg(feature = "kube")]
mod kube;
mod kubeconfig;
mod lease_lock;
mod list_watch;
mod metadata;
mod mtls;
mod protobuf;
mod proxy;
mod redaction;
mod send_sync;
// Server-side sharded list and watch, honoured or ignored by the server.
mod sharding;
// The status and scale subresources of `ObjectClient`.
mod subresources;
mod support;
mod tls_hints;
mod transport;
mod userinfo;
mod writes;

/// The error and its sources, joined with `: `.
pub(crate) fn support_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        out = format!("{out}: {s}");
        cur = s.source();
    }
    out
}
