//! `Controller` and `SharedIndexInformer`: the cache and event fan-out controllers build on.
//!
//! An informer lists and watches one resource through any
//! [`ListerWatcher`](kcache_reflector::ListerWatcher), keeps an indexed cache of it, and tells
//! handlers (or streams) what changed, with client-go's semantics: late handlers replay the
//! cache, deletions missed during a disconnect arrive as tombstones, resyncs go to the handlers
//! that asked for them, and "synced" means the initial list reached the cache (for the informer)
//! or the handler (for a [`Registration`]).
//!
//! This crate sits above `kcache-store`, `kcache-queue` and `kcache-reflector`, and never
//! depends on an HTTP client: the backend is whatever `ListerWatcher` you pass in.
//!
//! Informers, their reflectors and queues record [metrics] through the `metrics` facade; the
//! [`metrics`] module lists every one and how to export them.
//!
//! # Example: a complete controller
//!
//! The handler only enqueues keys; a worker reconciles each key by looking the object up in
//! the lister, which is how client-go controllers are written. The `FakeListerWatcher` stands
//! in for an API server; `kcache-client-http` provides the real one.
//!
//! ```
//! use std::sync::Arc;
//! use kcache_informer::{HandlerFuncs, SharedIndexInformer};
//! use kcache_store::{DynamicObject, Object, ObjectKey};
//! use kcache_testing::FakeListerWatcher;
//! use tokio::sync::mpsc;
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let api = FakeListerWatcher::<DynamicObject>::new();
//! api.handle().add(DynamicObject::new(Some("shop"), "web"));
//!
//! let informer = SharedIndexInformer::builder(Arc::new(api.clone())).build();
//!
//! // The handler turns every change into a key on the work queue.
//! let (work, mut keys) = mpsc::unbounded_channel::<ObjectKey>();
//! let (w1, w2, w3) = (work.clone(), work.clone(), work);
//! let registration = informer.add_event_handler(
//!     HandlerFuncs::new()
//!         .on_added(move |o: &Arc<DynamicObject>, _| drop(w1.send(o.key())))
//!         .on_updated(move |_, new: &Arc<DynamicObject>| drop(w2.send(new.key())))
//!         .on_deleted(move |gone| drop(w3.send(gone.key()))),
//! )?;
//!
//! let cancel = CancellationToken::new();
//! let run = tokio::spawn({
//!     let (informer, cancel) = (informer.clone(), cancel.clone());
//!     async move { informer.run(cancel).await }
//! });
//! assert!(registration.synced().await);
//!
//! // The worker: reconcile each key against the cache, never against the server.
//! let lister = informer.lister();
//! let mut reconcile = async || -> Result<(String, bool), kcache_store::KeyError> {
//!     let key = keys.recv().await.expect("handler alive");
//!     let (ns, name) = key.split()?;
//!     let exists = lister.namespace(ns.unwrap_or_default()).get(name).is_some();
//!     Ok((key.to_string(), exists))
//! };
//! assert_eq!(reconcile().await?, ("shop/web".to_owned(), true));
//! api.handle().delete(&DynamicObject::new(Some("shop"), "web"));
//! assert_eq!(reconcile().await?, ("shop/web".to_owned(), false));
//!
//! cancel.cancel();
//! run.await??;
//! # Ok(())
//! # }
//! ```
#![doc(test(attr(deny(warnings))))]

mod controller;
mod error;
mod event;
mod factory;
mod handler;
mod handler_panic;
mod informer_logs;
mod leader;
mod listener;
pub mod metrics;
mod process;
mod processor;
mod read_only;
mod reconcile;
mod registration;
mod replace_signal;
mod shared_informer;
mod stream;
mod sync_signal;
mod transform;

pub use self::controller::{
    Controller, ControllerConfig, FIRST_SYNC_WAIT, ProcessDeltasFn, ReflectorOptionsFn,
};
pub use self::error::{Error, Result};
pub use self::event::Event;
pub use self::factory::InformerFactory;
pub use self::handler::{FilteringHandler, HandlerFuncs, ResourceEventHandler};
pub use self::leader::{
    DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD, LeaderElector,
    LeaderElectorBuilder, SHARD_RESTART_DELAY, ShardFilter, ShardScope, ShardedCaches,
    ShardedElection, shard_of,
};
pub use self::read_only::ReadOnlyIndexer;
pub use self::reconcile::{
    Action, Change, DEFAULT_CACHE_SYNC_TIMEOUT, Owns, Predicate, ReconcileRunner,
    ReconcileRunnerBuilder, TerminalError,
};
pub use self::registration::Registration;
pub use self::shared_informer::{InformerBuilder, QueueKind, RunMode, SharedIndexInformer};
pub use self::stream::EventStream;
pub use self::transform::{ClearManagedFields, strip_managed_fields};
pub use kcache_reflector::{BoxError, ErrorHook};
pub use kcache_store::TransformFn;
