//! `Fifo`: the latest object per key.

use kcache_queue::{DeltaType, PopError, Queue};
use kcache_store::{DynamicObject, Store};

use crate::support::{nameless, obj, pop, pop_requeue, s, try_pop};

#[test]
fn keeps_the_latest_object_in_first_enqueue_order() {
    let f = kcache_queue::Fifo::new();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.update(obj("a", 3)).unwrap();
    assert_eq!(f.list_keys(), ["ns/a", "ns/b"]);
    assert_eq!(pop(&f), [s(DeltaType::Updated, "a", 3)]);
    assert_eq!(pop(&f), [s(DeltaType::Added, "b", 2)]);
}

#[test]
fn delete_forgets_and_replace_swaps_the_content() {
    let f = kcache_queue::Fifo::new();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.delete(obj("a", 3)).unwrap();
    f.add(obj("a", 4)).unwrap();
    assert_eq!(f.list_keys(), ["ns/b", "ns/a"]);
    f.replace(vec![obj("c", 5), obj("b", 6), obj("c", 7)], "8")
        .unwrap();
    assert_eq!(f.list_keys(), ["ns/c", "ns/b"]);
    assert_eq!(pop(&f), [s(DeltaType::Replaced, "c", 7)]);
    assert!(f.add(nameless()).is_err());
}

#[test]
fn requeue_close_and_sync() {
    let f = kcache_queue::Fifo::<DynamicObject>::new();
    f.replace(vec![obj("a", 1), obj("b", 2)], "3").unwrap();
    pop_requeue(&f);
    assert_eq!(f.list_keys(), ["ns/b", "ns/a"]);
    pop(&f);
    assert!(!f.has_synced());
    f.close();
    pop(&f);
    assert!(f.has_synced());
    assert!(matches!(try_pop(&f), Some(Err(PopError::Closed))));
}
