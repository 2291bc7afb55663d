//! Repeated warnings are rate limited: a flood that makes a slow handler fall behind again and
//! again logs a bounded number of lines a minute, and the first line of the next minute says
//! how many were held back.

use std::sync::Arc;
use std::time::Duration;

use kcache_informer::HandlerFuncs;
use kcache_reflector::{LOG_BURST, LOG_WINDOW};
use kcache_store::DynamicObject;
use kcache_testing::{FakeHandle, LogCapture};

use crate::support::{Gate, informer_of, pod, start};

/// Events a round pushes at a blocked handler: past the 1024 at which it is reported as
/// falling behind, short of the 2048 of the next report.
const FLOOD: usize = 1100;

/// Yields to the informer (and lets the handler's thread run) until `cond` holds. Yielding
/// keeps the runtime busy, so tokio's paused clock does not move meanwhile.
async fn until(what: &str, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "{what}: not in 60 s");
        tokio::task::yield_now().await;
    }
}

/// One round of the flood: with the handler blocked on `gate`, [`FLOOD`] updates reach its
/// buffer; then the gate opens and the handler drains it.
async fn fall_behind_once(
    fake: &FakeHandle<DynamicObject>,
    gate: &Gate,
    depth: &(impl Fn() -> usize + Sync),
) {
    gate.close();
    for _ in 0..FLOOD {
        fake.update(pod("ns", "hot"));
    }
    until("the backlog", || depth() >= FLOOD - 1).await;
    gate.open();
    until("the drain", || depth() == 0).await;
}

/// A handler that falls 1024 events behind in 25 floods within a minute: ten WARN lines (the
/// burst), not 25, each naming the informer and the handler; a minute later the next one says
/// that 15 were held back.
#[tokio::test(start_paused = true)]
async fn a_handler_falling_behind_again_and_again_logs_a_bounded_number_of_lines() {
    const ROUNDS: usize = 25;
    let (logs, _guard) = LogCapture::capture();
    let (fake, inf) = informer_of(Duration::ZERO, |b| b.name("pods"));
    let gate = Gate::default();
    gate.open();
    let (on_add, on_update) = (gate.clone(), gate.clone());
    let registration = inf
        .add_event_handler(
            HandlerFuncs::new()
                .named("slow-handler")
                .on_added(move |_: &Arc<DynamicObject>, _| on_add.wait())
                .on_updated(move |_, _| on_update.wait()),
        )
        .unwrap();
    let (cancel, run) = start(&inf);
    fake.add(pod("ns", "hot"));
    assert!(registration.synced().await);
    let depth = || registration.buffer_depth();

    for _ in 0..ROUNDS {
        fall_behind_once(&fake, &gate, &depth).await;
    }
    let behind = logs.warnings("an event handler is falling behind");
    assert_eq!(behind.len(), LOG_BURST as usize, "{behind:#?}");
    for line in &behind {
        assert!(line.contains("informer=pods"), "{line}");
        assert!(line.contains("handler=slow-handler"), "{line}");
        assert!(line.contains("pending=1024"), "{line}");
        assert!(!line.contains("suppressed"), "{line}");
    }

    // The next window: the first line carries the count of the lines held back.
    tokio::time::advance(LOG_WINDOW).await;
    fall_behind_once(&fake, &gate, &depth).await;
    let behind = logs.warnings("an event handler is falling behind");
    assert_eq!(behind.len(), LOG_BURST as usize + 1, "{behind:#?}");
    let held_back = ROUNDS - LOG_BURST as usize;
    assert!(
        behind[LOG_BURST as usize].contains(&format!("suppressed={held_back}")),
        "{behind:#?}"
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
}
