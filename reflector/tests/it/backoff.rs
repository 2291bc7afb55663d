//! Every retry waits the reflector's backoff, streaming or not: client-go's
//! `TestNewReflectorWithCustomBackoff`, on tokio's paused clock (so the times are exact).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kcache_reflector::{BackoffConfig, Error, ReflectorBuilder};
use tokio::time::Instant;

use crate::support::{Env, Obj, first_list, watch, watch_list};

/// client-go's custom backoff of the test: 10 ms, doubling, no jitter, capped at 100 ms.
fn custom_backoff() -> BackoffConfig {
    BackoffConfig {
        initial: Duration::from_millis(10),
        factor: 2.0,
        cap: Duration::from_millis(100),
        jitter: 0.0,
        ..BackoffConfig::default()
    }
}

fn refused() -> Error {
    Error::transport(std::io::Error::from(std::io::ErrorKind::ConnectionRefused))
}

/// Runs `builder`'s reflector against a fake whose next `failures` watch requests are refused
/// (every list succeeds), until the first watch that is not; returns how long that took and
/// when (from the start) each failure reached the watch-error hook.
async fn until_a_watch_is_accepted(
    env: &Env,
    builder: ReflectorBuilder<Obj>,
    failures: usize,
) -> (Duration, Vec<Duration>) {
    for _ in 0..failures {
        env.handle.fail_next_watch(refused());
    }
    let start = Instant::now();
    let reported = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&reported);
    let builder = builder.watch_error_handler(move |e| {
        assert!(e.is_connection_refused(), "{e}");
        seen.lock().unwrap().push(start.elapsed());
    });
    let mut took = Duration::ZERO;
    env.run(builder, async {
        env.handle.wait_for_watches(failures + 1).await;
        took = start.elapsed();
    })
    .await;
    let reported = reported.lock().unwrap().clone();
    (took, reported)
}

/// Five refused watch requests with [`custom_backoff`]: they take 250 ms (client-go's bounds:
/// 250 to 300), each reported one backoff step after the one before.
async fn five_refusals_with_the_custom_backoff(env: &Env, builder: ReflectorBuilder<Obj>) {
    let (took, reported) = until_a_watch_is_accepted(env, builder, 5).await;
    assert!(
        took >= Duration::from_millis(250) && took <= Duration::from_millis(300),
        "{took:?}"
    );
    let ms = Duration::from_millis;
    assert_eq!(reported, [ms(0), ms(10), ms(30), ms(70), ms(150)]);
}

/// client-go's `TestNewReflectorWithCustomBackoff`, "custom backoff": five refused connections
/// take at least 10 + 20 + 40 + 80 + 100 = 250 ms (and at most 300). Here they take exactly
/// that: the three streaming-list attempts each wait the backoff, so does the paginated list
/// that follows the last of them (it is a retry too), and so does each re-watch.
#[tokio::test(start_paused = true)]
async fn new_reflector_with_custom_backoff() {
    let env = Env::with_pods(1);
    let builder = env.builder().backoff(custom_backoff());
    five_refusals_with_the_custom_backoff(&env, builder).await;
    env.assert_requests(&[
        watch_list(""),
        watch_list(""),
        watch_list(""),
        first_list(),
        watch("1"),
        watch("1"),
        watch("1"),
    ]);
    env.assert_store_matches();
}

/// `TestNewReflectorWithCustomBackoff` without the streaming list (client-go with its
/// `WatchListClient` gate off): the list succeeds and each of the five refused watches waits
/// the next step of the backoff, 250 ms in all.
#[tokio::test(start_paused = true)]
async fn new_reflector_with_custom_backoff_without_streaming_lists() {
    let env = Env::with_pods(1);
    let builder = env.classic_builder().backoff(custom_backoff());
    five_refusals_with_the_custom_backoff(&env, builder).await;
    let mut want = vec![first_list()];
    want.extend(std::iter::repeat_n(watch("1"), 6));
    env.assert_requests(&want);
}

/// `TestNewReflectorWithCustomBackoff`, "default backoff": two refused connections with
/// client-go's default backoff (800 ms doubling, jitter 1.0) end within 10 s.
#[tokio::test(start_paused = true)]
async fn new_reflector_with_the_default_backoff() {
    let env = Env::with_pods(1);
    let (took, reported) = until_a_watch_is_accepted(&env, env.builder(), 2).await;
    assert!(took <= Duration::from_secs(10), "{took:?}");
    assert_eq!(reported.len(), 2);
    // The second attempt waited a first backoff step: 800 ms with up to 100% jitter.
    crate::support::assert_first_backoff(reported[1].checked_sub(reported[0]).unwrap());
    env.assert_requests(&[watch_list(""), watch_list(""), watch_list("")]);
}

/// A streaming list that fails with a 429 on its last attempt falls back to a paginated list
/// only after the server's `Retry-After`, like any other retry.
#[tokio::test(start_paused = true)]
async fn the_list_after_the_last_throttled_streaming_list_waits_retry_after() {
    let env = Env::with_pods(2);
    for _ in 0..3 {
        env.handle
            .fail_next_watch_with_status(kcache_reflector::Status::too_many_requests(Some(2)));
    }
    let start = Instant::now();
    env.run_streaming(async {
        env.handle.wait_for_lists(1).await;
        assert_eq!(
            start.elapsed(),
            Duration::from_secs(6),
            "three Retry-Afters"
        );
        env.wait_synced().await;
    })
    .await;
    env.assert_requests(&[
        watch_list(""),
        watch_list(""),
        watch_list(""),
        first_list(),
        watch("2"),
    ]);
    assert_eq!(env.errors().len(), 3, "{:?}", env.errors());
}
