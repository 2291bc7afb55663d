//! Many readers and writers at once: no lost update, no torn index.

use std::sync::Arc;
use std::thread;

use kcache_store::{Cache, DynamicObject, Indexer, Store};

use crate::support::{indexer, obj};

#[test]
fn concurrent_writers_and_readers_agree() {
    const WRITERS: usize = 4;
    const PER_WRITER: usize = 500;
    let cache: Arc<Cache<DynamicObject>> = Arc::new(Cache::with_indexers(indexer("app")));
    cache.add_indexers(indexer("namespace")).unwrap();

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let cache = Arc::clone(&cache);
            thread::spawn(move || {
                let ns = format!("ns{w}");
                for i in 0..PER_WRITER {
                    let name = format!("o{i}");
                    // Each object moves between apps several times, then settles on "final".
                    cache.add(obj(&ns, &name, Some("a"), 1)).unwrap();
                    cache.update(obj(&ns, &name, Some("b"), 2)).unwrap();
                    if i % 3 == 0 {
                        cache.delete(obj(&ns, &name, None, 3)).unwrap();
                    } else {
                        cache.update(obj(&ns, &name, Some("final"), 4)).unwrap();
                    }
                }
            })
        })
        .collect();

    let readers: Vec<_> = (0..3)
        .map(|_| {
            let cache = Arc::clone(&cache);
            thread::spawn(move || {
                for _ in 0..200 {
                    // Within one read, every object under an app value carries that label.
                    for app in ["a", "b", "final"] {
                        for o in cache.by_index("app", app).unwrap() {
                            let labels = o.metadata.labels.as_ref().unwrap();
                            assert_eq!(labels["app"], app, "torn index");
                        }
                    }
                    let _ = cache.list();
                }
            })
        })
        .collect();

    for t in writers.into_iter().chain(readers) {
        t.join().unwrap();
    }

    let survivors = PER_WRITER - PER_WRITER.div_ceil(3);
    assert_eq!(cache.len(), WRITERS * survivors, "no lost update");
    assert_eq!(
        cache.index_keys("app", "final").unwrap().len(),
        WRITERS * survivors
    );
    assert!(cache.index_keys("app", "a").unwrap().is_empty());
    assert!(cache.index_keys("app", "b").unwrap().is_empty());
    for w in 0..WRITERS {
        assert_eq!(
            cache
                .by_index("namespace", &format!("ns{w}"))
                .unwrap()
                .len(),
            survivors
        );
    }
}
