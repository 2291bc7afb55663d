//! Hostile servers, round two: list bodies that are not the list asked for, lists that never
//! end, objects nested past the limit, objects of another type or namespace. Each scenario runs
//! over both backends (client-http's own client and kube-rs's) against a
//! [`ScriptedServer`], and ends with the cache equal to what the server last validly said, the
//! cause reported, and memory under its bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream;
use kcache_testing_server::scripted_server::{
    Reply, ScriptedRequest, ScriptedServer, list_body, watch_line,
};
use serde_json::{Value, json};

use crate::hostile::{HEAL, SetOnDrop, assert_warned, eventually, no_streaming_list};
use crate::hostile_support::{Limits, Running, pod, quick, state};
use crate::support::Backend;
use kcache_testing::LogCapture;

/// A server answering its `n`th list (from 0) with `list(n)`, streaming lists with a 422 (no
/// `WatchList`), and watches with `watch(n)` for its `n`th watch.
async fn server(
    list: impl Fn(usize) -> Reply + Send + Sync + 'static,
    watch: impl Fn(usize) -> Reply + Send + Sync + 'static,
) -> ScriptedServer {
    let (lists, watches) = (AtomicUsize::new(0), AtomicUsize::new(0));
    ScriptedServer::start(move |req| {
        if req.is_streaming_list() {
            no_streaming_list()
        } else if req.is_list() {
            list(lists.fetch_add(1, Ordering::SeqCst))
        } else {
            watch(watches.fetch_add(1, Ordering::SeqCst))
        }
    })
    .await
    .unwrap()
}

/// A watch that sends nothing and never ends.
fn quiet(_: usize) -> Reply {
    Reply::stream(200, stream::pending())
}

/// A `Status` answered with a `200`, as a misbehaving proxy sends it.
fn status_200(code: u16, reason: &str) -> Reply {
    Reply::json(
        200,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "from a proxy", "reason": reason, "code": code})
        .to_string(),
    )
}

/// The lists the reflector asked for, in order: the `resourceVersion` of each.
fn list_rvs(server: &ScriptedServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r.is_list())
        .map(|r| r.resource_version().unwrap_or_default().to_owned())
        .collect()
}

/// A `200` holding a `Status` is the error it describes: a 410 relists at the latest version
/// (never an empty cache that synced), a 500 leaves the cache as it was until a real list.
async fn a_status_answered_with_200_is_its_error_not_an_empty_list(backend: Backend) {
    let (logs, _guard) = LogCapture::capture();
    let server = server(
        |n| match n {
            0 => status_200(410, "Expired"),
            1 => Reply::json(200, list_body("10", None, &[pod("a", "10", "v1"), pod("b", "10", "v1")])),
            2 => status_200(500, "InternalError"),
            _ => Reply::json(200, list_body("12", None, &[pod("a", "12", "v2"), pod("c", "12", "v1")])),
        },
        |n| match n {
            // The first watch is told its version is gone: the reflector relists.
            0 => Reply::stream(
                200,
                stream::iter([watch_line(
                    "ERROR",
                    &json!({"kind": "Status", "status": "Failure", "code": 410, "reason": "Expired"}),
                )]),
            ),
            n => quiet(n),
        },
    )
    .await;
    let run = Running::start(backend, server.url(), Limits::default(), quick);
    run.converge(HEAL, &state(&[("ns/a", "12", "v2"), ("ns/c", "12", "v1")]))
        .await;
    // The 410 in a 200 made the reflector list at the latest version, as a 410 does.
    let rvs = list_rvs(&server);
    assert_eq!(rvs[..2], ["0".to_owned(), String::new()], "{rvs:?}");
    // Nothing the server said validly was deleted by the bad answers.
    let events = run.heard.events();
    assert!(!events.contains(&"delete ns/a".to_owned()), "{events:?}");
    assert_eq!(
        events.iter().filter(|e| e.starts_with("delete")).count(),
        1,
        "only b, which the last list lacks: {events:?}"
    );
    let chains: Vec<String> = run.reported().into_iter().map(|r| r.chain).collect();
    assert!(
        chains
            .iter()
            .any(|c| c.contains("from a proxy") && c.contains("500")),
        "{chains:?}"
    );
    assert_warned(&logs, &["list and watch failed", "from a proxy"]);
    run.stop().await;
}

/// A body without `items`, or a list of another kind or apiVersion, never replaces the cache:
/// the informer does not sync (and does not watch) until a real list comes.
async fn a_list_without_items_or_of_another_type_is_a_decode_error(backend: Backend) {
    let bad = [
        json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "5"}}),
        json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "6"}, "items": []}),
        json!({"kind": "PodList", "apiVersion": "apps/v1", "metadata": {"resourceVersion": "7"}, "items": []}),
        json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "8"}, "items": {}}),
    ];
    let server = server(
        move |n| match bad.get(n) {
            Some(body) => Reply::json(200, body.to_string()),
            None => Reply::json(200, list_body("10", None, &[pod("a", "10", "v1")])),
        },
        quiet,
    )
    .await;
    let run = Running::start(backend, server.url(), Limits::default(), quick);
    run.converge(HEAL, &state(&[("ns/a", "10", "v1")])).await;
    // No watch before the good list: the informer never took a bad body for a synced state.
    let order: Vec<&str> = server
        .requests()
        .iter()
        .filter(|r| !r.is_streaming_list())
        .map(|r| if r.is_list() { "list" } else { "watch" })
        .collect::<Vec<_>>()
        .into_iter()
        .collect();
    assert_eq!(order[..5], ["list"; 5], "{order:?}");
    let decode: Vec<String> = run.reported().into_iter().map(|r| r.chain).collect();
    for why in [
        "it has no `items`",
        "kind is `ConfigMapList`, expected `PodList`",
        "apiVersion is `apps/v1`, expected `v1`",
        "its `items` is not an array",
    ] {
        assert!(decode.iter().any(|c| c.contains(why)), "{why}: {decode:?}");
    }
    run.stop().await;
}

/// A list item nested 600 levels deep (which Go's decoders accept) and one nested a million
/// deep are each one bad item: the others sync, the list is not retried.
async fn an_item_nested_past_the_limit_is_one_bad_item(backend: Backend) {
    let deep = |n: usize| {
        let mut p = pod("deep", "10", "v1");
        // An unknown field the typed `Pod` would skip: refused all the same.
        p["spec"]["extra"] = serde_json::from_str::<Value>("[]").unwrap();
        p.to_string().replace(
            r#""extra":[]"#,
            &format!(r#""extra":{}1{}"#, "[".repeat(n), "]".repeat(n)),
        )
    };
    let body = format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"10"}},"items":[{},{},{},{}]}}"#,
        pod("a", "10", "v1"),
        deep(600),
        deep(1_000_000),
        pod("b", "10", "v1"),
    );
    let server = server(move |_| Reply::json(200, body.clone()), quiet).await;
    let run = Running::start(backend, server.url(), Limits::default(), quick);
    run.converge(HEAL, &state(&[("ns/a", "10", "v1"), ("ns/b", "10", "v1")]))
        .await;
    assert!(run.informer.has_synced());
    assert_eq!(server.count(ScriptedRequest::is_list), 1);
    let decode = run.reported_of("Decode");
    assert_eq!(decode.len(), 1, "one report per object version: {decode:?}");
    assert!(
        decode[0]
            .chain
            .contains("the object nests deeper than 126 levels"),
        "{decode:?}"
    );
    run.stop().await;
}

/// A list that never ends stops at `max_list_objects` decoded items (long before
/// `max_list_bytes`), its body dropped; a streaming list that never sends its bookmark stops
/// at the same count. Then a real list syncs.
async fn an_endless_list_stops_at_max_list_objects(backend: Backend) {
    const MAX: usize = 2_000;
    let lists = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let endless_items = |dropped: &Arc<AtomicBool>| {
        let mut item = pod("filler", "10", "v1").to_string();
        item.push(',');
        let guard = SetOnDrop(Arc::clone(dropped));
        stream::repeat(Bytes::from(item)).map(move |b| {
            let _ = &guard;
            b
        })
    };
    let server = ScriptedServer::start({
        let (lists, dropped) = (Arc::clone(&lists), Arc::clone(&dropped));
        move |req| {
            if req.is_streaming_list() {
                // Initial events for ever, never the bookmark.
                let line = watch_line("ADDED", &pod("filler", "10", "v1"));
                return Reply::stream(200, stream::repeat(line));
            }
            if !req.is_list() {
                return Reply::stream(200, stream::pending());
            }
            if lists.fetch_add(1, Ordering::SeqCst) > 0 {
                return Reply::json(200, list_body("10", None, &[pod("a", "10", "v1")]));
            }
            let head = Bytes::from_static(
                br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":["#,
            );
            Reply::stream(200, stream::iter([head]).chain(endless_items(&dropped)))
        }
    })
    .await
    .unwrap();
    let run = Running::start(
        backend,
        server.url(),
        Limits {
            max_list_objects: Some(MAX),
            ..Limits::default()
        },
        |b| quick(b).use_watch_list(true).watch_list_attempts(1),
    );
    eventually(HEAL, "the endless lists reported", || {
        run.reported_of("Limit").len() >= 2
    })
    .await;
    let limits: Vec<String> = run
        .reported_of("Limit")
        .into_iter()
        .map(|r| r.chain)
        .collect();
    assert!(
        limits
            .iter()
            .any(|c| c.contains("more than 2000 initial events")),
        "{limits:?}"
    );
    assert!(
        limits
            .iter()
            .any(|c| c.contains("the list response holds more than 2000 objects")),
        "{limits:?}"
    );
    eventually(HEAL, "the endless body dropped", || {
        dropped.load(Ordering::SeqCst)
    })
    .await;
    run.converge(HEAL, &state(&[("ns/a", "10", "v1")])).await;
    run.stop().await;
}

/// A namespaced informer refuses what the server sends of another namespace, on the list and
/// the watch, as undecodable objects: reported once each, never cached.
async fn objects_of_another_namespace_are_refused(backend: Backend) {
    let mut other = pod("x", "10", "v1");
    other["metadata"]["namespace"] = json!("elsewhere");
    let mut other_later = pod("y", "11", "v1");
    other_later["metadata"]["namespace"] = json!("elsewhere");
    let items = vec![pod("a", "10", "v1"), other];
    let server = server(
        move |_| Reply::json(200, list_body("10", None, &items)),
        move |n| match n {
            0 => Reply::stream(
                200,
                stream::iter([
                    watch_line("ADDED", &other_later),
                    watch_line("MODIFIED", &pod("a", "12", "v2")),
                ])
                .chain(stream::pending()),
            ),
            n => quiet(n),
        },
    )
    .await;
    let run = Running::start(
        backend,
        server.url(),
        Limits {
            namespace: Some("ns"),
            ..Limits::default()
        },
        quick,
    );
    run.converge(HEAL, &state(&[("ns/a", "12", "v2")])).await;
    eventually(HEAL, "both refusals reported", || {
        run.informer.decode_errors() == 2
    })
    .await;
    let decode: Vec<String> = run
        .reported_of("Decode")
        .into_iter()
        .map(|r| r.chain)
        .collect();
    assert_eq!(decode.len(), 2, "{decode:?}");
    assert!(
        decode[0].contains("elsewhere/x") && decode[0].contains("outside"),
        "{decode:?}"
    );
    assert!(
        decode[1].contains("elsewhere/y") && decode[1].contains("outside"),
        "{decode:?}"
    );
    // Refused on the watch, the object was not a reason to relist.
    assert_eq!(server.count(ScriptedRequest::is_list), 1);
    run.stop().await;
}

/// Objects of another kind or apiVersion on the list and the watch are refused by the typed
/// form (its own decode) and by the compact form (its codec) alike.
async fn objects_of_another_kind_are_refused(backend: Backend) {
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns", "resourceVersion": "10"}, "data": {"k": "v"}});
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns", "resourceVersion": "11"}, "spec": {}});
    let items = vec![pod("a", "10", "v1"), config_map.clone()];
    let server = server(
        move |_| Reply::json(200, list_body("10", None, &items)),
        // The first watch of each informer (the typed one's, then the compact one's).
        move |n| match n {
            0 | 1 => Reply::stream(
                200,
                stream::iter([
                    watch_line("ADDED", &deployment),
                    watch_line("MODIFIED", &config_map),
                    watch_line("ADDED", &pod("b", "12", "v1")),
                ])
                .chain(stream::pending()),
            ),
            n => quiet(n),
        },
    )
    .await;
    // The typed form.
    let run = Running::start(backend, server.url(), Limits::default(), quick);
    run.converge(HEAL, &state(&[("ns/a", "10", "v1"), ("ns/b", "12", "v1")]))
        .await;
    run.stop().await;
    // The compact form of the same resource.
    let keys = compact_pod_keys(backend, server.url(), 2).await;
    assert_eq!(keys, ["ns/a", "ns/b"]);
}

/// The keys a compact informer of k8s-openapi pods at `url` holds once it holds `n` and has
/// taken the watch's events.
async fn compact_pod_keys(backend: Backend, url: &str, n: usize) -> Vec<String> {
    use k8s_openapi::api::core::v1::Pod;
    use kcache_client_http::{HttpListerWatcher, KubeListerWatcher};
    use kcache_reflector::ListerWatcher;
    use kcache_store::Compact;

    let lw: Arc<dyn ListerWatcher<Compact<Pod>>> = match backend {
        Backend::Http => Arc::new(
            HttpListerWatcher::<Compact<Pod>>::builder(
                crate::support::http_client(url),
                crate::support::pods(),
            )
            .kind("Pod")
            .codec(kcache_store::CompactCodec::new())
            .build(),
        ),
        Backend::Kube => {
            Arc::new(KubeListerWatcher::compact(crate::support::kube_pods(url)).build())
        }
    };
    let informer = kcache_informer::SharedIndexInformer::builder(lw).build();
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await.unwrap() }
    });
    let keys = || {
        let mut keys: Vec<String> = informer
            .indexer()
            .list()
            .iter()
            .map(|o| kcache_store::Object::key(&**o).to_string())
            .collect();
        keys.sort();
        keys
    };
    let deadline = tokio::time::Instant::now() + HEAL;
    // The ConfigMap's version is reported once (list and watch), the Deployment once.
    while keys().len() < n || informer.decode_errors() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "compact cache {:?}, {} decode errors",
            keys(),
            informer.decode_errors()
        );
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    let held = keys();
    cancel.cancel();
    task.await.unwrap();
    held
}

on_both_backends!(
    #[tokio::test]
    a_status_answered_with_200_is_its_error_not_an_empty_list,
    a_list_without_items_or_of_another_type_is_a_decode_error,
    an_item_nested_past_the_limit_is_one_bad_item,
    an_endless_list_stops_at_max_list_objects,
    objects_of_another_namespace_are_refused,
    objects_of_another_kind_are_refused,
);
