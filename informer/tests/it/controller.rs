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

/// A controller config over a `RealFifo` whose process function counts the deltas it is given.
fn counting(
    lw: Arc<dyn kcache_reflector::ListerWatcher<DynamicObject>>,
) -> (ControllerConfig<DynamicObject>, Arc<AtomicUsize>) {
    let queue: Arc<dyn Queue<DynamicObject>> = Arc::new(RealFifo::builder().build());
    let processed = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&processed);
    let config = ControllerConfig::new(
        queue,
        lw,
        Arc::new(move |deltas: kcache_queue::Deltas<DynamicObject>| {
            count.fetch_add(deltas.len(), Ordering::SeqCst);
            Ok(())
        }),
    );
    (config, processed)
}

#[tokio::test]
async fn after_batch_follows_every_processed_batch() {
    let fake = FakeListerWatcher::<DynamicObject>::new();
    let handle = fake.handle();
    handle.add(pod("ns", "first"));
    // Deltas processed: the initial list is one ReplacedAll, then one Added per object.
    let (mut config, processed) = counting(Arc::new(fake));
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

/// A server busy with changes: its list (or streaming list) of `initial` objects has `updates`
/// changes queued right behind it, all ready at once. Counts the watch items the reflector has
/// taken from the stream.
struct Busy {
    initial: usize,
    updates: usize,
    pulled: Arc<AtomicUsize>,
}

impl Busy {
    fn objects(&self, rv: usize) -> impl Iterator<Item = DynamicObject> + use<> {
        (0..self.initial).map(move |i| {
            let mut o = pod("ns", &format!("p{i}"));
            o.metadata.resource_version = Some(rv.to_string());
            o
        })
    }
}

#[async_trait::async_trait]
impl kcache_reflector::ListerWatcher<DynamicObject> for Busy {
    async fn list(
        &self,
        _: &kcache_reflector::ListOptions,
    ) -> Result<kcache_reflector::ObjectList<DynamicObject>, kcache_reflector::Error> {
        Ok(kcache_reflector::ObjectList::new(
            self.objects(1).collect(),
            "1",
        ))
    }

    async fn watch(
        &self,
        opts: &kcache_reflector::ListOptions,
    ) -> Result<kcache_reflector::WatchStream<DynamicObject>, kcache_reflector::Error> {
        use kcache_reflector::{Bookmark, WatchEvent};
        let mut events = Vec::new();
        if opts.send_initial_events == Some(true) {
            events.extend(self.objects(1).map(WatchEvent::Added));
            events.push(WatchEvent::Bookmark(Bookmark::initial_events_end("1")));
        }
        let initial = self.initial;
        events.extend((0..self.updates).map(|n| {
            let mut o = pod("ns", &format!("p{}", n % initial));
            o.metadata.resource_version = Some((n + 2).to_string());
            WatchEvent::Modified(o)
        }));
        let pulled = Arc::clone(&self.pulled);
        // Every item ready at once, as from a socket full of data; then the watch stays open.
        let ready = futures_util::StreamExt::map(futures_util::stream::iter(events), move |e| {
            pulled.fetch_add(1, Ordering::SeqCst);
            Ok(e)
        });
        Ok(Box::pin(futures_util::StreamExt::chain(
            ready,
            futures_util::stream::pending(),
        )))
    }

    fn supports_streaming_lists(&self) -> bool {
        true
    }
}

/// The informer's sync is never delayed by changes queued behind its initial list: the
/// reflector reads none of them before the listed objects have been processed, in either
/// list mode, and they all follow in order.
#[tokio::test]
async fn changes_queued_behind_the_initial_list_wait_for_the_sync() {
    for streaming in [true, false] {
        let pulled = Arc::new(AtomicUsize::new(0));
        let busy = Busy {
            initial: 300,
            updates: 3000,
            pulled: Arc::clone(&pulled),
        };
        let (mut config, processed) = counting(Arc::new(busy));
        config.reflector_options = Some(Box::new(move |b| b.use_watch_list(streaming)));
        // What the reflector had taken from the watch when the controller synced.
        let at_sync = Arc::new(Mutex::new(None));
        let (record, from) = (Arc::clone(&at_sync), Arc::clone(&pulled));
        config.on_synced = Some(Arc::new(move || {
            *record.lock().unwrap() = Some(from.load(Ordering::SeqCst));
        }));
        let controller = Arc::new(Controller::new(config));
        let cancel = CancellationToken::new();
        let run = tokio::spawn({
            let (controller, cancel) = (Arc::clone(&controller), cancel.clone());
            async move { controller.run(cancel).await }
        });
        eventually("every change processed", || {
            // The replace (one `ReplacedAll` delta), then one per change.
            processed.load(Ordering::SeqCst) == 1 + 3000
        })
        .await;
        cancel.cancel();
        run.await.unwrap();
        let initial_items = if streaming { 300 + 1 } else { 0 };
        assert_eq!(
            *at_sync.lock().unwrap(),
            Some(initial_items),
            "streaming: {streaming}: the watch items read before the sync"
        );
    }
}

/// The wait for the first sync is bounded: a controller whose process loop does not run still
/// reads its watch after [`FIRST_SYNC_WAIT`].
#[tokio::test(start_paused = true)]
async fn the_wait_for_the_first_sync_is_bounded() {
    let pulled = Arc::new(AtomicUsize::new(0));
    let busy = Busy {
        initial: 3,
        updates: 5,
        pulled: Arc::clone(&pulled),
    };
    let queue: Arc<dyn Queue<DynamicObject>> = Arc::new(RealFifo::builder().build());
    let config = ControllerConfig::new(queue, Arc::new(busy), Arc::new(|_| Ok(())));
    let controller = Arc::new(Controller::new(config));
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (controller, cancel) = (Arc::clone(&controller), cancel.clone());
        async move { controller.run_reflector(cancel).await }
    });
    let almost = kcache_informer::FIRST_SYNC_WAIT
        .checked_sub(std::time::Duration::from_millis(1))
        .unwrap();
    tokio::time::sleep(almost).await;
    assert_eq!(pulled.load(Ordering::SeqCst), 3 + 1, "waiting");
    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    assert_eq!(
        pulled.load(Ordering::SeqCst),
        3 + 1 + 5,
        "read after the bound"
    );
    cancel.cancel();
    run.await.unwrap();
}
