//! Producers on several threads, one async consumer; close wakes a blocked pop.

use std::collections::HashMap;
use std::sync::Arc;
use std::thread;

use kcache_queue::{DeltaFifo, Deltas, Fifo, PopError, Queue, RealFifo};
use kcache_store::{DynamicObject, Object};

use crate::support::obj;

const PRODUCERS: usize = 4;
const KEYS: usize = 8;
const VERSIONS: u64 = 200;

/// Each producer owns `KEYS` keys and writes `VERSIONS` increasing versions of each.
fn produce(q: &Arc<dyn Queue<DynamicObject>>) -> Vec<thread::JoinHandle<()>> {
    (0..PRODUCERS)
        .map(|p| {
            let q = Arc::clone(q);
            thread::spawn(move || {
                for v in 1..=VERSIONS {
                    for k in 0..KEYS {
                        q.update(obj(&format!("p{p}-k{k}"), v)).unwrap();
                    }
                }
            })
        })
        .collect()
}

async fn consume(q: Arc<dyn Queue<DynamicObject>>) -> HashMap<String, Vec<u64>> {
    let mut seen: HashMap<String, Vec<u64>> = HashMap::new();
    loop {
        let r = q
            .pop(&mut |d: Deltas<DynamicObject>| {
                for delta in &d {
                    let o = delta.object().unwrap();
                    let rv = o.resource_version().unwrap().parse().unwrap();
                    seen.entry(o.name().unwrap().to_owned())
                        .or_default()
                        .push(rv);
                }
                Ok(())
            })
            .await;
        match r {
            Ok(()) => {}
            Err(PopError::Closed) => return seen,
            Err(e) => panic!("{e}"),
        }
    }
}

async fn run(q: Arc<dyn Queue<DynamicObject>>, every_version: bool) {
    let consumer = tokio::spawn(consume(Arc::clone(&q)));
    for h in produce(&q) {
        h.join().unwrap();
    }
    q.close();
    let seen = consumer.await.unwrap();
    assert_eq!(seen.len(), PRODUCERS * KEYS);
    for (key, versions) in seen {
        assert!(
            versions.windows(2).all(|w| w[0] < w[1]),
            "per-key order preserved for {key}"
        );
        assert_eq!(
            versions.last(),
            Some(&VERSIONS),
            "the last version of {key} arrives"
        );
        if every_version {
            assert_eq!(versions.len(), usize::try_from(VERSIONS).unwrap());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_fifo_keeps_per_key_order_under_concurrent_producers() {
    run(Arc::new(DeltaFifo::new()), true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_fifo_keeps_per_key_order_under_concurrent_producers() {
    run(Arc::new(RealFifo::new()), true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_delivers_the_latest_version_under_concurrent_producers() {
    run(Arc::new(Fifo::new()), false).await;
}

#[tokio::test(start_paused = true)]
async fn close_wakes_a_blocked_pop() {
    for q in [
        Arc::new(DeltaFifo::new()) as Arc<dyn Queue<DynamicObject>>,
        Arc::new(Fifo::new()),
        Arc::new(RealFifo::new()),
    ] {
        let waiter = tokio::spawn({
            let q = Arc::clone(&q);
            async move { q.pop(&mut |_: Deltas<DynamicObject>| Ok(())).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "pop waits on an empty queue");
        q.close();
        let r = waiter.await.unwrap();
        assert!(matches!(r, Err(PopError::Closed)));
    }
}

#[tokio::test(start_paused = true)]
async fn an_add_wakes_a_blocked_pop_and_a_cancelled_pop_loses_nothing() {
    let q: Arc<dyn Queue<DynamicObject>> = Arc::new(DeltaFifo::new());
    // A pop cancelled while waiting takes nothing.
    let cancelled = tokio::time::timeout(
        std::time::Duration::from_secs(1),
        q.pop(&mut |_: Deltas<DynamicObject>| panic!("nothing to process")),
    )
    .await;
    assert!(cancelled.is_err());
    let waiter = tokio::spawn({
        let q = Arc::clone(&q);
        async move {
            let mut name = String::new();
            q.pop(&mut |d: Deltas<DynamicObject>| {
                name = d[0].object().unwrap().name().unwrap().to_owned();
                Ok(())
            })
            .await
            .unwrap();
            name
        }
    });
    tokio::task::yield_now().await;
    q.add(obj("a", 1)).unwrap();
    assert_eq!(waiter.await.unwrap(), "a");
}

/// client-go's `TestThreadSafeStoreRV`, for the queues: an object without a resource version,
/// or with an empty one, leaves the last synced resource version where it was.
#[test]
fn an_object_without_a_resource_version_keeps_every_queues_last_one() {
    use kcache_queue::{DeltaFifo, Fifo, RealFifo};
    use kcache_store::{DynamicObject, Store};
    let queues: Vec<(&str, Box<dyn Store<DynamicObject>>)> = vec![
        ("fifo", Box::new(Fifo::new())),
        ("delta fifo", Box::new(DeltaFifo::new())),
        ("real fifo", Box::new(RealFifo::new())),
    ];
    for (name, q) in queues {
        q.add(crate::support::obj("a", 5)).unwrap();
        let mut empty = DynamicObject::new(Some("ns"), "b");
        empty.metadata.resource_version = Some(String::new());
        q.add(std::sync::Arc::new(empty)).unwrap();
        q.update(std::sync::Arc::new(DynamicObject::new(Some("ns"), "c")))
            .unwrap();
        assert_eq!(
            q.last_sync_resource_version().as_deref(),
            Some("5"),
            "{name}"
        );
        q.add(crate::support::obj("d", 6)).unwrap();
        assert_eq!(
            q.last_sync_resource_version().as_deref(),
            Some("6"),
            "{name}"
        );
    }
}
