//! Integration tests of `kcache-informer`: one binary, one module per area.
#![allow(
    clippy::unwrap_used,
    reason = "a test fails loudly on any unexpected error"
)]

mod controller;
mod disconnect;
mod key_func;
mod leader;
mod lifecycle;
mod log_floods;
mod metrics;
mod model;
mod panics;
mod reconcile;
mod resync;
mod send_sync;
mod sharded_caches;
mod sharding;
mod shutdown;
mod stream;
mod support;
