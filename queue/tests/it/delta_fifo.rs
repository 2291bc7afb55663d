//! `DeltaFifo`: client-go's scenarios, one rule per test.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use kcache_queue::{DeltaFifo, DeltaType, Deltas, PopError, ProcessError, Queue};
use kcache_store::{Cache, DynamicObject, Store};

use crate::support::{nameless, now_or_never, obj, pop, pop_requeue, s, tomb, try_pop};

use DeltaType::{Added, Deleted, Replaced, Sync, Updated};

fn known(objs: &[(&str, u64)]) -> Arc<Cache<DynamicObject>> {
    let cache = Arc::new(Cache::new());
    for &(n, rv) in objs {
        cache.add(obj(n, rv)).unwrap();
    }
    cache
}

#[test]
fn keys_pop_in_first_enqueue_order_with_all_their_deltas() {
    let f = DeltaFifo::new();
    f.add(obj("foo", 10)).unwrap();
    f.add(obj("bar", 1)).unwrap();
    f.update(obj("foo", 11)).unwrap();
    f.update(obj("foo", 13)).unwrap();
    f.add(obj("zab", 30)).unwrap();
    assert_eq!(
        pop(&f),
        [
            s(Added, "foo", 10),
            s(Updated, "foo", 11),
            s(Updated, "foo", 13)
        ]
    );
    f.add(obj("foo", 14)).unwrap();
    assert_eq!(pop(&f), [s(Added, "bar", 1)]);
    assert_eq!(pop(&f), [s(Added, "zab", 30)]);
    assert_eq!(pop(&f), [s(Added, "foo", 14)]);
    assert!(try_pop(&f).is_none(), "an empty open queue waits");
}

#[test]
fn only_consecutive_deletes_merge_and_the_real_object_wins() {
    let f = DeltaFifo::new();
    f.add(obj("a", 1)).unwrap();
    f.delete(obj("a", 2)).unwrap();
    f.delete(obj("a", 3)).unwrap();
    f.add(obj("a", 4)).unwrap();
    f.delete(obj("a", 5)).unwrap();
    assert_eq!(
        pop(&f),
        [
            s(Added, "a", 1),
            s(Deleted, "a", 2),
            s(Added, "a", 4),
            s(Deleted, "a", 5)
        ]
    );
    // A real delete, then a relist tombstone: the real one stays.
    f.add(obj("b", 1)).unwrap();
    f.delete(obj("b", 2)).unwrap();
    f.replace(vec![], "9").unwrap();
    assert_eq!(pop(&f), [s(Added, "b", 1), s(Deleted, "b", 2)]);
}

#[test]
fn a_tombstone_gives_way_to_a_real_delete() {
    let cache = known(&[("a", 1)]);
    let f = DeltaFifo::builder().known_objects(cache).build();
    f.replace(vec![], "2").unwrap();
    f.delete(obj("a", 3)).unwrap();
    assert_eq!(pop(&f), [s(Deleted, "a", 3)]);
}

#[test]
fn delete_of_an_unknown_key_is_dropped() {
    let f = DeltaFifo::new();
    f.delete(obj("ghost", 1)).unwrap();
    assert!(f.is_empty());
    assert!(f.has_synced(), "a delete populates the queue");

    let f = DeltaFifo::builder()
        .known_objects(known(&[("a", 1)]))
        .build();
    f.delete(obj("ghost", 1)).unwrap();
    assert!(f.is_empty());
    f.delete(obj("a", 2)).unwrap();
    assert_eq!(pop(&f), [s(Deleted, "a", 2)]);
}

#[test]
fn replace_reports_deletions_from_known_objects_and_the_queue() {
    let cache = known(&[("foo", 5), ("bar", 6), ("baz", 7)]);
    let f = DeltaFifo::builder().known_objects(cache).build();
    f.delete(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "11").unwrap();
    assert_eq!(f.list_keys(), ["ns/baz", "ns/foo", "ns/bar"]);
    assert_eq!(pop(&f), [s(Deleted, "baz", 10)]);
    assert_eq!(pop(&f), [s(Sync, "foo", 5)]);
    assert_eq!(pop(&f), [tomb("bar", Some(6))]);
}

#[test]
fn replace_without_known_objects_tombstones_queued_keys() {
    let f = DeltaFifo::builder().emit_delta_type_replaced(true).build();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.replace(vec![obj("b", 3)], "4").unwrap();
    assert_eq!(pop(&f), [s(Added, "a", 1), tomb("a", Some(1))]);
    assert_eq!(pop(&f), [s(Added, "b", 2), s(Replaced, "b", 3)]);
    // A second relist without `a` reports nothing more: it was reported once.
    f.replace(vec![obj("b", 3)], "5").unwrap();
    assert_eq!(pop(&f), [s(Replaced, "b", 3)]);
    assert!(f.is_empty());
}

#[test]
fn resync_skips_queued_keys_and_uses_known_objects() {
    let f = DeltaFifo::new();
    f.add(obj("a", 1)).unwrap();
    f.resync().unwrap();
    assert_eq!(f.len(), 1, "without known objects resync does nothing");

    let f = DeltaFifo::builder()
        .known_objects(known(&[("a", 1), ("b", 2)]))
        .build();
    f.update(obj("a", 3)).unwrap();
    f.resync().unwrap();
    assert_eq!(pop(&f), [s(Updated, "a", 3)]);
    assert_eq!(pop(&f), [s(Sync, "b", 2)]);
}

#[test]
fn transformer_skips_sync_and_tombstones() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let f = DeltaFifo::builder()
        .known_objects(known(&[("k", 1)]))
        .transformer(Arc::new(move |o| {
            counter.fetch_add(1, Ordering::Relaxed);
            o
        }))
        .build();
    f.add(obj("a", 1)).unwrap();
    f.update(obj("a", 2)).unwrap();
    f.delete(obj("ghost", 3)).unwrap(); // dropped: not transformed
    f.delete(obj("a", 4)).unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 3);
    f.replace(vec![obj("b", 5), obj("c", 6)], "7").unwrap(); // + tombstones for a, k
    assert_eq!(calls.load(Ordering::Relaxed), 5);
    while try_pop(&f).is_some() {}
    f.resync().unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 5);
}

#[test]
fn has_synced_waits_until_the_initial_items_are_processed() {
    let f = DeltaFifo::new();
    assert!(!f.has_synced());
    f.replace(vec![obj("a", 1), obj("b", 2)], "3").unwrap();
    assert!(!f.has_synced());
    let (_, initial) = try_pop(&f).unwrap().unwrap();
    assert!(initial);
    assert!(!f.has_synced());
    let mut during = None;
    now_or_never(f.pop(&mut |d: Deltas<DynamicObject>| {
        assert!(d.is_in_initial_list());
        during = Some(f.has_synced());
        Ok(())
    }))
    .unwrap()
    .unwrap();
    assert_eq!(
        during,
        Some(false),
        "not synced while the last item is processed"
    );
    assert!(f.has_synced());
    f.add(obj("c", 4)).unwrap();
    assert!(!try_pop(&f).unwrap().unwrap().1);

    let f = DeltaFifo::<DynamicObject>::new();
    f.replace(vec![], "1").unwrap();
    assert!(f.has_synced(), "an empty first relist syncs at once");

    let f = DeltaFifo::new();
    f.replace(vec![obj("a", 1), obj("a", 2)], "3").unwrap();
    pop(&f);
    assert!(f.has_synced(), "distinct keys count");

    let f = DeltaFifo::new();
    f.add(obj("a", 1)).unwrap();
    assert!(f.has_synced(), "an add first syncs at once");
}

#[test]
fn a_requeued_initial_item_keeps_the_queue_unsynced() {
    let f = DeltaFifo::new();
    f.replace(vec![obj("a", 1), obj("b", 2)], "3").unwrap();
    assert_eq!(pop_requeue(&f), [s(Sync, "a", 1)]);
    assert_eq!(f.list_keys(), ["ns/b", "ns/a"], "requeued at the tail");
    pop(&f);
    assert!(!f.has_synced());
    assert_eq!(pop(&f), [s(Sync, "a", 1)]);
    assert!(f.has_synced());
}

#[test]
fn a_failed_process_drops_the_item_and_reports() {
    let f = DeltaFifo::new();
    f.add(obj("a", 1)).unwrap();
    let r = now_or_never(f.pop(&mut |_: Deltas<DynamicObject>| Err(ProcessError::failed("boom"))))
        .unwrap();
    assert!(matches!(r, Err(PopError::Process(e)) if e.to_string() == "boom"));
    assert!(f.is_empty());
}

#[test]
fn key_errors_leave_the_queue_unchanged() {
    let f = DeltaFifo::new();
    assert!(f.add(nameless()).is_err());
    assert!(!f.has_synced());
    f.add(obj("a", 1)).unwrap();
    let err = f.replace(vec![obj("b", 2), nameless()], "3").unwrap_err();
    assert!(matches!(err, kcache_store::Error::Key(_)));
    assert_eq!(f.list_keys(), ["ns/a"]);
    assert_eq!(pop(&f), [s(Added, "a", 1)]);
}

#[test]
fn pop_drains_after_close_then_reports_closed() {
    let f = DeltaFifo::new();
    f.add(obj("a", 1)).unwrap();
    f.close();
    assert!(f.is_closed());
    assert_eq!(pop(&f), [s(Added, "a", 1)]);
    assert!(matches!(try_pop(&f), Some(Err(PopError::Closed))));
}

#[test]
fn popping_never_copies_an_object() {
    let cache = known(&[]);
    let f = DeltaFifo::builder()
        .known_objects(Arc::clone(&cache))
        .build();
    let a = obj("a", 1);
    f.add(Arc::clone(&a)).unwrap();
    assert!(Arc::ptr_eq(&f.get_by_key("ns/a").unwrap(), &a));
    now_or_never(f.pop(&mut |d: Deltas<DynamicObject>| {
        assert!(Arc::ptr_eq(d[0].object().unwrap(), &a));
        Ok(())
    }))
    .unwrap()
    .unwrap();
}

#[test]
fn an_indexer_trait_object_serves_as_known_objects() {
    let idx: Arc<dyn kcache_store::Indexer<DynamicObject>> = known(&[("a", 1)]);
    let f = DeltaFifo::builder().known_objects(idx).build();
    f.resync().unwrap();
    assert_eq!(pop(&f), [s(Sync, "a", 1)]);
}

#[test]
fn delete_key_queues_a_tombstone_with_the_last_known_state() {
    use kcache_store::ObjectKey;
    let key = |n: &str| ObjectKey::new(Some("ns"), n);
    let f = DeltaFifo::builder()
        .known_objects(known(&[("a", 1)]))
        .build();
    f.delete_key(&key("a")).unwrap();
    f.delete_key(&key("ghost")).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.delete_key(&key("b")).unwrap();
    f.delete_key(&key("b")).unwrap();
    assert_eq!(pop(&f), [tomb("a", Some(1))]);
    assert_eq!(
        pop(&f),
        [s(Added, "b", 2), tomb("b", Some(2))],
        "one tombstone, after the queued add, with its state"
    );
    assert!(f.is_empty(), "unknown keys queue nothing");
}
