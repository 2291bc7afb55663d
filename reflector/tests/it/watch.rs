//! The watch phase (client-go 2.12.4-2.12.5): re-watch after clean closes, relist after 410s and
//! very short watches, 429 and `Retry-After`, bookmarks, the idle timeout, decode errors, resync.

use std::sync::atomic::Ordering;
use std::time::Duration;

use kcache_reflector::{Error, Status};
use kcache_store::Store;
use tokio::time::Instant;

use crate::support::{
    Env, assert_first_backoff, drive, first_list, pod, relist, sleep_secs, watch,
};

#[tokio::test(start_paused = true)]
async fn clean_close_rewatches_from_the_last_rv_at_once_without_relist() {
    let env = Env::with_pods(3);
    let r = env
        .run_classic(async {
            env.handle.wait_for_watches(1).await;
            env.handle.add(pod("p4"));
            env.wait_synced().await;
            sleep_secs(2).await;
            let closed_at = Instant::now();
            env.handle.close_watches();
            env.handle.wait_for_watches(2).await;
            assert_eq!(
                closed_at.elapsed(),
                Duration::ZERO,
                "no backoff on a clean close"
            );
            env.handle.add(pod("p5"));
            env.wait_synced().await;
        })
        .await;
    env.assert_requests(&[first_list(), watch("3"), watch("4")]);
    assert_eq!(r.last_sync_resource_version(), "5");
    env.assert_store_matches();
    assert!(env.errors().is_empty());
}

#[tokio::test(start_paused = true)]
async fn dropped_connection_rewatches_like_a_clean_close() {
    let env = Env::with_pods(1);
    env.run_classic(async {
        env.handle.wait_for_watches(1).await;
        sleep_secs(5).await;
        env.handle.drop_watches();
        env.handle.wait_for_watches(2).await;
    })
    .await;
    env.assert_requests(&[first_list(), watch("1"), watch("1")]);
}

#[tokio::test(start_paused = true)]
async fn expired_error_event_mid_watch_relists_at_the_last_rv_after_a_backoff() {
    let env = Env::with_pods(3);
    env.run_classic(async {
        env.handle.wait_for_watches(1).await;
        env.handle.add(pod("p4"));
        env.handle.delete(&pod("p1"));
        env.wait_synced().await;
        let at = Instant::now();
        env.handle.expire_watches();
        env.handle.wait_for_lists(2).await;
        assert_first_backoff(at.elapsed());
        env.handle.wait_for_watches(2).await;
        env.handle.add(pod("p6"));
        env.wait_synced().await;
    })
    .await;
    env.assert_requests(&[first_list(), watch("3"), relist("5"), watch("5")]);
    env.assert_store_matches();
    assert!(env.only_error().contains("too old resource version"));
}

#[tokio::test(start_paused = true)]
async fn direct_410_at_watch_start_relists_at_the_last_rv() {
    let env = Env::with_pods(2);
    env.handle.fail_next_watch_with_status(Status::expired(
        "The resourceVersion for the provided watch is too old.",
    ));
    env.run_classic(async {
        env.handle.wait_for_watches(2).await;
        env.wait_synced().await;
    })
    .await;
    env.assert_requests(&[first_list(), watch("2"), relist("2"), watch("2")]);
    env.assert_store_matches();
    assert_eq!(env.errors().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn expired_error_event_at_watch_start_relists_at_the_last_rv() {
    let env = Env::with_pods(2);
    env.handle.expire_next_watch();
    env.run_classic(async {
        env.handle.wait_for_watches(2).await;
        env.wait_synced().await;
    })
    .await;
    env.assert_requests(&[first_list(), watch("2"), relist("2"), watch("2")]);
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn other_error_events_relist_at_the_last_rv() {
    let env = Env::with_pods(2);
    env.run_classic(async {
        env.handle.wait_for_watches(1).await;
        env.handle
            .send_error(&Status::internal_error("storage read error"));
        env.handle.wait_for_watches(2).await;
    })
    .await;
    env.assert_requests(&[first_list(), watch("2"), relist("2"), watch("2")]);
}

#[tokio::test(start_paused = true)]
async fn internal_errors_rewatch_at_once_within_the_retry_duration() {
    let env = Env::with_pods(2);
    let builder = env
        .classic_builder()
        .max_internal_error_retry_duration(Duration::from_secs(30));
    env.run(builder, async {
        env.handle.wait_for_watches(1).await;
        let first = Instant::now();
        // Three 500s, 10 s apart: each within 30 s of the first, so each re-watches at once.
        for n in 2..=4 {
            env.handle
                .send_error(&Status::internal_error("etcd leader changed"));
            env.handle.wait_for_watches(n).await;
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
        assert_eq!(first.elapsed(), Duration::from_secs(30));
        // 31 s after the first of the run: past the window, so this one relists.
        tokio::time::sleep(Duration::from_secs(1)).await;
        env.handle
            .send_error(&Status::internal_error("etcd leader changed"));
        env.handle.wait_for_lists(2).await;
        env.handle.wait_for_watches(5).await;
    })
    .await;
    env.assert_requests(&[
        first_list(),
        watch("2"),
        watch("2"),
        watch("2"),
        watch("2"),
        relist("2"),
        watch("2"),
    ]);
    assert_eq!(env.errors.lock().unwrap().len(), 4);
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn internal_errors_after_a_quiet_minute_open_a_new_window() {
    let env = Env::with_pods(1);
    let builder = env
        .classic_builder()
        .max_internal_error_retry_duration(Duration::from_secs(30));
    env.run(builder, async {
        env.handle.wait_for_watches(1).await;
        for n in 2..=3 {
            env.handle.send_error(&Status::internal_error("blip"));
            env.handle.wait_for_watches(n).await;
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
    })
    .await;
    env.assert_requests(&[first_list(), watch("1"), watch("1"), watch("1")]);
}

#[tokio::test(start_paused = true)]
async fn too_many_requests_on_watch_waits_retry_after_without_relist() {
    let env = Env::with_pods(2);
    env.handle
        .fail_next_watch_with_status(Status::too_many_requests(Some(7)));
    env.run_classic(async {
        env.handle.wait_for_watches(1).await;
        assert_eq!(env.time_until_watches(2).await, Duration::from_secs(7));
    })
    .await;
    env.assert_requests(&[first_list(), watch("2"), watch("2")]);
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn too_many_requests_error_event_rewatches_after_retry_after() {
    let env = Env::with_pods(2);
    env.run_classic(async {
        env.handle.wait_for_watches(1).await;
        let at = Instant::now();
        env.handle.send_error(&Status::too_many_requests(Some(3)));
        env.handle.wait_for_watches(2).await;
        assert_eq!(at.elapsed(), Duration::from_secs(3));
    })
    .await;
    env.assert_requests(&[first_list(), watch("2"), watch("2")]);
}

#[tokio::test(start_paused = true)]
async fn too_many_requests_without_retry_after_uses_the_backoff() {
    let env = Env::with_pods(1);
    env.handle
        .fail_next_watch_with_status(Status::too_many_requests(None));
    env.run_classic(async {
        env.handle.wait_for_watches(1).await;
        assert_first_backoff(env.time_until_watches(2).await);
    })
    .await;
    env.assert_requests(&[first_list(), watch("1"), watch("1")]);
}

#[tokio::test(start_paused = true)]
async fn connection_refused_on_watch_is_retried_without_relist() {
    let env = Env::with_pods(1);
    env.handle
        .fail_next_watch(Error::transport(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
    env.run_classic(env.handle.wait_for_watches(2)).await;
    env.assert_requests(&[first_list(), watch("1"), watch("1")]);
}

#[tokio::test(start_paused = true)]
async fn watch_closed_in_under_a_second_without_events_relists() {
    let env = Env::with_pods(2);
    env.handle.close_next_watch();
    env.run_classic(env.handle.wait_for_watches(2)).await;
    env.assert_requests(&[first_list(), watch("2"), relist("2"), watch("2")]);
    assert!(env.only_error().starts_with("very short watch: test:"));
}

#[tokio::test(start_paused = true)]
async fn bookmarks_advance_the_last_synced_rv() {
    let env = Env::with_pods(2);
    let r = env.classic();
    drive(&r, async {
        env.handle.wait_for_watches(1).await;
        env.handle.bump_resource_version();
        env.handle.bump_resource_version();
        env.handle.bookmark();
        kcache_testing::wait_until(Duration::from_secs(5), || {
            r.last_sync_resource_version() == "4"
        })
        .await;
        sleep_secs(2).await;
        env.handle.close_watches();
        env.handle.wait_for_watches(2).await;
    })
    .await;
    env.assert_requests(&[first_list(), watch("2"), watch("4")]);
    assert_eq!(env.store.last_sync_resource_version().as_deref(), Some("4"));
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn idle_timeout_ends_a_stalled_watch_and_rewatches() {
    let env = Env::with_pods(1);
    env.handle.stall_next_watch();
    let builder = env
        .classic_builder()
        .idle_timeout(Some(Duration::from_secs(60)));
    env.run(builder, async {
        env.handle.wait_for_watches(1).await;
        assert_eq!(env.time_until_watches(2).await, Duration::from_secs(60));
        env.handle.add(pod("p2"));
        env.wait_synced().await;
    })
    .await;
    env.assert_requests(&[first_list(), watch("1"), watch("1")]);
    assert!(env.only_error().contains("watch delivered nothing"));
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn unreadable_event_is_reported_and_the_reflector_relists() {
    // Nothing of the event can be read: which object changed is unknown, so the cache may be
    // stale; the watch ends and the reflector relists (client-go's rule).
    let env = Env::with_pods(1);
    env.run_classic(async {
        env.handle.wait_for_watches(1).await;
        env.handle.send_decode_error();
        env.handle.wait_for_watches(2).await;
        env.handle.add(pod("p2"));
        env.wait_synced().await;
    })
    .await;
    env.assert_requests(&[first_list(), watch("1"), relist("1"), watch("1")]);
    // Reported once, to the decode hook; ending the watch is only logged.
    assert_eq!(
        *env.decode_errors.lock().unwrap(),
        ["could not decode watch event: expected value"]
    );
    assert!(env.errors().is_empty(), "{:?}", env.errors());
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn resync_calls_store_resync_each_period_when_should_resync_says_so() {
    /// How often a classic reflector with a 30 s resync period (and `should_resync`'s answer,
    /// if any) resyncs in 95 s.
    async fn resyncs_in_95s(env: &Env, should_resync: Option<bool>) -> usize {
        let mut builder = env.classic_builder().resync_period(Duration::from_secs(30));
        if let Some(answer) = should_resync {
            builder = builder.should_resync(move || answer);
        }
        env.run(builder, async {
            env.handle.wait_for_watches(1).await;
            sleep_secs(95).await;
        })
        .await;
        env.store.resyncs.load(Ordering::SeqCst)
    }

    let env = Env::with_pods(1);
    assert_eq!(resyncs_in_95s(&env, None).await, 3);
    // Resync never talks to the server.
    env.assert_requests(&[first_list(), watch("1")]);

    assert_eq!(resyncs_in_95s(&Env::with_pods(1), Some(false)).await, 0);
}

#[tokio::test(start_paused = true)]
async fn transform_is_applied_before_storing() {
    let env = Env::with_pods(1);
    let builder = env
        .classic_builder()
        .transform(|mut o: kcache_store::DynamicObject| {
            o.metadata.labels = Some([("seen".to_owned(), "yes".to_owned())].into());
            o
        });
    env.run(builder, async {
        env.handle.wait_for_watches(1).await;
        env.handle.add(pod("p2"));
        kcache_testing::wait_until(Duration::from_secs(5), || env.store.len() == 2).await;
    })
    .await;
    for o in env.store.list() {
        assert_eq!(o.metadata.labels.as_ref().unwrap()["seen"], "yes");
    }
}
