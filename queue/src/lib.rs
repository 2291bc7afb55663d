//! Queues between a reflector and its consumer: [`Fifo`], [`DeltaFifo`] and [`RealFifo`]; and
//! the controllers' work queue of keys, [`WorkQueue`], with its rate limiters.
//!
//! This crate sits above `kcache-store` and below `kcache-informer`. A reflector writes into a
//! queue through the [`Store`](kcache_store::Store) trait (`add`, `update`, `delete`, `replace`,
//! `resync`, `bookmark`); one consumer takes items out with the async, cancel-safe
//! [`Queue::pop`], which hands each item to a synchronous process function. Deltas carry
//! `Arc<T>`: no object is ever copied.
//!
//! - [`RealFifo`]: client-go's default since 1.36. Every event in order, a relist as one atomic
//!   [`Delta::ReplacedAll`], a resync as one [`Delta::SyncAll`], bookmarks passed through.
//! - [`DeltaFifo`]: client-go's classic queue of deltas per key, with tombstones on relist,
//!   known objects, delete dedup and resync rules.
//! - [`Fifo`]: the latest object per key.
//! - [`WorkQueue`]: client-go's rate-limiting work queue (`util/workqueue`), between a
//!   controller's event handlers and its workers: keys deduped while they wait, never handed to
//!   two workers at once, delayed ([`WorkQueue::add_after`]) or retried with backoff
//!   ([`WorkQueue::add_rate_limited`], a [`RateLimiter`] such as [`default_rate_limiter`]), and
//!   an async, cancel-safe [`WorkQueue::get`] that sleeps until the earliest delay passes.
//!
//! A queue given a name (`.name("pods")` on its builder) records its depth and the deltas it
//! queues as [metrics], through the `metrics` facade; without a name it records
//! none.
//!
//! # Example
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use kcache_queue::{Delta, DeltaFifo, Queue};
//! use kcache_store::{Cache, DynamicObject, Store};
//!
//! // The consumer's cache doubles as the queue's known objects.
//! let cache = Arc::new(Cache::<DynamicObject>::new());
//! let fifo = DeltaFifo::builder()
//!     .known_objects(Arc::clone(&cache))
//!     .emit_delta_type_replaced(true)
//!     .build();
//!
//! let a = Arc::new(DynamicObject::new(Some("ns"), "a"));
//! fifo.replace(vec![Arc::clone(&a)], "1")?;
//! assert!(!fifo.has_synced());
//!
//! let mut apply = |deltas: kcache_queue::Deltas<DynamicObject>| {
//!     for delta in deltas {
//!         match delta {
//!             Delta::Deleted(gone) => {
//!                 let key = kcache_store::deletion_handling_key(&gone).map_err(kcache_queue::ProcessError::failed)?;
//!                 if let Some(obj) = cache.get_by_key(key.as_str()) {
//!                     cache.delete(obj).map_err(kcache_queue::ProcessError::failed)?;
//!                 }
//!             }
//!             other => {
//!                 if let Some(obj) = other.object() {
//!                     cache.add(Arc::clone(obj)).map_err(kcache_queue::ProcessError::failed)?;
//!                 }
//!             }
//!         }
//!     }
//!     Ok(())
//! };
//! fifo.pop(&mut apply).await?;
//! assert!(fifo.has_synced());
//!
//! // A relist without `a`: the queue reports the deletion the watch missed.
//! fifo.replace(vec![], "2")?;
//! fifo.pop(&mut apply).await?;
//! assert!(cache.is_empty());
//!
//! fifo.close();
//! assert!(fifo.pop(&mut apply).await.is_err_and(|e| e.is_closed()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Checking a queue with the reference models
//!
//! `kcache-testing` holds a reference model of each queue and proptest invariants over random
//! operation sequences (writes, deletions behind the watcher's back, relists with and without
//! known objects, resyncs, pops with and without requeue, close). Run them with a fixed seed:
//!
//! ```
//! use proptest::test_runner::{Config, RngSeed, TestRunner};
//! use kcache_testing::{check_delta_fifo_against_model, queue_ops};
//!
//! let mut runner = TestRunner::new(Config {
//!     cases: 16,
//!     rng_seed: RngSeed::Fixed(7),
//!     failure_persistence: None,
//!     ..Config::default()
//! });
//! runner.run(&queue_ops(), |ops| check_delta_fifo_against_model(&ops))?;
//! # Ok::<(), proptest::test_runner::TestError<Vec<kcache_testing::QueueOp>>>(())
//! ```
//!
//! [`check_delta_fifo_like`](../kcache_testing/fn.check_delta_fifo_like.html) runs the same
//! invariants against any [`Queue`] of your own that promises `DeltaFifo`'s semantics.
#![doc(test(attr(deny(warnings))))]

mod delta;
mod delta_fifo;
mod error;
mod fifo;
mod known_objects;
mod lifecycle;
pub mod metrics;
mod queue;
mod real_fifo;
mod transform;
mod work_queue;

pub use self::delta::{Delta, DeltaType, Deltas};
pub use self::delta_fifo::{DeltaFifo, DeltaFifoBuilder};
pub use self::error::{PopError, ProcessError, TryGetError};
pub use self::fifo::{Fifo, FifoBuilder};
pub use self::queue::{PopFuture, ProcessFn, Queue};
pub use self::real_fifo::{RealFifo, RealFifoBuilder};
pub use self::work_queue::{
    BucketRateLimiter, ItemExponentialBackoff, ItemFastSlow, MaxOf, RateLimiter, WorkQueue,
    WorkQueueBuilder, default_rate_limiter,
};
pub use kcache_store::TransformFn;
