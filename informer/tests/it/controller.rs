//! `Controller` on its own: a reflector into a queue, popped into a process function, with the
//! `after_batch` hook called after every batch.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use kcache_informer::{Controller, ControllerConfig};
use kcache_queue::{Queue, RealFifo};
use kcache_store::DynamicObject;
use kcache_testing::FakeListerWatcher;
use tokio_util::sync::CancellationToken;

use crate::support::{eventually, pod};

#[tokio::test]
async fn after_batch_follows_every_processed_batch() {
    let fake = FakeListerWatcher::<DynamicObject>::new();
    let handle = fake.handle();
    handle.add(pod("ns", "first"));
    let queue: Arc<dyn Queue<DynamicObject>> = Arc::new(RealFifo::builder().build());
    // Deltas processed: the initial list is one ReplacedAll, then one Added per object.
    let processed = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&processed);
    let mut config = ControllerConfig::new(
        queue,
        Arc::new(fake),
        Arc::new(move |deltas: kcache_queue::Deltas<DynamicObject>| {
            count.fetch_add(deltas.len(), Ordering::SeqCst);
            Ok(())
        }),
    );
    // What had been processed each time the hook ran.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (hook_seen, hook_processed) = (Arc::clone(&seen), Arc::clone(&processed));
    config.after_batch = Some(Arc::new(move || {
        hook_seen
            .lock()
            .unwrap()
            .push(hook_processed.load(Ordering::SeqCst));
    }));
    let controller = Arc::new(Controller::new(config));
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (controller, cancel) = (Arc::clone(&controller), cancel.clone());
        async move { controller.run(cancel).await }
    });
    eventually("the initial list", || controller.has_synced()).await;
    for i in 0..50 {
        handle.add(pod("ns", &format!("p{i}")));
    }
    eventually("every item and a hook after the last", || {
        processed.load(Ordering::SeqCst) >= 51 && seen.lock().unwrap().last() == Some(&51)
    })
    .await;
    cancel.cancel();
    run.await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    assert!(
        seen.first().is_some_and(|n| *n >= 1),
        "never before a pop: {seen:?}"
    );
}
