//! Shutting a handler down: removed, then waited for until its running callback has returned,
//! its thread has exited and the handler has been dropped (client-go's `ShutDownEventHandler`).

use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::FutureExt as _;
use kcache_informer::{Error, HandlerFuncs, Registration};
use kcache_store::DynamicObject;

use crate::support::{Gate, Recorder, Seen, eventually, informer, pod, start};

/// A handler that counts its adds and blocks in each until `gate` opens; it holds `token`, so
/// the test can tell when it has been dropped.
fn blocking(gate: &Gate, calls: &Arc<AtomicUsize>, token: &Arc<()>) -> HandlerFuncs<DynamicObject> {
    let (gate, calls, token) = (gate.clone(), Arc::clone(calls), Arc::clone(token));
    HandlerFuncs::new()
        .named("blocking")
        .on_added(move |_: &Arc<DynamicObject>, _| {
            assert!(Arc::strong_count(&token) > 1);
            calls.fetch_add(1, Ordering::SeqCst);
            gate.wait();
        })
}

fn added(log: &[Seen], key: &str) -> bool {
    log.iter()
        .any(|e| matches!(e, Seen::Add { key: k, .. } if k == key))
}

/// client-go's `ShutDownEventHandler`: the handler is removed at once (what it had pending is
/// dropped), and the wait ends only when the callback it is running has returned; after that
/// it is never called again. For a handler added before start and one added after.
#[tokio::test]
async fn shutting_down_waits_for_the_running_callback_and_nothing_arrives_after() {
    for late in [false, true] {
        let (fake, inf) = informer(Duration::ZERO);
        fake.add(pod("ns", "a"));
        let kept = Recorder::default();
        inf.add_event_handler(kept.clone()).unwrap();
        let (gate, calls, token) = (Gate::default(), Arc::default(), Arc::new(()));
        let (reg, cancel, run) = if late {
            let (cancel, run) = start(&inf);
            kept.wait("the initial list", |l| added(l, "ns/a")).await;
            let reg = inf
                .add_event_handler(blocking(&gate, &calls, &token))
                .unwrap();
            (reg, cancel, run)
        } else {
            let reg = inf
                .add_event_handler(blocking(&gate, &calls, &token))
                .unwrap();
            let (cancel, run) = start(&inf);
            (reg, cancel, run)
        };
        eventually("the callback for ns/a to block", || {
            calls.load(Ordering::SeqCst) == 1
        })
        .await;
        // Queued behind the blocked callback.
        fake.add(pod("ns", "b"));
        kept.wait("ns/b", |l| added(l, "ns/b")).await;

        let mut shut = pin!(inf.shut_down_event_handler(&reg));
        assert!(reg.is_closed(), "removed before the future is polled");
        assert!(
            shut.as_mut().now_or_never().is_none(),
            "late: {late}: resolved while the callback runs"
        );
        fake.add(pod("ns", "c"));
        kept.wait("ns/c", |l| added(l, "ns/c")).await;
        assert!(shut.as_mut().now_or_never().is_none(), "late: {late}");

        gate.open();
        shut.await.unwrap();
        assert_eq!(Arc::strong_count(&token), 1, "the handler has been dropped");
        fake.add(pod("ns", "d"));
        kept.wait("ns/d", |l| added(l, "ns/d")).await;
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "late: {late}: only ns/a reached the handler"
        );
        assert_eq!(reg.buffer_depth(), 0, "what was pending is dropped");
        cancel.cancel();
        run.await.unwrap().unwrap();
    }
}

/// client-go's `ShutDownEventHandler` on an informer that never ran: the handler's listener is
/// shut down all the same.
#[tokio::test]
async fn shutting_down_a_handler_of_an_informer_that_never_ran() {
    let (_fake, inf) = informer(Duration::ZERO);
    let (gate, calls, token) = (Gate::default(), Arc::default(), Arc::new(()));
    let reg = inf
        .add_event_handler(blocking(&gate, &calls, &token))
        .unwrap();
    inf.shut_down_event_handler(&reg).await.unwrap();
    assert!(reg.is_closed());
    assert_eq!(Arc::strong_count(&token), 1, "the handler has been dropped");
    assert!(!inf.is_stopped());
}

/// As client-go's `RemoveEventHandler` and `ShutDownEventHandler`, shutting down is idempotent:
/// a second call, a call after a removal or after the informer stopped resolves once the
/// handler's thread is gone, at once if it already is.
#[tokio::test]
async fn shutting_down_again_after_removal_or_stop_resolves() {
    let (fake, inf) = informer(Duration::ZERO);
    fake.add(pod("ns", "a"));
    let removed = inf.add_event_handler(Recorder::default()).unwrap();
    let stopped = inf.add_event_handler(Recorder::default()).unwrap();
    let (cancel, run) = start(&inf);
    assert!(removed.synced().await && stopped.synced().await);

    inf.remove_event_handler(&removed);
    inf.shut_down_event_handler(&removed).await.unwrap();
    assert!(matches!(
        inf.shut_down_event_handler(&removed).now_or_never(),
        Some(Ok(()))
    ));

    cancel.cancel();
    run.await.unwrap().unwrap();
    assert!(
        matches!(
            inf.shut_down_event_handler(&stopped).now_or_never(),
            Some(Ok(()))
        ),
        "stopping the informer shut every handler down"
    );
}

/// client-go's `RemoveEventHandler` ignores a registration of another informer; so does
/// shutting down.
#[tokio::test]
async fn shutting_down_another_informers_registration_does_nothing() {
    let (fake, inf) = informer(Duration::ZERO);
    let (_, other) = informer(Duration::ZERO);
    fake.add(pod("ns", "a"));
    let rec = Recorder::default();
    let reg = inf.add_event_handler(rec.clone()).unwrap();
    assert!(matches!(
        other.shut_down_event_handler(&reg).now_or_never(),
        Some(Ok(()))
    ));
    assert!(!reg.is_closed());
    let (cancel, run) = start(&inf);
    assert!(reg.synced().await);
    assert_eq!(rec.events().len(), 1);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

/// client-go's `ShutDownEventHandler` deadlocks when a handler calls it from its own callback:
/// here waiting there is an error, the handler is removed all the same, and a wait from
/// elsewhere ends once the callback returns.
#[tokio::test]
async fn shutting_down_from_inside_the_handler_is_an_error() {
    let (fake, inf) = informer(Duration::ZERO);
    fake.add(pod("ns", "a"));
    fake.add(pod("ns", "b"));
    let slot = Arc::new(OnceLock::<Registration<DynamicObject>>::new());
    let (outcomes, mut outcome) = tokio::sync::mpsc::unbounded_channel();
    let reg = inf
        .add_event_handler(HandlerFuncs::new().on_added({
            let (inf, slot) = (inf.clone(), Arc::clone(&slot));
            move |_: &Arc<DynamicObject>, _| {
                let reg = slot.get().unwrap();
                // Polled here, on the handler's own thread.
                let waited = inf.shut_down_event_handler(reg).now_or_never();
                outcomes.send(waited).unwrap();
            }
        }))
        .unwrap();
    slot.set(reg).unwrap();
    let reg = slot.get().unwrap();
    let (cancel, run) = start(&inf);

    let waited = outcome.recv().await.unwrap();
    assert!(
        matches!(waited, Some(Err(Error::ShutdownFromHandler))),
        "{waited:?}"
    );
    assert!(reg.is_closed());
    inf.shut_down_event_handler(reg).await.unwrap();
    assert!(
        outcome.recv().await.is_none(),
        "ns/b never reached the handler, which is dropped"
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
}

/// Dropping an informer without running or stopping it ends its handlers' threads and drops
/// the handlers: nothing waits for events that can no longer come.
#[tokio::test]
async fn dropping_an_informer_that_never_ran_ends_its_handler_threads() {
    let (_fake, inf) = informer(Duration::ZERO);
    let token = Arc::new(());
    let held = Arc::clone(&token);
    let registration = inf
        .add_event_handler(
            HandlerFuncs::new().on_added(move |_: &Arc<DynamicObject>, _| {
                let _ = &held;
            }),
        )
        .unwrap();
    assert_eq!(Arc::strong_count(&token), 2);
    drop(inf);
    eventually("the handler to be dropped with its thread", || {
        Arc::strong_count(&token) == 1
    })
    .await;
    assert!(registration.is_closed());
}
