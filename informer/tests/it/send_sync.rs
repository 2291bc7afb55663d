//! Compile-time checks that the public types and futures can cross threads.

use kcache_informer::{
    Controller, EventStream, HandlerFuncs, InformerFactory, ReadOnlyIndexer, Registration,
    SharedIndexInformer,
};
use kcache_store::DynamicObject;

fn send_sync<T: Send + Sync + 'static>() {}
fn send_static<T: Send + 'static>() {}
fn send<T: Send>(_: &T) {}

#[test]
fn public_types_are_send_sync() {
    send_sync::<SharedIndexInformer<DynamicObject>>();
    send_sync::<Controller<DynamicObject>>();
    send_sync::<Registration<DynamicObject>>();
    send_sync::<ReadOnlyIndexer<DynamicObject>>();
    send_sync::<HandlerFuncs<DynamicObject>>();
    send_sync::<InformerFactory>();
    send_static::<EventStream<DynamicObject>>();
}

#[test]
fn run_future_is_send() {
    let (_fake, inf) = crate::support::informer(std::time::Duration::ZERO);
    let fut = inf.run(tokio_util::sync::CancellationToken::new());
    send(&fut);
}
