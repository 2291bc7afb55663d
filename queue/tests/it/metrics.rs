//! The queues' metrics: a named queue records its depth and the deltas it queues (client-go:
//! "metrics exist only if Name != \"\""); an unnamed one records nothing. Recorded with
//! `metrics-util`'s `DebuggingRecorder`, installed on the test's thread.

use std::collections::HashMap;
use std::sync::Arc;

use kcache_queue::metrics::{ADDS_TOTAL, DEPTH, NAME_LABEL};
use kcache_queue::{DeltaFifo, Fifo, RealFifo};
use kcache_store::{DynamicObject, Store};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

use crate::support::{obj, pop, pop_requeue};

/// What `f` recorded: (metric name, its `name` label) -> value. `f` runs with a fresh
/// `DebuggingRecorder` installed on this thread.
fn recorded(f: impl FnOnce()) -> HashMap<(String, String), DebugValue> {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, f);
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let labels: Vec<(&str, &str)> = key.labels().map(|l| (l.key(), l.value())).collect();
            assert_eq!(labels.len(), 1, "{key:?}");
            assert_eq!(labels[0].0, NAME_LABEL);
            ((key.name().to_owned(), labels[0].1.to_owned()), value)
        })
        .collect()
}

/// The depth gauge and the adds counter of queue `name`.
fn depth_and_adds(got: &HashMap<(String, String), DebugValue>, name: &str) -> (f64, u64) {
    let depth = match got.get(&(DEPTH.to_owned(), name.to_owned())) {
        Some(DebugValue::Gauge(v)) => v.0,
        other => panic!("no depth gauge for {name}: {other:?}"),
    };
    let adds = match got.get(&(ADDS_TOTAL.to_owned(), name.to_owned())) {
        Some(DebugValue::Counter(n)) => *n,
        other => panic!("no adds counter for {name}: {other:?}"),
    };
    (depth, adds)
}

#[test]
fn a_named_real_fifo_records_its_depth_and_every_queued_delta() {
    let got = recorded(|| {
        let fifo = RealFifo::<DynamicObject>::builder().name("pods").build();
        assert_eq!(fifo.name(), Some("pods"));
        fifo.add(obj("a", 1)).unwrap();
        fifo.update(obj("a", 2)).unwrap();
        fifo.bookmark("3");
        // A relist is one delta, however many objects it holds.
        fifo.replace(vec![obj("a", 2), obj("b", 4)], "4").unwrap();
        pop(&fifo);
        // A requeued delta goes back without being counted again.
        pop_requeue(&fifo);
        assert_eq!(fifo.len(), 3);
    });
    assert_eq!(depth_and_adds(&got, "pods"), (3.0, 4));
    assert_eq!(got.len(), 2, "{got:?}");
}

#[test]
fn a_named_delta_fifo_counts_deltas_and_keys() {
    let got = recorded(|| {
        let fifo = DeltaFifo::<DynamicObject>::builder().name("pods").build();
        fifo.add(obj("a", 1)).unwrap();
        fifo.update(obj("a", 2)).unwrap();
        fifo.add(obj("b", 3)).unwrap();
        // A delete of a key neither queued nor known is dropped: nothing queued.
        fifo.delete(obj("c", 4)).unwrap();
        assert_eq!(pop(&fifo).len(), 2, "a's two deltas");
        // A relist: one delta per listed object, one tombstone for queued b it lacks.
        fifo.replace(vec![obj("d", 5)], "5").unwrap();
        assert_eq!(fifo.len(), 2);
    });
    assert_eq!(depth_and_adds(&got, "pods"), (2.0, 5));
}

#[test]
fn a_named_fifo_counts_writes_and_keys() {
    let got = recorded(|| {
        let fifo = Fifo::<DynamicObject>::builder().name("nodes").build();
        fifo.add(obj("a", 1)).unwrap();
        fifo.update(obj("a", 2)).unwrap();
        fifo.add(obj("b", 3)).unwrap();
        fifo.delete(obj("a", 4)).unwrap();
        pop(&fifo);
        fifo.replace(vec![obj("c", 5), obj("d", 6)], "6").unwrap();
        assert_eq!(fifo.len(), 2);
    });
    assert_eq!(depth_and_adds(&got, "nodes"), (2.0, 5));
}

/// client-go: no name, no metrics. An empty name is no name.
#[test]
fn unnamed_queues_record_nothing() {
    let got = recorded(|| {
        let real = RealFifo::<DynamicObject>::new();
        let delta = DeltaFifo::<DynamicObject>::builder().name("").build();
        let fifo = Fifo::<DynamicObject>::new();
        assert_eq!(delta.name(), None);
        let queues: [&dyn Store<DynamicObject>; 3] = [&real, &delta, &fifo];
        for q in queues {
            q.add(obj("a", 1)).unwrap();
        }
        pop(&real);
    });
    assert!(got.is_empty(), "{got:?}");
}

/// Without any recorder installed a named queue works as any other.
#[test]
fn named_queues_work_without_a_recorder() {
    let fifo = Arc::new(RealFifo::<DynamicObject>::builder().name("pods").build());
    fifo.add(obj("a", 1)).unwrap();
    assert_eq!(pop(&*fifo).len(), 1);
    assert!(fifo.is_empty());
}
