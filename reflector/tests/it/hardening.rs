//! Never stale, never silent, never unbounded: undecodable objects, nameless objects, hostile
//! pagination, huge `Retry-After`s and streaming lists without their bookmark.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use kcache_reflector::{
    Error, ListOptions, ListerWatcher, ObjectList, Reflector, Status, WatchStream,
};
use kcache_store::{Cache, DynamicObject, Store};
use kcache_testing::{Undecodable, WatchListSupport};

use crate::support::{
    Env, drive, first_list, pod, relist, sleep_secs, three_attempts_then_list, watch, watch_list,
};

fn labelled(name: &str, v: &str) -> DynamicObject {
    let mut p = pod(name);
    p.metadata.labels = Some([("v".to_owned(), v.to_owned())].into());
    p
}

#[tokio::test(start_paused = true)]
async fn an_undecodable_modified_removes_the_old_version_and_the_rv_moves_on() {
    let env = Env::with_pods(2);
    let reflector = env
        .run_classic(async {
            env.handle.wait_for_watches(1).await;
            env.handle
                .update_undecodable(labelled("p1", "new"), Undecodable::Readable);
            env.wait_synced().await;
            assert!(env.store.get_by_key("ns/p1").is_none());
            // A later version that decodes brings it back.
            env.handle.update(labelled("p1", "newer"));
            env.wait_synced().await;
        })
        .await;
    // No relist: the key was dealt with precisely.
    env.assert_requests(&[first_list(), watch("2")]);
    assert_eq!(
        *env.decode_errors.lock().unwrap(),
        [
            "could not decode watch event (MODIFIED ns/p1 at resourceVersion 3): \
          invalid type: string \"…\", expected u32 at object.spec.replicas"
        ]
    );
    assert!(env.errors().is_empty(), "{:?}", env.errors());
    assert_eq!(reflector.decode_errors(), 1);
    assert_eq!(reflector.last_sync_resource_version(), "4");
}

#[tokio::test(start_paused = true)]
async fn an_undecodable_deleted_removes_the_object() {
    let env = Env::with_pods(2);
    let reflector = env
        .run_classic(async {
            env.handle.wait_for_watches(1).await;
            env.handle
                .delete_undecodable(&pod("p2"), Undecodable::Readable);
            env.wait_synced().await;
        })
        .await;
    env.assert_requests(&[first_list(), watch("2")]);
    assert!(env.store.get_by_key("ns/p2").is_none());
    assert_eq!(reflector.last_sync_resource_version(), "3");
    assert_eq!(reflector.decode_errors(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_unreadable_modified_ends_the_watch_and_the_relist_heals_the_cache() {
    let env = Env::with_pods(2);
    env.run_classic(async {
        env.handle.wait_for_watches(1).await;
        env.handle
            .update_undecodable(labelled("p1", "new"), Undecodable::Unreadable);
        env.handle.wait_for_lists(2).await;
        env.wait_synced().await;
    })
    .await;
    // The relist is at the last synced RV, and leaves the undecodable version out.
    env.assert_requests(&[first_list(), watch("2"), relist("2"), watch("3")]);
    assert!(env.store.get_by_key("ns/p1").is_none());
    // Told once, to the decode hook; the watch it ended is only logged.
    assert_eq!(
        *env.decode_errors.lock().unwrap(),
        [
            "could not decode watch event: expected value",
            "could not decode list item: expected value"
        ]
    );
    assert!(env.errors().is_empty(), "{:?}", env.errors());
}

#[tokio::test(start_paused = true)]
async fn an_unreadable_event_reaches_a_lone_watch_error_hook_once() {
    // The informer's setting: one hook for everything.
    let env = Env::with_pods(1);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let builder = Reflector::builder(Arc::new(env.fake.clone()), env.store.clone())
        .seed(3)
        .use_watch_list(false)
        .watch_error_handler(move |e| s.lock().unwrap().push(e.to_string()));
    let reflector = env
        .run(builder, async {
            env.handle.wait_for_watches(1).await;
            env.handle.send_decode_error();
            env.handle.wait_for_watches(2).await;
        })
        .await;
    assert_eq!(
        *seen.lock().unwrap(),
        ["could not decode watch event: expected value"]
    );
    assert_eq!((reflector.decode_errors(), reflector.errors()), (1, 0));
}

#[tokio::test(start_paused = true)]
async fn a_streaming_list_that_never_ends_its_initial_events_is_bounded() {
    // At most 4 objects per list: a streaming list may send 4 initial events.
    let env = Env::with_pods(3);
    env.handle.set_watch_list(WatchListSupport::Ignore);
    let builder = env.builder().max_list_objects(4);
    env.run(builder, async {
        env.handle.wait_for_watches(1).await;
        env.handle.update(labelled("p1", "a"));
        env.handle.update(labelled("p1", "b"));
        env.handle.wait_for_lists(1).await;
        env.wait_synced().await;
    })
    .await;
    let errors = env.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("the streaming list sent more than 4 initial events"),
        "{errors:?}"
    );
    // Straight to one list (at RV "0" the watch cache answers it whole), no second attempt.
    assert_eq!(env.handle.list_count(), 1);
    assert_eq!(env.handle.watch_count(), 2);
}

/// Undecodable initial events count toward the bound too: each is kept (as a key to leave
/// out) until the bookmark, so a stream of them alone must not grow without one.
#[tokio::test(start_paused = true)]
async fn undecodable_initial_events_count_toward_the_bound() {
    let env = Env::with_pods(3);
    env.handle.set_watch_list(WatchListSupport::Ignore);
    let builder = env.builder().max_list_objects(4);
    env.run(builder, async {
        env.handle.wait_for_watches(1).await;
        env.handle
            .update_undecodable(labelled("p1", "a"), Undecodable::Readable);
        env.handle
            .update_undecodable(labelled("p2", "b"), Undecodable::Readable);
        env.handle.wait_for_lists(1).await;
        env.wait_synced().await;
    })
    .await;
    let errors = env.errors();
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("the streaming list sent more than 4 initial events")),
        "{errors:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_undecodable_list_item_is_left_out_and_reported_once_per_version() {
    let env = Env::with_pods(2);
    env.handle
        .update_undecodable(labelled("p1", "bad"), Undecodable::Readable);
    let reflector = env
        .run_classic(async {
            env.handle.wait_for_watches(1).await;
            env.wait_synced().await;
            // A relist sees the same version again: not reported twice.
            env.handle
                .send_error(&Status::expired("too old resource version"));
            env.handle.wait_for_watches(2).await;
            env.wait_synced().await;
        })
        .await;
    assert_eq!(env.store.list_keys().len(), 1);
    assert_eq!(
        *env.decode_errors.lock().unwrap(),
        ["could not decode list item (ns/p1 at resourceVersion 3): \
          invalid type: string \"…\", expected u32 at spec.replicas"]
    );
    assert_eq!(reflector.decode_errors(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_streaming_list_with_an_undecodable_object_leaves_just_that_key_out() {
    let env = Env::with_pods(3);
    env.handle
        .update_undecodable(labelled("p2", "bad"), Undecodable::Readable);
    env.run_streaming(async {
        env.handle.wait_for_watches(1).await;
        env.wait_synced().await;
    })
    .await;
    env.assert_requests(&[watch_list("")]);
    assert_eq!(env.store.list_keys().len(), 2);
    assert_eq!(env.decode_errors.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_streaming_list_that_ends_without_its_bookmark_falls_back_after_three_tries() {
    let env = Env::with_pods(2);
    env.handle.set_watch_list(WatchListSupport::NoBookmark);
    env.run_streaming(async {
        env.handle.wait_for_lists(1).await;
        env.wait_synced().await;
    })
    .await;
    env.assert_requests(&three_attempts_then_list("2"));
    // Every failed attempt reaches the hook; after the third one the reflector falls back.
    let errors = env.errors();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(
        errors[0].contains("ended after 2 events without its initial-events bookmark"),
        "{errors:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_capped_at_the_backoff_cap() {
    let env = Env::with_pods(1);
    env.handle
        .fail_next_list_with_status(Status::too_many_requests(Some(2_000_000_000)));
    env.run_classic(async {
        // The list's Retry-After: at most 30 s, not 63 years.
        let gaps = env.list_gaps(1..=2).await;
        assert_eq!(gaps[1], Duration::from_secs(30));
        env.handle.wait_for_watches(1).await;
        sleep_secs(2).await; // a clean close, not a very short watch
        env.handle
            .fail_next_watch_with_status(Status::too_many_requests(Some(2_000_000_000)));
        env.handle.close_watches();
        assert_eq!(env.time_until_watches(3).await, Duration::from_secs(30));
        env.wait_synced().await;
    })
    .await;
    assert_eq!(env.errors().len(), 2, "{:?}", env.errors());
}

/// A lister-watcher whose lists come from `page` (called with the request number) and whose
/// watches never deliver anything.
struct Scripted<F> {
    page: F,
    lists: AtomicUsize,
}

#[async_trait]
impl<F> ListerWatcher<DynamicObject> for Scripted<F>
where
    F: Fn(usize, &ListOptions) -> ObjectList<DynamicObject> + Send + Sync,
{
    async fn list(&self, opts: &ListOptions) -> Result<ObjectList<DynamicObject>, Error> {
        let n = self.lists.fetch_add(1, Ordering::SeqCst);
        Ok((self.page)(n, opts))
    }
    async fn watch(&self, _: &ListOptions) -> Result<WatchStream<DynamicObject>, Error> {
        Ok(Box::pin(futures_util::stream::pending()))
    }
}

/// Runs a classic reflector over `page` for `secs` seconds; its cache, the errors and decode
/// errors its hooks saw, and how many lists it made.
async fn scripted(
    page: impl Fn(usize, &ListOptions) -> ObjectList<DynamicObject> + Send + Sync + 'static,
    max_pages: usize,
    secs: u64,
) -> (Arc<Cache<DynamicObject>>, Vec<String>, Vec<String>, usize) {
    let lw = Arc::new(Scripted {
        page,
        lists: AtomicUsize::new(0),
    });
    let cache = Arc::new(Cache::new());
    let errors = Arc::new(std::sync::Mutex::new(Vec::new()));
    let decode = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (e, d) = (Arc::clone(&errors), Arc::clone(&decode));
    let reflector = Reflector::builder(lw.clone(), cache.clone())
        .seed(7)
        .use_watch_list(false)
        .max_list_pages(max_pages)
        .watch_error_handler(move |err| e.lock().unwrap().push(err.to_string()))
        .decode_error_handler(move |err| d.lock().unwrap().push(err.to_string()))
        .build();
    drive(&reflector, sleep_secs(secs)).await;
    let errors = errors.lock().unwrap().clone();
    let decode = decode.lock().unwrap().clone();
    (cache, errors, decode, lw.lists.load(Ordering::SeqCst))
}

/// An object without a name, at resource version 5.
fn nameless() -> DynamicObject {
    let mut o = DynamicObject::new(Some("ns"), "");
    o.metadata.resource_version = Some("5".into());
    o
}

#[tokio::test(start_paused = true)]
async fn a_nameless_list_item_is_left_out_and_the_rest_syncs() {
    let (cache, errors, decode, _) = scripted(
        |_, _| ObjectList::new(vec![pod("a"), nameless(), pod("b")], "9"),
        10,
        1,
    )
    .await;
    assert_eq!(cache.list_keys().len(), 2);
    assert_eq!(cache.last_sync_resource_version().as_deref(), Some("9"));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        decode,
        [
            "could not decode list item 1 (<no name> at resourceVersion 5): \
          metadata.name is missing or empty at metadata.name"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_paged_list_keeps_its_first_pages_resource_version_and_numbers_items_across_pages() {
    let (cache, errors, decode, lists) = scripted(
        |n, opts| {
            if opts.continue_token.is_empty() {
                let mut page = ObjectList::new(vec![pod(&format!("a{n}")), nameless()], "9");
                page.continue_token = Some(format!("t{n}"));
                page
            } else {
                // A server whose later page reports a newer version: the list is still the
                // snapshot its first page was taken at.
                ObjectList::new(vec![nameless(), pod(&format!("b{n}"))], "12")
            }
        },
        10,
        1,
    )
    .await;
    assert_eq!(lists, 2);
    assert_eq!(cache.list_keys().len(), 2);
    assert_eq!(cache.last_sync_resource_version().as_deref(), Some("9"));
    assert!(errors.is_empty(), "{errors:?}");
    let report = |i: usize| {
        format!(
            "could not decode list item {i} (<no name> at resourceVersion 5): \
             metadata.name is missing or empty at metadata.name"
        )
    };
    assert_eq!(decode, [report(1), report(2)]);
}

#[tokio::test(start_paused = true)]
async fn a_repeated_continue_token_fails_the_list_at_once() {
    let (cache, errors, _, lists) = scripted(
        |_, _| {
            let mut page = ObjectList::new(vec![pod("a")], "9");
            page.continue_token = Some("same".into());
            page
        },
        10_000,
        60,
    )
    .await;
    assert!(cache.is_empty());
    assert!(
        errors[0].starts_with("the server repeated the continue token of an earlier page"),
        "{errors:?}"
    );
    // Two pages a round, rounds apart by the backoff: bounded, not a page forever.
    assert_eq!(lists, 2 * errors.len(), "{errors:?}");
    assert!(errors.len() <= 6, "{errors:?}");
}

#[tokio::test(start_paused = true)]
async fn a_list_past_max_list_pages_fails() {
    let (cache, errors, _, lists) = scripted(
        |n, _| {
            let mut page = ObjectList::new(vec![pod(&format!("p{n}"))], "9");
            page.continue_token = Some(format!("t{n}"));
            page
        },
        5,
        1,
    )
    .await;
    assert!(cache.is_empty());
    assert_eq!(lists, 5);
    assert_eq!(
        errors,
        ["the list did not end within 5 pages (the reflector's max_list_pages)"]
    );
}

/// The objects of all pages together are bounded by `max_list_objects`: a list whose pages
/// bring more fails (nothing replaces the cache) and is retried after the backoff.
#[tokio::test(start_paused = true)]
async fn a_paginated_list_past_max_list_objects_fails() {
    let lw = Arc::new(Scripted {
        page: |n: usize, _: &ListOptions| {
            let mut page =
                ObjectList::new(vec![pod(&format!("p{n}a")), pod(&format!("p{n}b"))], "9");
            page.continue_token = Some(format!("t{n}"));
            page
        },
        lists: AtomicUsize::new(0),
    });
    let cache = Arc::new(Cache::<DynamicObject>::new());
    let errors = Arc::new(std::sync::Mutex::new(Vec::new()));
    let e = Arc::clone(&errors);
    let reflector = Reflector::builder(lw.clone(), cache.clone())
        .seed(7)
        .use_watch_list(false)
        .max_list_objects(5)
        .watch_error_handler(move |err| e.lock().unwrap().push(err.to_string()))
        .build();
    drive(&reflector, sleep_secs(1)).await;
    assert!(cache.is_empty());
    // Pages of 2: the third page takes each attempt to 6 objects.
    let errors = errors.lock().unwrap().clone();
    assert!(!errors.is_empty());
    let lists = lw.lists.load(Ordering::SeqCst);
    assert!(
        (3 * errors.len()..3 * errors.len() + 3).contains(&lists),
        "{lists} lists"
    );
    for e in errors {
        assert_eq!(
            e,
            "the list brought more than 5 objects (the reflector's max_list_objects)"
        );
    }
}
