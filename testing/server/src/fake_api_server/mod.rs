//! [`FakeApiServer`]: a real HTTP(S) Kubernetes API server on loopback, in memory, with fault
//! injection.
//!
//! It speaks the list/watch protocol of the real kube-apiserver closely enough that real clients
//! (kubectl, kcache's own HTTP client, client-go) work against it unchanged:
//!
//! - **Kinds**: by default ([`ServedResource::defaults`]) pods, configmaps, secrets, service
//!   accounts, services, events, nodes and namespaces (core v1), deployments and replica sets
//!   (`apps/v1`), leases (`coordination.k8s.io/v1`) and events (`events.k8s.io/v1`, stored
//!   apart from the core ones), with kubectl's short names (`po`, `cm`,
//!   `svc`, `ev`, `sa`, `deploy`, `rs`, `ns`, `no`); any other kind with
//!   [`FakeApiServerBuilder::resource`] or [`FakeApiServer::register`].
//! - **Writes**, through the Rust handle ([`FakeApiServer::create`], [`update`](FakeApiServer::update),
//!   [`patch`](FakeApiServer::patch), [`delete`](FakeApiServer::delete),
//!   [`delete_with`](FakeApiServer::delete_with)) or over HTTP (POST, PUT, PATCH, DELETE on any
//!   registered kind), each through the same path and the same watch events (ADDED, MODIFIED,
//!   DELETED): one global resource-version counter shared by every resource; `AlreadyExists`,
//!   `NotFound`, and `Conflict` when a `resourceVersion` (or uid) the write names is not the
//!   stored one: in a PUT body, in a patch, or in the `preconditions` of a DELETE's
//!   `DeleteOptions` ([`Preconditions`]). PATCH takes JSON patch, merge patch, strategic merge
//!   patch (lists merged as the kind's schema says, with kubectl's directives; 415 for custom
//!   resources, as on kube-apiserver) and server-side
//!   apply with field ownership (created if absent), see [`PatchType`]; any other media type is
//!   415. HTTP writes keep `metadata.managedFields` as kube-apiserver does: each create, update
//!   and patch records an `Update` entry of its manager (`fieldManager`, else the User-Agent up
//!   to its first `/`) owning the fields it changed; an apply owns exactly the fields it
//!   applied, removes those it stopped applying that nobody else owns, and is a 409 `Conflict`
//!   naming each field another manager owns with another value unless `force=true`. List
//!   types come from the kind's vendored schema (`x-kubernetes-list-type` and its map keys, else
//!   its patch strategy); for kinds without one, from a table of the common lists (containers
//!   by name, ports by port and protocol, ...), other lists atomic. Writes through the Rust handle
//!   leave `managedFields` as they are. Writes that change nothing keep the RV and
//!   emit nothing. Finalizers make a delete a MODIFIED (with `deletionTimestamp`); the object
//!   goes when they are removed. DELETED events carry the last state with the deletion's new
//!   RV. A DELETE answers the object (pods, services, namespaces, nodes, service accounts,
//!   custom kinds, and any object finalizers hold) or a `Status` of kind `Success` (configmaps,
//!   secrets, events, leases, deployments, replica sets), as kube-apiserver does
//!   ([`ServedResource::returns_deleted_object`]). `dryRun=All`, in the query or in a DELETE's
//!   `DeleteOptions` body, makes any write a dry run: checked, defaulted and answered, nothing
//!   stored, no event. `fieldValidation` (`Strict`, `Warn` by default, `Ignore`) is enforced
//!   on HTTP writes of built-in kinds and of custom resources with a schema: unknown and
//!   duplicate fields at any depth are refused with kube-apiserver's `strict decoding error:
//!   unknown field "spec.foo"`, or written (a custom resource's pruned) with one `Warning: 299`
//!   header each; wrong types are refused whatever the level.
//!   kube-apiserver's size limits
//!   hold: a body is at most 3 MiB, a JSON patch at most 10,000 operations copying at most
//!   3 MiB, a patched object at most 3 MiB of JSON (413 otherwise, 422 for the copies).
//! - **Namespaces**: `default`, `kube-node-lease`, `kube-public` and `kube-system` exist at
//!   start, and creating an object in any other namespace creates that Namespace (phase
//!   `Active`) in the same write, at the object's resource version, so the resource versions a
//!   test sees do not depend on it; such a namespace stays when its objects go. A namespace
//!   name that is not a lowercase RFC 1123 label is refused with 400. Deleting a Namespace
//!   marks it `Terminating`, deletes what is in it, then removes it (objects held by
//!   finalizers hold it); creating in it meanwhile is 403.
//! - **Lifecycle**: garbage collection by `ownerReferences` when an owner is deleted, with the
//!   `propagationPolicy` it names (background by default, foreground with the
//!   `foregroundDeletion` finalizer, orphan); `metadata.generation` on the kinds that have it
//!   ([`ServedResource::generation`]), bumped when anything but metadata and status changes;
//!   the `status` subresource ([`ServedResource::status_subresource`]: pods, services,
//!   namespaces, nodes, deployments, replica sets) and `scale` (deployments, replica sets);
//!   `deletecollection` with label and field selectors; defaults for pods, services, secrets,
//!   deployments and replica sets on HTTP writes. The collector and namespace controller act
//!   within the DELETE itself, not a moment later as on a cluster; an object written with
//!   owners that were all removed (a controller's late write) is collected right after the
//!   write, and one whose owners never existed here is left alone. Objects written through the Rust handle are stored as
//!   given (status included, no defaults), as a test seeds a cluster's state.
//! - **Operator endpoints**: `/healthz`, `/livez` and `/readyz` (with their checks and
//!   `?verbose`), `SelfSubjectAccessReview` and `SelfSubjectRulesReview` answering allowed,
//!   categories (`all`) in discovery for `kubectl get all`.
//! - **List**: label and field selectors (`metadata.name`, `metadata.namespace`, plus per-resource
//!   fields such as pods' `spec.nodeName` and `status.phase`), `limit`/`continue` with real token
//!   expiry (410 `Expired`), `resourceVersion` `""`/`"0"`/exact/`NotOlderThan` (504 "Too large
//!   resource version" after a wait), `remainingItemCount`, the 400/422 validation errors.
//! - **Watch**: from an RV with a bounded history per resource (410 ERROR event `too old resource
//!   version: N (M)` once compacted), synthetic ADDED for RV `""`/`"0"`, bookmarks
//!   (`allowWatchBookmarks`, periodic, ~2 s before the deadline, and on demand with
//!   [`FakeApiServer::send_bookmark`]), `timeoutSeconds` ending the stream cleanly, watch-list
//!   (`sendInitialEvents=true` then the `k8s.io/initial-events-end` bookmark), selector
//!   transitions as ADDED/DELETED. Each watcher has a bounded buffer; a watcher that falls behind
//!   is closed cleanly, never blocking writers.
//! - **Sharded list and watch** (Kubernetes 1.36's `ShardedListAndWatch`, see `sharding`):
//!   `shardSelector=shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')`
//!   (ranges joined by `||`; `object.metadata.namespace` too) on lists and their pages,
//!   watches and streaming lists of every resource sends only the objects whose field's 64-bit
//!   FNV-1a hash is in a range (with the label and field selectors, no `remainingItemCount` as
//!   with them; bookmarks still sent); each list echoes the selector in `metadata.shardInfo`
//!   (JSON, protobuf and metadata-only lists; not Tables), a malformed one is 400 `invalid shard
//!   selector: ...`. [`FakeApiServerBuilder::sharded_list_watch`] turns it off, as on a server
//!   without the gate. `deletecollection` deletes only the shard, as its `ListOptions` say.
//! - **Schemas**: the built-in kinds' schemas are Kubernetes **1.37**'s, vendored in
//!   `testing/server/data/kubernetes-definitions.json` from the `OpenAPI` definitions the `PyPI`
//!   package `kubernetes-validate` ships (the definitions reachable from the kinds of core v1,
//!   `apps/v1`, `coordination.k8s.io/v1`, `events.k8s.io/v1`, `authorization.k8s.io/v1`,
//!   `autoscaling/v1` and `apiextensions.k8s.io/v1`, plus `meta/v1`), in the `OpenAPI` v3 form
//!   kube-apiserver serves. `cargo xtask openapi-data [--version 1.37.0]` refreshes them (it
//!   needs pip and python3). They drive the `OpenAPI` documents, field validation and strategic
//!   merge patch; kinds without one (custom resources registered in Rust) get a permissive
//!   schema and none of these checks.
//! - **Custom resources through the API**: a `CustomResourceDefinition` written to the server
//!   serves its versions until deleted, and each version's structural schema is used as
//!   kube-apiserver's `apiextensions` server uses it (see `crd_schema`): on every HTTP write
//!   (create, update, patch, apply, `/status`) fields the schema does not declare are pruned
//!   (`metadata` keeps `ObjectMeta`'s), non-nullable `null`s dropped, `default`s applied where
//!   their parent exists, and `type`, `nullable`, `required`, `enum`, `minimum`/`maximum`,
//!   `minLength`/`maxLength` and `minItems`/`maxItems` checked: 422 `Widget.example.com "w" is
//!   invalid: spec.size: Invalid value: "string": spec.size in body must be of type integer:
//!   "string"` (several joined as `[a, b]`). Its `OpenAPI` document carries the schema
//!   (`kubectl explain widgets.spec`), and its Tables `Name` then the
//!   `additionalPrinterColumns` (`-o wide` ones with a priority), or `Name` and `Age` without
//!   any. The Rust handle's writes store what they are given.
//! - **Discovery**: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/<g>`, `/apis/<g>/<v>`;
//!   `OpenAPI` v3 (`/openapi/v3` and one document per group-version, generated from the
//!   registered kinds: the real schemas of built-in kinds, so that `kubectl explain` prints
//!   their fields, a definition's schema for its custom resources, and permissive ones for the
//!   others) so that kubectl's `create -f`, `apply -f` and `apply --server-side` work with their
//!   default validation; and `meta.k8s.io/v1` Tables for `Accept: ...;as=Table` with each
//!   built-in kind's `kubectl get` columns, `-o wide` ones included, and a custom resource's
//!   printer columns.
//! - **Metadata only** (`partial_metadata`): `Accept:
//!   application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` (or `v1beta1`) on a list
//!   answers a `PartialObjectMetadataList` (every list option as for full lists; items with
//!   their `kind` and `apiVersion`), `as=PartialObjectMetadata` on a GET, a write or a watch
//!   the object's `PartialObjectMetadata` (every event's, bookmarks and the
//!   `k8s.io/initial-events-end` one included; ERROR events keep their `Status`), for built-in
//!   kinds and custom resources alike. As on kube-apiserver, the one-object kind on a list or
//!   the list kind on one object is 406 naming the Go type (`*core.PodList`), and an `Accept`
//!   whose every range asks for something unserved is 406 `only the following media types are
//!   accepted: ...`. The metadata's bytes are a slice of the stored encoding, so these cost no
//!   encoding either.
//! - **Transport**: HTTP/1.1 and HTTP/2 (ALPN `h2`/`http/1.1` over TLS; h2 prior knowledge on
//!   plain TCP), a self-signed CA generated at start ([`FakeApiServer::ca_pem`]), optionally
//!   required client certificates signed by it ([`FakeApiServerBuilder::client_auth`],
//!   [`FakeApiServer::issue_client_certificate`]), and a kubeconfig writer. Loopback only;
//!   connections, watchers and bodies are bounded.
//! - **Cost**: small next to a client's, so a benchmark measures the client. Each write encodes
//!   its object once; lists, watch-lists, events and GETs copy those bytes, and a watch sends
//!   the lines ready together as one frame: about 3 µs of server CPU per realistic pod listed or
//!   watched (`cargo run --release -p kcache-testing-server --example serve_cost` measures it;
//!   with `--metadata`, metadata-only lists and watch-lists: about 1.5 µs a pod).
//! - **Content types**: JSON, and Kubernetes' protobuf (`application/vnd.kubernetes.protobuf`,
//!   through `kcache-protobuf`) for built-in kinds when the `Accept` header prefers it, as
//!   client-go's clientsets and kubectl's `create` and `describe` send it: objects, lists and
//!   their pages, write answers and `Status` errors enveloped, watches and streaming lists as
//!   length-prefixed `WatchEvent` frames (`;stream=watch`). Custom resources answer JSON, or 406
//!   to a request accepting protobuf alone, as on kube-apiserver. POST and PUT bodies (access
//!   reviews' too) may be protobuf: kubectl's generated `create` commands (`namespace`,
//!   `configmap`, `secret`, `deployment`, `service`) send them; undecodable ones are 400.
//! - **Faults** ([`Fault`]): HTTP errors with a Status or text body and `Retry-After`, stream drops,
//!   truncated or corrupt lines, unknown event types, ERROR events, early close, stalls, slow
//!   streams, undecodable MODIFIED/DELETED events with a readable identity, repeated continue
//!   tokens, streaming lists without their initial-events bookmark; plus [`compact`](FakeApiServer::compact),
//!   [`expire_continue_tokens`](FakeApiServer::expire_continue_tokens) and stale `RV=0` reads.
//!
//! # Not supported, and why
//!
//! - YAML and CBOR (JSON and protobuf only; other `Accept` types get 406, whose message lists
//!   the media types kube-apiserver would serve, YAML included), gzip responses; protobuf for
//!   built-in kinds the protobuf table of `kcache-protobuf` does not have (definitions,
//!   `apiextensions.k8s.io`: they answer JSON, or 406 to a request accepting protobuf alone,
//!   where kube-apiserver answers protobuf), metadata-only answers and Tables in protobuf
//!   (their JSON forms are answered when the `Accept` header lists them), and protobuf PATCH
//!   bodies (no client sends them). A protobuf body's empty strings are dropped as absent (Go
//!   clients write every string field, set or not), so an explicitly empty pointer string (a
//!   claim's `storageClassName: ""`) is lost; its zero numbers and `false` are kept, so the
//!   fields Go writes unset (`hostPort: 0`, `stdin: false`) are stored and answered, where
//!   kube-apiserver leaves them out.
//! - Custom resources: each served version holds its own objects (no conversion between
//!   versions, no conversion webhooks); their schemas' `pattern` (no regular expression engine
//!   among the dependencies), `format`, `uniqueItems`, `multipleOf`, `min/maxProperties`,
//!   `oneOf`/`anyOf`/`allOf`/`not` and `x-kubernetes-validations` (CEL) are not checked, and a
//!   definition's own schema is not validated (structural or not); printer columns take simple
//!   `JSONPath`s only (fields, indices, `[?(@.f=="v")]` filters). Apply patches of custom
//!   resources are pruned without a warning.
//! - Server-side apply's applied objects are not checked for unknown fields.
//! - Authentication and authorization (any token is accepted, and with
//!   [`client_auth`](FakeApiServerBuilder::client_auth) any certificate of the server's CA, whatever
//!   its common name): no 401/403 flows beyond injecting them with [`Fault::status`].
//! - A controllable clock: timers use tokio time (tests may pause it); history retention is by
//!   count, not age.
//! - Graceful deletion periods (objects go at once); validation of built-in kinds beyond field
//!   names and types (required fields, formats, enums, kube-apiserver's per-kind rules);
//!   client-side apply's annotation taken over by a server-side apply and the cap of ten
//!   `Update` managers; `/openapi/v2` (kubectl asks for it only when v3 is missing); the `log`,
//!   `exec`, `attach`, `portforward`, `proxy`, `eviction` and `binding` subresources of pods.
//! - The listener going down for a while (connection refused), h2 GOAWAY on demand,
//!   byte-level throttling and arbitrary chunk splitting, multi-member gzip.
//!
//! # Example
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use kcache_testing_server::fake_api_server::{FakeApiServer, PatchType, ServedResource};
//! use kcache_store::DynamicObject;
//!
//! let server = FakeApiServer::builder().tls(true).start().await?;
//! let pods = ServedResource::pods();
//! server.create(&pods, DynamicObject::new(Some("default"), "web-1")).expect("create");
//! let labels = serde_json::json!({"metadata": {"labels": {"tier": "web"}}});
//! server
//!     .patch(&pods, Some("default"), "web-1", PatchType::Merge, &labels)
//!     .expect("patch");
//! println!("serving {} (CA {} bytes)", server.url(), server.ca_pem().map_or(0, str::len));
//! server.shutdown().await;
//! # Ok(()) }
//! ```

mod access;
mod apply;
mod body;
mod columns;
mod crd_columns;
mod crd_schema;
mod defaults;
mod delete_options;
mod discovery;
mod faults;
mod field_manager;
mod field_set;
mod field_validation;
mod health;
mod json_patch;
mod kubeconfig;
mod limits;
mod list_semantics;
mod managed_fields;
mod merge_patch;
mod namespaces;
mod negotiation;
mod object_fields;
mod openapi;
mod params;
mod partial_metadata;
mod patch;
mod preconditions;
mod protobuf;
mod remaining;
mod response;
mod routes;
mod schema;
mod served_resource;
mod sharding;
mod state;
mod status;
mod stored;
mod strategic_merge;
mod subresource;
mod table;
mod tls;
pub(crate) mod util;
mod watch;
mod watch_frames;
mod write_options;

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use kcache_store::DynamicObject;
use rustls::pki_types::CertificateDer;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

pub use self::faults::{Fault, FaultKind, UndecodableEvent, Verb};
pub use self::patch::PatchType;
pub use self::preconditions::Preconditions;
pub use self::served_resource::{ScalePaths, ServedResource};
pub use self::state::RequestRecord;
pub use self::tls::ClientCertificate;
pub use self::watch::INITIAL_EVENTS_END;
pub use self::watch_frames::WatchFrames;

use self::state::{Config, Shared};
use self::status::{ApiError, ErrorBody};

/// An error from a [`FakeApiServer`] handle method: what the HTTP API would have answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct FakeApiError {
    /// HTTP status code (404, 409, ...).
    pub code: u16,
    /// `metav1.Status` reason (`NotFound`, `AlreadyExists`, `Conflict`, ...).
    pub reason: String,
    /// Human-readable message.
    pub message: String,
}

impl From<ApiError> for FakeApiError {
    fn from(e: ApiError) -> Self {
        match e.body {
            ErrorBody::Status(s) => Self {
                code: e.code,
                reason: s.reason.unwrap_or_default(),
                message: s.message.unwrap_or_default(),
            },
            ErrorBody::Text(t) => Self {
                code: e.code,
                reason: "NotFound".to_owned(),
                message: t.trim().to_owned(),
            },
        }
    }
}

/// Configures and starts a [`FakeApiServer`].
#[derive(Debug, Clone)]
pub struct FakeApiServerBuilder {
    config: Config,
    resources: Vec<ServedResource>,
    tls: bool,
    client_auth: bool,
    http2: bool,
    seed: u64,
}

impl Default for FakeApiServerBuilder {
    fn default() -> Self {
        Self {
            config: Config::default(),
            resources: ServedResource::defaults(),
            tls: false,
            client_auth: false,
            http2: true,
            seed: 0x6B63_6163_6865,
        }
    }
}

impl FakeApiServerBuilder {
    /// Also serve `resource` (the kinds of [`ServedResource::defaults`] are registered
    /// already).
    #[must_use]
    pub fn resource(mut self, resource: ServedResource) -> Self {
        self.resources.push(resource);
        self
    }

    /// Serve HTTPS with a generated CA (default: plain HTTP).
    #[must_use]
    pub fn tls(mut self, tls: bool) -> Self {
        self.tls = tls;
        self
    }

    /// Require a client certificate signed by the server's CA (mutual TLS, default false), like
    /// a kube-apiserver with `--client-ca-file` and no anonymous access: a handshake without one,
    /// or with one of another CA, fails. Needs [`tls(true)`](Self::tls);
    /// [`start`](Self::start) refuses it on plain HTTP.
    ///
    /// Get certificates with [`FakeApiServer::issue_client_certificate`]. The server's
    /// [`kubeconfig`](FakeApiServer::kubeconfig) then carries one (common name `kcache-fake`) as
    /// `client-certificate-data`/`client-key-data`, next to its token.
    #[must_use]
    pub fn client_auth(mut self, required: bool) -> Self {
        self.client_auth = required;
        self
    }

    /// Events kept per resource for resuming watches, Exact lists and continue tokens
    /// (default 1000). Older ones are compacted: resuming from them gives 410.
    #[must_use]
    pub fn history_limit(mut self, events: usize) -> Self {
        self.config.history_limit = events;
        self
    }

    /// Period of watch bookmarks (default 60 s, like kube-apiserver).
    #[must_use]
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.config.bookmark_interval = interval;
        self
    }

    /// Watch duration when the request has no `timeoutSeconds` (default 30 min).
    #[must_use]
    pub fn default_watch_timeout(mut self, timeout: Duration) -> Self {
        self.config.default_watch_timeout = timeout;
        self
    }

    /// How long a `NotOlderThan` read above the current RV waits before 504 (default 3 s).
    #[must_use]
    pub fn too_large_rv_wait(mut self, wait: Duration) -> Self {
        self.config.too_large_wait = wait;
        self
    }

    /// Whether `sendInitialEvents` is supported (default true; false answers 422 like a server
    /// with the `WatchList` feature gate off).
    #[must_use]
    pub fn watch_list(mut self, enabled: bool) -> Self {
        self.config.watch_list = enabled;
        self
    }

    /// Default a plain watch at RV `""`/`"0"` to watch-list, like 1.34+ servers (default false).
    #[must_use]
    pub fn watch_list_defaulting(mut self, enabled: bool) -> Self {
        self.config.watch_list_defaulting = enabled;
        self
    }

    /// Whether `shardSelector` is served (default true): server-side sharded list and watch, as
    /// a Kubernetes 1.36 kube-apiserver with the `ShardedListAndWatch` feature gate serves it.
    /// Lists, watches and streaming lists then send only the objects whose `metadata.uid` or
    /// `metadata.namespace` hashes into one of the selector's ranges, lists echo the selector in
    /// `metadata.shardInfo`, and a malformed selector is 400. Off, the parameter is ignored
    /// altogether (everything is sent, no `shardInfo`, no 400), as by an older server.
    #[must_use]
    pub fn sharded_list_watch(mut self, enabled: bool) -> Self {
        self.config.sharded_list_watch = enabled;
        self
    }

    /// Events buffered per watcher before it is closed as too slow (default 1024).
    #[must_use]
    pub fn watcher_buffer(mut self, events: usize) -> Self {
        self.config.watcher_buffer = events;
        self
    }

    /// Encode every object of a built-in kind in protobuf when it is written, as its JSON is,
    /// and every object's metadata for metadata-only protobuf answers, instead of when a
    /// protobuf watch first sends it (default false). kube-apiserver's watch
    /// cache encodes each event once per encoding; a benchmark that times the clients, not the
    /// server, turns this on so that protobuf watches cost the server no more than JSON ones.
    #[must_use]
    pub fn protobuf_on_write(mut self, on: bool) -> Self {
        self.config.protobuf_on_write = on;
        self
    }

    /// How watch streams are cut into writes (default [`WatchFrames::Lines`] of 64 KiB).
    #[must_use]
    pub fn watch_frames(mut self, frames: WatchFrames) -> Self {
        self.config.watch_frames = frames;
        self
    }

    /// Ignore `limit` on `resourceVersion=0` lists, like the watch cache (default true).
    #[must_use]
    pub fn rv0_ignores_limit(mut self, ignore: bool) -> Self {
        self.config.rv0_ignores_limit = ignore;
        self
    }

    /// Answer unknown resources with a 404 Status instead of `404 page not found` text.
    #[must_use]
    pub fn not_found_as_status(mut self, status: bool) -> Self {
        self.config.not_found_as_status = status;
        self
    }

    /// Open connections at most (default 512); more are closed at accept.
    #[must_use]
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.config.max_connections = connections;
        self
    }

    /// Offer HTTP/2 through ALPN over TLS (default `true`); off, TLS clients are answered
    /// `http/1.1`, as by a server without HTTP/2.
    #[must_use]
    pub fn http2(mut self, offered: bool) -> Self {
        self.http2 = offered;
        self
    }

    /// The streams each HTTP/2 connection allows at once, its `SETTINGS_MAX_CONCURRENT_STREAMS`
    /// (default 1000; 0 allows none, a hostile server's setting). A watch holds its stream as
    /// long as it runs.
    #[must_use]
    pub fn http2_max_concurrent_streams(mut self, streams: u32) -> Self {
        self.config.http2_max_concurrent_streams = streams;
        self
    }

    /// Seed for generated uids and names.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Binds 127.0.0.1 on a free port and starts serving. Needs a tokio runtime.
    ///
    /// # Errors
    ///
    /// Binding fails, certificates cannot be generated, or
    /// [`client_auth`](Self::client_auth) is on without [`tls`](Self::tls)
    /// ([`io::ErrorKind::InvalidInput`]).
    pub async fn start(self) -> io::Result<FakeApiServer> {
        if self.client_auth && !self.tls {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "fake API server: client_auth(true) needs tls(true)",
            ));
        }
        let tls = if self.tls {
            Some(tls::generate(self.client_auth)?)
        } else {
            None
        };
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Shared::new(self.config, self.resources, self.seed)
            .map_err(|e| io::Error::other(FakeApiError::from(e)))?;
        let shared = Arc::new(shared);
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{addr}");
        let acceptor = tls.as_ref().map(|t| {
            let mut config = t.config.clone();
            if !self.http2 {
                Arc::make_mut(&mut config).alpn_protocols = vec![b"http/1.1".to_vec()];
            }
            TlsAcceptor::from(config)
        });
        let task = tokio::spawn(accept_loop(
            listener,
            shared.clone(),
            acceptor,
            Arc::from(addr.to_string()),
        ));
        Ok(FakeApiServer {
            shared,
            addr,
            url,
            tls,
            task: Some(task),
        })
    }
}

/// A fake Kubernetes API server on `127.0.0.1`. See the [module docs](self).
///
/// Stops when dropped or on [`shutdown`](Self::shutdown).
#[derive(Debug)]
pub struct FakeApiServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    url: String,
    tls: Option<tls::Tls>,
    task: Option<JoinHandle<()>>,
}

impl FakeApiServer {
    /// A builder with the defaults: plain HTTP; the kinds of [`ServedResource::defaults`].
    pub fn builder() -> FakeApiServerBuilder {
        FakeApiServerBuilder::default()
    }

    /// Starts a server with the defaults.
    pub async fn start() -> io::Result<Self> {
        Self::builder().start().await
    }

    /// `http://127.0.0.1:<port>` or `https://...`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The CA certificate (PEM) that signed the server certificate, in HTTPS mode.
    pub fn ca_pem(&self) -> Option<&str> {
        self.tls.as_ref().map(|t| t.ca_pem.as_str())
    }

    /// The CA certificate (DER), in HTTPS mode, e.g. for a rustls `RootCertStore`.
    pub fn ca_der(&self) -> Option<&CertificateDer<'static>> {
        self.tls.as_ref().map(|t| &t.ca_der)
    }

    /// A client certificate for user `common_name`, signed by the server's CA, so accepted by a
    /// server built with [`client_auth`](FakeApiServerBuilder::client_auth) (any server's CA
    /// can sign; only those servers ask for one). A new key each call.
    ///
    /// `Ok(None)` for a plain-HTTP server.
    ///
    /// # Errors
    ///
    /// The key or certificate cannot be generated.
    pub fn issue_client_certificate(
        &self,
        common_name: &str,
    ) -> io::Result<Option<ClientCertificate>> {
        self.tls
            .as_ref()
            .map(|t| tls::issue(&t.issuer, common_name))
            .transpose()
    }

    /// A kubeconfig (JSON, valid as YAML) for this server, with default namespace `namespace`:
    /// the URL, the CA as `certificate-authority-data` in HTTPS mode, a token, and with
    /// [`client_auth`](FakeApiServerBuilder::client_auth) a client certificate as
    /// `client-certificate-data`/`client-key-data` (the same one for every call).
    pub fn kubeconfig(&self, namespace: &str) -> String {
        let client = self.tls.as_ref().and_then(|t| t.kubeconfig_client.as_ref());
        kubeconfig::render(&self.url, self.ca_pem(), client, namespace)
    }

    /// Writes [`kubeconfig`](Self::kubeconfig) (namespace `default`) to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> io::Result<()> {
        std::fs::write(path, self.kubeconfig("default"))
    }

    /// Registers another resource while running.
    pub fn register(&self, resource: ServedResource) {
        self.shared.lock().register(resource);
    }

    /// The current global resource version.
    pub fn resource_version(&self) -> u64 {
        self.shared.lock().rv
    }

    /// Creates an object (namespace from its metadata, `default` if unset for namespaced kinds).
    pub fn create(
        &self,
        resource: &ServedResource,
        obj: DynamicObject,
    ) -> Result<Arc<DynamicObject>, FakeApiError> {
        let id = resource.id();
        Ok(self
            .shared
            .mutate(|s| s.create(&id, None, obj))?
            .object
            .clone())
    }

    /// Replaces the object named by `obj`'s metadata. A non-empty `resourceVersion` must match
    /// (else `Conflict`); an empty one overwrites unconditionally.
    pub fn update(
        &self,
        resource: &ServedResource,
        obj: DynamicObject,
    ) -> Result<Arc<DynamicObject>, FakeApiError> {
        let id = resource.id();
        let ns = obj.metadata.namespace.clone();
        let name = obj.metadata.name.clone().unwrap_or_default();
        Ok(self
            .shared
            .mutate(|s| s.update(&id, ns.as_deref(), &name, obj))?
            .object
            .clone())
    }

    /// Patches an object, as a PATCH of `patch_type` with body `patch` would (see
    /// [`PatchType`]): `metadata.resourceVersion` in the patch is a precondition (`Conflict`), a
    /// patch that changes nothing keeps the resource version and sends no event, and
    /// [`PatchType::Apply`] creates the object when there is none (no field manager needed
    /// here).
    pub fn patch(
        &self,
        resource: &ServedResource,
        namespace: Option<&str>,
        name: &str,
        patch_type: PatchType,
        patch: &serde_json::Value,
    ) -> Result<Arc<DynamicObject>, FakeApiError> {
        let id = resource.id();
        let (stored, _) = self
            .shared
            .mutate(|s| s.patch(&id, namespace, name, patch_type, patch))?;
        Ok(stored.object.clone())
    }

    /// Deletes an object (or marks it, if it has finalizers). Returns its final state.
    pub fn delete(
        &self,
        resource: &ServedResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Arc<DynamicObject>, FakeApiError> {
        self.delete_with(resource, namespace, name, &Preconditions::default())
    }

    /// Deletes an object if `preconditions` hold (else `Conflict`, and nothing is deleted), as
    /// a DELETE with `DeleteOptions.preconditions` would.
    pub fn delete_with(
        &self,
        resource: &ServedResource,
        namespace: Option<&str>,
        name: &str,
        preconditions: &Preconditions,
    ) -> Result<Arc<DynamicObject>, FakeApiError> {
        let id = resource.id();
        Ok(self
            .shared
            .mutate(|s| {
                s.delete(
                    &id,
                    namespace,
                    name,
                    preconditions,
                    state::Propagation::Background,
                )
            })?
            .object
            .object
            .clone())
    }

    /// The stored object, if any.
    pub fn get(
        &self,
        resource: &ServedResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Arc<DynamicObject>> {
        self.shared
            .lock()
            .get(&resource.id(), namespace, name)
            .ok()
            .map(|stored| stored.object.clone())
    }

    /// Every stored object of `resource`, in key order.
    pub fn list(&self, resource: &ServedResource) -> Vec<Arc<DynamicObject>> {
        self.shared
            .lock()
            .resources
            .get(&resource.id())
            .map(|r| r.objects.values().map(|s| s.object.clone()).collect())
            .unwrap_or_default()
    }

    /// Adds a fault rule. Rules apply in the order added.
    pub fn inject(&self, fault: Fault) {
        self.shared.lock().faults.push(fault);
    }

    /// Removes every pending fault rule.
    pub fn clear_faults(&self) {
        self.shared.lock().faults.clear();
    }

    /// The events that undecodable-event faults ([`FaultKind::UndecodableModifiedAfter`],
    /// [`FaultKind::UndecodableDeletedAfter`]) sent broken, oldest first.
    pub fn undecodable_events(&self) -> Vec<UndecodableEvent> {
        self.shared.lock().undecodable.clone()
    }

    /// Makes every continue token issued so far expire (410 on the next page).
    pub fn expire_continue_tokens(&self) {
        let mut state = self.shared.lock();
        state.token_floor = state.rv + 1;
    }

    /// Compacts every history up to the current RV: any resume from an older RV gets 410, and so
    /// do older continue tokens and Exact lists.
    pub fn compact(&self) {
        let mut state = self.shared.lock();
        let rv = state.rv;
        state.compact(rv);
    }

    /// Ends every open watch stream cleanly, as an API server restart or a load balancer
    /// draining connections does. Clients resume from their last resource version (and get a
    /// 410 if the history was compacted meanwhile).
    pub fn close_watches(&self) {
        let mut state = self.shared.lock();
        for rs in state.resources.values_mut() {
            rs.watchers.clear();
        }
    }

    /// Compacts every history up to `rv`.
    pub fn compact_to(&self, rv: u64) {
        self.shared.lock().compact(rv);
    }

    /// Pauses the delivery of live events on every open watch (and on watches opened later,
    /// once their initial events and history replay are out). Writes go on as usual and queue
    /// up in each watch's buffer ([`watcher_buffer`](FakeApiServerBuilder::watcher_buffer)); a
    /// watch whose buffer fills is dropped, as when a client is too slow. No bookmark is sent
    /// while paused. Every write encodes its object at once, so the burst after
    /// [`resume_watches`](Self::resume_watches) is paced by the clients alone: benchmarks use
    /// this to time how fast a client takes in events without the writes' cost.
    pub fn pause_watches(&self) {
        self.shared.paused_tx.send_replace(true);
    }

    /// Resumes the delivery paused by [`pause_watches`](Self::pause_watches): every open watch
    /// sends what queued up, in order, then goes on live.
    pub fn resume_watches(&self) {
        self.shared.paused_tx.send_replace(false);
    }

    /// Every open watch with bookmarks enabled sends one now (after its pending events).
    pub fn send_bookmark(&self) {
        self.shared.bookmark_tx.send_modify(|n| *n += 1);
    }

    /// Serve `resourceVersion=0` lists from the snapshot at `rv` (HA time travel), or `None` to
    /// serve the latest again.
    pub fn set_stale_rv0(&self, rv: Option<u64>) {
        self.shared.lock().stale_rv0 = rv;
    }

    /// Serves the latest state as it was at `rv`, with every later change queued behind it, as
    /// a busy kube-apiserver does when the cluster changed during a long list; `None` serves the
    /// latest again.
    ///
    /// A list of the latest state (no `resourceVersion`, or `0` without
    /// [`set_stale_rv0`](Self::set_stale_rv0)), each of its pages, and the initial events of a
    /// watch-list are the objects at `rv`, at resource version `rv`. A watch from `rv` (the one
    /// after such a list) and a watch-list after its initial-events bookmark then replay every
    /// change since `rv` from the history before going live. Benchmarks use it to time a sync
    /// with updates already waiting behind it, without the cost of the writes during the sync.
    /// A read that names a newer resource version (an `Exact` list, a watch from it) is served
    /// as asked; a watch-list with `resourceVersionMatch=NotOlderThan` at a version past `rv`
    /// still gets the state at `rv` (no client in the bench asks for one).
    ///
    /// # Errors
    ///
    /// The compacted resource version, if the history no longer reaches back to `rv` (make it
    /// long enough with [`history_limit`](FakeApiServerBuilder::history_limit)). A later
    /// compaction past `rv` serves the latest again.
    pub fn set_latest_as_of(&self, rv: Option<u64>) -> Result<(), u64> {
        self.shared.lock().set_latest_as_of(rv)
    }

    /// The open watches on `resource`.
    pub fn watcher_count(&self, resource: &ServedResource) -> usize {
        self.shared
            .lock()
            .resources
            .get(&resource.id())
            .map_or(0, |r| r.watchers.iter().filter(|w| !w.is_closed()).count())
    }

    /// The logged requests (the most recent 10,000), oldest first.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.shared.lock().log.iter().cloned().collect()
    }

    /// How many TCP connections the server has accepted so far (those refused beyond
    /// [`max_connections`](FakeApiServerBuilder::max_connections) not counted).
    pub fn connections_accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::Relaxed)
    }

    /// Clears the request log.
    pub fn clear_requests(&self) {
        self.shared.lock().log.clear();
    }

    /// Stops accepting, ends every watch and waits for the accept loop to finish.
    pub async fn shutdown(mut self) {
        self.shared.cancel.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        self.shared.cancel.cancel();
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    acceptor: Option<TlsAcceptor>,
    address: Arc<str>,
) {
    let permits = Arc::new(Semaphore::new(shared.config.max_connections.max(1)));
    let cancel = shared.cancel.clone();
    loop {
        let accepted = tokio::select! {
            () = cancel.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((tcp, _)) = accepted else {
            // Out of file descriptors and the like: back off a little.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            continue;
        };
        let _ = tcp.set_nodelay(true);
        shared.accepted.fetch_add(1, Ordering::Relaxed);
        let shared = shared.clone();
        let address = address.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let _permit = permit;
            match acceptor {
                Some(acceptor) => {
                    let handshake =
                        tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await;
                    if let Ok(Ok(stream)) = handshake {
                        serve_connection(TokioIo::new(stream), shared, address).await;
                    }
                }
                None => serve_connection(TokioIo::new(tcp), shared, address).await,
            }
        });
    }
}

async fn serve_connection<I>(io: I, shared: Arc<Shared>, address: Arc<str>)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let cancel = shared.cancel.clone();
    let streams = shared.config.http2_max_concurrent_streams;
    let service = service_fn(move |req| {
        let shared = shared.clone();
        let address = address.clone();
        async move { Ok::<_, Infallible>(routes::handle(shared, req, address).await) }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http2().max_concurrent_streams(streams);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        () = cancel.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(1), conn).await;
        }
    }
}
