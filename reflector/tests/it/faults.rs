//! Backoff growth, cap and reset; prompt cancellation; the store after a run of faults.

use std::time::Duration;

use kcache_reflector::{Error, Status};
use tokio::time::Instant;

use crate::support::{Env, assert_first_backoff, drive, first_list, pod, sleep_secs, watch};

#[tokio::test(start_paused = true)]
async fn repeated_list_failures_back_off_doubling_to_the_30s_cap_then_reset() {
    let env = Env::with_pods(1);
    for _ in 0..9 {
        env.handle
            .fail_next_list_with_status(Status::internal_error("down"));
    }
    let mut gaps = Vec::new();
    env.run_classic(async {
        gaps = env.list_gaps(2..=10).await;
        env.handle.wait_for_watches(1).await;
        // Two quiet minutes reset the backoff.
        sleep_secs(150).await;
        let at = Instant::now();
        env.handle.expire_watches();
        env.handle.wait_for_lists(11).await;
        gaps.push(at.elapsed());
    })
    .await;
    let mut base = Duration::from_millis(800);
    for gap in &gaps[..9] {
        assert!(
            *gap >= base && *gap < base * 2,
            "gap {gap:?} for base {base:?}"
        );
        base = (base * 2).min(Duration::from_secs(30));
    }
    // The cap was reached: 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30, 30.
    assert!(gaps[8] >= Duration::from_secs(30));
    assert_first_backoff(gaps[9]);
    assert_eq!(env.errors().len(), 10);
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn same_seed_same_delays() {
    async fn gaps() -> Vec<Duration> {
        let env = Env::with_pods(0);
        for _ in 0..4 {
            env.handle.fail_next_list(Error::Timeout);
        }
        let mut gaps = Vec::new();
        env.run_classic(async { gaps = env.list_gaps(2..=5).await })
            .await;
        gaps
    }
    assert_eq!(gaps().await, gaps().await);
}

#[tokio::test(start_paused = true)]
async fn cancel_stops_promptly_even_in_a_backoff_sleep() {
    let env = Env::with_pods(0);
    for _ in 0..5 {
        env.handle.fail_next_list(Error::Timeout);
    }
    let start = Instant::now();
    env.run_classic(async {
        env.handle.wait_for_lists(4).await;
        sleep_secs(1).await;
    })
    .await;
    // 0.8 + 1.6 + 3.2 (up to twice that with jitter) + 1 s, and not a moment of the next backoff.
    let spent = start.elapsed();
    assert!(spent < Duration::from_millis(11_200 + 1_000), "{spent:?}");
    assert_eq!(env.handle.list_count(), 4);
}

#[tokio::test(start_paused = true)]
async fn cancel_stops_promptly_on_a_stalled_watch() {
    let env = Env::with_pods(1);
    env.handle.stall_next_watch();
    let start = Instant::now();
    env.run(env.classic_builder().idle_timeout(None), async {
        env.handle.wait_for_watches(1).await;
        sleep_secs(3600).await;
    })
    .await;
    assert_eq!(start.elapsed(), Duration::from_secs(3600));
    env.assert_requests(&[first_list(), watch("1")]);
}

#[tokio::test(start_paused = true)]
async fn store_equals_the_fake_after_a_run_of_scripted_faults() {
    for use_watch_list in [false, true] {
        let env = Env::with_pods(3);
        let r = env.builder().use_watch_list(use_watch_list).build();
        drive(&r, async {
            let h = &env.handle;
            h.wait_for_watches(1).await;
            h.add(pod("a"));
            h.delete(&pod("p1"));
            sleep_secs(2).await;
            h.close_watches();
            h.add(pod("b"));
            h.expire_watches();
            h.add(pod("c"));
            h.fail_next_list_with_status(Status::too_many_requests(Some(2)));
            h.fail_next_watch_with_status(Status::too_many_requests(Some(2)));
            h.delete(&pod("p2"));
            sleep_secs(5).await;
            h.drop_watches();
            h.update(pod("c"));
            h.send_decode_error();
            h.stall_next_watch();
            h.send_error(&Status::internal_error("boom"));
            h.add(pod("d"));
            sleep_secs(400).await;
            h.bookmark();
            h.compact();
            h.expire_watches();
            h.add(pod("e"));
            env.wait_synced().await;
        })
        .await;
        env.assert_store_matches();
        assert_eq!(
            r.last_sync_resource_version(),
            env.handle.resource_version()
        );
    }
}
