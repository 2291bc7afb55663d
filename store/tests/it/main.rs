//! Integration tests of `kcache-store`: one binary, one module per area.
#![allow(
    clippy::unwrap_used,
    reason = "a test fails loudly on any unexpected error"
)]

#[cfg(feature = "k8s-openapi")]
mod compact;
mod concurrency;
#[cfg(feature = "k8s-openapi")]
mod k8s_openapi;
mod model;
mod send_sync;
mod support;
