//! A hyper + rustls [`ListerWatcher`](kcache_reflector::ListerWatcher) for real Kubernetes API
//! servers, with kubeconfig and in-cluster configuration, and the few writes controllers and
//! leader election need.
//!
//! This crate sits above `kcache-store` and `kcache-reflector` and nothing in the workspace
//! depends on it: the informer only sees the `ListerWatcher` trait, so this HTTP backend can be
//! swapped for another one (or a fake) without touching anything above it.
//!
//! - [`Config`]: where the server is and how to authenticate, from a kubeconfig
//!   ([`Config::from_kubeconfig`], kubectl's merging rules), from the pod's service account
//!   ([`Config::in_cluster`]) or both in turn ([`Config::infer`]). Bearer tokens, token files
//!   (re-read as they rotate), client certificates, exec credential plugins and basic auth.
//!   Credentials are [`Secret`]s: never in `Debug`, errors or logs.
//! - [`Client`]: the config plus a [`Transport`]. The default [`HyperTransport`] speaks HTTP/2
//!   through ALPN with keep-alive pings and falls back to HTTP/1.1; all lister-watchers built
//!   from one client share its connection pool, which opens another HTTP/2 connection when one
//!   carries as many streams as the server allows. Bring another HTTP stack with
//!   [`Client::with_transport`].
//! - [`HttpListerWatcher`]: lists (decoded item by item, so one bad object is skipped, not
//!   fatal) and watches (newline-delimited JSON decoded incrementally across chunk boundaries,
//!   with a per-event size limit), optionally dropping `metadata.managedFields` while parsing
//!   ([`SkipManagedFields`]). Errors are [`kcache_reflector::Error`]s the reflector understands:
//!   every non-2xx answer is an `Api` error with the server's `Status` (or one made from a text
//!   body), so 410, 429 and `Retry-After` work.
//! - [`ObjectClient`]: the few writes controllers need, over the same client, credentials,
//!   errors and size limits: `get` (the server's `NotFound` for the object is `None`), `create`,
//!   `replace` (the object's `resourceVersion` is the precondition), `patch` ([`Patch`]: JSON
//!   merge, JSON patch, server-side apply) and `delete` (with [`Preconditions`]). A lost
//!   optimistic write is an `Api` error whose
//!   [`is_conflict`](kcache_reflector::Error::is_conflict) is true; a create of a taken name,
//!   one whose [`is_already_exists`](kcache_reflector::Error::is_already_exists) is.
//!   The `status` subresource (`replace_status`, `patch_status`, `get_status`) writes only an
//!   object's status, and the `scale` subresource (`get_scale`, `replace_scale`,
//!   `patch_scale`) its desired replicas, as an `autoscaling/v1` [`Scale`].
//! - [`HttpLeaseLock`]: leader election's [`LeaseLock`](kcache_reflector::LeaseLock) over a
//!   `coordination.k8s.io/v1` Lease, without k8s-openapi.
//! - [`EventRecorder`]: `events.k8s.io/v1` Events about objects (what `kubectl describe`
//!   shows), as client-go's `tools/events` records them: repeats folded into series, a rate
//!   limit per object, a bounded queue written by a background task, so `record` never waits.
//!
//! - With the `kube` feature, `KubeListerWatcher`: the same over a kube-rs `Client`.
//!
//! - [`Proxy`]: a kubeconfig's `proxy-url` (`http://` with `CONNECT`, `socks5://`), or
//!   `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` as client-go reads them. [`Impersonate`]: a
//!   kubeconfig's `as`, `as-uid`, `as-groups` and `as-user-extra`.
//!
//! Compression is never requested (no `Accept-Encoding`): a watch-list response would be
//! multi-member gzip, and decoding, not transfer, is the informer's bottleneck.
//! The legacy `auth-provider` is not supported (exec plugins replaced it) and is reported as
//! such, as are `https://` proxies.
//!
//! # Example
//!
//! Listing pods from a (fake) API server:
//!
//! ```
//! use kcache_client_http::{ApiResource, Client, Config, HttpListerWatcher};
//! use kcache_reflector::{ListOptions, ListerWatcher};
//! use kcache_store::{DynamicObject, Object};
//! use kcache_testing_server::FakeApiServer;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = FakeApiServer::start().await?;
//! let pods = kcache_testing_server::ServedResource::pods();
//! server.create(&pods, DynamicObject::new(Some("shop"), "web"))?;
//!
//! let client = Client::new(Config::new(server.url().parse()?))?;
//! let lw = HttpListerWatcher::<DynamicObject>::builder(client, ApiResource::new("", "v1", "pods", true))
//!     .namespace("shop")
//!     .skip_managed_fields(true)
//!     .build();
//! let page = lw.list(&ListOptions::default()).await?;
//! assert_eq!(page.items[0].name(), Some("web"));
//! # Ok(())
//! # }
//! ```
//!
//! In a program, `Config::infer()` finds the kubeconfig or the service account, and the
//! lister-watcher goes into an informer:
//!
//! ```no_run
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use kcache_client_http::{ApiResource, Client, Config, HttpListerWatcher};
//! use kcache_reflector::ListerWatcher;
//! use kcache_store::DynamicObject;
//!
//! let client = Client::new(Config::infer()?)?;
//! let pods: Arc<dyn ListerWatcher<DynamicObject>> = Arc::new(
//!     HttpListerWatcher::<DynamicObject>::dynamic(client, ApiResource::new("", "v1", "pods", true)),
//! );
//! // What an informer takes:
//! // `kcache_informer::SharedIndexInformer::builder(pods).build()`.
//! # drop(pods); Ok(()) }
//! ```
//!
//! # Typed resources
//!
//! With the `k8s-openapi` feature, a k8s-openapi type names its own resource (group, version,
//! plural and scope) and objects are decoded straight into it:
//!
//! ```
//! # #[cfg(feature = "k8s-openapi")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::Pod;
//! use kcache_client_http::{Client, Config, HttpListerWatcher};
//! use kcache_reflector::{ListOptions, ListerWatcher};
//! use kcache_store::DynamicObject;
//! use kcache_testing_server::{FakeApiServer, ServedResource};
//!
//! let server = FakeApiServer::start().await?;
//! server.create(&ServedResource::pods(), DynamicObject::new(Some("shop"), "web"))?;
//!
//! let client = Client::new(Config::new(server.url().parse()?))?;
//! // Pods in every namespace; `HttpListerWatcher::<Pod>::typed(client)` is the builder.
//! let pods = HttpListerWatcher::<Pod>::new(client);
//! let page = pods.list(&ListOptions::default()).await?;
//! let pod: &Pod = &page.items[0];
//! assert_eq!(pod.metadata.name.as_deref(), Some("web"));
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "k8s-openapi"))]
//! # fn main() {}
//! ```
//!
//! # Features
//!
//! - `k8s-openapi` (off by default): [`ApiResource::of`], [`HttpListerWatcher::new`] and
//!   [`ObjectClient::new`] for k8s-openapi types. Pick a k8s-openapi version feature in your application, never in a
//!   library.
//! - `kube` (off by default): `kube::KubeListerWatcher`, the same lists, watches, decoding and
//!   bounds over a kube-rs `Client` the application already has (see the `kube` module), and
//!   label selector conversions to and from kube-rs. Brings no TLS stack (your `kube`
//!   dependency picks one).
//!
// An item behind a feature is linked where it exists; without the feature, to its type.
#![cfg_attr(not(feature = "k8s-openapi"), doc = "[`ApiResource::of`]: ApiResource")]
#![cfg_attr(
    not(feature = "k8s-openapi"),
    doc = "[`HttpListerWatcher::new`]: HttpListerWatcher"
)]
#![cfg_attr(
    not(feature = "k8s-openapi"),
    doc = "[`ObjectClient::new`]: ObjectClient"
)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc(test(attr(deny(warnings))))]

mod auth;
mod client;
mod config;
mod decode;
mod error;
mod events;
#[cfg(feature = "kube")]
#[cfg_attr(docsrs, doc(cfg(feature = "kube")))]
pub mod kube;
mod lease_lock;
mod lister_watcher;
mod transport;
mod write;

pub use self::auth::impersonate::Impersonate;
pub use self::auth::secret::Secret;
pub use self::client::Client;
pub use self::config::{
    Auth, AuthInfo, Cluster, Config, Context, DEFAULT_HTTP2_MAX_CONNECTIONS,
    DEFAULT_HTTP2_STREAM_WAIT, ExecApiVersion, ExecConfig, ExecEnvVar, ExecSpec, Identity,
    InClusterOptions, Kubeconfig, KubeconfigOptions, NamedAuthInfo, NamedCluster, NamedContext,
    fuzz_kubeconfig,
};
pub use self::decode::decode_list;
pub use self::decode::managed_fields::SkipManagedFields;
pub use self::decode::response::DEFAULT_MAX_LIST_BYTES;
pub use self::decode::watch::{DEFAULT_MAX_EVENT_SIZE, WatchDecoder, fuzz_watch_decoder};
pub use self::error::{BoxError, Error, Result};
pub use self::events::builder::EventRecorderBuilder;
pub use self::events::event::MAX_NOTE_BYTES;
pub use self::events::event_type::EventType;
pub use self::events::recorder::{EventRecorder, Recorded};
pub use self::events::reference::ObjectReference;
pub use self::events::stats::RecorderStats;
// The one resource type, in `kcache-store` so the fake API server serves by it too.
#[cfg(feature = "kube")]
#[cfg_attr(docsrs, doc(cfg(feature = "kube")))]
pub use self::kube::{KubeListerWatcher, KubeListerWatcherBuilder};
pub use self::lease_lock::HttpLeaseLock;
pub use self::lister_watcher::{HttpListerWatcher, HttpListerWatcherBuilder};
pub use self::transport::proxy::{Proxy, ProxyProtocol, ProxyUrl};
pub use self::transport::{
    H2_PING_INTERVAL, H2_PING_TIMEOUT, HyperTransport, ResponseBody, Transport,
};
pub use self::write::finalizer::{FINALIZER_ATTEMPTS, FinalizerError, FinalizerEvent, finalizer};
pub use self::write::object_client::{ObjectClient, ObjectClientBuilder};
pub use self::write::patch::Patch;
pub use self::write::preconditions::Preconditions;
pub use self::write::scale::{Scale, ScaleSpec, ScaleStatus};
pub use kcache_store::ApiResource;
