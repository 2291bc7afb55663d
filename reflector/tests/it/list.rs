//! The list phase: resource versions, pagination, the paginated-result latch, the expired
//! continue fallback and the RV "" retry (client-go 2.12.3).

use kcache_reflector::{ListOptions, Status};
use kcache_store::Store;
use kcache_testing::FakeRequest;
use tokio::time::Instant;

use crate::support::{
    Env, assert_first_backoff, first_list, list, list_continue, pod, relist, sleep_secs, watch,
};

#[tokio::test(start_paused = true)]
async fn first_start_lists_at_rv_0_with_limit_500_then_watches_from_the_list_rv() {
    let env = Env::with_pods(3);
    let r = env
        .run_classic(async {
            env.handle.wait_for_watches(1).await;
            env.wait_synced().await;
        })
        .await;
    env.assert_requests(&[list("0", Some(500)), watch("3")]);
    assert_eq!(r.last_sync_resource_version(), "3");
    assert_eq!(env.store.last_sync_resource_version().as_deref(), Some("3"));
    env.assert_store_matches();
    assert!(env.errors().is_empty());
}

#[tokio::test(start_paused = true)]
async fn selectors_are_sent_on_every_request() {
    let env = Env::with_pods(2);
    let builder = env.classic_builder().list_options(
        ListOptions::default()
            .with_label_selector("app=web")
            .with_field_selector("metadata.namespace=ns")
            .with_resource_version("999"),
    );
    env.run(builder, async {
        env.handle.wait_for_watches(1).await;
        env.handle.expire_watches();
        env.handle.wait_for_watches(2).await;
    })
    .await;
    let reqs = env.requests();
    assert_eq!(reqs.len(), 4);
    for req in &reqs {
        assert_eq!(req.options().label_selector, "app=web");
        assert_eq!(req.options().field_selector, "metadata.namespace=ns");
    }
    // Nothing matches `app=web`: the list is empty at the fake's RV.
    assert_eq!(reqs[0].options().resource_version, "0");
    assert!(env.store.is_empty());
}

/// Runs a classic reflector paging at 2 over five pods, with no watch cache, until it has
/// listed them all and watches.
async fn run_paged_by_2_over_5_pods(env: &Env) {
    env.run(env.classic_builder().page_size(2), async {
        env.handle.wait_for_watches(1).await;
        env.wait_synced().await;
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn pages_are_followed_and_joined_when_the_server_pages_rv_0() {
    let env = Env::with_pods(5);
    env.handle.set_watch_cache(false);
    run_paged_by_2_over_5_pods(&env).await;
    env.assert_requests(&[
        list("0", Some(2)),
        list_continue("snap-0-2", Some(2)),
        list_continue("snap-1-4", Some(2)),
        watch("5"),
    ]);
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn expired_continue_token_falls_back_to_one_full_list_at_the_requested_rv() {
    let env = Env::with_pods(5);
    env.handle.set_watch_cache(false);
    env.handle.expire_next_continue_token();
    run_paged_by_2_over_5_pods(&env).await;
    env.assert_requests(&[
        list("0", Some(2)),
        list_continue("snap-0-2", Some(2)),
        list("0", None),
        watch("5"),
    ]);
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn relist_at_a_real_rv_is_unpaginated_so_the_watch_cache_serves_it() {
    let env = Env::with_pods(2);
    env.run_classic(async {
        env.handle.wait_for_watches(1).await;
        env.handle.add(pod("p3"));
        env.wait_synced().await;
        env.handle.send_error(&Status::internal_error("boom"));
        env.handle.wait_for_watches(2).await;
    })
    .await;
    env.assert_requests(&[first_list(), watch("2"), list("3", None), watch("3")]);
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn paginated_rv_0_result_latches_paging_for_later_relists() {
    let env = Env::with_pods(501);
    env.handle.set_watch_cache(false);
    env.run_classic(async {
        env.handle.wait_for_watches(1).await;
        env.handle.expire_watches();
        env.handle.wait_for_watches(2).await;
        env.wait_synced().await;
    })
    .await;
    env.assert_requests(&[
        list("0", Some(500)),
        list_continue("snap-0-500", Some(500)),
        watch("501"),
        // The latch: the server paged an RV "0" list, so relists stay paged.
        list("501", Some(500)),
        list_continue("snap-1-500", Some(500)),
        watch("501"),
    ]);
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn expired_relist_retries_at_once_at_rv_empty() {
    let env = Env::with_pods(3);
    env.run_classic(async {
        env.handle.wait_for_watches(1).await;
        env.handle.fail_next_list_with_status(Status::expired(
            "The resourceVersion for the provided list is too old.",
        ));
        env.handle.expire_watches();
        env.handle.wait_for_watches(2).await;
    })
    .await;
    env.assert_requests(&[
        first_list(),
        watch("3"),
        relist("3"),
        list("", None),
        watch("3"),
    ]);
    env.assert_store_matches();
}

#[tokio::test(start_paused = true)]
async fn too_large_rv_on_relist_retries_at_rv_empty_then_goes_back_to_the_last_rv() {
    let env = Env::with_pods(3);
    env.run_classic(async {
        env.handle.wait_for_watches(1).await;
        env.handle
            .fail_next_list_with_status(Status::too_large_resource_version(3, 2));
        env.handle.send_error(&Status::internal_error("boom"));
        env.handle.wait_for_watches(2).await;
        env.handle.send_error(&Status::internal_error("boom"));
        env.handle.wait_for_watches(3).await;
    })
    .await;
    env.assert_requests(&[
        first_list(),
        watch("3"),
        relist("3"),
        list("", None),
        watch("3"),
        // A successful list clears the "unavailable" mark.
        relist("3"),
        watch("3"),
    ]);
}

#[tokio::test(start_paused = true)]
async fn failed_first_list_is_retried_at_rv_0_after_a_backoff() {
    let env = Env::with_pods(1);
    env.handle
        .fail_next_list_with_status(Status::internal_error("etcd is down"));
    let start = Instant::now();
    env.run_classic(async {
        env.handle.wait_for_lists(2).await;
        assert_first_backoff(start.elapsed());
        env.handle.wait_for_watches(1).await;
        sleep_secs(1).await;
    })
    .await;
    env.assert_requests(&[list("0", Some(500)), list("0", Some(500)), watch("1")]);
    assert!(env.only_error().contains("etcd is down"));
    env.assert_store_matches();
    assert!(matches!(env.handle.requests()[0], FakeRequest::List(_)));
}
