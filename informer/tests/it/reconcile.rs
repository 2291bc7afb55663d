//! `ReconcileRunner`: keys from informer events, reconciled by a pool of workers once the
//! caches have synced, one key never on two workers, failures retried with backoff
//! (controller-runtime's controller tests, client-go's worker loop).

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kcache_informer::{Action, BoxError, Error, Owns, ReconcileRunner, TerminalError};
use kcache_store::{DynamicObject, Object, ObjectKey, OwnerReference};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::support::{eventually, informer, pod, start};

/// What one reconcile saw: its key, when it started, and the version the cache held (or
/// `None` once deleted).
#[derive(Debug, Clone)]
struct Run {
    key: String,
    at: Instant,
    rv: Option<String>,
}

/// Records every reconcile, and fails the run if one key is ever reconciled twice at once.
#[derive(Default)]
struct Journal {
    runs: Mutex<Vec<Run>>,
    running: Mutex<HashSet<String>>,
    overlaps: AtomicUsize,
}

impl Journal {
    fn enter(&self, key: &str) {
        if !self.running.lock().unwrap().insert(key.to_owned()) {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn leave(&self, key: &str) {
        self.running.lock().unwrap().remove(key);
    }
    /// Records a run of `key` starting now that saw `rv`.
    fn record(&self, key: &ObjectKey, rv: Option<String>) {
        self.runs.lock().unwrap().push(Run {
            key: key.to_string(),
            at: Instant::now(),
            rv,
        });
    }
    fn runs_of(&self, key: &str) -> Vec<Run> {
        self.runs
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.key == key)
            .cloned()
            .collect()
    }
    /// The version each key's last reconcile saw.
    fn last_seen(&self) -> BTreeMap<String, Option<String>> {
        let mut last = BTreeMap::new();
        for r in self.runs.lock().unwrap().iter() {
            last.insert(r.key.clone(), r.rv.clone());
        }
        last
    }
}

/// Cancels the runner, waits for it, then stops the informer and waits for it.
async fn stop(
    cancel: &CancellationToken,
    running: tokio::task::JoinHandle<kcache_informer::Result<()>>,
    stop_informer: &CancellationToken,
    informer_run: tokio::task::JoinHandle<kcache_informer::Result<()>>,
) {
    cancel.cancel();
    running.await.unwrap().unwrap();
    stop_informer.cancel();
    informer_run.await.unwrap().unwrap();
}

fn with_owner(ns: &str, name: &str, owner: &OwnerReference) -> DynamicObject {
    let mut o = pod(ns, name);
    let r = serde_json::json!([{
        "apiVersion": owner.api_version,
        "kind": owner.kind,
        "name": owner.name,
        "uid": "u",
        "controller": owner.controller,
    }]);
    o.metadata.other.insert("ownerReferences".to_owned(), r);
    o
}

/// controller-runtime: N workers share one queue and the processing set serialises each key;
/// every key's last reconcile sees the cache's final state. Writes keep coming while the
/// workers run, each reconcile yields mid-way, and nothing runs before the caches synced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_ends_reconciled_at_its_final_state_never_on_two_workers_at_once() {
    let (fake, inf) = informer(Duration::ZERO);
    for i in 0..20 {
        fake.add(pod("ns", &format!("p{i}")));
    }
    let runner = ReconcileRunner::builder(&inf).workers(4).build().unwrap();
    let queue = runner.queue().clone();
    let journal = Arc::new(Journal::default());
    let lister = inf.lister();
    let synced_first = Arc::new(AtomicUsize::new(0));
    let cancel = CancellationToken::new();
    let (stop_informer, informer_run) = start(&inf);
    let running = tokio::spawn({
        let (journal, cancel, inf, synced_first) = (
            Arc::clone(&journal),
            cancel.clone(),
            inf.clone(),
            Arc::clone(&synced_first),
        );
        runner.run(
            Arc::new(()),
            move |key: ObjectKey, _| {
                if !inf.has_synced() {
                    synced_first.fetch_add(1, Ordering::SeqCst);
                }
                let (journal, lister) = (Arc::clone(&journal), lister.clone());
                async move {
                    journal.enter(key.as_str());
                    let rv = lister
                        .get_by_key(key.as_str())
                        .and_then(|o| o.resource_version().map(str::to_owned));
                    tokio::task::yield_now().await;
                    journal.record(&key, rv);
                    journal.leave(key.as_str());
                    Ok::<_, BoxError>(Action::Done)
                }
            },
            cancel,
        )
    });
    // The churn starts once the informer has listed, so that its deletions are seen.
    assert!(inf.synced().await);
    for round in 0..5 {
        for i in 0..20 {
            let mut p = pod("ns", &format!("p{i}"));
            p.metadata.labels = Some([("round".to_owned(), round.to_string())].into());
            fake.update(p);
        }
        fake.delete(&pod("ns", &format!("p{round}")));
        tokio::task::yield_now().await;
    }
    let want: BTreeMap<String, Option<String>> = (0..20)
        .map(|i| {
            let key = format!("ns/p{i}");
            let rv = fake
                .objects()
                .iter()
                .find(|o| o.key().as_str() == key)
                .and_then(|o| o.resource_version().map(str::to_owned));
            (key, rv)
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    while journal.last_seen() != want {
        assert!(
            Instant::now() < deadline,
            "not every key was reconciled at its final state:\nwant {want:?}\ngot  {:?}\nwaiting {:?}, {} processing, {} delayed",
            journal.last_seen(),
            queue.waiting_keys(),
            queue.processing_len(),
            queue.delayed_len(),
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        journal.overlaps.load(Ordering::SeqCst),
        0,
        "a key ran twice at once"
    );
    assert_eq!(
        synced_first.load(Ordering::SeqCst),
        0,
        "reconciled before sync"
    );
    stop(&cancel, running, &stop_informer, informer_run).await;
}

/// client-go's default controller rate limiter under a reconcile that always fails: the key is
/// retried after 5, 10, 20, 40 and 80 ms (per-key exponential backoff), and the other keys are
/// not held back. Paused time, so the gaps are exact.
#[tokio::test(start_paused = true)]
async fn a_failing_key_backs_off_exponentially_and_holds_back_no_other_key() {
    let (fake, inf) = informer(Duration::ZERO);
    fake.add(pod("ns", "bad"));
    fake.add(pod("ns", "good"));
    let runner = ReconcileRunner::builder(&inf).build().unwrap();
    let journal = Arc::new(Journal::default());
    let (stop_informer, informer_run) = start(&inf);
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let journal = Arc::clone(&journal);
        runner.run(
            Arc::new(()),
            move |key: ObjectKey, _| {
                journal.record(&key, None);
                async move {
                    if key.as_str() == "ns/bad" {
                        return Err::<Action, BoxError>("the server said no".into());
                    }
                    Ok(Action::Done)
                }
            },
            cancel.clone(),
        )
    });
    eventually("six attempts at the failing key", || {
        journal.runs_of("ns/bad").len() >= 6
    })
    .await;
    let at: Vec<Instant> = journal.runs_of("ns/bad").iter().map(|r| r.at).collect();
    let gaps: Vec<Duration> = at.windows(2).map(|w| w[1] - w[0]).take(5).collect();
    let want: Vec<Duration> = [5, 10, 20, 40, 80].map(Duration::from_millis).to_vec();
    assert_eq!(gaps, want);
    assert_eq!(
        journal.runs_of("ns/good").len(),
        1,
        "reconciled once, not retried"
    );
    stop(&cancel, running, &stop_informer, informer_run).await;
}

/// controller-runtime: `RequeueAfter` runs the key again after the delay and forgets its
/// backoff (two failures, then a requeue-after, then a failure starts again at 5 ms); `Requeue`
/// goes through the rate limiter; a terminal error is not retried; a panic is caught and
/// retried like an error.
#[tokio::test(start_paused = true)]
async fn each_outcome_requeues_as_controller_runtime_does() {
    let (fake, inf) = informer(Duration::ZERO);
    fake.add(pod("ns", "a"));
    fake.add(pod("ns", "terminal"));
    fake.add(pod("ns", "panics"));
    let runner = ReconcileRunner::builder(&inf).workers(2).build().unwrap();
    let journal = Arc::new(Journal::default());
    let (stop_informer, informer_run) = start(&inf);
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let journal = Arc::clone(&journal);
        runner.run(
            Arc::new(()),
            move |key: ObjectKey, _| {
                let n = journal.runs_of(key.as_str()).len();
                journal.record(&key, None);
                async move {
                    match (key.as_str(), n) {
                        ("ns/a", 0 | 1 | 4) => Err("try again".into()),
                        ("ns/a", 2) => Ok(Action::RequeueAfter(Duration::from_secs(30))),
                        ("ns/a", 3) => Ok(Action::Requeue),
                        ("ns/terminal", _) => Err(TerminalError::new("never valid").into()),
                        ("ns/panics", 0) => panic!("reconcile bug"),
                        _ => Ok(Action::Done),
                    }
                }
            },
            cancel.clone(),
        )
    });
    // Everything runs on this runtime, so its paused clock jumps from timer to timer.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let at: Vec<Instant> = journal.runs_of("ns/a").iter().map(|r| r.at).collect();
    let gaps: Vec<Duration> = at.windows(2).map(|w| w[1] - w[0]).collect();
    let ms = Duration::from_millis;
    // fail, fail, requeue-after 30 s (backoff forgotten), requeue (5 ms: forgotten), fail
    // (10 ms: not forgotten by `Requeue`), done.
    assert_eq!(
        gaps,
        [ms(5), ms(10), Duration::from_secs(30), ms(5), ms(10)]
    );
    assert_eq!(
        journal.runs_of("ns/terminal").len(),
        1,
        "a terminal error is not retried"
    );
    let panics = journal.runs_of("ns/panics");
    assert_eq!(panics.len(), 2, "retried once after the panic, then done");
    assert_eq!(panics[1].at - panics[0].at, ms(5));
    stop(&cancel, running, &stop_informer, informer_run).await;
}

/// Shutdown: a reconcile that is running when `cancel` fires finishes, no other starts, and
/// `run` returns once it has (controller-runtime waits for its workers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_running_reconciles_finish_and_starts_no_new_one() {
    let (fake, inf) = informer(Duration::ZERO);
    fake.add(pod("ns", "slow"));
    let runner = ReconcileRunner::builder(&inf).build().unwrap();
    let queue = runner.queue().clone();
    let (stop_informer, informer_run) = start(&inf);
    let cancel = CancellationToken::new();
    let started = Arc::new(tokio::sync::Notify::new());
    let release = Arc::new(tokio::sync::Notify::new());
    let finished = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    let running = tokio::spawn({
        let (started, release, finished, calls) = (
            Arc::clone(&started),
            Arc::clone(&release),
            Arc::clone(&finished),
            Arc::clone(&calls),
        );
        runner.run(
            Arc::new(()),
            move |_key: ObjectKey, _| {
                calls.fetch_add(1, Ordering::SeqCst);
                let (started, release, finished) = (
                    Arc::clone(&started),
                    Arc::clone(&release),
                    Arc::clone(&finished),
                );
                async move {
                    started.notify_one();
                    release.notified().await;
                    finished.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, BoxError>(Action::Done)
                }
            },
            cancel.clone(),
        )
    });
    started.notified().await;
    queue.add(ObjectKey::explicit("ns/other"));
    cancel.cancel();
    tokio::task::yield_now().await;
    assert!(!running.is_finished(), "waits for the running reconcile");
    release.notify_one();
    running.await.unwrap().unwrap();
    assert_eq!(finished.load(Ordering::SeqCst), 1);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "no reconcile started after cancel"
    );
    stop_informer.cancel();
    informer_run.await.unwrap().unwrap();
}

/// controller-runtime's `Owns`: a change to an owned object reconciles its controller owner
/// (group and kind match, the version is ignored); a reference that is not the controller is
/// followed only with `Owns::every_owner`; the owner of a deleted object is reconciled too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_objects_reconcile_their_owners() {
    assert_eq!(owner_runs(Owns::controller("apps", "Deployment")).await, 1);
    assert_eq!(owner_runs(Owns::every_owner("apps", "Deployment")).await, 2);
}

/// Deployments `shop/web` and `shop/db`; pods owned by web (as controller) and by db (not as
/// controller). Returns how often db was reconciled.
async fn owner_runs(owns: Owns) -> usize {
    let (deployments_api, deployments) = informer(Duration::ZERO);
    let (pods_api, pods) = informer(Duration::ZERO);
    deployments_api.add(pod("shop", "web"));
    deployments_api.add(pod("shop", "db"));
    let runner = ReconcileRunner::builder(&deployments)
        .owns(&pods, owns)
        .build()
        .unwrap();
    let journal = Arc::new(Journal::default());
    let (stop_d, run_d) = start(&deployments);
    let (stop_p, run_p) = start(&pods);
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let journal = Arc::clone(&journal);
        runner.run(
            Arc::new(()),
            move |key: ObjectKey, _| {
                journal.record(&key, None);
                async { Ok::<_, BoxError>(Action::Done) }
            },
            cancel.clone(),
        )
    });
    eventually("the initial reconciles", || {
        journal.runs_of("shop/web").len() == 1 && journal.runs_of("shop/db").len() == 1
    })
    .await;
    let controlled = with_owner(
        "shop",
        "web-1",
        &OwnerReference::new("apps/v1beta2", "Deployment", "web").controlled(),
    );
    pods_api.add(controlled.clone());
    eventually("web reconciled for its pod", || {
        journal.runs_of("shop/web").len() == 2
    })
    .await;
    pods_api.add(with_owner(
        "shop",
        "db-1",
        &OwnerReference::new("apps/v1", "Deployment", "db"),
    ));
    pods_api.delete(&controlled);
    eventually("web reconciled for its pod's deletion", || {
        journal.runs_of("shop/web").len() == 3
    })
    .await;
    // Events reach the handler in order: once web has seen this one, db's pod was handled.
    pods_api.add(with_owner(
        "shop",
        "web-marker",
        &OwnerReference::new("apps/v1", "Deployment", "web").controlled(),
    ));
    eventually("the marker", || journal.runs_of("shop/web").len() == 4).await;
    cancel.cancel();
    running.await.unwrap().unwrap();
    stop_d.cancel();
    stop_p.cancel();
    run_d.await.unwrap().unwrap();
    run_p.await.unwrap().unwrap();
    journal.runs_of("shop/db").len()
}

/// controller-runtime's `CacheSyncTimeout`: informers that never sync fail the run with an
/// error naming the runner, after the timeout.
#[tokio::test(start_paused = true)]
async fn caches_that_do_not_sync_in_time_fail_the_run() {
    let (_fake, inf) = informer(Duration::ZERO);
    let runner = ReconcileRunner::builder(&inf)
        .name("widgets")
        .cache_sync_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let started = Instant::now();
    let err = runner
        .run(
            Arc::new(()),
            |_key: ObjectKey, _: Arc<()>| async { Ok::<_, BoxError>(Action::Done) },
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::CacheSyncTimeout { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "the caches of widgets did not sync within 5s"
    );
    assert_eq!(started.elapsed(), Duration::from_secs(5));
}

/// The runner's metrics, as controller-runtime's `controller_runtime_reconcile_total{result}`
/// and its work queue's: each reconcile counted by outcome and timed, the work queue's
/// metrics under the runner's name.
#[tokio::test(start_paused = true)]
async fn a_runner_records_its_reconciles_and_its_work_queue() {
    use kcache_informer::metrics::{
        RECONCILE_ACTIVE_WORKERS, RECONCILE_DURATION_SECONDS, RECONCILE_TOTAL,
    };
    use kcache_queue::metrics::{WORKQUEUE_ADDS_TOTAL, WORKQUEUE_RETRIES_TOTAL};
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let guard = metrics::set_default_local_recorder(&recorder);
    let (fake, inf) = informer(Duration::ZERO);
    fake.add(pod("ns", "a"));
    fake.add(pod("ns", "b"));
    let runner = ReconcileRunner::builder(&inf)
        .name("widgets")
        .build()
        .unwrap();
    let (stop_informer, informer_run) = start(&inf);
    let cancel = CancellationToken::new();
    let failed = Arc::new(AtomicUsize::new(0));
    let running = tokio::spawn({
        let failed = Arc::clone(&failed);
        runner.run(
            Arc::new(()),
            move |key: ObjectKey, _| {
                let fail = key.as_str() == "ns/b" && failed.fetch_add(1, Ordering::SeqCst) == 0;
                async move {
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    if fail {
                        return Err::<Action, BoxError>("once".into());
                    }
                    Ok(Action::Done)
                }
            },
            cancel.clone(),
        )
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop(&cancel, running, &stop_informer, informer_run).await;
    drop(guard);

    let mut counters = BTreeMap::new();
    let mut durations = Vec::new();
    let mut active = None;
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        let label = |l: &str| {
            key.labels()
                .find(|x| x.key() == l)
                .map(|x| x.value().to_owned())
        };
        if !key.name().starts_with("kcache_reconcile")
            && !key.name().starts_with("kcache_workqueue")
        {
            continue;
        }
        assert_eq!(label("name").as_deref(), Some("widgets"), "{key:?}");
        match (key.name(), value) {
            (RECONCILE_DURATION_SECONDS, DebugValue::Histogram(v)) => {
                durations = v.iter().map(|f| f.0).collect();
            }
            (RECONCILE_ACTIVE_WORKERS, DebugValue::Gauge(g)) => active = Some(g.0),
            (name, DebugValue::Counter(n)) => {
                let result = label("result")
                    .map(|r| format!("{{{r}}}"))
                    .unwrap_or_default();
                counters.insert(format!("{name}{result}"), n);
            }
            _ => {}
        }
    }
    let count = |k: &str| counters.get(k).copied().unwrap_or(0);
    assert_eq!(
        count(&format!("{RECONCILE_TOTAL}{{success}}")),
        2,
        "{counters:?}"
    );
    assert_eq!(
        count(&format!("{RECONCILE_TOTAL}{{error}}")),
        1,
        "{counters:?}"
    );
    assert_eq!(
        count(&format!("{RECONCILE_TOTAL}{{panic}}")),
        0,
        "{counters:?}"
    );
    assert_eq!(
        count(WORKQUEUE_ADDS_TOTAL),
        3,
        "a, b, and b's retry: {counters:?}"
    );
    assert_eq!(count(WORKQUEUE_RETRIES_TOTAL), 1, "{counters:?}");
    assert_eq!(durations, [0.003; 3]);
    assert_eq!(active, Some(0.0));
}

/// A reconcile function that panics before it returns its future is caught like one whose
/// future panics: the worker survives, the key is retried with backoff, and other keys go on.
#[tokio::test(start_paused = true)]
async fn a_reconcile_that_panics_before_returning_its_future_is_retried() {
    let (fake, inf) = informer(Duration::ZERO);
    fake.add(pod("ns", "bad"));
    fake.add(pod("ns", "good"));
    let runner = ReconcileRunner::builder(&inf).build().unwrap();
    let journal = Arc::new(Journal::default());
    let (stop_informer, informer_run) = start(&inf);
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let journal = Arc::clone(&journal);
        runner.run(
            Arc::new(()),
            move |key: ObjectKey, _| {
                let attempt = journal.runs_of(key.as_str()).len();
                journal.record(&key, None);
                assert!(
                    !(key.as_str() == "ns/bad" && attempt == 0),
                    "bug before the future"
                );
                async { Ok::<_, BoxError>(Action::Done) }
            },
            cancel.clone(),
        )
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        journal.runs_of("ns/bad").len(),
        2,
        "retried once, then done"
    );
    assert_eq!(journal.runs_of("ns/good").len(), 1);
    stop(&cancel, running, &stop_informer, informer_run).await;
}

/// An informer that stops while the runner runs ends the run with `Error::Stopped`: the
/// workers would otherwise go on against a cache that no longer follows the server.
#[tokio::test(start_paused = true)]
async fn a_runner_whose_informer_stops_returns_stopped() {
    let (fake, inf) = informer(Duration::ZERO);
    fake.add(pod("ns", "a"));
    let runner = ReconcileRunner::builder(&inf).build().unwrap();
    let (stop_informer, informer_run) = start(&inf);
    let running = tokio::spawn(runner.run(
        Arc::new(()),
        |_key: ObjectKey, _: Arc<()>| async { Ok::<_, BoxError>(Action::Done) },
        CancellationToken::new(),
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop_informer.cancel();
    informer_run.await.unwrap().unwrap();
    let err = running.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::Stopped), "{err:?}");
}

/// A `watches` map function that panics on one object skips that event (logged) and keeps
/// mapping the others; an owner of a cluster-scoped kind is keyed by its name alone.
#[tokio::test(start_paused = true)]
async fn a_panicking_map_skips_its_event_and_cluster_scoped_owners_are_keyed_by_name() {
    let (primary_api, primary) = informer(Duration::ZERO);
    let (others_api, others) = informer(Duration::ZERO);
    let (owned_api, owned) = informer(Duration::ZERO);
    primary_api.add(DynamicObject::new(None, "node-1"));
    let runner = ReconcileRunner::builder(&primary)
        .watches(&others, |o: &DynamicObject| {
            let name = o.metadata.name.clone().unwrap_or_default();
            assert!(name != "poison", "map bug");
            vec![ObjectKey::new(None, &name)]
        })
        .owns(&owned, Owns::controller("", "Node").cluster_scoped())
        .build()
        .unwrap();
    let journal = Arc::new(Journal::default());
    let runs: Vec<_> = [&primary, &others, &owned]
        .iter()
        .map(|i| start(i))
        .collect();
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let journal = Arc::clone(&journal);
        runner.run(
            Arc::new(()),
            move |key: ObjectKey, _| {
                journal.record(&key, None);
                async { Ok::<_, BoxError>(Action::Done) }
            },
            cancel.clone(),
        )
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    others_api.add(pod("ns", "poison"));
    others_api.add(pod("ns", "node-2"));
    owned_api.add(with_owner(
        "ns",
        "p",
        &OwnerReference::new("v1", "Node", "node-3").controlled(),
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        journal.runs_of("node-2").len(),
        1,
        "the next event is still mapped"
    );
    assert_eq!(
        journal.runs_of("node-3").len(),
        1,
        "owner keyed by its name alone"
    );
    assert!(journal.runs_of("ns/node-3").is_empty());
    cancel.cancel();
    running.await.unwrap().unwrap();
    for (stop_informer, run) in runs {
        stop_informer.cancel();
        run.await.unwrap().unwrap();
    }
}

/// Predicates: the primary's own status writes (same generation) are not reconciled, spec
/// changes (a new generation) and deletion marks are; an owned kind's changes reach the owner
/// only when its predicate lets them through. After each filtered change a marker widget is
/// added: one worker takes keys in order, so once the marker is reconciled, a key the
/// filtered change had queued would have been reconciled before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn predicates_keep_a_controllers_own_status_writes_from_reconciling() {
    use kcache_informer::Predicate;

    let (widgets_api, widgets) = informer(Duration::ZERO);
    let (pods_api, pods) = informer(Duration::ZERO);
    let mut widget = pod("shop", "web");
    widget.metadata.generation = Some(1);
    let widget = widgets_api.add(widget);
    let runner = ReconcileRunner::builder(&widgets)
        .predicate(Predicate::generation_changed())
        .owns_where(
            &pods,
            Owns::controller("apps", "Deployment"),
            vec![Predicate::labels_changed()],
        )
        .build()
        .unwrap();
    let journal = Arc::new(Journal::default());
    let (stop_w, run_w) = start(&widgets);
    let (stop_p, run_p) = start(&pods);
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let journal = Arc::clone(&journal);
        runner.run(
            Arc::new(()),
            move |key: ObjectKey, _| {
                journal.record(&key, None);
                async { Ok::<_, BoxError>(Action::Done) }
            },
            cancel.clone(),
        )
    });
    let runs = || journal.runs_of("shop/web").len();
    let markers = AtomicUsize::new(0);
    // Adds a marker widget and waits for its reconcile.
    let marker = || {
        let n = markers.fetch_add(1, Ordering::SeqCst);
        let name = format!("marker-{n}");
        widgets_api.add(pod("shop", &name));
        let journal = Arc::clone(&journal);
        async move {
            eventually("the marker", || {
                !journal.runs_of(&format!("shop/{name}")).is_empty()
            })
            .await;
        }
    };
    eventually("the initial reconcile", || runs() == 1).await;

    // A status write: same generation, filtered.
    let mut status = widget.clone();
    status
        .data
        .insert("status".into(), serde_json::json!({"ready": true}));
    let status = widgets_api.update(status);
    marker().await;
    assert_eq!(runs(), 1, "the status write was filtered");
    // A spec change: reconciled.
    let mut spec = status.clone();
    spec.metadata.generation = Some(2);
    let spec = widgets_api.update(spec);
    eventually("the spec change", || runs() == 2).await;

    // An owned pod appears (an add always passes), changes without a label change
    // (filtered), then with one (reconciled).
    let owner = OwnerReference::new("apps/v1", "Deployment", "web").controlled();
    let child = pods_api.add(with_owner("shop", "web-1", &owner));
    eventually("the owned pod's add", || runs() == 3).await;
    let mut touched = child.clone();
    touched
        .data
        .insert("status".into(), serde_json::json!({"phase": "Running"}));
    let touched = pods_api.update(touched);
    // The marker goes through the pods' source, whose events are handled in order.
    let marker_owner = OwnerReference::new("apps/v1", "Deployment", "pod-marker").controlled();
    pods_api.add(with_owner("shop", "marker-pod", &marker_owner));
    eventually("the pod marker", || {
        !journal.runs_of("shop/pod-marker").is_empty()
    })
    .await;
    assert_eq!(runs(), 3, "the pod's status change was filtered");
    let mut labelled = touched.clone();
    labelled
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("tier".into(), "web".into());
    pods_api.update(labelled);
    eventually("the owned pod's label change", || runs() == 4).await;
    // The deletion mark of the widget passes (a finalizer's cleanup must run).
    let mut deleting = spec.clone();
    deleting.metadata.deletion_timestamp = Some("2025-01-01T00:00:00Z".into());
    widgets_api.update(deleting);
    eventually("the deletion mark", || runs() == 5).await;
    cancel.cancel();
    running.await.unwrap().unwrap();
    stop_w.cancel();
    stop_p.cancel();
    run_w.await.unwrap().unwrap();
    run_p.await.unwrap().unwrap();
}
