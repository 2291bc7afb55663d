//! The streaming list (client-go 2.12.6): accepted, refused, ignored, retried.

use std::time::Duration;

use kcache_reflector::{Bookmark, Status, WatchEvent, reason};
use kcache_store::Store;
use kcache_testing::WatchListSupport;
use tokio::time::Instant;

use crate::support::{
    Env, first_list, pod, sleep_secs, three_attempts_then_list, watch, watch_list,
};

#[tokio::test(start_paused = true)]
async fn streaming_list_accepted_replaces_at_the_bookmark_and_keeps_the_stream() {
    let env = Env::with_pods(3);
    let r = env
        .run_streaming(async {
            env.handle.wait_for_watches(1).await;
            env.wait_synced().await;
            env.handle.add(pod("p4"));
            env.handle.delete(&pod("p2"));
            env.wait_synced().await;
            sleep_secs(2).await;
            env.handle.close_watches();
            env.handle.wait_for_watches(2).await;
        })
        .await;
    env.assert_requests(&[watch_list(""), watch("5")]);
    assert_eq!(r.last_sync_resource_version(), "5");
    env.assert_store_matches();
    assert!(env.errors().is_empty());
}

#[tokio::test(start_paused = true)]
async fn streaming_list_relist_after_410_uses_the_last_rv() {
    let env = Env::with_pods(2);
    env.run_streaming(async {
        env.handle.wait_for_watches(1).await;
        env.handle.add(pod("p3"));
        env.wait_synced().await;
        env.handle.expire_watches();
        env.handle.wait_for_watches(2).await;
        env.handle.add(pod("p4"));
        env.wait_synced().await;
    })
    .await;
    env.assert_requests(&[watch_list(""), watch_list("3")]);
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn streaming_list_refused_falls_back_to_list_at_once() {
    let env = Env::with_pods(2);
    env.handle.set_watch_list(WatchListSupport::Refuse);
    let start = Instant::now();
    env.run_streaming(async {
        env.handle.wait_for_watches(2).await;
        assert_eq!(start.elapsed(), Duration::ZERO);
        env.wait_synced().await;
    })
    .await;
    env.assert_requests(&[watch_list(""), first_list(), watch("2")]);
    env.assert_store_matches();
}

/// client-go's `ListAndWatchWithContext`: when the server refuses the streaming list because
/// it does not serve one (a 422 `Invalid` from kube-apiserver with the `WatchList` feature off,
/// or a 400 `BadRequest`), the reflector falls back to a paginated list at once and only logs
/// it at a low level ("expected if watchlist is not supported or disabled in kube-apiserver").
/// No watch-error hook hears it, no error is counted and no WARN line is written, so hooks that
/// count failures stay quiet on every start against an older server.
#[tokio::test(start_paused = true)]
async fn a_server_without_streaming_lists_falls_back_without_a_report() {
    let refusals = [
        Status::failure(
            422,
            reason::INVALID,
            "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
        ),
        Status::failure(
            400,
            reason::BAD_REQUEST,
            "unknown parameter sendInitialEvents",
        ),
    ];
    for refusal in refusals {
        let (logs, _guard) = kcache_testing::LogCapture::capture();
        let env = Env::with_pods(2);
        env.handle.fail_next_watch_with_status(refusal.clone());
        let start = Instant::now();
        let r = env
            .run_streaming(async {
                env.handle.wait_for_watches(2).await;
                assert_eq!(start.elapsed(), Duration::ZERO, "no backoff: {refusal}");
                env.wait_synced().await;
            })
            .await;
        env.assert_requests(&[watch_list(""), first_list(), watch("2")]);
        env.assert_store_matches();
        assert!(env.errors().is_empty(), "{:?}", env.errors());
        assert_eq!(r.errors(), 0);
        assert!(logs.warnings("").is_empty(), "{:?}", logs.warnings(""));
        let debug: Vec<_> = logs
            .all()
            .into_iter()
            .filter(|l| l.starts_with("DEBUG ") && l.contains("does not serve streaming lists"))
            .collect();
        assert_eq!(debug.len(), 1, "{:?}", logs.all());
        assert!(debug[0].contains(&refusal.to_string()), "{debug:?}");
    }
}

/// The silent fallback is for a server without streaming lists only: a streaming list refused
/// for another reason (here a 403) falls back at once too, as in client-go, and is reported, as
/// every other failure is.
#[tokio::test(start_paused = true)]
async fn a_streaming_list_refused_for_another_reason_is_reported() {
    let env = Env::with_pods(2);
    env.handle
        .fail_next_watch_with_status(Status::failure(403, "Forbidden", "pods is forbidden"));
    let r = env
        .run_streaming(async {
            env.handle.wait_for_watches(2).await;
            env.wait_synced().await;
        })
        .await;
    env.assert_requests(&[watch_list(""), first_list(), watch("2")]);
    assert!(env.only_error().contains("pods is forbidden"));
    assert_eq!(r.errors(), 1);
}

/// client-go's `IsWatchListSemanticsUnSupported`: a lister-watcher that declares it cannot
/// serve streaming lists is listed at once, with no streaming-list request and no failure
/// reported.
#[tokio::test(start_paused = true)]
async fn a_lister_watcher_without_streaming_lists_is_listed_without_trying() {
    let env = Env::with_pods(2);
    env.handle.set_watch_list(WatchListSupport::Unsupported);
    env.run_streaming(async {
        env.handle.wait_for_watches(1).await;
        env.wait_synced().await;
    })
    .await;
    env.assert_requests(&[first_list(), watch("2")]);
    env.assert_store_matches();
    assert!(env.errors.lock().unwrap().is_empty(), "nothing failed");
}

#[tokio::test(start_paused = true)]
async fn a_streaming_list_without_its_bookmark_warns_every_ten_seconds() {
    let (logs, _guard) = kcache_testing::LogCapture::capture();
    let env = Env::with_pods(2);
    env.handle.set_watch_list(WatchListSupport::Ignore);
    let builder = env.builder().idle_timeout(Some(Duration::from_secs(45)));
    env.run(builder, async {
        env.handle.wait_for_lists(1).await;
        env.wait_synced().await;
    })
    .await;
    let waiting = logs.warnings("still waiting for the bookmark");
    // At 10, 20, 30 and 40 s of each of the three attempts; the idle timeout ends each at 45 s,
    // then the reflector falls back to a paginated list.
    assert_eq!(waiting.len(), 12, "{waiting:?}");
    assert!(
        waiting[0].starts_with("WARN reflector{resource=test}: "),
        "{waiting:?}"
    );
    let failed = logs.warnings("streaming list failed");
    assert_eq!(failed.len(), 3, "{failed:?}");
    assert!(
        failed[0].contains("error=watch delivered nothing for 45s"),
        "{failed:?}"
    );
    assert!(
        failed[2].contains("falling back to a paginated list"),
        "{failed:?}"
    );
    env.assert_requests(&three_attempts_then_list("2"));
}

#[tokio::test(start_paused = true)]
async fn streaming_list_ignored_by_an_old_server_falls_back_after_the_idle_timeout() {
    let env = Env::with_pods(2);
    env.handle.set_watch_list(WatchListSupport::Ignore);
    let builder = env.builder().idle_timeout(Some(Duration::from_secs(60)));
    env.run(builder, async {
        env.handle.wait_for_lists(1).await;
        env.handle.wait_for_watches(4).await;
        env.wait_synced().await;
    })
    .await;
    // Three stalled attempts (the idle timeout ends each), then a paginated list.
    env.assert_requests(&three_attempts_then_list("2"));
    env.assert_store_matches();
    assert_eq!(env.errors().len(), 3, "{:?}", env.errors());
}

#[tokio::test(start_paused = true)]
async fn streaming_list_429_waits_retry_after_and_streams_again() {
    let env = Env::with_pods(2);
    env.handle
        .fail_next_watch_with_status(Status::too_many_requests(Some(5)));
    env.run_streaming(async {
        env.handle.wait_for_watches(1).await;
        assert_eq!(env.time_until_watches(2).await, Duration::from_secs(5));
        env.wait_synced().await;
    })
    .await;
    env.assert_requests(&[watch_list(""), watch_list("")]);
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn streaming_list_410_retries_at_once_at_rv_empty() {
    let env = Env::with_pods(2);
    env.run_streaming(async {
        env.handle.wait_for_watches(1).await;
        env.wait_synced().await;
        // The next streaming list (after a relist-worthy error) is answered 410.
        env.handle
            .fail_next_watch_with_status(Status::expired("too old resource version: 2 (3)"));
        env.handle.send_error(&Status::internal_error("boom"));
        env.handle.wait_for_watches(3).await;
        env.wait_synced().await;
    })
    .await;
    env.assert_requests(&[watch_list(""), watch_list("2"), watch_list("")]);
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn streaming_list_that_ends_before_the_bookmark_is_retried() {
    let env = Env::with_pods(1);
    env.handle.set_watch_list(WatchListSupport::Ignore);
    env.run(env.builder().idle_timeout(None), async {
        env.handle.wait_for_watches(1).await;
        sleep_secs(2).await;
        // The server times the watch out: no bookmark came, so the streaming list is retried.
        env.handle.close_watches();
        env.handle.set_watch_list(WatchListSupport::Supported);
        env.handle.wait_for_watches(2).await;
        env.wait_synced().await;
    })
    .await;
    env.assert_requests(&[watch_list(""), watch_list("")]);
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn bookmark_with_initial_events_end_false_does_not_end_the_initial_phase() {
    let env = Env::with_pods(1);
    env.handle.set_watch_list(WatchListSupport::Ignore);
    let r = env
        .run(env.builder().idle_timeout(None), async {
            env.handle.wait_for_watches(1).await;
            let mut not_yet = Bookmark::new("1");
            not_yet
                .annotations
                .insert("k8s.io/initial-events-end".into(), "false".into());
            env.handle.send_event(&WatchEvent::Bookmark(not_yet));
            sleep_secs(1).await;
            assert!(env.store.is_empty());
            env.handle
                .send_event(&WatchEvent::Bookmark(Bookmark::initial_events_end("1")));
            env.wait_synced().await;
        })
        .await;
    env.assert_requests(&[watch_list("")]);
    assert_eq!(r.last_sync_resource_version(), "1");
}
