//! Hostile servers at the HTTP level: a `SharedIndexInformer` of typed pods over client-http
//! against a [`ScriptedServer`] that misbehaves in one way per test. Each test checks that the
//! cache ends equal to what the server serves last (or leaves out what cannot be decoded), that
//! the watch-error hook and a WARN line inside `reflector{resource=pods}` carry the cause, and
//! that time and memory stay within the configured bounds.
//!
//! Each scenario runs twice (`<scenario>::http`, `<scenario>::kube`): over client-http's own
//! client and over kube-rs's (`KubeListerWatcher`), which must meet the same bounds.
//!
//! The tests run on a current-thread runtime, so [`LogCapture::capture`] sees everything the
//! reflector and the client log. They use the real clock with a 5-100 ms backoff, except the
//! `Retry-After` test, which pauses the clock (see [`metronome`]). A wait on the real clock is
//! bounded by [`HEAL`] (10 s), far above what it takes on an idle machine, so that a loaded one
//! does not fail it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream;
use kcache_testing_server::scripted_server::{
    Feed, FeedStream, Reply, ScriptedRequest, ScriptedServer, feed, initial_events_end, list_body,
    watch_line,
};
use serde_json::{Value, json};

use crate::hostile_support::{Limits, Running, State, broken_pod, pod, quick, state};
use crate::support::Backend;
use kcache_testing::LogCapture;

/// Each scenario (an `async fn(Backend)`) as a module of two tests, `http` and `kube`: the
/// informer over client-http's own client and over kube-rs's, each with the test attribute
/// given (`#[tokio::test]`, or `#[tokio::test(start_paused = true)]` on tokio's paused clock).
macro_rules! on_both_backends {
    (#[$attr:meta] $($name:ident),* $(,)?) => {$(
        mod $name {
            #[$attr]
            async fn http() {
                super::$name(super::Backend::Http).await;
            }
            #[$attr]
            async fn kube() {
                super::$name(super::Backend::Kube).await;
            }
        }
    )*};
}

/// How long a real-clock test waits for the informer to heal at most.
pub(crate) const HEAL: Duration = Duration::from_secs(10);

/// The span every reflector line is logged in.
pub(crate) const SPAN: &str = "reflector{resource=pods}: ";

/// The answer of a server without the streaming list (`WatchList` off): the reflector falls
/// back to a paginated list at once.
pub(crate) fn no_streaming_list() -> Reply {
    Reply::status(
        422,
        "Invalid",
        "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
    )
}

/// A streaming list of `objects` at `rv`, then whatever `rest` sends.
fn streaming_list(
    objects: &[Value],
    rv: &str,
    rest: impl futures_core::Stream<Item = Bytes> + Send + 'static,
) -> Reply {
    let initial: Vec<Bytes> = objects
        .iter()
        .map(|o| watch_line("ADDED", o))
        .chain([initial_events_end(rv)])
        .collect();
    Reply::stream(200, stream::iter(initial).chain(rest))
}

/// A server whose first streaming list sends `objects` at `rv` and then what the returned
/// [`Feed`] sends; any other request is a test failure (answered 500 and counted).
async fn one_watch_server(objects: Vec<Value>, rv: &'static str) -> (ScriptedServer, Feed) {
    let (feed, rest) = feed();
    let rest: Mutex<Option<FeedStream>> = Mutex::new(Some(rest));
    let server = ScriptedServer::start(move |req| match rest.lock().unwrap().take() {
        Some(rest) if req.is_streaming_list() => streaming_list(&objects, rv, rest),
        _ => Reply::status(500, "InternalError", "the script has no answer for this"),
    })
    .await
    .unwrap();
    (server, feed)
}

/// Waits on the real clock until `cond` holds; panics after `limit`.
pub(crate) async fn eventually(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "{what}: not after {limit:?}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Asserts that some WARN line inside the reflector's span contains every one of `needles`.
pub(crate) fn assert_warned(logs: &LogCapture, needles: &[&str]) {
    let lines = logs.warnings(needles[0]);
    assert!(
        lines
            .iter()
            .any(|l| l.contains(SPAN) && needles.iter().all(|n| l.contains(n))),
        "no WARN line in {SPAN:?} with {needles:?}; warnings: {:#?}",
        logs.warnings("")
    );
}

async fn an_undecodable_modified_removes_the_old_version_and_a_good_one_brings_it_back(
    backend: Backend,
) {
    let (logs, _guard) = LogCapture::capture();
    let (server, feed) =
        one_watch_server(vec![pod("a", "10", "v1"), pod("b", "10", "v1")], "10").await;
    let run = Running::start(backend, server.url(), Limits::default(), quick);
    run.converge(HEAL, &state(&[("ns/a", "10", "v1"), ("ns/b", "10", "v1")]))
        .await;

    // `spec.containers` a string: the body does not decode, its identity does.
    feed.send(watch_line(
        "MODIFIED",
        &broken_pod("a", "11", json!({"containers": "x"})),
    ));
    run.converge(HEAL, &state(&[("ns/b", "10", "v1")])).await;
    assert_eq!(
        run.informer.last_sync_resource_version().as_deref(),
        Some("11")
    );
    assert!(run.heard.events().contains(&"delete ns/a".to_owned()));
    let decode = run.reported_of("Decode");
    assert_eq!(decode.len(), 1, "{decode:?}");
    assert_eq!(decode[0].path.as_deref(), Some("object.spec.containers"));
    assert!(
        decode[0]
            .chain
            .contains("MODIFIED ns/a at resourceVersion 11")
    );
    assert_warned(
        &logs,
        &[
            "leaving an undecodable object out of the cache",
            "ns/a",
            "object.spec.containers",
        ],
    );

    // The next good version brings it back, as an add.
    feed.send(watch_line("MODIFIED", &pod("a", "12", "v2")));
    run.converge(HEAL, &state(&[("ns/a", "12", "v2"), ("ns/b", "10", "v1")]))
        .await;
    assert_eq!(
        run.heard.events()[2..],
        ["delete ns/a", "add ns/a@12"],
        "{:?}",
        run.heard.events()
    );
    assert_eq!(run.informer.decode_errors(), 1);
    // No relist was needed: the one streaming list carried everything.
    assert_eq!(server.requests().len(), 1, "{:?}", server.requests());
    run.stop().await;
}

async fn an_undecodable_deleted_removes_the_object(backend: Backend) {
    let (logs, _guard) = LogCapture::capture();
    let (server, feed) =
        one_watch_server(vec![pod("a", "10", "v1"), pod("b", "10", "v1")], "10").await;
    let run = Running::start(backend, server.url(), Limits::default(), quick);
    run.converge(HEAL, &state(&[("ns/a", "10", "v1"), ("ns/b", "10", "v1")]))
        .await;

    feed.send(watch_line(
        "DELETED",
        &broken_pod(
            "b",
            "11",
            json!({"containers": [{"name": "main", "image": 7}]}),
        ),
    ));
    run.converge(HEAL, &state(&[("ns/a", "10", "v1")])).await;
    assert_eq!(
        run.informer.last_sync_resource_version().as_deref(),
        Some("11")
    );
    assert_eq!(
        run.heard.events().last().map(String::as_str),
        Some("delete ns/b")
    );
    let decode = run.reported_of("Decode");
    assert_eq!(decode.len(), 1, "{decode:?}");
    assert_eq!(
        decode[0].path.as_deref(),
        Some("object.spec.containers[0].image")
    );
    assert!(
        decode[0]
            .chain
            .contains("DELETED ns/b at resourceVersion 11")
    );
    assert_warned(
        &logs,
        &["leaving an undecodable object out of the cache", "ns/b"],
    );
    assert_eq!(server.requests().len(), 1, "{:?}", server.requests());
    run.stop().await;
}

async fn the_real_deleted_after_an_undecodable_modified_is_not_heard_twice(backend: Backend) {
    let (server, feed) = one_watch_server(vec![pod("a", "10", "v1")], "10").await;
    let run = Running::start(backend, server.url(), Limits::default(), quick);
    run.converge(HEAL, &state(&[("ns/a", "10", "v1")])).await;
    feed.send(watch_line(
        "MODIFIED",
        &broken_pod("a", "11", json!({"containers": "x"})),
    ));
    run.converge(HEAL, &State::new()).await;
    // The object is then deleted for real: the cache no longer holds it, so handlers, which
    // heard its removal already, hear nothing more.
    feed.send(watch_line("DELETED", &pod("a", "12", "v1")));
    feed.send(watch_line("ADDED", &pod("b", "13", "v1")));
    run.converge(HEAL, &state(&[("ns/b", "13", "v1")])).await;
    assert_eq!(
        run.heard.events(),
        ["add ns/a@10", "delete ns/a", "add ns/b@13"]
    );
    run.stop().await;
}

async fn an_event_over_the_size_limit_is_healed_by_a_relist(backend: Backend) {
    const LIMIT: usize = 16 * 1024;
    let (logs, _guard) = LogCapture::capture();
    // The server's state; the first streaming list goes on with the feed.
    let objects = Arc::new(Mutex::new((vec![pod("a", "10", "v1")], "10".to_owned())));
    let (feed, rest) = feed();
    let rest = Mutex::new(Some(rest));
    let server = ScriptedServer::start({
        let objects = Arc::clone(&objects);
        move |req| {
            let (items, rv) = objects.lock().unwrap().clone();
            if req.is_streaming_list() {
                match rest.lock().unwrap().take() {
                    Some(rest) => streaming_list(&items, &rv, rest),
                    None => streaming_list(&items, &rv, stream::pending()),
                }
            } else if req.is_list() {
                Reply::json(200, list_body(&rv, None, &items))
            } else {
                Reply::stream(200, stream::pending())
            }
        }
    })
    .await
    .unwrap();
    let run = Running::start(
        backend,
        server.url(),
        Limits {
            max_event_size: Some(LIMIT),
            ..Limits::default()
        },
        quick,
    );
    run.converge(HEAL, &state(&[("ns/a", "10", "v1")])).await;

    // Version 11 carries 64 KiB in a field the type ignores: as an event it is over the limit
    // (so unreadable: nothing of it is buffered); in a list it is fine.
    let mut big = pod("a", "11", "v2");
    big["padding"] = json!("x".repeat(64 * 1024));
    *objects.lock().unwrap() = (vec![big.clone()], "11".to_owned());
    feed.send(watch_line("MODIFIED", &big));
    // Healed by a relist within `HEAL` (not left for a resync).
    run.converge(HEAL, &state(&[("ns/a", "11", "v2")])).await;

    let oversize: Vec<_> = run
        .reported_of("Decode")
        .into_iter()
        .filter(|r| r.chain.contains("larger than the limit of 16384 bytes"))
        .collect();
    assert!(!oversize.is_empty(), "{:?}", run.reported());
    assert_warned(
        &logs,
        &[
            "watch ended; relisting",
            "larger than the limit of 16384 bytes",
        ],
    );
    // The relist's streaming lists hold the same oversize event; the paginated list heals.
    assert_eq!(
        server.count(ScriptedRequest::is_list),
        1,
        "{:?}",
        server.requests()
    );
    run.stop().await;
}

async fn a_closed_port_is_reported_with_its_cause_not_silently_retried(backend: Backend) {
    let (logs, _guard) = LogCapture::capture();
    let refusing = kcache_testing_server::RefusingPort::new().unwrap();
    let port = refusing.port();
    let run = Running::start(
        backend,
        &format!("http://127.0.0.1:{port}"),
        Limits::default(),
        quick,
    );
    // Reported at the first attempt (within `HEAL`, a bound a loaded machine keeps), not after
    // retries that go on in silence.
    eventually(HEAL, "a refused connection reported", || {
        !run.reported_of("ConnectionRefused").is_empty()
    })
    .await;
    let refused = run.reported_of("ConnectionRefused");
    assert!(
        refused[0].chain.contains("Connection refused"),
        "{refused:?}"
    );
    assert_warned(&logs, &["Connection refused", "transport error"]);
    assert!(run.informer.errors() >= 1);
    assert!(!run.informer.has_synced());
    assert_eq!(run.cache(), State::new());
    run.stop().await;
}

async fn a_list_item_without_a_name_is_reported_and_the_rest_syncs(backend: Backend) {
    let (logs, _guard) = LogCapture::capture();
    let mut nameless = pod("x", "9", "v1");
    nameless["metadata"].as_object_mut().unwrap().remove("name");
    let items = vec![pod("a", "10", "v1"), nameless, pod("b", "10", "v1")];
    let server = ScriptedServer::start(move |req| {
        if req.is_streaming_list() {
            no_streaming_list()
        } else if req.is_list() {
            Reply::json(200, list_body("10", None, &items))
        } else {
            Reply::stream(200, stream::pending())
        }
    })
    .await
    .unwrap();
    let run = Running::start(backend, server.url(), Limits::default(), quick);
    run.converge(HEAL, &state(&[("ns/a", "10", "v1"), ("ns/b", "10", "v1")]))
        .await;
    assert!(run.informer.has_synced());
    assert_eq!(run.informer.decode_errors(), 1);
    let decode = run.reported_of("Decode");
    assert_eq!(decode.len(), 1, "{decode:?}");
    assert_eq!(decode[0].path.as_deref(), Some("metadata.name"));
    assert!(decode[0].chain.contains("list item 1"), "{decode:?}");
    assert_warned(
        &logs,
        &[
            "leaving an undecodable object out of the cache",
            "list item 1",
            "metadata.name is missing",
        ],
    );
    assert_eq!(server.count(ScriptedRequest::is_list), 1);
    run.stop().await;
}

/// A server whose streaming lists send `a` and `b` but never the bookmark that ends the initial
/// events (`then` decides what follows: the end of the body, or nothing ever); lists work.
async fn no_bookmark_server(then: fn() -> stream::BoxStream<'static, Bytes>) -> ScriptedServer {
    let items = vec![pod("a", "10", "v1"), pod("b", "10", "v1")];
    ScriptedServer::start(move |req| {
        if req.is_streaming_list() {
            let added: Vec<Bytes> = items.iter().map(|o| watch_line("ADDED", o)).collect();
            Reply::stream(200, stream::iter(added).chain(then()))
        } else if req.is_list() {
            Reply::json(200, list_body("10", None, &items))
        } else {
            Reply::stream(200, stream::pending())
        }
    })
    .await
    .unwrap()
}

/// Runs an informer against a [`no_bookmark_server`]; `failure` is how each failed attempt is
/// reported.
async fn falls_back_without_the_bookmark(
    backend: Backend,
    then: fn() -> stream::BoxStream<'static, Bytes>,
    failure: &str,
    text: &str,
) {
    let (logs, _guard) = LogCapture::capture();
    let server = no_bookmark_server(then).await;
    let run = Running::start(backend, server.url(), Limits::default(), |b| {
        quick(b).idle_timeout(Some(Duration::from_millis(200)))
    });
    // Within `HEAL`: after a few idle timeouts at most, never waiting on the stalled stream.
    run.converge(HEAL, &state(&[("ns/a", "10", "v1"), ("ns/b", "10", "v1")]))
        .await;
    assert!(run.informer.has_synced());
    // Three attempts (the default), then one paginated list and a plain watch.
    assert_eq!(server.count(ScriptedRequest::is_streaming_list), 3);
    assert_eq!(server.count(ScriptedRequest::is_list), 1);
    // Each failed attempt is reported to the hook and the log: the first two as retried, the
    // last as the fallback.
    let failed = run.reported_of(failure);
    assert_eq!(failed.len(), 3, "{:?}", run.reported());
    assert!(failed[0].chain.contains(text), "{failed:?}");
    let lines = logs.warnings("streaming list failed");
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(
        lines.iter().all(|l| l.contains(SPAN) && l.contains(text)),
        "{lines:#?}"
    );
    assert!(
        lines[2].contains("falling back to a paginated list"),
        "{lines:#?}"
    );
    run.stop().await;
}

async fn a_streaming_list_that_ends_without_its_bookmark_falls_back_to_a_paginated_list(
    backend: Backend,
) {
    falls_back_without_the_bookmark(
        backend,
        || stream::empty().boxed(),
        "InitialEventsIncomplete",
        "ended after 2 events without its initial-events bookmark",
    )
    .await;
}

async fn a_streaming_list_that_stalls_without_its_bookmark_falls_back_after_the_idle_timeout(
    backend: Backend,
) {
    falls_back_without_the_bookmark(
        backend,
        || stream::pending().boxed(),
        "WatchIdle",
        "watch delivered nothing for 200ms",
    )
    .await;
}

async fn a_repeated_continue_token_fails_the_list_at_once(backend: Backend) {
    let (logs, _guard) = LogCapture::capture();
    // In the first two lists the second page names the same token again, for ever; the
    // third list ends after two pages.
    let lists = Arc::new(AtomicUsize::new(0));
    let server = ScriptedServer::start({
        let lists = Arc::clone(&lists);
        move |req| {
            if req.is_streaming_list() {
                return no_streaming_list();
            }
            if !req.is_list() {
                return Reply::stream(200, stream::pending());
            }
            if req.continue_token().is_none() {
                lists.fetch_add(1, Ordering::SeqCst);
                return Reply::json(200, list_body("10", Some("same"), &[pod("a", "10", "v1")]));
            }
            let token = (lists.load(Ordering::SeqCst) <= 2).then_some("same");
            Reply::json(200, list_body("10", token, &[pod("b", "10", "v1")]))
        }
    })
    .await
    .unwrap();
    let run = Running::start(backend, server.url(), Limits::default(), quick);
    run.converge(HEAL, &state(&[("ns/a", "10", "v1"), ("ns/b", "10", "v1")]))
        .await;
    let limits = run.reported_of("Limit");
    assert_eq!(limits.len(), 2, "{:?}", run.reported());
    assert!(
        limits[0]
            .chain
            .contains("the server repeated the continue token of an earlier page"),
        "{limits:?}"
    );
    assert_warned(
        &logs,
        &["list and watch failed", "repeated the continue token"],
    );
    // Two pages a list, three lists: nothing was appended past the repeat.
    assert_eq!(
        server.count(ScriptedRequest::is_list),
        6,
        "{:?}",
        server.requests()
    );
    run.stop().await;
}

/// Sets its flag when dropped.
pub(crate) struct SetOnDrop(pub(crate) Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

async fn a_list_body_over_max_list_bytes_fails_without_being_buffered(backend: Backend) {
    const LIMIT: usize = 64 * 1024;
    let (logs, _guard) = LogCapture::capture();
    let lists = Arc::new(AtomicUsize::new(0));
    // Set when the endless body is dropped (the client hung up).
    let dropped = Arc::new(AtomicBool::new(false));
    let server = ScriptedServer::start({
        let (lists, dropped) = (Arc::clone(&lists), Arc::clone(&dropped));
        move |req| {
            if req.is_streaming_list() {
                return no_streaming_list();
            }
            if !req.is_list() {
                return Reply::stream(200, stream::pending());
            }
            if lists.fetch_add(1, Ordering::SeqCst) > 0 {
                return Reply::json(200, list_body("10", None, &[pod("a", "10", "v1")]));
            }
            // A list that never ends: items for ever.
            let head = Bytes::from_static(
                br#"{"kind":"PodList","metadata":{"resourceVersion":"10"},"items":["#,
            );
            let mut item = pod("filler", "10", "v1").to_string();
            item.push(',');
            let guard = SetOnDrop(Arc::clone(&dropped));
            let items = stream::repeat(Bytes::from(item)).map(move |b| {
                let _ = &guard;
                b
            });
            Reply::stream(200, stream::iter([head]).chain(items))
        }
    })
    .await
    .unwrap();
    let run = Running::start(
        backend,
        server.url(),
        Limits {
            max_list_bytes: Some(LIMIT),
            ..Limits::default()
        },
        quick,
    );
    eventually(HEAL, "the oversize list reported", || {
        !run.reported_of("Limit").is_empty()
    })
    .await;
    let limits = run.reported_of("Limit");
    assert!(
        limits[0]
            .chain
            .contains("the list response is larger than the limit of 65536 bytes"),
        "{limits:?}"
    );
    assert_warned(
        &logs,
        &[
            "list and watch failed",
            "larger than the limit of 65536 bytes",
        ],
    );
    // The client stopped reading and hung up: the endless body was dropped, and the server
    // wrote little more than the limit and the sockets' buffers.
    eventually(HEAL, "the endless body dropped", || {
        dropped.load(Ordering::SeqCst)
    })
    .await;
    assert!(
        server.bytes_sent() < 16 << 20,
        "{} bytes sent",
        server.bytes_sent()
    );
    run.converge(HEAL, &state(&[("ns/a", "10", "v1")])).await;
    run.stop().await;
}

/// Keeps tokio's paused clock moving in steps of 5 ms.
///
/// A paused clock jumps to the next timer whenever the runtime has nothing to run, including
/// while a loopback socket has data on its way: without a short timer pending, the jump could
/// land on a 60 s request timeout in the middle of an exchange. With this one pending at all
/// times, no jump is longer than 5 ms, and a 30 s sleep takes 6,000 steps (a fraction of a
/// real second).
pub(crate) fn metronome() -> tokio::task::JoinHandle<()> {
    tokio::spawn(async {
        loop {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
}

async fn a_retry_after_of_63_years_is_capped_at_the_backoff_cap(backend: Backend) {
    const CAP: Duration = Duration::from_secs(30);
    let (logs, _guard) = LogCapture::capture();
    let metronome = metronome();
    let too_many = || {
        Reply::status(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
        )
        .header("Retry-After", "2000000000")
    };
    // The first list and the first plain watch are refused.
    let (lists, watches) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let server = ScriptedServer::start(move |req| {
        if req.is_streaming_list() {
            no_streaming_list()
        } else if req.is_list() {
            if lists.fetch_add(1, Ordering::SeqCst) == 0 {
                too_many()
            } else {
                Reply::json(200, list_body("10", None, &[pod("a", "10", "v1")]))
            }
        } else if watches.fetch_add(1, Ordering::SeqCst) == 0 {
            too_many()
        } else {
            Reply::stream(200, stream::pending())
        }
    })
    .await
    .unwrap();
    // The default backoff: its 30 s cap bounds any Retry-After.
    let run = Running::start(backend, server.url(), Limits::default(), |b| b.seed(7));
    let watches = tokio::time::timeout(Duration::from_secs(120), async {
        while server.count(ScriptedRequest::is_plain_watch) < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(
        watches.is_ok(),
        "no second watch within 120 s of paused time: {:#?}",
        server.requests()
    );
    let requests = server.requests();
    let lists: Vec<_> = requests.iter().filter(|r| r.is_list()).collect();
    let watches: Vec<_> = requests.iter().filter(|r| r.is_plain_watch()).collect();
    for (what, first, second) in [
        ("list", lists[0], lists[1]),
        ("watch", watches[0], watches[1]),
    ] {
        let gap = second.at - first.at;
        assert!(
            gap >= CAP && gap <= CAP + Duration::from_secs(1),
            "{what}: the next request came {gap:?} after the 429"
        );
    }
    let refused = run.reported_of("TooManyRequests");
    assert_eq!(refused.len(), 2, "{:?}", run.reported());
    assert!(
        refused[0].chain.contains("Too many requests"),
        "{refused:?}"
    );
    assert_warned(&logs, &["list and watch failed", "TooManyRequests"]);
    assert_warned(&logs, &["watch request failed", "TooManyRequests"]);
    assert_eq!(run.cache(), state(&[("ns/a", "10", "v1")]));
    metronome.abort();
    run.stop().await;
}

async fn decode_reports_never_quote_server_values(backend: Backend) {
    const SECRETS: [&str; 3] = ["hunter2-SECRET-token", "SECRET-variant", "31415926535"];
    let (logs, _guard) = LogCapture::capture();
    let (feed, rest) = feed();
    let rest = Mutex::new(Some(rest));
    let items = vec![
        pod("a", "10", "v1"),
        pod("b", "10", "v1"),
        broken_pod(
            "c",
            "10",
            json!({"containers": [{"name": "main", "image": 31_415_926_535_u64}]}),
        ),
    ];
    let server = ScriptedServer::start(move |req| {
        if req.is_streaming_list() {
            no_streaming_list()
        } else if req.is_list() {
            Reply::json(200, list_body("10", None, &items))
        } else {
            match rest.lock().unwrap().take() {
                Some(rest) => Reply::stream(200, rest),
                None => Reply::stream(200, stream::pending()),
            }
        }
    })
    .await
    .unwrap();
    let run = Running::start(backend, server.url(), Limits::default(), quick);
    run.converge(HEAL, &state(&[("ns/a", "10", "v1"), ("ns/b", "10", "v1")]))
        .await;
    eventually(HEAL, "the watch open", || {
        server.count(ScriptedRequest::is_plain_watch) == 1
    })
    .await;
    feed.send(watch_line(
        "MODIFIED",
        &broken_pod("a", "11", json!({"containers": "hunter2-SECRET-token"})),
    ));
    feed.send(watch_line(
        "MODIFIED",
        &broken_pod(
            "b",
            "12",
            json!({"containers": [], "restartPolicy": "SECRET-variant"}),
        ),
    ));
    run.converge(HEAL, &State::new()).await;

    let decode = run.reported_of("Decode");
    let paths: Vec<_> = decode.iter().map(|r| r.path.as_deref().unwrap()).collect();
    assert_eq!(
        paths,
        [
            "spec.containers[0].image",
            "object.spec.containers",
            "object.spec.restartPolicy"
        ]
    );
    for r in &decode {
        for secret in SECRETS {
            assert!(!r.chain.contains(secret), "{secret} in {r:?}");
            assert!(!r.debug.contains(secret), "{secret} in {r:?}");
        }
        assert!(r.chain.contains(r.path.as_deref().unwrap()), "{r:?}");
    }
    for path in paths {
        assert_warned(
            &logs,
            &["leaving an undecodable object out of the cache", path],
        );
    }
    let all = logs.all();
    assert!(!all.is_empty());
    for line in &all {
        for secret in SECRETS {
            assert!(!line.contains(secret), "{secret} logged: {line}");
        }
    }
    run.stop().await;
}

on_both_backends!(
    #[tokio::test]
    an_undecodable_modified_removes_the_old_version_and_a_good_one_brings_it_back,
    an_undecodable_deleted_removes_the_object,
    the_real_deleted_after_an_undecodable_modified_is_not_heard_twice,
    an_event_over_the_size_limit_is_healed_by_a_relist,
    a_closed_port_is_reported_with_its_cause_not_silently_retried,
    a_list_item_without_a_name_is_reported_and_the_rest_syncs,
    a_streaming_list_that_ends_without_its_bookmark_falls_back_to_a_paginated_list,
    a_streaming_list_that_stalls_without_its_bookmark_falls_back_after_the_idle_timeout,
    a_repeated_continue_token_fails_the_list_at_once,
    a_list_body_over_max_list_bytes_fails_without_being_buffered,
    decode_reports_never_quote_server_values,
);
on_both_backends!(
    #[tokio::test(start_paused = true)]
    a_retry_after_of_63_years_is_capped_at_the_backoff_cap
);
