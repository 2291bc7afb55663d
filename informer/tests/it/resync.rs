//! Resync periods per subscriber, reconciled as client-go does, delivered only to the due ones.

use std::time::Duration;

use futures_util::StreamExt;
use kcache_informer::Event;
use kcache_store::DynamicObject;

use crate::support::{informer, pod, start};

fn is_sync(e: &Event<DynamicObject>) -> bool {
    matches!(e, Event::Update { old, new } if std::sync::Arc::ptr_eq(old, new)
        || old.metadata.resource_version == new.metadata.resource_version)
}

/// Counts the resync updates each of two streams gets in `window` of virtual time.
async fn count_syncs(
    a: &mut kcache_informer::EventStream<DynamicObject>,
    b: &mut kcache_informer::EventStream<DynamicObject>,
    window: Duration,
) -> (usize, usize) {
    let deadline = tokio::time::Instant::now() + window;
    let (mut na, mut nb) = (0, 0);
    loop {
        tokio::select! {
            Some(e) = a.next() => na += usize::from(is_sync(&e)),
            Some(e) = b.next() => nb += usize::from(is_sync(&e)),
            () = tokio::time::sleep_until(deadline) => return (na, nb),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn resync_goes_only_to_subscribers_that_are_due() {
    // Informer check period 10s: one stream resyncs every 10s, the other every 30s.
    let (fake, inf) = informer(Duration::from_secs(10));
    fake.add(pod("ns", "a"));
    fake.add(pod("ns", "b"));
    let mut every_10 = inf.subscribe().unwrap();
    let mut every_30 = inf.subscribe_with_resync(Duration::from_secs(30)).unwrap();
    let (cancel, run) = start(&inf);
    assert!(inf.synced().await);
    for s in [&mut every_10, &mut every_30] {
        for _ in 0..2 {
            assert!(matches!(s.next().await.unwrap(), Event::Add { .. }));
        }
    }
    let (n10, n30) = count_syncs(&mut every_10, &mut every_30, Duration::from_secs(61)).await;
    // Two objects per resync: six rounds for the first, two for the second.
    assert_eq!((n10, n30), (12, 4));
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn informer_without_resync_never_resyncs_and_short_periods_are_raised() {
    let (fake, inf) = informer(Duration::ZERO);
    fake.add(pod("ns", "a"));
    // Asking for a resync does nothing on an informer built with zero (client-go #57162).
    let mut asks = inf.subscribe_with_resync(Duration::from_secs(5)).unwrap();
    let mut quiet = inf.subscribe_with_resync(Duration::ZERO).unwrap();
    let (cancel, run) = start(&inf);
    assert!(inf.synced().await);
    asks.next().await.unwrap();
    quiet.next().await.unwrap();
    assert_eq!(
        count_syncs(&mut asks, &mut quiet, Duration::from_secs(60)).await,
        (0, 0)
    );
    cancel.cancel();
    run.await.unwrap().unwrap();

    // Before start, a shorter handler period lowers the informer's check period; periods
    // under a second are raised to one second.
    let (fake, inf) = informer(Duration::from_secs(60));
    fake.add(pod("ns", "a"));
    let mut fast = inf
        .subscribe_with_resync(Duration::from_millis(10))
        .unwrap();
    let mut slow = inf.subscribe().unwrap();
    let (cancel, run) = start(&inf);
    assert!(inf.synced().await);
    fast.next().await.unwrap();
    slow.next().await.unwrap();
    let (nf, ns) = count_syncs(&mut fast, &mut slow, Duration::from_millis(10_500)).await;
    assert_eq!((nf, ns), (10, 0));
    cancel.cancel();
    run.await.unwrap().unwrap();
}

/// client-go's `TestResyncCheckPeriod`: before start, each handler that asks for a shorter
/// period lowers the informer's check period and the handlers' periods are reconciled with
/// it; after start the check period is fixed and a shorter request is raised to it.
#[tokio::test(start_paused = true)]
async fn resync_check_period_and_handler_periods_follow_client_go() {
    use crate::support::Recorder;
    let hours = |h: u64| Duration::from_secs(h * 3600);
    let (_fake, inf) = informer(hours(12));
    assert_eq!(inf.resync_check_period(), hours(12));

    let h1 = inf.add_event_handler(Recorder::default()).unwrap();
    assert_eq!(inf.resync_check_period(), hours(12));
    assert_eq!(inf.resync_period(&h1), Some(hours(12)));

    let h2 = inf
        .add_event_handler_with_resync(Recorder::default(), Duration::from_secs(60))
        .unwrap();
    assert_eq!(inf.resync_check_period(), Duration::from_secs(60));
    assert_eq!(inf.resync_period(&h1), Some(hours(12)));
    assert_eq!(inf.resync_period(&h2), Some(Duration::from_secs(60)));

    let h3 = inf
        .add_event_handler_with_resync(Recorder::default(), Duration::ZERO)
        .unwrap();
    assert_eq!(inf.resync_check_period(), Duration::from_secs(60));
    assert_eq!(inf.resync_period(&h3), Some(Duration::ZERO));

    let (cancel, run) = start(&inf);
    assert!(inf.synced().await);
    let h4 = inf
        .add_event_handler_with_resync(Recorder::default(), Duration::from_secs(10))
        .unwrap();
    assert_eq!(
        inf.resync_check_period(),
        Duration::from_secs(60),
        "fixed once running"
    );
    assert_eq!(
        inf.resync_period(&h4),
        Some(Duration::from_secs(60)),
        "raised to it"
    );

    inf.remove_event_handler(&h4);
    assert_eq!(inf.resync_period(&h4), None);
    let (_other_fake, other) = informer(hours(1));
    assert_eq!(
        other.resync_period(&h1),
        None,
        "another informer's registration"
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
}
