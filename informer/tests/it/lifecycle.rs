//! Handlers added before start, during and after sync; removal; slow and panicking handlers;
//! per-registration `has_synced` and `synced()`; the builder's settings; run modes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kcache_informer::{
    Error, HandlerFuncs, QueueKind, RunMode, SharedIndexInformer, strip_managed_fields,
};
use kcache_store::{DynamicObject, Indexers, NAMESPACE_INDEX, Object, ObjectKey, Selector};
use tokio_util::sync::CancellationToken;

use crate::support::{
    Gate, Recorder, Seen, cache_state, eventually, fake_state, informer, informer_of, pod, start,
};

#[tokio::test]
async fn handler_added_before_start_sees_the_initial_list_then_live_changes() {
    for queue in [QueueKind::RealFifo, QueueKind::DeltaFifo] {
        let (fake, inf) = informer_of(Duration::ZERO, |b| b.queue(queue));
        fake.add(pod("a", "one"));
        fake.add(pod("b", "two"));
        let rec = Recorder::default();
        let reg = inf.add_event_handler(rec.clone()).unwrap();
        assert!(!reg.has_synced());

        let (cancel, run) = start(&inf);
        assert!(reg.synced().await);
        assert!(inf.has_synced());
        let initial = rec.events();
        assert_eq!(initial.len(), 2, "{queue:?}: {initial:?}");
        assert!(
            initial
                .iter()
                .all(|e| matches!(e, Seen::Add { initial: true, .. }))
        );

        fake.add(pod("a", "three"));
        let updated = fake.update(pod("a", "one"));
        fake.delete(&pod("b", "two"));
        rec.wait("live events", |l| l.len() == 5).await;
        let live = &rec.events()[2..];
        assert_eq!(
            live,
            [
                Seen::Add {
                    key: "a/three".into(),
                    rv: "3".into(),
                    initial: false
                },
                Seen::Update {
                    key: "a/one".into(),
                    old_rv: "1".into(),
                    new_rv: updated.metadata.resource_version.clone().unwrap()
                },
                Seen::Delete {
                    key: "b/two".into(),
                    tombstone: false
                },
            ],
            "{queue:?}"
        );
        assert_eq!(cache_state(&inf), fake_state(&fake));
        assert_eq!(inf.last_sync_resource_version(), Some("5".to_owned()));
        cancel.cancel();
        run.await.unwrap().unwrap();
        assert!(inf.is_stopped());
    }
}

#[tokio::test]
async fn late_handler_replays_the_cache_as_initial_adds() {
    let (fake, inf) = informer(Duration::ZERO);
    for i in 0..20 {
        fake.add(pod("ns", &format!("p{i}")));
    }
    let (cancel, run) = start(&inf);
    assert!(inf.synced().await);

    let late = Recorder::default();
    let reg = inf.add_event_handler(late.clone()).unwrap();
    late.wait("replay", |l| l.len() == 20).await;
    assert!(
        late.events()
            .iter()
            .all(|e| matches!(e, Seen::Add { initial: true, .. }))
    );
    assert!(reg.synced().await);

    fake.add(pod("ns", "live"));
    late.wait("live add", |l| l.len() == 21).await;
    assert_eq!(
        late.events()[20],
        Seen::Add {
            key: "ns/live".into(),
            rv: "21".into(),
            initial: false
        }
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn handler_added_while_events_flow_sees_each_object_once() {
    let (fake, inf) = informer(Duration::ZERO);
    let (cancel, run) = start(&inf);
    assert!(inf.synced().await);
    let writer = tokio::spawn({
        let fake = fake.clone();
        async move {
            for i in 0..200 {
                fake.add(pod("ns", &format!("p{i}")));
                if i % 10 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }
    });
    tokio::task::yield_now().await;
    let rec = Recorder::default();
    inf.add_event_handler(rec.clone()).unwrap();
    writer.await.unwrap();
    rec.wait("every object", |l| l.len() >= 200).await;
    eventually("cache caught up", || cache_state(&inf).len() == 200).await;
    // Whether replayed or live, every object arrives exactly once, as an add.
    let mut keys: Vec<String> = rec.events().iter().map(|e| e.key().to_owned()).collect();
    assert!(rec.events().iter().all(|e| matches!(e, Seen::Add { .. })));
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 200);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn removed_handler_gets_nothing_more() {
    let (fake, inf) = informer(Duration::ZERO);
    let kept = Recorder::default();
    let removed = Recorder::default();
    inf.add_event_handler(kept.clone()).unwrap();
    let reg = inf.add_event_handler(removed.clone()).unwrap();
    let (cancel, run) = start(&inf);
    fake.add(pod("ns", "a"));
    removed.wait("first add", |l| l.len() == 1).await;
    inf.remove_event_handler(&reg);
    inf.remove_event_handler(&reg); // idempotent
    assert!(reg.is_closed());
    fake.add(pod("ns", "b"));
    kept.wait("second add", |l| l.len() == 2).await;
    assert_eq!(removed.events().len(), 1);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn slow_and_panicking_handlers_block_nobody() {
    let (fake, inf) = informer(Duration::ZERO);
    let gate = Gate::default();
    let slow_calls = Arc::new(AtomicUsize::new(0));
    let slow = inf
        .add_event_handler(HandlerFuncs::new().on_added({
            let (gate, calls) = (gate.clone(), Arc::clone(&slow_calls));
            move |_: &Arc<DynamicObject>, _| {
                calls.fetch_add(1, Ordering::SeqCst);
                gate.wait();
            }
        }))
        .unwrap();
    let panics = Arc::new(AtomicUsize::new(0));
    inf.add_event_handler(HandlerFuncs::new().on_added({
        let panics = Arc::clone(&panics);
        move |_: &Arc<DynamicObject>, _| {
            panics.fetch_add(1, Ordering::SeqCst);
            panic!("handler bug");
        }
    }))
    .unwrap();
    let fast = Recorder::default();
    let fast_reg = inf.add_event_handler(fast.clone()).unwrap();

    let (cancel, run) = start(&inf);
    for i in 0..50 {
        fake.add(pod("ns", &format!("p{i}")));
    }
    // The fast handler and the cache keep up while the slow one is stuck on its first event.
    fast.wait("all adds", |l| l.len() == 50).await;
    eventually("cache", || inf.indexer().len() == 50).await;
    // The panicking handler pauses a second after each panic (see panics.rs).
    eventually("the panicking handler's first panic", || {
        panics.load(Ordering::SeqCst) >= 1
    })
    .await;
    // The slow handler's thread may pick up its first event only now, on a busy machine.
    eventually("the slow handler's first event", || {
        slow_calls.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(slow_calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        slow.buffer_depth(),
        50,
        "49 waiting plus the one in progress"
    );
    // The fast handler recorded its last event just before its delivery counted it done.
    eventually("the fast handler drained", || fast_reg.buffer_depth() == 0).await;
    assert!(inf.has_synced() && fast_reg.has_synced());

    gate.open();
    eventually("slow handler drained", || slow.buffer_depth() == 0).await;
    assert_eq!(slow_calls.load(Ordering::SeqCst), 50);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn registration_syncs_only_after_its_handler_saw_the_initial_list() {
    let (fake, inf) = informer(Duration::ZERO);
    fake.add(pod("ns", "a"));
    fake.add(pod("ns", "b"));
    let gate = Gate::default();
    let blocked = inf
        .add_event_handler(HandlerFuncs::new().on_added({
            let gate = gate.clone();
            move |_: &Arc<DynamicObject>, _| gate.wait()
        }))
        .unwrap();
    let free = inf.add_event_handler(Recorder::default()).unwrap();
    let (cancel, run) = start(&inf);
    assert!(inf.synced().await && free.synced().await);
    assert!(
        !blocked.has_synced(),
        "its initial adds are not handled yet"
    );
    gate.open();
    assert!(blocked.synced().await);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn empty_initial_list_syncs() {
    let (_fake, inf) = informer(Duration::ZERO);
    let reg = inf.add_event_handler(Recorder::default()).unwrap();
    let (cancel, run) = start(&inf);
    assert!(inf.synced().await && reg.synced().await);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn builder_settings_apply_and_a_second_run_is_refused() {
    let (fake, inf) = informer_of(Duration::ZERO, |b| b.transform(strip_managed_fields));
    let mut with_fields = pod("ns", "a");
    with_fields.metadata.other.insert(
        "managedFields".into(),
        serde_json::json!([{"manager": "kubectl"}]),
    );
    fake.add(with_fields);
    fake.add(pod("other", "b"));
    let (cancel, run) = start(&inf);
    assert!(inf.synced().await);
    assert!(matches!(
        inf.run(CancellationToken::new()).await,
        Err(Error::AlreadyStarted)
    ));
    let cached = inf.indexer().get_by_key("ns/a").unwrap();
    assert!(!cached.metadata.other.contains_key("managedFields"));
    // The namespace index is there by default: listing one namespace is a lookup.
    assert_eq!(
        inf.indexer().by_index(NAMESPACE_INDEX, "ns").unwrap().len(),
        1
    );
    assert_eq!(
        inf.lister()
            .namespace("ns")
            .list(&Selector::everything())
            .len(),
        1
    );
    // Indexes can be added after start too.
    inf.add_indexers(Indexers::new().with("name", |o: &DynamicObject| {
        Ok(o.metadata.name.clone().into_iter().collect())
    }))
    .unwrap();
    assert_eq!(inf.indexer().index_keys("name", "a").unwrap(), ["ns/a"]);
    cancel.cancel();
    run.await.unwrap().unwrap();
    assert!(matches!(
        inf.add_event_handler(Recorder::default()),
        Err(Error::Stopped)
    ));
    assert!(matches!(
        inf.add_indexers(Indexers::new()),
        Err(Error::Stopped)
    ));
}

#[tokio::test]
async fn the_namespace_index_can_be_turned_off_and_indexers_join_it() {
    let by_name = || {
        Indexers::new().with("name", |o: &DynamicObject| {
            Ok(o.metadata.name.clone().into_iter().collect())
        })
    };
    let (_, plain) = informer_of(Duration::ZERO, |b| b.indexers(by_name()));
    assert!(plain.indexer().by_index(NAMESPACE_INDEX, "ns").is_ok());
    assert!(plain.indexer().index_keys("name", "a").is_ok());
    let (_, bare) = informer_of(Duration::ZERO, |b| {
        b.namespace_index(false).indexers(by_name())
    });
    assert!(bare.indexer().by_index(NAMESPACE_INDEX, "ns").is_err());
    assert!(bare.indexer().index_keys("name", "a").is_ok());
}

#[tokio::test]
async fn a_custom_key_function_keys_the_cache_and_the_events() {
    for queue in [QueueKind::RealFifo, QueueKind::DeltaFifo] {
        let key_func: kcache_store::KeyFunc<DynamicObject> = Arc::new(|o: &DynamicObject| {
            Ok(ObjectKey::explicit(format!(
                "{}.{}",
                o.name().unwrap_or_default(),
                o.namespace().unwrap_or_default()
            )))
        });
        let (fake, inf) = informer_of(Duration::ZERO, |b| b.queue(queue).key_func(key_func));
        fake.add(pod("ns", "a"));
        let rec = Recorder::default();
        let reg = inf.add_event_handler(rec.clone()).unwrap();
        let (cancel, run) = start(&inf);
        assert!(reg.synced().await);
        assert_eq!(inf.indexer().list_keys(), [ObjectKey::explicit("a.ns")]);
        fake.delete(&pod("ns", "a"));
        eventually("the delete", || inf.indexer().list_keys().is_empty()).await;
        cancel.cancel();
        run.await.unwrap().unwrap();
    }
}

/// `synced()` is woken by the informer: under a paused clock no time passes while waiting,
/// where a poll would have let the clock move on by its interval. (A handler's registration
/// is woken by its handler thread, which the paused clock does not wait for, so only that it
/// resolves is checked.)
#[tokio::test(start_paused = true)]
async fn synced_futures_are_woken_without_polling() {
    for initial in [0, 3] {
        let (fake, inf) = informer(Duration::ZERO);
        for i in 0..initial {
            fake.add(pod("ns", &format!("p{i}")));
        }
        let reg = inf.add_event_handler(Recorder::default()).unwrap();
        let mut stream = inf.subscribe().unwrap();
        let stream_synced = stream.synced();
        let (informer_synced, reg_synced) = (inf.synced(), reg.synced());
        let t0 = tokio::time::Instant::now();
        let (cancel, run) = start(&inf);
        assert!(informer_synced.await, "{initial} objects");
        for _ in 0..initial {
            futures_util::StreamExt::next(&mut stream).await.unwrap();
        }
        assert!(stream_synced.await);
        assert_eq!(t0.elapsed(), Duration::ZERO, "{initial} objects");
        assert!(reg_synced.await);
        cancel.cancel();
        run.await.unwrap().unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn synced_futures_resolve_false_when_nothing_will_sync() {
    let (_fake, inf) = informer(Duration::ZERO);
    let kept = inf.add_event_handler(Recorder::default()).unwrap();
    let removed = inf.add_event_handler(Recorder::default()).unwrap();
    let removed_synced = removed.synced();
    inf.remove_event_handler(&removed);
    assert!(!removed_synced.await, "a removed handler never syncs");

    let stream = inf.subscribe().unwrap();
    let stream_synced = stream.synced();
    drop(stream);
    assert!(!stream_synced.await, "a dropped stream never syncs");

    // Cancelled before it could list: the informer stops unsynced.
    let (informer_synced, kept_synced) = (inf.synced(), kept.synced());
    let cancel = CancellationToken::new();
    cancel.cancel();
    inf.run(cancel).await.unwrap();
    assert!(!informer_synced.await);
    assert!(!kept_synced.await);
    assert!(!inf.synced().await, "asked after the stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn factory_shares_one_informer_per_resource() {
    for mode in [RunMode::Auto, RunMode::CallersTask, RunMode::OwnThread] {
        let factory = kcache_informer::InformerFactory::new(Duration::ZERO);
        let fake = kcache_testing::FakeListerWatcher::<DynamicObject>::new();
        fake.handle().add(pod("ns", "a"));
        let created = Arc::new(AtomicUsize::new(0));
        let make = || {
            created.fetch_add(1, Ordering::SeqCst);
            Arc::new(fake.clone()) as Arc<dyn kcache_reflector::ListerWatcher<DynamicObject>>
        };
        let a: SharedIndexInformer<DynamicObject> = factory.informer_with("pods", || {
            SharedIndexInformer::builder(make()).run_mode(mode).build()
        });
        let b = factory.informer("pods", make);
        let other = factory.informer("configmaps", make);
        assert_eq!(created.load(Ordering::SeqCst), 2);
        let cancel = CancellationToken::new();
        let run = tokio::spawn({
            let cancel = cancel.clone();
            async move { factory.run(cancel).await }
        });
        assert!(a.synced().await && other.synced().await);
        assert!(b.has_synced(), "the same informer");
        assert_eq!(b.indexer().len(), 1);
        cancel.cancel();
        run.await.unwrap();
        assert!(a.is_stopped() && other.is_stopped(), "{mode:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_on_own_thread_behaves_like_run_on_the_callers_task() {
    let (fake, inf) = informer_of(Duration::ZERO, |b| b.run_mode(RunMode::OwnThread));
    fake.add(pod("ns", "a"));
    let rec = Recorder::default();
    let reg = inf.add_event_handler(rec.clone()).unwrap();
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let (inf, cancel) = (inf.clone(), cancel.clone());
        async move { inf.run(cancel).await }
    });
    assert!(reg.synced().await);
    assert!(matches!(
        inf.run(cancel.clone()).await,
        Err(Error::AlreadyStarted)
    ));
    for i in 0..100 {
        fake.add(pod("ns", &format!("p{i}")));
    }
    for i in 0..50 {
        fake.update(pod("ns", &format!("p{i}")));
    }
    fake.delete(&pod("ns", "a"));
    rec.wait("every event", |l| l.len() == 152).await;
    assert_eq!(cache_state(&inf), fake_state(&fake));
    cancel.cancel();
    running.await.unwrap().unwrap();
    assert!(inf.is_stopped());
    assert!(reg.is_closed());
}

/// A lister-watcher that notes the name of the thread each request comes from.
struct NotesThreads {
    fake: kcache_testing::FakeListerWatcher<DynamicObject>,
    threads: Arc<std::sync::Mutex<Vec<Option<String>>>>,
}

impl NotesThreads {
    fn note(&self) {
        let name = std::thread::current().name().map(str::to_owned);
        self.threads.lock().unwrap().push(name);
    }
}

#[async_trait::async_trait]
impl kcache_reflector::ListerWatcher<DynamicObject> for NotesThreads {
    async fn list(
        &self,
        opts: &kcache_reflector::ListOptions,
    ) -> Result<kcache_reflector::ObjectList<DynamicObject>, kcache_reflector::Error> {
        self.note();
        self.fake.list(opts).await
    }

    async fn watch(
        &self,
        opts: &kcache_reflector::ListOptions,
    ) -> Result<kcache_reflector::WatchStream<DynamicObject>, kcache_reflector::Error> {
        self.note();
        self.fake.watch(opts).await
    }
}

/// Runs an informer in `mode` on the current runtime until it has synced, and checks that its
/// lister-watcher was called only from the informer's own thread (`own_thread`) or never from
/// it.
async fn assert_runs_on_own_thread(mode: RunMode, own_thread: bool) {
    let fake = kcache_testing::FakeListerWatcher::<DynamicObject>::new();
    fake.handle().add(pod("ns", "a"));
    let threads = Arc::new(std::sync::Mutex::new(Vec::new()));
    let lw = NotesThreads {
        fake,
        threads: Arc::clone(&threads),
    };
    let inf = SharedIndexInformer::builder(Arc::new(lw))
        .run_mode(mode)
        .build();
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let (inf, cancel) = (inf.clone(), cancel.clone());
        async move { inf.run(cancel).await }
    });
    assert!(inf.synced().await);
    assert_eq!(inf.indexer().len(), 1);
    cancel.cancel();
    running.await.unwrap().unwrap();
    assert!(inf.is_stopped());
    let seen = threads.lock().unwrap().clone();
    assert!(!seen.is_empty(), "the informer listed");
    assert!(
        seen.iter()
            .all(|t| (t.as_deref() == Some("kcache-informer")) == own_thread),
        "{mode:?}, own thread expected: {own_thread}: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_takes_a_thread_of_its_own_on_a_multi_threaded_runtime() {
    assert_runs_on_own_thread(RunMode::Auto, true).await;
}

#[tokio::test]
async fn run_stays_on_the_callers_task_on_a_current_thread_runtime() {
    assert_runs_on_own_thread(RunMode::Auto, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_task_mode_keeps_run_off_its_own_thread_on_any_runtime() {
    assert_runs_on_own_thread(RunMode::CallersTask, false).await;
}

#[tokio::test]
async fn the_own_thread_mode_takes_a_thread_on_a_current_thread_runtime() {
    assert_runs_on_own_thread(RunMode::OwnThread, true).await;
}

/// The builder's two hooks: a failed (streaming) list reaches `on_watch_error`, an undecodable object
/// version reaches `on_decode_error` (and not the other), each once.
#[tokio::test(start_paused = true)]
async fn the_builders_error_hooks_hear_their_own_failures() {
    let watch_errors = Arc::new(std::sync::Mutex::new(Vec::new()));
    let decode_errors = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (w, d) = (Arc::clone(&watch_errors), Arc::clone(&decode_errors));
    let (fake, inf) = informer_of(Duration::ZERO, move |b| {
        b.on_watch_error(move |e| w.lock().unwrap().push(e.to_string()))
            .on_decode_error(move |e| d.lock().unwrap().push(e.to_string()))
    });
    fake.add(pod("ns", "a"));
    fake.fail_next_watch(kcache_reflector::Error::transport(std::io::Error::other(
        "connection reset",
    )));
    let (cancel, run) = start(&inf);
    assert!(inf.synced().await);
    let heard = |hook: &std::sync::Mutex<Vec<String>>| hook.lock().unwrap().clone();
    assert_eq!(heard(&watch_errors).len(), 1, "{:?}", heard(&watch_errors));
    assert!(heard(&decode_errors).is_empty());

    fake.update_undecodable(pod("ns", "a"), kcache_testing::Undecodable::Readable);
    eventually("the undecodable version removed", || {
        inf.indexer().get_by_key("ns/a").is_none()
    })
    .await;
    assert_eq!(
        heard(&decode_errors).len(),
        1,
        "{:?}",
        heard(&decode_errors)
    );
    assert_eq!(heard(&watch_errors).len(), 1, "{:?}", heard(&watch_errors));
    assert_eq!(inf.decode_errors(), 1);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

/// client-go 1.36's batch processing: the writes the cache refuses (an index function fails on
/// one object) are left out of the cache and never reach the handlers, the others do, and the
/// failure is logged with its cause. Whether the three adds are popped as one batch (one
/// transaction) or one by one, what the cache and the handlers see is the same.
#[tokio::test(flavor = "current_thread")]
async fn writes_the_cache_refuses_reach_no_handler_and_are_logged() {
    let (logs, _guard) = kcache_testing::LogCapture::capture();
    let (fake, inf) = informer_of(Duration::ZERO, |b| {
        b.indexers(
            kcache_store::Indexers::new().with("refuses-bad", |o: &DynamicObject| {
                if o.metadata.name.as_deref() == Some("bad") {
                    return Err("bad is not indexable".into());
                }
                Ok(Vec::new())
            }),
        )
    });
    let recorder = Recorder::default();
    let registration = inf.add_event_handler(recorder.clone()).unwrap();
    let (cancel, run) = start(&inf);
    assert!(registration.synced().await);
    fake.add(pod("ns", "a"));
    fake.add(pod("ns", "bad"));
    fake.add(pod("ns", "c"));
    recorder
        .wait("the adds of a and c", |log| log.len() == 2)
        .await;
    let keys: Vec<_> = recorder
        .events()
        .iter()
        .map(|s| s.key().to_owned())
        .collect();
    assert_eq!(keys, ["ns/a", "ns/c"]);
    assert!(inf.indexer().get_by_key("ns/bad").is_none());
    let refused: Vec<_> = logs
        .all()
        .into_iter()
        .filter(|l| l.contains("the cache refused a change; it is skipped"))
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].contains("bad is not indexable"), "{refused:?}");
    cancel.cancel();
    run.await.unwrap().unwrap();
}
