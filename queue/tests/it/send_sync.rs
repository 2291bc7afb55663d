//! Compile-time checks that the public types can cross threads and the queue trait is
//! dyn-compatible.

use std::sync::Arc;

use kcache_queue::{
    Delta, DeltaFifo, DeltaFifoBuilder, Deltas, Fifo, FifoBuilder, PopError, ProcessError, Queue,
    RealFifo, RealFifoBuilder,
};
use kcache_store::DynamicObject;

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
