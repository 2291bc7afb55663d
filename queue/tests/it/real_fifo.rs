//! `RealFifo`: client-go's `the_real_fifo_test.go` oracles, atomic events and batches.

use std::sync::Arc;

use kcache_queue::{Delta, DeltaType, Deltas, PopError, Queue, RealFifo};
use kcache_store::{Cache, DynamicObject, ObjectKey, Store};

use crate::support::{Seen, nameless, now_or_never, obj, pop, pop_requeue, s, seen, tomb, try_pop};

use DeltaType::{Added, Deleted, Updated};

#[test]
fn every_event_is_one_pop_in_order() {
    let f = RealFifo::new();
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("foo", 12)).unwrap();
    f.delete(obj("foo", 15)).unwrap();
    f.delete(obj("ghost", 16)).unwrap();
    assert_eq!(pop(&f), [s(Added, "foo", 10)]);
    assert_eq!(pop(&f), [s(Updated, "foo", 12)]);
    assert_eq!(pop(&f), [s(Deleted, "foo", 15)]);
    assert_eq!(
        pop(&f),
        [s(Deleted, "ghost", 16)],
        "deletes of unknown keys still pop"
    );
}

fn pop_raw(f: &RealFifo<DynamicObject>) -> Delta<DynamicObject> {
    let mut got = None;
    now_or_never(f.pop(&mut |d: Deltas<DynamicObject>| {
        got = d.into_vec().pop();
        Ok(())
    }))
    .unwrap()
    .unwrap();
    got.unwrap()
}

#[test]
fn replace_is_one_atomic_delta_and_bookmarks_pass_through() {
    let f = RealFifo::new();
    let o = obj("a", 1);
    f.add(Arc::clone(&o)).unwrap();
    f.replace(vec![Arc::clone(&o)], "10").unwrap();
    f.replace(vec![Arc::clone(&o)], "20").unwrap();
    f.bookmark("123");
    f.replace(vec![], "56").unwrap();
    assert_eq!(f.last_sync_resource_version().as_deref(), Some("56"));
    assert!(matches!(pop_raw(&f), Delta::Added(x) if Arc::ptr_eq(&x, &o)));
    match pop_raw(&f) {
        Delta::ReplacedAll {
            objects,
            resource_version,
        } => {
            assert_eq!(resource_version, "10");
            assert!(Arc::ptr_eq(&objects[0], &o));
        }
        other => panic!("expected ReplacedAll, got {other:?}"),
    }
    assert!(
        f.has_synced(),
        "synced once the first ReplacedAll is processed"
    );
    assert!(
        matches!(pop_raw(&f), Delta::ReplacedAll { resource_version, .. } if resource_version == "20")
    );
    assert!(
        matches!(pop_raw(&f), Delta::Bookmark { resource_version } if resource_version == "123")
    );
    assert!(matches!(pop_raw(&f), Delta::ReplacedAll { objects, .. } if objects.is_empty()));
}

#[test]
fn sync_all_is_filled_from_known_objects_when_popped() {
    let cache = Arc::new(Cache::new());
    let f = RealFifo::builder()
        .known_objects(Arc::clone(&cache))
        .build();
    f.resync().unwrap();
    cache.add(obj("a", 1)).unwrap();
    match pop_raw(&f) {
        Delta::SyncAll { objects } => assert_eq!(objects.len(), 1),
        other => panic!("expected SyncAll, got {other:?}"),
    }
    let f = RealFifo::<DynamicObject>::new();
    f.resync().unwrap();
    assert!(matches!(pop_raw(&f), Delta::SyncAll { objects } if objects.is_empty()));
}

/// Pops with `pop_batch(max)` until the queue would wait, recording each batch's deltas and
/// `is_in_initial_list`.
fn drain_batches(f: &RealFifo<DynamicObject>, max: usize) -> Vec<(Vec<Seen>, bool)> {
    let mut batches = Vec::new();
    while now_or_never(f.pop_batch(max, &mut |d: Deltas<DynamicObject>| {
        batches.push((d.iter().map(seen).collect(), d.is_in_initial_list()));
        Ok(())
    }))
    .is_some()
    {}
    batches
}

/// client-go's `RealFIFO.PopBatch` (`the_real_fifo.go`, "only bundle unique items into a
/// batch"): a batch closes before a key it already holds, so a `ProcessBatchFunc` never sees a
/// key twice; the repeated key opens the next batch.
#[test]
fn pop_batch_closes_at_a_key_already_in_the_batch() {
    let f = RealFifo::new();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.update(obj("a", 3)).unwrap();
    f.add(obj("c", 4)).unwrap();
    f.delete(obj("b", 5)).unwrap();
    f.delete(obj("a", 6)).unwrap();
    assert_eq!(
        drain_batches(&f, 10),
        [
            (vec![s(Added, "a", 1), s(Added, "b", 2)], false),
            (
                vec![s(Updated, "a", 3), s(Added, "c", 4), s(Deleted, "b", 5)],
                false
            ),
            (vec![s(Deleted, "a", 6)], false),
        ]
    );
}

/// client-go's `RealFIFO.PopBatch`: a tombstone counts under its key like any other delta of
/// that key (`keyOf` reads a `DeletedFinalStateUnknown`'s key).
#[test]
fn pop_batch_closes_at_a_tombstone_of_a_key_in_the_batch() {
    let f = RealFifo::new();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.delete_key(&ObjectKey::explicit("ns/a")).unwrap();
    assert_eq!(
        drain_batches(&f, 10),
        [
            (vec![s(Added, "a", 1), s(Added, "b", 2)], false),
            (vec![tomb("a", Some(1))], false),
        ]
    );
}

/// client-go's `RealFIFO.PopBatch` (`i >= initialPopulationCount` closes the batch, and
/// `ReplacedAll`/`SyncAll`/`Bookmark` are not batchable): the initial list (everything queued
/// up to and including the first `replace`, here a resync, a bookmark and the relist) pops one
/// atomic delta at a time, each `is_in_initial_list`; the writes after it are never batched
/// with it, and batch together once it is processed.
#[test]
fn pop_batch_never_straddles_the_initial_list() {
    let f = RealFifo::new();
    f.resync().unwrap();
    f.bookmark("1");
    f.replace(vec![obj("a", 1), obj("b", 2)], "2").unwrap();
    f.add(obj("c", 3)).unwrap();
    f.update(obj("a", 4)).unwrap();
    let mut got = Vec::new();
    while now_or_never(f.pop_batch(1000, &mut |d: Deltas<DynamicObject>| {
        got.push((d.len(), d[0].kind(), d.is_in_initial_list(), f.has_synced()));
        Ok(())
    }))
    .is_some()
    {}
    assert_eq!(
        got,
        [
            (1, DeltaType::SyncAll, true, false),
            (1, DeltaType::Bookmark, true, false),
            (1, DeltaType::ReplacedAll, true, false),
            (2, Added, false, true),
        ]
    );
}

/// client-go's `RealFIFO.PopBatch` with a batch of one: `processSingle`, identical to `Pop`.
/// A requeued batch goes back to the head whole, and pops as the same batch again.
#[test]
fn pop_batch_of_one_is_pop_and_a_requeued_batch_pops_again_whole() {
    let f = RealFifo::new();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.update(obj("a", 3)).unwrap();
    assert_eq!(drain_batches(&f, 1).len(), 3, "max 1: one delta per pop");
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.update(obj("a", 3)).unwrap();
    let r = now_or_never(f.pop_batch(10, &mut |d: Deltas<DynamicObject>| {
        assert_eq!(d.len(), 2);
        Err(kcache_queue::ProcessError::requeue(d))
    }));
    assert!(matches!(r, Some(Ok(()))));
    assert_eq!(
        drain_batches(&f, 10),
        [
            (vec![s(Added, "a", 1), s(Added, "b", 2)], false),
            (vec![s(Updated, "a", 3)], false),
        ]
    );
}

/// client-go's `RealFIFO.PopBatch` takes a delta whose key cannot be computed only as the
/// first of a batch (then alone): elsewhere it closes the batch before it. Here such deltas
/// come back through a requeue, which may hand back any deltas.
#[test]
fn pop_batch_pops_a_delta_without_a_key_alone() {
    let f = RealFifo::new();
    f.add(obj("x", 1)).unwrap();
    let r = now_or_never(f.pop(&mut |_: Deltas<DynamicObject>| {
        let back = vec![
            Delta::Added(obj("a", 2)),
            Delta::Added(nameless()),
            Delta::Added(obj("b", 3)),
            Delta::Added(nameless()),
        ];
        Err(kcache_queue::ProcessError::requeue(Deltas::new(
            back, false,
        )))
    }));
    assert!(matches!(r, Some(Ok(()))));
    let sizes: Vec<usize> = drain_batches(&f, 10).iter().map(|(d, _)| d.len()).collect();
    assert_eq!(
        sizes,
        [1, 1, 1, 1],
        "a, the nameless one alone, b, the other alone"
    );
}

/// Every pop of single-object deltas, batched or not, says its deltas are of distinct objects
/// (so a consumer need not compute their keys to find out); an atomic delta, and a
/// `DeltaFifo`'s deltas of one key, do not.
#[test]
fn single_object_pops_are_of_distinct_objects() {
    let f = RealFifo::new();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.update(obj("a", 3)).unwrap();
    f.bookmark("4");
    let mut got = Vec::new();
    while now_or_never(f.pop_batch(10, &mut |d: Deltas<DynamicObject>| {
        got.push((d.len(), d.of_distinct_objects()));
        Ok(())
    }))
    .is_some()
    {}
    assert_eq!(got, [(2, true), (1, true), (1, false)]);

    let fifo = kcache_queue::DeltaFifo::new();
    fifo.add(obj("a", 1)).unwrap();
    let mut distinct = None;
    now_or_never(fifo.pop(&mut |d: Deltas<DynamicObject>| {
        distinct = Some(d.of_distinct_objects());
        Ok(())
    }))
    .unwrap()
    .unwrap();
    assert_eq!(distinct, Some(false));
}

#[test]
fn pop_batch_stops_at_atomic_deltas_and_the_initial_boundary() {
    let f = RealFifo::new();
    // A bookmark does not populate the queue: the initial list is the bookmark and the relist.
    f.bookmark("1");
    f.replace(vec![obj("a", 1)], "2").unwrap();
    f.add(obj("b", 3)).unwrap();
    f.update(obj("b", 4)).unwrap();
    f.add(obj("c", 5)).unwrap();
    f.bookmark("6");
    let mut sizes = Vec::new();
    loop {
        let r = now_or_never(f.pop_batch(10, &mut |d: Deltas<DynamicObject>| {
            sizes.push((d.len(), d[0].kind(), d.is_in_initial_list()));
            Ok(())
        }));
        if r.is_none() {
            break;
        }
    }
    assert_eq!(
        sizes,
        [
            (1, DeltaType::Bookmark, true),
            (1, DeltaType::ReplacedAll, true),
            // `b` twice: the batch closes before its second delta.
            (1, Added, false),
            (2, DeltaType::Updated, false),
            (1, DeltaType::Bookmark, false)
        ]
    );
}

#[test]
fn requeue_goes_back_to_the_head() {
    let f = RealFifo::new();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    assert_eq!(pop_requeue(&f), [s(Added, "a", 1)]);
    assert_eq!(pop(&f), [s(Added, "a", 1)]);
    assert_eq!(pop(&f), [s(Added, "b", 2)]);
}

#[test]
fn key_errors_and_close() {
    let f = RealFifo::new();
    assert!(f.add(nameless()).is_err());
    assert!(f.replace(vec![nameless()], "1").is_err());
    assert!(f.is_empty());
    f.add(obj("a", 1)).unwrap();
    f.close();
    pop(&f);
    assert!(matches!(try_pop(&f), Some(Err(PopError::Closed))));
}

#[test]
fn delete_key_queues_a_tombstone_with_the_last_known_state() {
    use kcache_store::ObjectKey;
    let key = |n: &str| ObjectKey::new(Some("ns"), n);
    let cache = Arc::new(Cache::new());
    cache.add(obj("a", 1)).unwrap();
    let f = RealFifo::builder().known_objects(cache).build();
    f.delete_key(&key("a")).unwrap();
    f.delete_key(&key("ghost")).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.delete_key(&key("b")).unwrap();
    f.delete_key(&key("b")).unwrap();
    assert_eq!(pop(&f), [tomb("a", Some(1))]);
    assert_eq!(pop(&f), [s(Added, "b", 2)]);
    assert_eq!(pop(&f), [tomb("b", Some(2))]);
    assert!(
        try_pop(&f).is_none(),
        "unknown keys and repeats queue nothing"
    );
}

#[test]
fn delete_key_reads_the_newest_delta_of_the_key_relists_included() {
    let cache = Arc::new(Cache::new());
    cache.add(obj("held", 1)).unwrap();
    let f = RealFifo::builder()
        .known_objects(Arc::clone(&cache))
        .build();
    // Not yet processed: a relist with `new` (which the cache has never held) and without
    // `held`.
    f.replace(vec![obj("new", 7)], "7").unwrap();
    // `new` must not survive the relist: a tombstone follows it, with its listed state.
    f.delete_key(&ObjectKey::explicit("ns/new")).unwrap();
    // The relist already removes `held`: no second deletion.
    f.delete_key(&ObjectKey::explicit("ns/held")).unwrap();
    // Unknown everywhere: nothing.
    f.delete_key(&ObjectKey::explicit("ns/ghost")).unwrap();
    assert!(matches!(pop_raw(&f), Delta::ReplacedAll { .. }));
    assert_eq!(pop(&f), [tomb("new", Some(7))]);
    assert!(try_pop(&f).is_none(), "nothing else was queued");

    // Single-object deltas: the newest wins; a queued deletion needs no tombstone.
    f.add(obj("a", 8)).unwrap();
    f.delete_key(&ObjectKey::explicit("ns/a")).unwrap();
    f.delete(obj("b", 9)).unwrap();
    f.delete_key(&ObjectKey::explicit("ns/b")).unwrap();
    assert_eq!(pop(&f), [s(Added, "a", 8)]);
    assert_eq!(pop(&f), [tomb("a", Some(8))]);
    assert_eq!(pop(&f), [s(Deleted, "b", 9)]);
    assert!(try_pop(&f).is_none());
}
