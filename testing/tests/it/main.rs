//! Integration tests of kcache-testing: the fake API server over real HTTP on 127.0.0.1.
#![allow(clippy::unwrap_used, reason = "tests")]

mod chaos;
mod fake_api_server;
mod fake_api_server_client;
mod fake_api_server_faults;
mod fake_api_server_kubectl;
mod fake_proxy;
mod hostile;
mod hostile_support;
mod log_capture;
mod workload;
