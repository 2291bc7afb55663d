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

/// client-go's work-queue metrics (`TestMetrics`, with a paused clock instead of a fake one): a
/// named work queue counts the keys it queues (not an add of a waiting key), times how long
/// each waited and was processed, counts `add_after` calls as retries, and sums the keys in
/// flight (every 500 ms, from `in_flight_metrics`); an unnamed one records nothing.
#[tokio::test(flavor = "current_thread", start_paused = true)]
#[expect(clippy::float_cmp, reason = "times from a paused clock are exact")]
async fn a_named_work_queue_records_client_gos_work_queue_metrics() {
    use std::time::Duration;

    use kcache_queue::WorkQueue;
    use kcache_queue::metrics::{
        WORKQUEUE_ADDS_TOTAL, WORKQUEUE_DEPTH, WORKQUEUE_LONGEST_RUNNING_PROCESSOR_SECONDS,
        WORKQUEUE_QUEUE_DURATION_SECONDS, WORKQUEUE_RETRIES_TOTAL,
        WORKQUEUE_UNFINISHED_WORK_SECONDS, WORKQUEUE_WORK_DURATION_SECONDS,
    };

    let ms = |n: u64| Duration::from_millis(n).as_secs_f64();
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let guard = metrics::set_default_local_recorder(&recorder);
    let queue = WorkQueue::<String>::builder().name("deployments").build();
    tokio::spawn(queue.in_flight_metrics());
    let unnamed = WorkQueue::<String>::new();
    unnamed.add("x".to_owned());
    queue.add("a".to_owned());
    queue.add("b".to_owned());
    queue.add("b".to_owned());
    // Sleeps, not `advance`: the clock stops at each of the queue task's ticks (0, 500 ms, ...)
    // and lets it run there.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let a = queue.get().await.unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let b = queue.get().await.unwrap(); // waited 650 ms; a has run 600 ms

    // A snapshot hands over the counts and samples recorded since the last one.
    let got = named_values(&snapshotter);
    assert!(
        matches!(got[WORKQUEUE_ADDS_TOTAL], DebugValue::Counter(2)),
        "{got:?}"
    );
    assert_eq!(
        histogram(&got, WORKQUEUE_QUEUE_DURATION_SECONDS),
        [ms(50), ms(650)]
    );
    // Summed by the queue's task at 500 ms, when a had run 450 ms and b was still waiting.
    assert_eq!(gauge(&got, WORKQUEUE_UNFINISHED_WORK_SECONDS), ms(450));
    assert_eq!(
        gauge(&got, WORKQUEUE_LONGEST_RUNNING_PROCESSOR_SECONDS),
        ms(450)
    );

    tokio::time::advance(Duration::from_millis(25)).await;
    queue.done(&a);
    queue.done(&b);
    queue.add_after("c".to_owned(), Duration::from_secs(1));
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(queue.get().await.as_deref(), Some("c"));
    drop(guard);

    let got = named_values(&snapshotter);
    assert!(
        matches!(got[WORKQUEUE_ADDS_TOTAL], DebugValue::Counter(1)),
        "{got:?}"
    );
    assert!(
        matches!(got[WORKQUEUE_RETRIES_TOTAL], DebugValue::Counter(1)),
        "{got:?}"
    );
    assert_eq!(gauge(&got, WORKQUEUE_DEPTH), 0.0);
    assert_eq!(histogram(&got, WORKQUEUE_QUEUE_DURATION_SECONDS), [0.0]);
    assert_eq!(
        histogram(&got, WORKQUEUE_WORK_DURATION_SECONDS),
        [ms(625), ms(25)]
    );
}

/// The in-flight gauges exist for the moment every worker is stuck: with no queue operation at
/// all, `in_flight_metrics` keeps recomputing them every 500 ms (client-go's
/// `updateUnfinishedWorkLoop`). They freeze once the queue shuts down, `done` included.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_in_flight_gauges_rise_while_every_worker_is_stuck() {
    use std::time::Duration;

    use kcache_queue::WorkQueue;
    use kcache_queue::metrics::{
        WORKQUEUE_LONGEST_RUNNING_PROCESSOR_SECONDS, WORKQUEUE_UNFINISHED_WORK_SECONDS,
    };

    let in_flight = |snapshotter: &metrics_util::debugging::Snapshotter| {
        let got = named_values(snapshotter);
        (
            gauge(&got, WORKQUEUE_UNFINISHED_WORK_SECONDS),
            gauge(&got, WORKQUEUE_LONGEST_RUNNING_PROCESSOR_SECONDS),
        )
    };
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _guard = metrics::set_default_local_recorder(&recorder);
    let queue = WorkQueue::<String>::builder().name("deployments").build();
    tokio::spawn(queue.in_flight_metrics());
    queue.add("a".to_owned());
    let a = queue.get().await.unwrap();

    // Taken and never done, and nothing else happens: the task's ticks at 500 ms and 1 s.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (unfinished, longest) = in_flight(&snapshotter);
    assert!(
        unfinished >= 1.0 && longest >= 1.0,
        "{unfinished} {longest}"
    );

    // A second worker stuck from 1.5 s; at the 2.5 s tick a is 2.5 s old and b 1 s.
    queue.add("b".to_owned());
    let _b = queue.get().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1250)).await;
    assert_eq!(in_flight(&snapshotter), (3.5, 2.5));

    // Shut down: frozen through later ticks and a `done`. (A snapshot zeroes the gauges it
    // reads: zeros now mean nothing was recorded since the last one.)
    queue.shut_down();
    tokio::time::sleep(Duration::from_secs(2)).await;
    queue.done(&a);
    assert_eq!(in_flight(&snapshotter), (0.0, 0.0));
}

/// A named queue whose `in_flight_metrics` nobody runs: its operations recompute the in-flight
/// gauges instead (here as b is handed out, a having run at least 5 ms).
#[test]
fn without_a_runtime_operations_keep_the_in_flight_gauges() {
    use kcache_queue::WorkQueue;
    use kcache_queue::metrics::{
        WORKQUEUE_LONGEST_RUNNING_PROCESSOR_SECONDS, WORKQUEUE_UNFINISHED_WORK_SECONDS,
    };

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let queue = WorkQueue::<String>::builder().name("deployments").build();
        queue.add("a".to_owned());
        queue.add("b".to_owned());
        let _a = queue.try_get().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let _b = queue.try_get().unwrap();
    });
    let got = named_values(&snapshotter);
    assert!(gauge(&got, WORKQUEUE_UNFINISHED_WORK_SECONDS) >= 0.005);
    assert!(gauge(&got, WORKQUEUE_LONGEST_RUNNING_PROCESSOR_SECONDS) >= 0.005);
}

/// client-go's `AddAfter`: every call counts as a retry, a zero delay (an add now) included;
/// once the queue is shutting down a call does nothing, and is not counted.
#[test]
fn add_after_counts_every_retry_until_shutdown() {
    use std::time::Duration;

    use kcache_queue::WorkQueue;
    use kcache_queue::metrics::WORKQUEUE_RETRIES_TOTAL;

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let queue = WorkQueue::<String>::builder().name("deployments").build();
        queue.add_after("now".to_owned(), Duration::ZERO);
        queue.add_after("later".to_owned(), Duration::from_secs(1));
        assert_eq!((queue.len(), queue.delayed_len()), (1, 1));
        queue.shut_down();
        queue.add_after("now".to_owned(), Duration::ZERO);
        queue.add_after("later".to_owned(), Duration::from_secs(1));
        assert_eq!((queue.len(), queue.delayed_len()), (1, 0));
    });
    let got = named_values(&snapshotter);
    assert!(
        matches!(got[WORKQUEUE_RETRIES_TOTAL], DebugValue::Counter(2)),
        "{got:?}"
    );
}

/// The values a snapshot hands over, by metric name; every metric is labelled `deployments`.
fn named_values(snapshotter: &metrics_util::debugging::Snapshotter) -> HashMap<String, DebugValue> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let labels: Vec<_> = key.key().labels().map(|l| l.value().to_owned()).collect();
            assert_eq!(labels, ["deployments"], "{key:?}");
            (key.key().name().to_owned(), value)
        })
        .collect()
}

/// The samples of histogram `name`.
fn histogram(got: &HashMap<String, DebugValue>, name: &str) -> Vec<f64> {
    match &got[name] {
        DebugValue::Histogram(v) => v.iter().map(|f| f.0).collect(),
        other => panic!("{name}: {other:?}"),
    }
}

/// The value of gauge `name`.
fn gauge(got: &HashMap<String, DebugValue>, name: &str) -> f64 {
    match &got[name] {
        DebugValue::Gauge(g) => g.0,
        other => panic!("{name}: {other:?}"),
    }
}
