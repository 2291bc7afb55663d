//! An informer's metrics, recorded with `metrics-util`'s `DebuggingRecorder`: its cache size,
//! the events it distributes, each handler's buffer depth and panics, and its reflector's and
//! queue's metrics under the same `name`. The recorder is installed on the test's thread; the
//! informer runs there on a current-thread runtime (`RunMode::CallersTask`). Handler threads
//! update handles registered on the test's thread, so what they record is seen too.
#![expect(
    clippy::float_cmp,
    reason = "the gauges hold whole numbers, which an f64 holds exactly"
)]

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use kcache_informer::metrics::{
    CACHE_OBJECTS, EVENT_LABEL, EVENTS_DISTRIBUTED_TOTAL, HANDLER_BUFFER_DEPTH, HANDLER_LABEL,
    HANDLER_PANICS_TOTAL, NAME_LABEL, queue, reflector,
};
use kcache_informer::{HandlerFuncs, QueueKind, RunMode, SharedIndexInformer};
use kcache_store::DynamicObject;
use kcache_testing::FakeListerWatcher;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use tokio_util::sync::CancellationToken;

use crate::support::{Gate, eventually, pod};

/// What was recorded: (metric name, its labels sorted) -> value.
struct Recorded(HashMap<(String, Vec<(String, String)>), DebugValue>);

impl Recorded {
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<&DebugValue> {
        let mut labels: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        labels.sort();
        self.0.get(&(name.to_owned(), labels))
    }

    #[track_caller]
    fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        match self.get(name, labels) {
            Some(DebugValue::Counter(n)) => *n,
            other => panic!("{name}{labels:?}: {other:?} in {:?}", self.0.keys()),
        }
    }

    #[track_caller]
    fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        match self.get(name, labels) {
            Some(DebugValue::Gauge(v)) => v.0,
            other => panic!("{name}{labels:?}: {other:?} in {:?}", self.0.keys()),
        }
    }
}

impl Recorded {
    /// What `snapshotter`'s recorder holds now (a snapshot resets what it reads: take one).
    fn take(snapshotter: &Snapshotter) -> Self {
        Self(
            snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .map(|(key, _, _, value)| {
                    let key = key.key();
                    let mut labels: Vec<(String, String)> = key
                        .labels()
                        .map(|l| (l.key().to_owned(), l.value().to_owned()))
                        .collect();
                    labels.sort();
                    ((key.name().to_owned(), labels), value)
                })
                .collect(),
        )
    }
}

/// Runs `test` on a current-thread runtime with a fresh `DebuggingRecorder` installed on this
/// thread, handing it the recorder's snapshotter.
fn recorded<F: Future>(test: impl FnOnce(Snapshotter) -> F) -> F::Output {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || runtime.block_on(test(snapshotter)))
}

const PODS: (&str, &str) = (NAME_LABEL, "pods");

/// An informer named `pods` over a fake holding `names`, run on the caller's task.
fn pods(
    names: &[&str],
    queue: QueueKind,
) -> (
    kcache_testing::FakeHandle<DynamicObject>,
    SharedIndexInformer<DynamicObject>,
) {
    let fake = FakeListerWatcher::<DynamicObject>::new();
    let handle = fake.handle();
    for name in names {
        handle.add(pod("ns", name));
    }
    let informer = SharedIndexInformer::builder(Arc::new(fake))
        .name("pods")
        .queue(queue)
        .run_mode(RunMode::CallersTask)
        .build();
    (handle, informer)
}

/// A handler stuck on its first event: everything the informer hands it waits in its buffer,
/// the one being handled included, and the gauge says so as soon as the informer has synced
/// (the processing pushed the events before it marked the informer synced). The cache size,
/// the events distributed and the reflector's and queue's metrics carry the informer's name.
#[test]
fn a_stuck_handler_s_buffer_depth_and_the_cache_size() {
    let got = recorded(|snapshotter| async move {
        let (_fake, informer) = pods(&["a", "b", "c"], QueueKind::RealFifo);
        let gate = Gate::default();
        let stuck = gate.clone();
        let registration = informer
            .add_event_handler(
                HandlerFuncs::new()
                    .named("stuck")
                    .on_added(move |_: &Arc<DynamicObject>, _| stuck.wait()),
            )
            .unwrap();
        let cancel = CancellationToken::new();
        let (run, got) = tokio::join!(informer.run(cancel.clone()), async {
            assert!(informer.synced().await);
            assert_eq!(registration.buffer_depth(), 3);
            let got = Recorded::take(&snapshotter);
            gate.open();
            cancel.cancel();
            got
        });
        run.unwrap();
        got
    });
    let handler = [PODS, (HANDLER_LABEL, "stuck")];
    assert_eq!(got.gauge(HANDLER_BUFFER_DEPTH, &handler), 3.0);
    assert_eq!(got.gauge(CACHE_OBJECTS, &[PODS]), 3.0);
    assert_eq!(
        got.counter(EVENTS_DISTRIBUTED_TOTAL, &[PODS, (EVENT_LABEL, "add")]),
        3
    );
    assert_eq!(
        got.counter(EVENTS_DISTRIBUTED_TOTAL, &[PODS, (EVENT_LABEL, "delete")]),
        0
    );
    assert_eq!(got.counter(HANDLER_PANICS_TOTAL, &handler), 0);
    assert_eq!(got.counter(reflector::LISTS_TOTAL, &[PODS]), 1);
    assert_eq!(got.counter(reflector::WATCHES_TOTAL, &[PODS]), 1);
    assert_eq!(got.gauge(reflector::LAST_RESOURCE_VERSION, &[PODS]), 3.0);
    // One `ReplacedAll`, popped.
    assert_eq!(got.counter(queue::ADDS_TOTAL, &[PODS]), 1);
    assert_eq!(got.gauge(queue::DEPTH, &[PODS]), 0.0);
}

/// A handler that panics: each panic is counted on its handler's label; the event counts as
/// delivered, so the depth goes back to 0 and the registration syncs.
#[test]
fn handler_panics_are_counted() {
    let got = recorded(|snapshotter| async move {
        let (_fake, informer) = pods(&["a"], QueueKind::RealFifo);
        let registration = informer
            .add_event_handler(
                HandlerFuncs::new()
                    .named("panicky")
                    .on_added(|_: &Arc<DynamicObject>, _| panic!("bad add")),
            )
            .unwrap();
        let cancel = CancellationToken::new();
        let (run, ()) = tokio::join!(informer.run(cancel.clone()), async {
            assert!(registration.synced().await);
            cancel.cancel();
        });
        run.unwrap();
        Recorded::take(&snapshotter)
    });
    let handler = [PODS, (HANDLER_LABEL, "panicky")];
    assert_eq!(got.counter(HANDLER_PANICS_TOTAL, &handler), 1);
    assert_eq!(got.gauge(HANDLER_BUFFER_DEPTH, &handler), 0.0);
}

/// With a `DeltaFifo`: a deletion after the sync shrinks the cache and is a delete event;
/// the queue counted each listed object and the deletion.
#[test]
fn a_deletion_shrinks_the_cache_gauge() {
    let got = recorded(|snapshotter| async move {
        let (fake, informer) = pods(&["a", "b"], QueueKind::DeltaFifo);
        let cancel = CancellationToken::new();
        let (run, ()) = tokio::join!(informer.run(cancel.clone()), async {
            assert!(informer.synced().await);
            fake.delete(&pod("ns", "a"));
            eventually("the deletion", || informer.indexer().len() == 1).await;
            cancel.cancel();
        });
        run.unwrap();
        Recorded::take(&snapshotter)
    });
    assert_eq!(got.gauge(CACHE_OBJECTS, &[PODS]), 1.0);
    assert_eq!(
        got.counter(EVENTS_DISTRIBUTED_TOTAL, &[PODS, (EVENT_LABEL, "add")]),
        2
    );
    assert_eq!(
        got.counter(EVENTS_DISTRIBUTED_TOTAL, &[PODS, (EVENT_LABEL, "delete")]),
        1
    );
    assert_eq!(got.counter(queue::ADDS_TOTAL, &[PODS]), 3);
}

/// The informer's name defaults to what its lister-watcher serves; the fake serves none, so
/// it is `informer`.
#[tokio::test(flavor = "current_thread")]
async fn without_a_recorder_or_a_name_nothing_changes() {
    let fake = FakeListerWatcher::<DynamicObject>::new();
    fake.handle().add(pod("ns", "a"));
    let informer = SharedIndexInformer::builder(Arc::new(fake)).build();
    assert_eq!(informer.name(), "informer");
    let registration = informer.add_event_handler(HandlerFuncs::new()).unwrap();
    let cancel = CancellationToken::new();
    let (run, ()) = tokio::join!(informer.run(cancel.clone()), async {
        assert!(registration.synced().await);
        cancel.cancel();
    });
    run.unwrap();
    assert_eq!(informer.indexer().len(), 1);
}
