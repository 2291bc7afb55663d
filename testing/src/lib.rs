//! Fakes, workloads, reference models and proptest invariants for kcache, and for your own
//! controllers.
//!
//! - [`FakeListerWatcher`]: an in-memory, scriptable `ListerWatcher` (push events, fail a list,
//!   410 at watch start or mid-stream, drop or stall a watch) that records every request, for
//!   testing reflectors and informers without HTTP.
//! - [`FakeApiServer`]: a real HTTP/1.1 + HTTP/2 server (plain or TLS) on 127.0.0.1 speaking the
//!   Kubernetes list/watch protocol: one global resource version, pagination with expiring
//!   continue tokens, selectors, bookmarks, streaming lists, compaction with 410s, discovery (so
//!   `kubectl` works against it) and fault injection. Run it standalone with
//!   `cargo run -p kcache-testing --example fake_api_server`.
//! - [`FakeProxy`]: a forward proxy on 127.0.0.1 speaking HTTP `CONNECT` or SOCKS5, with
//!   optional credentials, that records the tunnels it opens and the requests it refuses, to
//!   prove that a client goes through the `proxy-url` of its kubeconfig.
//! - [`ScriptedServer`]: an HTTP/1.1 server on 127.0.0.1 answering every request from a closure
//!   the test writes, to play a broken or hostile API server byte for byte (a body that never
//!   ends, a repeated continue token, a 63-year `Retry-After`), counting what it wrote.
//! - [`workload`]: realistic pods (about 5 KB of JSON with managedFields) and a seeded churn
//!   driver.
//! - Queue reference models and invariants: [`check_delta_fifo_against_model`] and friends run a
//!   random operation sequence against a queue and its model; the `*_like` variants take your
//!   own `Queue` implementation.
//!
//! kcache's own crates use these from their tests; they are public so users can too.

mod fake_lister_watcher;
mod fake_proxy;
mod queue_invariants;
mod queue_model;

pub mod fake_api_server;
pub mod scripted_server;
pub mod workload;

pub use self::fake_api_server::{
    ApiResource, ClientCertificate, FakeApiError, FakeApiServer, FakeApiServerBuilder,
};
pub use self::fake_lister_watcher::{
    FakeHandle, FakeListerWatcher, FakeObject, FakeRequest, Undecodable, WatchListSupport,
    wait_until,
};
pub use self::fake_proxy::{FakeProxy, FakeProxyBuilder, ProxyProtocol};
pub use self::queue_invariants::{
    DeltaFifoConfig, QueueOp, QueueSetup, check_delta_fifo_against_model, check_delta_fifo_like,
    check_fifo_against_model, check_fifo_like, check_real_fifo_against_model, check_real_fifo_like,
    queue_op, queue_ops,
};
pub use self::queue_model::{
    DeltaFifoModel, FifoModel, KnownSnapshot, ModelDelta, ModelObject, ModelPop, RealFifoModel,
    known_snapshot,
};
pub use self::scripted_server::{Reply, ScriptedRequest, ScriptedServer};
