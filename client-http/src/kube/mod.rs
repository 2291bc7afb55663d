//! kcache over kube-rs (the `kube` feature): a [`KubeListerWatcher`] runs kcache's reflector and
//! informer on the [`kube::Client`](kube_client::Client) an application already has, and
//! [`to_kube_selector`] / [`from_kube_selector`] convert label selectors both ways.
//!
//! kube-rs is only the transport: its client brings the configuration, authentication, TLS
//! and connection pool; the lister-watcher takes the client and the collection's URL out of a
//! [`kube::Api`](kube_client::Api), writes the list and watch requests itself and reads the
//! bodies with this crate's own decoders. So it behaves exactly like
//! [`HttpListerWatcher`](crate::HttpListerWatcher):
//!
//! - the same requests: `limit`/`continue` paging, `resourceVersion` and
//!   `resourceVersionMatch` passed as given (kube-rs's own `ListParams` would drop
//!   `resourceVersion=0` from a paginated list), watches with `allowWatchBookmarks`, any
//!   `timeoutSeconds` (kube-rs's `WatchParams` defaults to 290 s), streaming lists
//!   (`sendInitialEvents`), label and field selectors;
//! - the same decoding and bounds: lists decoded item by item as they arrive and never
//!   buffered past [`max_list_bytes`](KubeListerWatcherBuilder::max_list_bytes), watch events
//!   decoded incrementally with a [size limit](KubeListerWatcherBuilder::max_event_size),
//!   `managedFields` skipped while parsing, [`Compact`](kcache_store::Compact) objects with a
//!   shared dictionary; any type client-http decodes (a k8s-openapi `Pod`, `Compact<Pod>`,
//!   kcache's [`DynamicObject`](kcache_store::DynamicObject), a type of your own);
//! - the same errors: every non-2xx answer is an [`Api`](kcache_reflector::Error::Api) error
//!   with the server's `Status` (or one made from a text body), so a 410 makes the reflector
//!   relist and a 429's `Retry-After` is honoured; a failure of kube-rs's client is a
//!   [`Transport`](kcache_reflector::Error::Transport) error whose source is the
//!   [`kube::Error`](kube_client::Error) with its whole cause chain; a malformed body is a
//!   [`Decode`](kcache_reflector::Error::Decode) error.
//!
//! The API object type of the [`Api`](kube_client::Api) (`K`) only names the resource; the
//! type the cache holds (`T`) is chosen separately and need not be the same: an `Api<Pod>` can
//! feed a cache of `Compact<Pod>` or of `DynamicObject`.
//!
//! # kube-rs's client settings that matter here
//!
//! - **Retries.** kube-rs's `Config::default_retry` (on by default) retries a 429, 503 or 504
//!   answer up to 15 times inside the client, sleeping for any `Retry-After` the server sends
//!   (uncapped), before the reflector hears of it. The reflector has its own backoff, caps
//!   `Retry-After` and reports every failure; turn kube-rs's retries off
//!   (`config.default_retry = false`) for client-go's behaviour. Either way a list, and the
//!   opening of a watch, is bounded by [`list_timeout`](KubeListerWatcherBuilder::list_timeout).
//! - **TLS and HTTP version.** This crate enables no TLS feature of kube-rs; your `kube`
//!   dependency does (`rustls-tls` or `openssl-tls`). kube-rs speaks HTTP/1.1 only, so each
//!   watch holds a connection of its own (client-http's own client multiplexes them on one
//!   HTTP/2 connection).
//! - **Compression.** Requests ask for `Accept-Encoding: identity`, so kube-rs's `gzip`
//!   feature, if on, leaves the bodies alone (a watch-list response would be multi-member gzip).
//!
//! # Example
//!
//! A typed `Api<Pod>` over plain HTTP (the fake API server), decoded as kcache's
//! `DynamicObject`. With the `kube` facade crate the paths are `kube::{Api, Client, Config}`.
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use kcache_client_http::KubeListerWatcher;
//! use kcache_reflector::{ListOptions, ListerWatcher};
//! use kcache_store::{DynamicObject, Object};
//! use kcache_testing_server::{FakeApiServer, ServedResource};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = FakeApiServer::start().await?;
//! server.create(&ServedResource::pods(), DynamicObject::new(Some("shop"), "web"))?;
//!
//! // The kube-rs client the application already has.
//! let mut config = kube_client::Config::new(server.url().parse()?);
//! config.default_retry = false; // the reflector retries, with its own backoff
//! let client = kube_client::Client::try_from(config)?;
//! let pods: kube_client::Api<Pod> = kube_client::Api::namespaced(client, "shop");
//!
//! let lw = KubeListerWatcher::<DynamicObject>::builder(pods)
//!     .skip_managed_fields(true)
//!     .build();
//! let page = lw.list(&ListOptions::default()).await?;
//! assert_eq!(page.items[0].name(), Some("web"));
//! // An informer takes it as an `Arc<dyn ListerWatcher<DynamicObject>>`.
//! # Ok(())
//! # }
//! ```

mod error;
mod lister_watcher;
mod selector;

pub use self::error::error_from_kube;
pub use self::lister_watcher::{KubeListerWatcher, KubeListerWatcherBuilder};
pub use self::selector::{
    from_kube_expression, from_kube_selector, to_kube_expression, to_kube_selector,
};
