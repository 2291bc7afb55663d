//! What a reflector promises the store it writes to, beyond the writes themselves: listed
//! objects go through the store's own transform once, as they arrive, and the store is told the
//! resource version of every event (`update_resource_version`) and bookmark (`bookmark`).

use std::sync::atomic::Ordering;
use std::time::Duration;

use kcache_reflector::{Reflector, WatchEvent};
use kcache_store::{Object, Store};
use kcache_testing::WatchListSupport;

use crate::support::{Env, pod};

/// As client-go's reflector fills a streaming list's temporary store through the queue's
/// transformer (`TransformingStore`): each initial event is transformed when it arrives, not
/// when the `k8s.io/initial-events-end` bookmark comes, so that the untransformed objects are
/// never all held at once. Here the server never sends the bookmark, and the objects have been
/// transformed while the reflector still waits for it.
#[tokio::test(start_paused = true)]
async fn a_streaming_list_transforms_each_object_as_it_arrives() {
    let env = Env::with_pods_and_store_transform(3);
    env.handle.set_watch_list(WatchListSupport::Ignore);
    let builder = env.builder().idle_timeout(Some(Duration::from_secs(45)));
    env.run(builder, async {
        env.handle.wait_for_watches(1).await;
        kcache_testing::wait_until(Duration::from_secs(10), || {
            env.store.transforms.load(Ordering::SeqCst) == 3
        })
        .await;
        assert_eq!(env.store.len(), 0, "nothing stored before the bookmark");
        assert_eq!(env.handle.list_count(), 0, "still the streaming list");
        assert_eq!(env.store.replaces.load(Ordering::SeqCst), 0);
        assert_eq!(env.store.transformed_replaces.load(Ordering::SeqCst), 0);
    })
    .await;
}

/// The transform runs exactly once for each listed object (client-go's queues apply their
/// transformer once, `TestDeltaFIFOTransformer`/`TestRealFIFO_transformer`), whether the list
/// is streamed or paginated: the reflector transforms as objects arrive and hands the store
/// objects it must not transform again.
#[tokio::test(start_paused = true)]
async fn listed_objects_are_transformed_exactly_once() {
    for streaming in [true, false] {
        let env = Env::with_pods_and_store_transform(2);
        let builder = env.builder().use_watch_list(streaming).page_size(1);
        env.run(builder, async {
            env.handle.wait_for_watches(1).await;
            kcache_testing::wait_until(Duration::from_secs(10), || env.store.len() == 2).await;
        })
        .await;
        for name in ["p1", "p2"] {
            assert_eq!(
                env.store.times_transformed(name),
                1,
                "streaming: {streaming}"
            );
        }
        assert_eq!(env.store.transforms.load(Ordering::SeqCst), 2);
        assert_eq!(env.store.replaces.load(Ordering::SeqCst), 0);
        assert_eq!(env.store.transformed_replaces.load(Ordering::SeqCst), 1);
        assert_eq!(
            env.store.last_sync_resource_version().as_deref(),
            Some("2"),
            "the list's version, though the transform drops the objects'"
        );
    }
}

/// client-go's `ResourceVersionUpdater`: after every event it applies, the reflector tells the
/// store the version it reached, read before any transform. So the store knows how fresh it is
/// even when a transform drops resource versions (as this store's does); the reflector
/// re-watches from the same version. A bookmark is told with `bookmark` alone, which records
/// its version (no second `update_resource_version` for it).
#[tokio::test(start_paused = true)]
async fn the_store_is_told_the_version_of_every_event_and_bookmark() {
    let env = Env::with_pods_and_store_transform(1);
    let reflector: Reflector<_> = env
        .run_classic(async {
            env.handle.wait_for_watches(1).await;
            env.handle.add(pod("p2"));
            let mut p1 = pod("p1");
            p1.metadata.labels = Some([("v".to_owned(), "2".to_owned())].into());
            env.handle.update(p1);
            env.handle.delete(&pod("p2"));
            env.handle.bump_resource_version();
            env.handle.bookmark();
            kcache_testing::wait_until(Duration::from_secs(10), || {
                env.store.last_sync_resource_version().as_deref() == Some("5")
            })
            .await;
        })
        .await;
    assert_eq!(*env.store.told_versions.lock().unwrap(), ["2", "3", "4"]);
    assert_eq!(*env.store.bookmarks.lock().unwrap(), ["5"]);
    assert_eq!(reflector.last_sync_resource_version(), "5");
    let p1 = env.store.get_by_key("ns/p1").unwrap();
    assert_eq!(
        p1.resource_version(),
        None,
        "the store's transform dropped it"
    );
}

/// The versions a watch from resource version "" or "0" starts with are the server's
/// synthetic adds of its whole state, in no order: like the reflector itself, the store is
/// told nothing until the first change that is not such an add.
#[tokio::test(start_paused = true)]
async fn synthetic_adds_of_a_watch_from_any_version_are_not_reported() {
    let env = Env::with_pods_and_store_transform(0);
    env.run_classic(async {
        env.handle.wait_for_watches(1).await;
        env.handle.send_event(&WatchEvent::Added(pod("x")));
        env.handle.add(pod("p1"));
        kcache_testing::wait_until(Duration::from_secs(10), || env.store.len() == 2).await;
    })
    .await;
    let told = env.store.told_versions.lock().unwrap().clone();
    assert!(told.is_empty(), "{told:?}");
}
