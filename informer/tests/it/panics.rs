//! Handlers that panic: the panic is caught and logged, the event skipped, and the handler
//! paused a second before its next event, while the other handlers carry on (client-go's
//! `processorListener` with its panics recovered). Finer-grained pacing and the log line are
//! tested next to the delivery loop, with shorter pauses.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kcache_informer::HandlerFuncs;
use kcache_store::DynamicObject;

use crate::support::{Recorder, eventually, informer, pod, start};

/// client-go: a recovered handler panic skips the notification and the listener sleeps 1 s
/// before the next one. The initial add that panicked still counts as delivered (client-go's
/// does not, kubernetes/kubernetes#129024), and shutting the handler down during the pause
/// returns without waiting for it to end.
#[tokio::test]
async fn a_panicking_handler_pauses_a_second_and_the_others_carry_on() {
    let (fake, inf) = informer(Duration::ZERO);
    fake.add(pod("ns", "a"));
    let calls = Arc::new(Mutex::new(Vec::new()));
    let updates = Arc::new(AtomicUsize::new(0));
    let panicking = inf
        .add_event_handler(
            HandlerFuncs::new()
                .named("panics-on-everything")
                .on_added({
                    let calls = Arc::clone(&calls);
                    move |_: &Arc<DynamicObject>, _| {
                        calls.lock().unwrap().push(Instant::now());
                        panic!("bad add");
                    }
                })
                .on_updated({
                    let updates = Arc::clone(&updates);
                    move |_, _| {
                        updates.fetch_add(1, Ordering::SeqCst);
                        panic!("bad update");
                    }
                }),
        )
        .unwrap();
    let kept = Recorder::default();
    let kept_reg = inf.add_event_handler(kept.clone()).unwrap();
    let (cancel, run) = start(&inf);
    assert!(
        panicking.synced().await,
        "its initial add counts as delivered"
    );
    assert!(kept_reg.synced().await);

    fake.add(pod("ns", "b"));
    for i in 0..20 {
        fake.update(pod("ns", if i % 2 == 0 { "a" } else { "b" }));
    }
    kept.wait("every event", |l| l.len() == 22).await;
    eventually("the second add", || calls.lock().unwrap().len() == 2).await;
    let calls = calls.lock().unwrap().clone();
    let gap = calls[1] - calls[0];
    assert!(gap >= Duration::from_secs(1), "{gap:?} between two panics");

    // Paused after its second panic (the updates wait behind the pause).
    inf.shut_down_event_handler(&panicking).await.unwrap();
    let handled = updates.load(Ordering::SeqCst);
    assert!(handled < 20, "{handled} updates handled");
    cancel.cancel();
    run.await.unwrap().unwrap();
}
