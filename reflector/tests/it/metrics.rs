//! The reflector's metrics, recorded with `metrics-util`'s `DebuggingRecorder`: lists,
//! relists, watches, errors, events and the last resource version, each labelled with the
//! reflector's name. The recorder is installed on the test's thread and the reflector runs on a
//! current-thread runtime with a paused clock there.
#![expect(
    clippy::float_cmp,
    reason = "the gauges hold whole numbers, which an f64 holds exactly"
)]

use std::collections::HashMap;
use std::future::Future;

use kcache_reflector::Error;
use kcache_reflector::metrics::{
    DECODE_ERRORS_TOTAL, EVENTS_TOTAL, LAST_RESOURCE_VERSION, LIST_DURATION_SECONDS,
    LIST_ERRORS_TOTAL, LISTS_TOTAL, NAME_LABEL, RELISTS_TOTAL, WATCH_ERRORS_TOTAL, WATCHES_TOTAL,
};
use kcache_store::Store;
use kcache_testing::wait_until;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use std::time::Duration;

use crate::support::{Env, drive, pod};

/// What one reflector recorded: metric name -> value, every metric labelled `name="test"`.
struct Recorded(HashMap<String, DebugValue>);

impl Recorded {
    fn counter(&self, name: &str) -> u64 {
        match self.0.get(name) {
            Some(DebugValue::Counter(n)) => *n,
            other => panic!("{name}: {other:?}"),
        }
    }

    fn gauge(&self, name: &str) -> f64 {
        match self.0.get(name) {
            Some(DebugValue::Gauge(v)) => v.0,
            other => panic!("{name}: {other:?}"),
        }
    }

    fn histogram_len(&self, name: &str) -> usize {
        match self.0.get(name) {
            Some(DebugValue::Histogram(v)) => v.len(),
            other => panic!("{name}: {other:?}"),
        }
    }
}

/// A current-thread runtime with a paused clock.
fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

/// Runs `test` on a current-thread runtime with a paused clock, with a fresh
/// `DebuggingRecorder` installed on this thread; its output and what was recorded.
fn recorded<F: Future>(test: impl FnOnce() -> F) -> (F::Output, Recorded) {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = paused_runtime();
    let out = metrics::with_local_recorder(&recorder, || runtime.block_on(test()));
    let values = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let labels: Vec<(&str, &str)> = key.labels().map(|l| (l.key(), l.value())).collect();
            assert_eq!(labels, [(NAME_LABEL, "test")], "{key:?}");
            (key.name().to_owned(), value)
        })
        .collect();
    (out, Recorded(values))
}

/// A list, a watch, a bookmark that moves the resource version on, then a 410 that ends the
/// watch: the reflector relists and watches again.
#[test]
fn a_list_a_watch_a_bookmark_and_a_relist_after_a_410() {
    let (reflector, got) = recorded(|| async {
        let env = Env::with_pods(3);
        let reflector = env
            .run_classic(async {
                env.handle.wait_for_watches(1).await;
                env.handle.bump_resource_version();
                env.handle.bookmark();
                wait_until(Duration::from_secs(5), || {
                    env.store.last_sync_resource_version().as_deref() == Some("4")
                })
                .await;
                env.handle.expire_watches();
                env.handle.wait_for_watches(2).await;
            })
            .await;
        assert_eq!(env.handle.list_count(), 2);
        reflector
    });
    assert_eq!(got.counter(LISTS_TOTAL), 2);
    assert_eq!(got.counter(LIST_ERRORS_TOTAL), 0);
    assert_eq!(got.histogram_len(LIST_DURATION_SECONDS), 2);
    assert_eq!(got.counter(RELISTS_TOTAL), 1);
    assert_eq!(got.counter(WATCHES_TOTAL), 2);
    // The 410 that ended the first watch, as the watch-error hook heard it.
    assert_eq!(got.counter(WATCH_ERRORS_TOTAL), 1);
    assert_eq!(reflector.errors(), 1);
    // The bookmark and the 410 ERROR event.
    assert_eq!(got.counter(EVENTS_TOTAL), 2);
    assert_eq!(got.counter(DECODE_ERRORS_TOTAL), 0);
    assert_eq!(got.gauge(LAST_RESOURCE_VERSION), 4.0);
}

/// A streaming list is a list and, once its bookmark arrives, the watch: its initial events
/// and bookmark are events received.
#[test]
fn a_streaming_list_counts_as_a_list_and_a_watch() {
    let ((), got) = recorded(|| async {
        let env = Env::with_pods(3);
        env.run_streaming(wait_until(Duration::from_secs(5), || {
            env.store.cache.len() == 3
        }))
        .await;
    });
    assert_eq!(got.counter(LISTS_TOTAL), 1);
    assert_eq!(got.histogram_len(LIST_DURATION_SECONDS), 1);
    assert_eq!(got.counter(WATCHES_TOTAL), 1);
    assert_eq!(got.counter(RELISTS_TOTAL), 0);
    // Three ADDED events and the initial-events-end bookmark.
    assert_eq!(got.counter(EVENTS_TOTAL), 4);
    assert_eq!(got.gauge(LAST_RESOURCE_VERSION), 3.0);
}

/// A failed first list is a list error and a reported error; the retry after the backoff is a
/// list but not a relist (nothing was in the store yet). An undecodable event is a decode
/// error, not a second watch error.
#[test]
fn failed_lists_and_undecodable_events() {
    let (reflector, got) = recorded(|| async {
        let env = Env::with_pods(2);
        env.handle
            .fail_next_list(Error::transport(std::io::Error::other(
                "connection refused",
            )));
        let reflector = env
            .run_classic(async {
                env.handle.wait_for_watches(1).await;
                env.handle.send_decode_error();
                env.handle.wait_for_watches(2).await;
            })
            .await;
        assert_eq!(env.decode_errors.lock().unwrap().len(), 1);
        reflector
    });
    assert_eq!(
        got.counter(LISTS_TOTAL),
        3,
        "the failed list, its retry, the relist"
    );
    assert_eq!(got.counter(LIST_ERRORS_TOTAL), 1);
    assert_eq!(got.histogram_len(LIST_DURATION_SECONDS), 2);
    assert_eq!(got.counter(RELISTS_TOTAL), 1, "after the undecodable event");
    assert_eq!(got.counter(WATCH_ERRORS_TOTAL), 1, "the failed list only");
    assert_eq!(got.counter(DECODE_ERRORS_TOTAL), 1);
    assert_eq!(reflector.errors(), 1);
    assert_eq!(reflector.decode_errors(), 1);
}

/// The handles are registered when the reflector is built (as the metrics module documents):
/// a recorder installed afterwards records nothing of that reflector, however much it does
/// (a list, a watch, events) while the recorder is in place. The reflector still works.
#[test]
fn a_recorder_installed_after_build_records_nothing() {
    let env = Env::with_pods(2);
    let reflector = env.classic();
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = paused_runtime();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(drive(&reflector, async {
            env.handle.wait_for_watches(1).await;
            env.handle.add(pod("p3"));
            wait_until(Duration::from_secs(5), || env.store.cache.len() == 3).await;
        }));
    });
    env.assert_store_matches();
    assert_eq!(reflector.last_sync_resource_version(), "3");
    let snapshot = snapshotter.snapshot().into_vec();
    assert!(snapshot.is_empty(), "{snapshot:?}");
}
