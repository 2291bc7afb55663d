//! Public types and the `run` future are `Send + Sync + 'static` where they should be.

use std::sync::Arc;

use kcache_reflector::{
    Error, ListOptions, ListerWatcher, ObjectList, Reflector, Status, WatchEvent, WatchStream,
};
use kcache_store::Cache;
use tokio_util::sync::CancellationToken;

use crate::support::Obj;

fn send_sync<T: Send + Sync + 'static>() {}
fn send<T: Send>(_: &T) {}
fn send_only<T: Send>() {}

#[test]
fn types_are_send_and_sync() {
    send_sync::<Error>();
    send_sync::<Status>();
    send_sync::<ListOptions>();
    send_sync::<ObjectList<Obj>>();
    send_sync::<WatchEvent<Obj>>();
    send_sync::<Reflector<Obj>>();
    send_sync::<Arc<dyn ListerWatcher<Obj>>>();
    send_only::<WatchStream<Obj>>();
}

#[test]
fn run_future_is_send() {
    let fake = kcache_testing::FakeListerWatcher::<Obj>::new();
    let r = Reflector::builder(Arc::new(fake), Arc::new(Cache::new())).build();
    let fut = r.run(CancellationToken::new());
    send(&fut);
}
