//! Integration tests of `kcache-reflector`: one binary, one module per area. The request
//! sequence each scenario produces is the contract (client-go's reflector rules).
#![allow(
    clippy::unwrap_used,
    reason = "a test fails loudly on any unexpected error"
)]

mod backoff;
mod faults;
mod hardening;
mod list;
mod metrics;
mod send_sync;
mod store_contract;
mod support;
mod undecodable_props;
mod watch;
mod watch_list;
