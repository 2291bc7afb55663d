//! Compile-time checks that the public types can cross threads and the queue trait is
//! dyn-compatible.

use std::sync::Arc;

use kcache_queue::{
    BucketRateLimiter, Delta, DeltaFifo, DeltaFifoBuilder, Deltas, Fifo, FifoBuilder,
    ItemExponentialBackoff, ItemFastSlow, MaxOf, PopError, ProcessError, Queue, RateLimiter,
    RealFifo, RealFifoBuilder, TryGetError, WorkQueue, WorkQueueBuilder,
};
use kcache_store::DynamicObject;
use kcache_store::ObjectKey;

fn send_sync<T: Send + Sync + 'static>() {}
fn send<T: Send>(_: &T) {}

#[test]
fn public_types_are_send_sync() {
    send_sync::<DeltaFifo<DynamicObject>>();
    send_sync::<Fifo<DynamicObject>>();
    send_sync::<RealFifo<DynamicObject>>();
    send_sync::<DeltaFifoBuilder<DynamicObject>>();
    send_sync::<RealFifoBuilder<DynamicObject>>();
    send_sync::<FifoBuilder<DynamicObject>>();
    send_sync::<Delta<DynamicObject>>();
    send_sync::<Deltas<DynamicObject>>();
    send_sync::<ProcessError<DynamicObject>>();
    send_sync::<PopError>();
    send_sync::<Arc<dyn Queue<DynamicObject>>>();
    send_sync::<WorkQueue<ObjectKey>>();
    send_sync::<WorkQueueBuilder<ObjectKey>>();
    send_sync::<Arc<dyn RateLimiter<ObjectKey>>>();
    send_sync::<ItemExponentialBackoff<ObjectKey>>();
    send_sync::<ItemFastSlow<ObjectKey>>();
    send_sync::<BucketRateLimiter>();
    send_sync::<MaxOf<ObjectKey>>();
    send_sync::<TryGetError>();
}

#[test]
fn work_queue_futures_are_send() {
    let q = WorkQueue::<ObjectKey>::new();
    send(&q.get());
    send(&q.shut_down_with_drain());
}

#[test]
fn pop_futures_are_send() {
    let queues: [Arc<dyn Queue<DynamicObject>>; 3] = [
        Arc::new(DeltaFifo::new()),
        Arc::new(Fifo::new()),
        Arc::new(RealFifo::new()),
    ];
    for q in &queues {
        let mut process = |_: Deltas<DynamicObject>| Ok(());
        let fut = q.pop(&mut process);
        send(&fut);
    }
}
