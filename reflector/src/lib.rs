//! `ListerWatcher` and the `Reflector` that keeps a store in step with the API server.
//!
//! This crate sits above `kcache-store` and below `kcache-informer`. The only seam to the API
//! server is [`ListerWatcher`] (async, dyn-compatible): `kcache-client-http` implements it over
//! HTTP, `kcache-testing` in memory. The [`Reflector`] speaks client-go's list/watch protocol
//! through it (streaming lists, pagination, bookmarks, 410 relists, backoff, `Retry-After`) and
//! writes into any [`Store`](kcache_store::Store): a cache or a queue.
//!
//! No tokio runtime is needed here: [`Reflector::run`] is a future the caller polls, stopped by a
//! `CancellationToken`.
//!
//! A reflector records [metrics] (lists, relists, watches, errors, events, the
//! last resource version) through the `metrics` facade, labelled with its name; the
//! application picks the exporter by installing a recorder.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use kcache_reflector::{ListOptions, Reflector};
//! use kcache_store::{Cache, DynamicObject, Store};
//! use kcache_testing::FakeListerWatcher;
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let fake = FakeListerWatcher::<DynamicObject>::new();
//! let handle = fake.handle();
//! let mut web = DynamicObject::new(Some("default"), "web");
//! web.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
//! handle.add(web.clone());
//!
//! let cache = Arc::new(Cache::<DynamicObject>::new());
//! let reflector = Reflector::builder(Arc::new(fake), cache.clone())
//!     .name("pods")
//!     .list_options(ListOptions::default().with_label_selector("app=web"))
//!     .build();
//!
//! let cancel = CancellationToken::new();
//! tokio::join!(reflector.run(cancel.clone()), async {
//!     handle.wait_for_watches(1).await; // the streaming list is done
//!     let mut api = web.clone();
//!     api.metadata.name = Some("api".to_owned());
//!     handle.add(api);
//!     handle.add(DynamicObject::new(Some("default"), "db")); // not selected
//!     kcache_testing::wait_until(Duration::from_secs(5), || cache.len() == 2).await;
//!     cancel.cancel();
//! });
//! assert_eq!(cache.len(), 2);
//! assert_eq!(reflector.last_sync_resource_version(), "2");
//! # }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc(test(attr(deny(warnings))))]

mod backoff;
mod decode_error;
mod error;
mod error_chain;
mod lease;
mod lease_spec;
mod lister_watcher;
mod log_limit;
pub mod metrics;
mod object_list;
mod options;
pub mod reason;
mod reflector;
mod report;
mod retry;
mod shard_selector;
mod sharded;
mod status;
mod watch_event;

pub use self::backoff::{Backoff, BackoffConfig};
pub use self::decode_error::{DecodeError, ObjectRef, reason_of};
pub use self::error::{BoxError, Error, Result};
pub use self::error_chain::ErrorChain;
pub use self::lease::{LeaseLock, LeaseRecord, VersionedLease, micro_time};
pub use self::lister_watcher::{ListerWatcher, WatchStream};
pub use self::log_limit::{LOG_BURST, LOG_WINDOW, LogLimiter, LogPermit};
pub use self::object_list::{ListMeta, ObjectList, ShardInfo};
pub use self::options::{ListOptions, ResourceVersionMatch, query};
pub use self::reflector::{
    AfterListFn, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_LIST_OBJECTS, DEFAULT_MAX_LIST_PAGES,
    DEFAULT_PAGE_SIZE, DEFAULT_WATCH_LIST_ATTEMPTS, MIN_WATCH_TIMEOUT, Reflector, ReflectorBuilder,
    ShouldResyncFn, TransformFn,
};
pub use self::report::ErrorHook;
pub use self::retry::RetryWithDeadline;
pub use self::shard_selector::{
    HASH_SPACE_END, ShardField, ShardRange, ShardSelector, ShardSelectorError, shard_hash,
    shard_index,
};
pub use self::sharded::ShardedListerWatcher;
pub use self::status::{Status, StatusCause, StatusDetails, StatusMetadata};
pub use self::watch_event::{Bookmark, EventType, INITIAL_EVENTS_END_ANNOTATION, WatchEvent};
