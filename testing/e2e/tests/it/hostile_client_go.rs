//! client-go's rules at the HTTP level, where kcache once differed: every retry waits the
//! reflector's backoff (client-go's `TestNewReflectorWithCustomBackoff`), a server without
//! streaming lists is listed without a report (client-go's `ListAndWatchWithContext` logs the
//! fallback at a low level only), and a handler that falls behind again and again logs a
//! bounded number of lines with a count of those held back. A `SharedIndexInformer` of typed
//! pods over both backends (`<scenario>::http`, `<scenario>::kube`, with the
//! `on_both_backends!` of the hostile-server tests) against a closed port or a
//! [`ScriptedServer`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::stream;
use kcache_informer::HandlerFuncs;
use kcache_reflector::{BackoffConfig, LOG_BURST, LOG_WINDOW};
use kcache_testing::LogCapture;
use kcache_testing_server::scripted_server::{
    Feed, FeedStream, Reply, ScriptedRequest, ScriptedServer, feed, initial_events_end, list_body,
    watch_line,
};

use crate::hostile::metronome;
use crate::hostile_support::{Limits, Pod, Running, State, pod, state};
use crate::support::Backend;

/// How long a real-clock test waits at most for what takes milliseconds on an idle machine.
const PATIENCE: Duration = Duration::from_secs(10);

/// client-go's custom backoff of `TestNewReflectorWithCustomBackoff`: 10 ms, doubling, no
/// jitter, capped at 100 ms.
fn custom_backoff() -> BackoffConfig {
    BackoffConfig {
        initial: Duration::from_millis(10),
        factor: 2.0,
        cap: Duration::from_millis(100),
        jitter: 0.0,
        ..BackoffConfig::default()
    }
}

/// Waits on the tokio clock until `cond` holds; panics after `limit`.
async fn eventually(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// client-go's `TestNewReflectorWithCustomBackoff` against a closed port: every refused
/// connection is followed by the next step of the backoff (10, 20, 40, 80, 100 ms) before the
/// next request, whether that is another streaming-list attempt, the paginated list that
/// follows the last one, or the next round. client-go's five failures take at least 250 ms;
/// so do kcache's.
async fn refused_connections_wait_the_custom_backoff_between_all_attempts(backend: Backend) {
    let refusing = kcache_testing_server::RefusingPort::new().unwrap();
    let port = refusing.port();
    let run = Running::start(
        backend,
        &format!("http://127.0.0.1:{port}"),
        Limits::default(),
        |b| b.seed(7).backoff(custom_backoff()),
    );
    eventually(PATIENCE, "six refused connections", || {
        run.reported_of("ConnectionRefused").len() >= 6
    })
    .await;
    let refused = run.reported_of("ConnectionRefused");
    assert_eq!(run.reported().len(), refused.len(), "{:?}", run.reported());
    let ms = Duration::from_millis;
    for (i, step) in [ms(10), ms(20), ms(40), ms(80), ms(100)]
        .into_iter()
        .enumerate()
    {
        let gap = refused[i + 1].at - refused[i].at;
        assert!(
            gap >= step,
            "attempt {} came {gap:?} after attempt {}, before the backoff's {step:?}",
            i + 2,
            i + 1
        );
    }
    let five = refused[5].at - refused[0].at;
    assert!(five >= ms(250), "{five:?}");
    assert!(!run.informer.has_synced());
    run.stop().await;
}

/// A server that answers every streaming list with `refusal` and serves `a` by a paginated
/// list, then a watch that stays open.
async fn server_without_streaming_lists(refusal: fn() -> Reply) -> ScriptedServer {
    let items = vec![pod("a", "10", "v1")];
    ScriptedServer::start(move |req| {
        if req.is_streaming_list() {
            refusal()
        } else if req.is_list() {
            Reply::json(200, list_body("10", None, &items))
        } else {
            Reply::stream(200, stream::pending())
        }
    })
    .await
    .unwrap()
}

/// client-go's `ListAndWatchWithContext`: a streaming list the server refuses because it does
/// not serve one falls back to a paginated list, logged at a low level only. The informer
/// syncs through the list; the watch-error hook hears nothing, no error is counted and no WARN
/// line is written, so a hook that counts failures stays quiet on every start against an
/// older server. Both refusals: kube-apiserver's 422 `Invalid` with the `WatchList` feature
/// off, and a 400 `BadRequest`.
async fn a_server_without_streaming_lists_syncs_through_a_list_without_a_report(backend: Backend) {
    let refusals: [fn() -> Reply; 2] = [
        || {
            Reply::status(
                422,
                "Invalid",
                "sendInitialEvents is forbidden for watch unless the WatchList feature gate is \
                 enabled",
            )
        },
        || Reply::status(400, "BadRequest", "unknown parameter: sendInitialEvents"),
    ];
    for refusal in refusals {
        let (logs, _guard) = LogCapture::capture();
        let server = server_without_streaming_lists(refusal).await;
        let run = Running::start(backend, server.url(), Limits::default(), |b| b.seed(7));
        run.converge(PATIENCE, &state(&[("ns/a", "10", "v1")]))
            .await;
        eventually(PATIENCE, "the watch", || {
            server.count(ScriptedRequest::is_plain_watch) == 1
        })
        .await;
        assert!(run.informer.has_synced());
        assert_eq!(server.count(ScriptedRequest::is_streaming_list), 1);
        assert_eq!(server.count(ScriptedRequest::is_list), 1);
        assert!(run.reported().is_empty(), "{:?}", run.reported());
        assert_eq!(run.informer.errors(), 0);
        assert!(logs.warnings("").is_empty(), "{:#?}", logs.warnings(""));
        assert!(
            logs.all()
                .iter()
                .any(|l| l.starts_with("DEBUG ") && l.contains("does not serve streaming lists")),
            "{:#?}",
            logs.all()
        );
        run.stop().await;
    }
}

/// A gate a handler thread blocks on while it is closed.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<bool>, std::sync::Condvar)>);

impl Gate {
    fn wait(&self) {
        let (closed, cv) = &*self.0;
        let mut closed = closed.lock().unwrap();
        while *closed {
            closed = cv.wait(closed).unwrap();
        }
    }
    fn set_closed(&self, close: bool) {
        let (closed, cv) = &*self.0;
        *closed.lock().unwrap() = close;
        cv.notify_all();
    }
}

/// Yields (so the runtime never idles and tokio's paused clock stays put) until `cond` holds,
/// for at most a minute of real time.
async fn until(what: &str, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "{what}: not in 60 s");
        tokio::task::yield_now().await;
    }
}

/// Events a flood sends a blocked handler: past the 1024 at which it is reported as falling
/// behind, short of the 2048 of the next report.
const FLOOD: usize = 1100;

/// A server whose streaming list sends `a` at 10 and then what the returned [`Feed`] sends;
/// lists and other watches are test failures (answered 500).
async fn fed_server() -> (ScriptedServer, Feed) {
    let (feed, rest) = feed();
    let rest: Mutex<Option<FeedStream>> = Mutex::new(Some(rest));
    let server = ScriptedServer::start(move |req| match rest.lock().unwrap().take() {
        Some(rest) if req.is_streaming_list() => {
            use futures_util::StreamExt as _;
            let initial = [
                watch_line("ADDED", &pod("a", "10", "v1")),
                initial_events_end("10"),
            ];
            Reply::stream(200, stream::iter(initial).chain(rest))
        }
        _ => Reply::status(500, "InternalError", "the script has no answer for this"),
    })
    .await
    .unwrap();
    (server, feed)
}

/// A flood of watch events over HTTP makes a slow handler fall 1024 events behind 25 times
/// within a minute: ten WARN lines (the burst), each naming the informer and the handler;
/// the first line of the next minute says that 15 were held back.
async fn a_handler_falling_behind_again_and_again_logs_a_bounded_number_of_lines(backend: Backend) {
    const ROUNDS: usize = 25;
    let (logs, _guard) = LogCapture::capture();
    let metronome = metronome();
    let (server, feed) = fed_server().await;
    let run = Running::start(backend, server.url(), Limits::default(), |b| b.seed(7));
    run.converge(Duration::from_secs(60), &state(&[("ns/a", "10", "v1")]))
        .await;
    metronome.abort();
    let gate = Gate::default();
    let (on_add, on_update) = (gate.clone(), gate.clone());
    let slow = run
        .informer
        .add_event_handler(
            HandlerFuncs::new()
                .named("slow-handler")
                .on_added(move |_: &Arc<Pod>, _| on_add.wait())
                .on_updated(move |_, _| on_update.wait()),
        )
        .unwrap();
    until("the slow handler's sync", || slow.has_synced()).await;

    let rv = AtomicUsize::new(10);
    let fall_behind_once = || async {
        gate.set_closed(true);
        for _ in 0..FLOOD {
            let rv = rv.fetch_add(1, Ordering::SeqCst) + 1;
            feed.send(watch_line("MODIFIED", &pod("a", &rv.to_string(), "v1")));
        }
        until("the backlog", || slow.buffer_depth() >= FLOOD - 1).await;
        gate.set_closed(false);
        until("the drain", || slow.buffer_depth() == 0).await;
    };
    for _ in 0..ROUNDS {
        fall_behind_once().await;
    }
    let behind = logs.warnings("an event handler is falling behind");
    assert_eq!(behind.len(), LOG_BURST as usize, "{behind:#?}");
    for line in &behind {
        assert!(line.contains("informer=pods"), "{line}");
        assert!(line.contains("handler=slow-handler"), "{line}");
        assert!(!line.contains("suppressed"), "{line}");
    }

    tokio::time::advance(LOG_WINDOW).await;
    fall_behind_once().await;
    let behind = logs.warnings("an event handler is falling behind");
    assert_eq!(behind.len(), LOG_BURST as usize + 1, "{behind:#?}");
    let held_back = ROUNDS - LOG_BURST as usize;
    assert!(
        behind[LOG_BURST as usize].contains(&format!("suppressed={held_back}")),
        "{behind:#?}"
    );
    let last = rv.load(Ordering::SeqCst).to_string();
    assert_eq!(
        run.cache(),
        [("ns/a".to_owned(), (last, "v1".to_owned()))]
            .into_iter()
            .collect::<State>()
    );
    run.stop().await;
}

on_both_backends!(
    #[tokio::test]
    refused_connections_wait_the_custom_backoff_between_all_attempts,
    a_server_without_streaming_lists_syncs_through_a_list_without_a_report,
);
on_both_backends!(
    #[tokio::test(start_paused = true)]
    a_handler_falling_behind_again_and_again_logs_a_bounded_number_of_lines
);
