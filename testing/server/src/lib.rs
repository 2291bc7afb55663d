//! The fake servers of kcache's tests, over real HTTP on 127.0.0.1 (hyper, rustls, rcgen): for
//! tests of HTTP clients, and of your own controllers end to end.
//!
//! - [`FakeApiServer`]: a real HTTP/1.1 + HTTP/2 server (plain or TLS) speaking the Kubernetes
//!   list/watch protocol: one global resource version, pagination with expiring continue tokens,
//!   selectors, bookmarks, streaming lists, sharded lists and watches (`shardSelector`),
//!   compaction with 410s, writes (create, replace, patch, server-side apply, delete, with their
//!   preconditions and watch events) on the common built-in kinds and yours, discovery,
//!   `OpenAPI` v3 and tables (so `kubectl` reads and writes against it) and fault injection. Run
//!   it standalone with `cargo run -p kcache-testing-server --example fake_api_server`.
//! - [`FakeProxy`]: a forward proxy on 127.0.0.1 speaking HTTP `CONNECT` or SOCKS5, with
//!   optional credentials, that records the tunnels it opens and the requests it refuses, to
//!   prove that a client goes through the `proxy-url` of its kubeconfig.
//! - [`ScriptedServer`]: an HTTP/1.1 server on 127.0.0.1 answering every request from a closure
//!   the test writes, to play a broken or hostile API server byte for byte (a body that never
//!   ends, a repeated continue token, a 63-year `Retry-After`), counting what it wrote.
//! - [`Churn`]: a seeded driver of adds, updates and deletes of realistic pods
//!   (`kcache_testing::workload`) on a [`FakeApiServer`].
//!
//! The light test support (the in-memory `FakeListerWatcher`, workloads, queue models) is
//! `kcache-testing`, which this crate builds on.

mod churn;
mod fake_proxy;
mod refusing_port;

pub mod fake_api_server;
pub mod scripted_server;

pub use self::churn::{Churn, ChurnStats};
pub use self::fake_api_server::{
    ClientCertificate, FakeApiError, FakeApiServer, FakeApiServerBuilder, PatchType, Preconditions,
    ServedResource, WatchFrames,
};
pub use self::fake_proxy::{FakeProxy, FakeProxyBuilder, ProxyProtocol};
pub use self::refusing_port::RefusingPort;
pub use self::scripted_server::{Reply, ScriptedRequest, ScriptedServer};
