//! Deletions missed while the watch was down still reach every handler, and the handlers'
//! view converges on the server's.

use std::time::Duration;

use futures_util::StreamExt;
use kcache_informer::{EventStream, QueueKind};
use kcache_store::DynamicObject;

use crate::support::{Recorder, Seen, cache_state, fake_state, informer_of, pod, replay, start};

/// Drains `stream` until `done` holds for everything seen, under paused time.
async fn collect(
    stream: &mut EventStream<DynamicObject>,
    seen: &mut Vec<Seen>,
    done: impl Fn(&[Seen]) -> bool,
) {
    while !done(seen) {
        let next = tokio::time::timeout(Duration::from_secs(600), stream.next())
            .await
            .expect("an event within ten virtual minutes")
            .expect("stream open");
        seen.push(Seen::from_event(&next));
    }
}

#[tokio::test(start_paused = true)]
async fn missed_delete_arrives_as_a_tombstone_with_either_queue() {
    for queue in [QueueKind::RealFifo, QueueKind::DeltaFifo] {
        let (fake, inf) = informer_of(Duration::ZERO, |b| b.queue(queue));
        fake.add(pod("ns", "a"));
        fake.add(pod("ns", "b"));
        let mut stream = inf.subscribe().unwrap();
        let (cancel, run) = start(&inf);
        let mut seen = Vec::new();
        collect(&mut stream, &mut seen, |s| s.len() == 2).await;
        assert!(stream.synced().await);

        // While the watch is down: b goes, c comes, and the history is compacted, so the
        // reflector must relist to find out.
        fake.drop_watches();
        fake.delete(&pod("ns", "b"));
        fake.add(pod("ns", "c"));
        fake.compact();

        collect(&mut stream, &mut seen, |s| {
            s.iter()
                .any(|e| e.key() == "ns/b" && matches!(e, Seen::Delete { .. }))
                && s.iter().any(|e| e.key() == "ns/c")
        })
        .await;
        assert!(
            seen.contains(&Seen::Delete {
                key: "ns/b".into(),
                tombstone: true
            }),
            "{queue:?}: {seen:?}"
        );
        assert_eq!(cache_state(&inf), fake_state(&fake), "{queue:?}");
        assert_eq!(replay(&seen), fake_state(&fake), "{queue:?}");
        cancel.cancel();
        run.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn handler_threads_converge_after_a_relist() {
    let (fake, inf) = informer_of(Duration::ZERO, |b| b.queue(QueueKind::DeltaFifo));
    for i in 0..10 {
        fake.add(pod("ns", &format!("p{i}")));
    }
    let rec = Recorder::default();
    inf.add_event_handler(rec.clone()).unwrap();
    let (cancel, run) = start(&inf);
    rec.wait("initial list", |l| l.len() == 10).await;

    fake.expire_watches();
    for i in 0..5 {
        fake.delete(&pod("ns", &format!("p{i}")));
    }
    fake.update(pod("ns", "p9"));
    fake.compact();

    let want = fake_state(&fake);
    rec.wait("convergence", |l| replay(l) == want).await;
    let tombstones = rec
        .events()
        .iter()
        .filter(|e| {
            matches!(
                e,
                Seen::Delete {
                    tombstone: true,
                    ..
                }
            )
        })
        .count();
    assert_eq!(tombstones, 5, "{:?}", rec.events());
    assert_eq!(cache_state(&inf), want);
    cancel.cancel();
    run.await.unwrap().unwrap();
}
