//! Protocol tests for the fake API server (api-protocol.md 7.1), over real HTTP on loopback.

use std::time::Duration;

use http::{Method, StatusCode, Version};
use kcache_store::{ApiResource, DynamicObject};
use kcache_testing_server::fake_api_server::{FakeApiServer, INITIAL_EVENTS_END, ServedResource};
use serde_json::{Value, json};

use crate::fake_api_server_client::{Client, End, Reply, Watch, summary};

pub(crate) fn pod(ns: &str, name: &str, app: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": "Running"},
    }))
    .unwrap()
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

const SHORT: Duration = Duration::from_millis(300);

/// A fake API server that also serves the custom resource `widgets.example.com/v1` (namespaced,
/// kind `Widget`), and that resource.
pub(crate) async fn widgets_server() -> (FakeApiServer, ServedResource) {
    let widgets = ServedResource::new(
        ApiResource::new("example.com", "v1", "widgets", true),
        "Widget",
    );
    let server = FakeApiServer::builder()
        .resource(widgets.clone())
        .start()
        .await
        .unwrap();
    (server, widgets)
}

/// Creates the pods `names`, in that order, in `ns`, all labelled `app=web`.
pub(crate) fn create_pods<S: AsRef<str>>(
    server: &FakeApiServer,
    ns: &str,
    names: impl IntoIterator<Item = S>,
) {
    for name in names {
        server
            .create(&ServedResource::pods(), pod(ns, name.as_ref(), "web"))
            .unwrap();
    }
}

/// `{prefix}0` to `{prefix}{n - 1}`.
fn numbered(prefix: &str, n: usize) -> impl Iterator<Item = String> {
    (0..n).map(move |i| format!("{prefix}{i}"))
}

/// The page of all pods after the continue token `token`.
pub(crate) async fn page(client: &Client, limit: usize, token: &str) -> Reply {
    client
        .get(&format!("/api/v1/pods?limit={limit}&continue={token}"))
        .await
}

/// Asserts an event's `(type, name, resourceVersion)`.
#[track_caller]
pub(crate) fn assert_event(event: &Value, kind: &str, name: &str, rv: impl std::fmt::Display) {
    assert_eq!(
        summary(event),
        (kind.to_owned(), name.to_owned(), rv.to_string())
    );
}

/// Asserts that nothing arrives on `watch` for a short while.
pub(crate) async fn assert_quiet(watch: &mut Watch) {
    assert_eq!(watch.next_line(SHORT).await.unwrap_err(), End::Timeout);
}

#[tokio::test]
async fn list_has_the_real_shape_and_one_global_rv() {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    server.create(&pods, pod("b", "p2", "web")).unwrap();
    server.create(&pods, pod("a", "p1", "web")).unwrap();
    let cm: DynamicObject =
        serde_json::from_value(json!({"metadata": {"name": "c", "namespace": "a"}, "data": {}}))
            .unwrap();
    let cm = server.create(&ServedResource::configmaps(), cm).unwrap();
    assert_eq!(cm.metadata.resource_version.as_deref(), Some("4"));
    let client = Client::new(&server);
    let reply = client.get("/api/v1/pods").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers["content-type"], "application/json");
    let list = reply.json();
    assert_eq!(list["kind"], "PodList");
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(
        list["metadata"]["resourceVersion"], "4",
        "list RV is the global RV"
    );
    assert!(list["metadata"].get("continue").is_none());
    assert_eq!(
        names(&list),
        ["p1", "p2"],
        "key order: namespace, then name"
    );
    let item = &list["items"][0];
    assert!(item.get("kind").is_none() && item.get("apiVersion").is_none());
    assert_eq!(item["metadata"]["generation"], 1);
    assert_eq!(item["metadata"]["uid"].as_str().unwrap().len(), 36);
    assert!(
        item["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    // One namespace, a missing namespace, cluster-scoped, single GET, unknown resource.
    assert_eq!(
        names(&client.get("/api/v1/namespaces/a/pods").await.json()),
        ["p1"]
    );
    let empty = client.get("/api/v1/namespaces/nope/pods").await.json();
    assert_eq!(empty["items"], json!([]));
    assert_eq!(client.get("/api/v1/nodes").await.json()["kind"], "NodeList");
    let one = client.get("/api/v1/namespaces/a/pods/p1").await.json();
    assert_eq!(
        (one["kind"].as_str(), one["apiVersion"].as_str()),
        (Some("Pod"), Some("v1"))
    );
    let missing = client.get("/api/v1/namespaces/a/pods/zz").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.json()["message"], "pods \"zz\" not found");
    let unknown = client.get("/api/v1/widgets").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(&unknown.body[..], b"404 page not found\n");
}

#[tokio::test]
async fn crd_style_resources_under_apis_carry_types_on_items() {
    let (server, widgets) = widgets_server().await;
    server
        .create(&widgets, DynamicObject::new(Some("x"), "w"))
        .unwrap();
    let client = Client::new(&server);
    let list = client.get("/apis/example.com/v1/widgets").await.json();
    assert_eq!(list["apiVersion"], "example.com/v1");
    assert_eq!(list["kind"], "WidgetList");
    assert_eq!(list["items"][0]["kind"], "Widget");
    let ns = client
        .get("/apis/example.com/v1/namespaces/x/widgets/w")
        .await;
    assert_eq!(ns.status, StatusCode::OK);
}

#[tokio::test]
async fn pagination_keeps_one_snapshot_and_tokens_expire() {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    create_pods(&server, "ns", numbered("p", 5));
    let client = Client::new(&server);
    let first = client.get("/api/v1/pods?limit=2").await.json();
    assert_eq!(names(&first), ["p0", "p1"]);
    assert_eq!(first["metadata"]["remainingItemCount"], 3);
    let rv = first["metadata"]["resourceVersion"].clone();
    // A change after the first page is not visible in later pages.
    server.delete(&pods, Some("ns"), "p3").unwrap();
    let token = first["metadata"]["continue"].as_str().unwrap();
    let second = page(&client, 2, token).await.json();
    assert_eq!(names(&second), ["p2", "p3"]);
    assert_eq!(second["metadata"]["resourceVersion"], rv);
    let token = second["metadata"]["continue"].as_str().unwrap();
    let last = page(&client, 2, token).await.json();
    assert_eq!(names(&last), ["p4"]);
    assert!(last["metadata"].get("continue").is_none());
    // Expire tokens now: 410 Expired with a fresh inconsistent token.
    server.expire_continue_tokens();
    let expired = page(&client, 2, token).await;
    assert_eq!(expired.status, StatusCode::GONE);
    let status = expired.json();
    assert_eq!(status["reason"], "Expired");
    assert!(status["message"].as_str().unwrap().starts_with(
        "The provided continue parameter is too old to display a consistent list result."
    ));
    let fresh = status["metadata"]["continue"].as_str().unwrap();
    let rest = page(&client, 10, fresh).await.json();
    assert_eq!(names(&rest), ["p4"], "inconsistent continuation at latest");
    // Bad tokens and RV + continue.
    let bad = client.get("/api/v1/pods?limit=2&continue=%21%21").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(
        bad.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid continue token")
    );
    let both = client
        .get(&format!(
            "/api/v1/pods?limit=2&resourceVersion=3&continue={fresh}"
        ))
        .await;
    assert_eq!(both.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        both.json()["message"],
        "specifying resource version is not allowed when using continue"
    );
}

#[tokio::test]
async fn remaining_item_count_is_exact_on_every_page() {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    // "ab" sorts between "a" and "b": its keys must not leak into namespace "a"'s pages.
    for (ns, n) in [("a", 7), ("ab", 2), ("b", 6), ("c", 5)] {
        create_pods(&server, ns, numbered("p", n));
    }
    let client = Client::new(&server);
    let mut extra = 0;
    for path in [
        "/api/v1/pods",
        "/api/v1/namespaces/a/pods",
        "/api/v1/namespaces/ab/pods",
        "/api/v1/namespaces/c/pods",
    ] {
        for limit in [1, 2, 3, 5, 100] {
            let first = client.get(&format!("{path}?limit={limit}")).await.json();
            let mut seen = names(&first).len();
            let remaining = first["metadata"]["remainingItemCount"]
                .as_u64()
                .unwrap_or(0);
            let total = seen + usize::try_from(remaining).unwrap();
            let mut list = first;
            loop {
                // Writes between pages change neither the pages nor their counts.
                extra += 1;
                create_pods(&server, "a", [format!("x{extra}")]);
                server
                    .delete(&pods, Some("b"), &format!("p{}", extra % 6))
                    .ok();
                let Some(token) = list["metadata"]["continue"].as_str() else {
                    assert!(list["metadata"].get("remainingItemCount").is_none());
                    break;
                };
                assert_eq!(
                    list["metadata"]["remainingItemCount"],
                    total - seen,
                    "{path} limit {limit} after {seen}"
                );
                list = client
                    .get(&format!("{path}?limit={limit}&continue={token}"))
                    .await
                    .json();
                seen += names(&list).len();
            }
            assert_eq!(seen, total, "{path} limit {limit}");
        }
    }
    // A token from another list, starting past this namespace's keys: nothing left.
    let in_c = client.get("/api/v1/namespaces/c/pods?limit=1").await.json();
    let token = in_c["metadata"]["continue"].as_str().unwrap();
    for ns in ["a", "ab"] {
        let past = client
            .get(&format!(
                "/api/v1/namespaces/{ns}/pods?limit=5&continue={token}"
            ))
            .await;
        assert_eq!(past.status, StatusCode::OK);
        assert_eq!(past.json()["items"], json!([]));
    }
}

#[tokio::test]
async fn continue_tokens_expire_when_history_is_compacted() {
    let server = FakeApiServer::builder()
        .history_limit(3)
        .start()
        .await
        .unwrap();
    create_pods(&server, "ns", numbered("p", 4));
    let client = Client::new(&server);
    let first = client.get("/api/v1/pods?limit=1").await.json();
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    create_pods(&server, "other", numbered("q", 4));
    let expired = page(&client, 1, &token).await;
    assert_eq!(expired.status, StatusCode::GONE);
}

#[tokio::test]
async fn label_and_field_selectors() {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    server.create(&pods, pod("a", "web-1", "web")).unwrap();
    server.create(&pods, pod("a", "db-1", "db")).unwrap();
    let mut other = pod("b", "plain", "x");
    other.metadata.labels = None;
    other
        .data
        .insert("spec".into(), json!({"nodeName": "node-2"}));
    server.create(&pods, other).unwrap();
    let client = Client::new(&server);
    let get = |q: &str| {
        let client = &client;
        let q = q.to_owned();
        async move { client.get(&format!("/api/v1/pods?{q}")).await }
    };
    assert_eq!(
        names(&get("labelSelector=app%3Dweb").await.json()),
        ["web-1"]
    );
    assert_eq!(
        names(&get("labelSelector=app!%3Dweb").await.json()),
        ["db-1", "plain"]
    );
    assert_eq!(
        names(&get("labelSelector=app+in+(web,db)").await.json()),
        ["db-1", "web-1"]
    );
    assert_eq!(names(&get("labelSelector=!app").await.json()), ["plain"]);
    assert_eq!(
        names(&get("fieldSelector=metadata.name%3Ddb-1").await.json()),
        ["db-1"]
    );
    assert_eq!(
        names(&get("fieldSelector=metadata.namespace!%3Da").await.json()),
        ["plain"]
    );
    assert_eq!(
        names(&get("fieldSelector=spec.nodeName%3Dnode-2").await.json()),
        ["plain"]
    );
    let paged = get("labelSelector=app&limit=1").await.json();
    assert!(paged["metadata"]["continue"].is_string());
    assert!(
        paged["metadata"].get("remainingItemCount").is_none(),
        "no count with selectors"
    );
    let unknown = get("fieldSelector=foo%3Dbar").await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        unknown.json()["message"],
        "\"foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
    assert_eq!(
        get("labelSelector=a%3D%3D%3Db").await.status,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn resource_version_semantics_for_list() {
    let server = FakeApiServer::builder()
        .history_limit(4)
        .too_large_rv_wait(Duration::from_millis(200))
        .start()
        .await
        .unwrap();
    let pods = ServedResource::pods();
    create_pods(&server, "ns", ["a", "b"]);
    let at = server.resource_version();
    server.delete(&pods, Some("ns"), "a").unwrap();
    let client = Client::new(&server);
    // Exact: the snapshot at that RV, with the deleted pod.
    let exact = client
        .get(&format!(
            "/api/v1/pods?resourceVersion={at}&resourceVersionMatch=Exact"
        ))
        .await
        .json();
    assert_eq!(names(&exact), ["a", "b"]);
    assert_eq!(exact["metadata"]["resourceVersion"], at.to_string());
    // Legacy limit + RV = Exact too.
    let legacy = client
        .get(&format!("/api/v1/pods?resourceVersion={at}&limit=5"))
        .await
        .json();
    assert_eq!(names(&legacy), ["a", "b"]);
    // "" and NotOlderThan: latest.
    assert_eq!(names(&client.get("/api/v1/pods").await.json()), ["b"]);
    let not_older = client
        .get(&format!(
            "/api/v1/pods?resourceVersion={at}&resourceVersionMatch=NotOlderThan"
        ))
        .await
        .json();
    assert_eq!(names(&not_older), ["b"]);
    // "0" serves latest and ignores limit.
    let any = client
        .get("/api/v1/pods?resourceVersion=0&limit=1")
        .await
        .json();
    assert_eq!(names(&any), ["b"]);
    assert!(any["metadata"].get("continue").is_none());
    // Too large: 504 after the wait, with the cause and Retry-After.
    let big = server.resource_version() + 10;
    let too_large = client
        .get(&format!(
            "/api/v1/pods?resourceVersion={big}&resourceVersionMatch=NotOlderThan"
        ))
        .await;
    assert_eq!(too_large.status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(too_large.headers["retry-after"], "1");
    let status = too_large.json();
    assert_eq!(status["reason"], "Timeout");
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    assert_eq!(
        status["message"],
        format!(
            "Timeout: Too large resource version: {big}, current: {}",
            big - 10
        )
    );
    // Stale RV=0 reads (HA time travel).
    server.set_stale_rv0(Some(at));
    assert_eq!(
        names(&client.get("/api/v1/pods?resourceVersion=0").await.json()),
        ["a", "b"]
    );
    server.set_stale_rv0(None);
    // Compacted Exact: 410.
    server.compact();
    let old = client
        .get(&format!(
            "/api/v1/pods?resourceVersion={at}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_eq!(old.status, StatusCode::GONE);
    assert_eq!(
        old.json()["message"],
        "The resourceVersion for the provided list is too old."
    );
    // Validation.
    for (query, code) in [
        ("resourceVersionMatch=Exact", 422),
        ("resourceVersion=0&resourceVersionMatch=Exact", 422),
        ("resourceVersion=1&resourceVersionMatch=Sometimes", 422),
        ("sendInitialEvents=true", 422),
        ("resourceVersion=abc", 400),
    ] {
        let reply = client.get(&format!("/api/v1/pods?{query}")).await;
        assert_eq!(reply.status.as_u16(), code, "{query}");
        assert_eq!(reply.json()["kind"], "Status");
    }
}

#[tokio::test]
async fn watch_from_rv_replays_history_then_live_events() {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    server.create(&pods, pod("ns", "a", "web")).unwrap();
    let from = server.resource_version();
    let mut b = (*server.create(&pods, pod("ns", "b", "web")).unwrap()).clone();
    let client = Client::new(&server);
    let mut watch = client
        .watch(&format!("/api/v1/pods?watch=1&resourceVersion={from}"))
        .await;
    let event = watch.next().await;
    assert_event(&event, "ADDED", "b", from + 1);
    assert_eq!(event["object"]["kind"], "Pod", "events carry kind");
    assert_eq!(event["object"]["apiVersion"], "v1");
    b.data
        .insert("status".into(), json!({"phase": "Succeeded"}));
    server.update(&pods, b).unwrap();
    server.delete(&pods, Some("ns"), "a").unwrap();
    assert_event(&watch.next().await, "MODIFIED", "b", from + 2);
    let deleted = watch.next().await;
    assert_event(&deleted, "DELETED", "a", from + 3);
    assert_eq!(
        deleted["object"]["metadata"]["labels"]["app"], "web",
        "last state"
    );
    // Writes to another resource bump the RV but do not show here.
    server
        .create(
            &ServedResource::configmaps(),
            DynamicObject::new(Some("ns"), "cm"),
        )
        .unwrap();
    assert_quiet(&mut watch).await;
    // An update that changes nothing: no RV bump, no event.
    let rv = server.resource_version();
    let same = (*server.get(&pods, Some("ns"), "b").unwrap()).clone();
    server.update(&pods, same).unwrap();
    assert_eq!(server.resource_version(), rv);
    assert_quiet(&mut watch).await;
}

#[tokio::test]
async fn watch_without_rv_starts_with_synthetic_added() {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    create_pods(&server, "ns", ["b", "a"]);
    let client = Client::new(&server);
    for rv in ["", "&resourceVersion=0"] {
        let mut watch = client.watch(&format!("/api/v1/pods?watch=true{rv}")).await;
        let first = summary(&watch.next().await);
        let second = summary(&watch.next().await);
        assert_eq!(
            (first.0.as_str(), first.1.as_str(), first.2.as_str()),
            ("ADDED", "a", "3")
        );
        assert_eq!(
            (second.1.as_str(), second.2.as_str()),
            ("b", "2"),
            "key order, own RVs"
        );
        server
            .create(&pods, pod("ns", &format!("c{}", rv.len()), "web"))
            .unwrap();
        assert_eq!(summary(&watch.next().await).0, "ADDED");
        server
            .delete(&pods, Some("ns"), &format!("c{}", rv.len()))
            .unwrap();
        assert_eq!(summary(&watch.next().await).0, "DELETED");
    }
    // The deprecated /watch/ prefix and a single-object watch.
    let mut watch = client.watch("/api/v1/watch/namespaces/ns/pods/a").await;
    assert_eq!(summary(&watch.next().await).1, "a");
    assert_quiet(&mut watch).await;
}

#[tokio::test]
async fn compacted_rv_gives_200_then_one_410_error_event() {
    let server = FakeApiServer::builder()
        .history_limit(2)
        .start()
        .await
        .unwrap();
    create_pods(&server, "ns", numbered("p", 5));
    let client = Client::new(&server);
    let mut watch = client.watch("/api/v1/pods?watch=1&resourceVersion=2").await;
    let event = watch.next().await;
    assert_eq!(
        event,
        json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": "too old resource version: 2 (4)",
            "reason": "Expired", "code": 410}})
    );
    assert_eq!(watch.end(SHORT).await, End::Clean);
    // From the oldest retained point it still works; after compact() it does not.
    let mut ok = client.watch("/api/v1/pods?watch=1&resourceVersion=4").await;
    assert_eq!(summary(&ok.next().await).2, "5");
    server.compact();
    let mut gone = client.watch("/api/v1/pods?watch=1&resourceVersion=5").await;
    assert_eq!(gone.next().await["object"]["code"], 410);
}

#[tokio::test]
async fn bookmarks_are_periodic_on_demand_and_never_behind() {
    let server = FakeApiServer::builder()
        .bookmark_interval(Duration::from_millis(100))
        .start()
        .await
        .unwrap();
    let pods = ServedResource::pods();
    server.create(&pods, pod("ns", "a", "web")).unwrap();
    let client = Client::new(&server);
    let mut plain = client.watch("/api/v1/pods?watch=1&resourceVersion=2").await;
    let mut watch = client
        .watch("/api/v1/pods?watch=1&resourceVersion=2&allowWatchBookmarks=true")
        .await;
    server
        .create(
            &ServedResource::configmaps(),
            DynamicObject::new(Some("ns"), "cm"),
        )
        .unwrap();
    let bookmark = watch.next().await;
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(
        bookmark["object"],
        json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "3"}})
    );
    server.create(&pods, pod("ns", "b", "web")).unwrap();
    loop {
        let e = watch.next().await;
        if e["type"] == "ADDED" {
            assert_eq!(summary(&e).2, "4");
            break;
        }
    }
    let next = watch.next().await;
    assert_eq!(next["type"], "BOOKMARK");
    assert!(
        next["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 4
    );
    // No bookmarks without allowWatchBookmarks.
    server.send_bookmark();
    assert_eq!(summary(&plain.next().await).0, "ADDED");
    assert_quiet(&mut plain).await;
}

#[tokio::test]
async fn paused_watches_queue_events_and_resume_in_order() {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    let from = server.resource_version();
    let client = Client::new(&server);
    let mut watch = client
        .watch(&format!(
            "/api/v1/pods?watch=1&resourceVersion={from}&allowWatchBookmarks=1"
        ))
        .await;
    server.create(&pods, pod("ns", "a", "web")).unwrap();
    assert_eq!(summary(&watch.next().await).1, "a");
    server.pause_watches();
    create_pods(&server, "ns", ["b", "c", "d"]);
    server.send_bookmark();
    assert_eq!(
        watch.next_line(SHORT).await.unwrap_err(),
        End::Timeout,
        "nothing, not even a bookmark, while paused"
    );
    // A watch opened while paused still gets its replay, then waits too.
    let mut late = client
        .watch(&format!("/api/v1/pods?watch=1&resourceVersion={from}"))
        .await;
    for name in ["a", "b", "c", "d"] {
        assert_eq!(summary(&late.next().await).1, name);
    }
    server.create(&pods, pod("ns", "e", "web")).unwrap();
    assert_quiet(&mut late).await;
    server.resume_watches();
    for (i, name) in ["b", "c", "d", "e"].into_iter().enumerate() {
        assert_event(&watch.next().await, "ADDED", name, from + 2 + i as u64);
    }
    assert_eq!(summary(&late.next().await).1, "e");
    server.send_bookmark();
    assert_eq!(watch.next().await["type"], "BOOKMARK", "bookmarks are back");
}

#[tokio::test]
async fn manual_bookmark_hook() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let mut watch = client
        .watch("/api/v1/pods?watch=1&resourceVersion=1&allowWatchBookmarks=1")
        .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    server.send_bookmark();
    assert_eq!(watch.next().await["type"], "BOOKMARK");
}

#[tokio::test]
async fn timeout_seconds_ends_the_stream_cleanly() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let started = std::time::Instant::now();
    let mut watch = client.watch("/api/v1/pods?watch=1&timeoutSeconds=1").await;
    assert_eq!(watch.end(Duration::from_secs(5)).await, End::Clean);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

#[tokio::test]
async fn large_watch_lists_and_bursts_arrive_whole_and_in_order() {
    // Enough events for many frames of batched lines: each must still arrive whole, once and
    // in order, on a filtered watch as on an unfiltered one.
    let server = FakeApiServer::builder()
        .watcher_buffer(5000)
        .start()
        .await
        .unwrap();
    let pods = ServedResource::pods();
    // Every third pod is a database; `flipped`: the other way round.
    let app = |i: usize, flipped: bool| {
        if i.is_multiple_of(3) == flipped {
            "web"
        } else {
            "db"
        }
    };
    let names: Vec<String> = (0..1500).map(|i| format!("p{i:04}")).collect();
    for (i, name) in names.iter().enumerate() {
        server
            .create(&pods, pod("ns", name, app(i, false)))
            .unwrap();
    }
    let client = Client::new(&server);
    let query = "watch=1&sendInitialEvents=true&allowWatchBookmarks=true&\
                 resourceVersionMatch=NotOlderThan";
    let mut all = client.watch(&format!("/api/v1/pods?{query}")).await;
    let mut db = client
        .watch(&format!("/api/v1/pods?{query}&labelSelector=app%3Ddb"))
        .await;
    // Pod i was created at RV i + 2.
    for (i, name) in names.iter().enumerate() {
        assert_event(&all.next().await, "ADDED", name, i + 2);
        if app(i, false) == "db" {
            assert_event(&db.next().await, "ADDED", name, i + 2);
        }
    }
    for watch in [&mut all, &mut db] {
        let end = watch.next().await;
        assert_eq!(end["type"], "BOOKMARK");
        assert_eq!(end["object"]["metadata"]["resourceVersion"], "1501");
    }
    // A burst, queued while paused: the first 600 pods change app.
    server.pause_watches();
    for (i, name) in names.iter().enumerate().take(600) {
        server.update(&pods, pod("ns", name, app(i, true))).unwrap();
    }
    server.resume_watches();
    for (i, name) in names.iter().enumerate().take(600) {
        assert_event(&all.next().await, "MODIFIED", name, 1502 + i);
        let kind = if app(i, true) == "db" {
            "ADDED"
        } else {
            "DELETED"
        };
        assert_event(&db.next().await, kind, name, 1502 + i);
    }
    assert_quiet(&mut all).await;
    assert_quiet(&mut db).await;
}

#[tokio::test]
async fn send_initial_events_ends_with_the_annotated_bookmark() {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    create_pods(&server, "ns", ["b", "a"]);
    server
        .create(&ServedResource::nodes(), DynamicObject::new(None, "n1"))
        .unwrap();
    let client = Client::new(&server);
    let mut watch = client
        .watch("/api/v1/pods?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&resourceVersion=")
        .await;
    assert_eq!(summary(&watch.next().await).1, "a");
    assert_eq!(summary(&watch.next().await).1, "b");
    let end = watch.next().await;
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(end["object"]["metadata"]["resourceVersion"], "4");
    assert_eq!(
        end["object"]["metadata"]["annotations"][INITIAL_EVENTS_END],
        "true"
    );
    server.delete(&pods, Some("ns"), "a").unwrap();
    assert_event(&watch.next().await, "DELETED", "a", 5);
    // Validation, and the feature switched off.
    let bad = client
        .get("/api/v1/pods?watch=1&sendInitialEvents=true")
        .await;
    assert_eq!(bad.status.as_u16(), 422);
    let bad = client
        .get("/api/v1/pods?watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=1")
        .await;
    assert_eq!(bad.status.as_u16(), 422);
    let off = FakeApiServer::builder()
        .watch_list(false)
        .start()
        .await
        .unwrap();
    let reply = Client::new(&off)
        .get("/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
        .await;
    assert_eq!(reply.status.as_u16(), 422);
    assert!(reply.json()["message"].as_str().unwrap().contains(
        "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
    ));
}

#[tokio::test]
async fn selector_transitions_become_added_and_deleted() {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    let created = server.create(&pods, pod("ns", "p", "db")).unwrap();
    let client = Client::new(&server);
    let rv = server.resource_version();
    let mut watch = client
        .watch(&format!(
            "/api/v1/pods?watch=1&resourceVersion={rv}&labelSelector=app%3Dweb"
        ))
        .await;
    let relabel = |app: &str| {
        let mut p = (*server.get(&pods, Some("ns"), "p").unwrap()).clone();
        p.metadata.labels = Some([("app".to_owned(), app.to_owned())].into());
        server.update(&pods, p).unwrap()
    };
    relabel("web");
    assert_event(&watch.next().await, "ADDED", "p", rv + 1);
    relabel("web2");
    let deleted = watch.next().await;
    assert_event(&deleted, "DELETED", "p", rv + 2);
    assert_eq!(
        deleted["object"]["metadata"]["labels"]["app"], "web",
        "old content, new RV"
    );
    relabel("db");
    assert_quiet(&mut watch).await;
    assert_eq!(created.metadata.generation, Some(1));
}

#[tokio::test]
async fn create_update_delete_over_http_with_conflicts() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "1"}});
    let created = client
        .request(
            Method::POST,
            "/api/v1/namespaces/ns/configmaps",
            Some(body.clone()),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let obj = created.json();
    assert_eq!(obj["metadata"]["namespace"], "ns");
    assert_eq!(obj["metadata"]["resourceVersion"], "2");
    let again = client
        .request(Method::POST, "/api/v1/namespaces/ns/configmaps", Some(body))
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.json()["reason"], "AlreadyExists");
    let mut update = obj.clone();
    update["data"]["k"] = json!("2");
    let updated = client
        .request(
            Method::PUT,
            "/api/v1/namespaces/ns/configmaps/c",
            Some(update.clone()),
        )
        .await;
    assert_eq!(updated.status, StatusCode::OK);
    assert_eq!(updated.json()["metadata"]["resourceVersion"], "3");
    // Configmaps have no generation, as on kube-apiserver.
    assert!(updated.json()["metadata"].get("generation").is_none());
    let stale = client
        .request(
            Method::PUT,
            "/api/v1/namespaces/ns/configmaps/c",
            Some(update),
        )
        .await;
    assert_eq!(stale.status, StatusCode::CONFLICT);
    assert_eq!(stale.json()["reason"], "Conflict");
    let deleted = client
        .request(Method::DELETE, "/api/v1/namespaces/ns/configmaps/c", None)
        .await;
    assert_eq!(deleted.status, StatusCode::OK);
    // A configmap's DELETE answers a Status naming it, as kube-apiserver's does.
    assert_eq!(
        (
            &deleted.json()["status"],
            &deleted.json()["details"]["name"]
        ),
        (&json!("Success"), &json!("c"))
    );
    assert_eq!(server.resource_version(), 4);
    let gone = client
        .request(Method::DELETE, "/api/v1/namespaces/ns/configmaps/c", None)
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    assert_eq!(gone.json()["reason"], "NotFound");
    // Finalizers: delete marks (MODIFIED), removing them deletes (DELETED).
    let pods = ServedResource::pods();
    let mut p = pod("ns", "f", "web");
    p.metadata
        .other
        .insert("finalizers".into(), json!(["example.com/hold"]));
    let p = server.create(&pods, p).unwrap();
    let rv = server.resource_version();
    let mut watch = client
        .watch(&format!("/api/v1/pods?watch=1&resourceVersion={rv}"))
        .await;
    let marked = server.delete(&pods, Some("ns"), "f").unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(summary(&watch.next().await).0, "MODIFIED");
    let mut release = (*marked).clone();
    release.metadata.other.remove("finalizers");
    server.update(&pods, release).unwrap();
    assert_eq!(summary(&watch.next().await).0, "DELETED");
    // A recreate gets a new uid.
    let again = server.create(&pods, pod("ns", "f", "web")).unwrap();
    assert_ne!(again.metadata.uid, p.metadata.uid);
}

#[tokio::test]
async fn discovery_documents() {
    let widgets = ServedResource::new(
        ApiResource::new("example.com", "v1", "widgets", false),
        "Widget",
    );
    let server = FakeApiServer::builder()
        .resource(widgets)
        .start()
        .await
        .unwrap();
    let client = Client::new(&server);
    let version = client.get("/version").await.json();
    assert_eq!(version["major"], "1");
    let api = client.get("/api").await.json();
    assert_eq!(
        (api["kind"].as_str(), api["versions"][0].as_str()),
        (Some("APIVersions"), Some("v1"))
    );
    let core = client.get("/api/v1").await.json();
    assert_eq!(core["kind"], "APIResourceList");
    let pods = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods")
        .unwrap();
    assert_eq!(pods["namespaced"], true);
    assert_eq!(pods["kind"], "Pod");
    assert!(pods["verbs"].as_array().unwrap().contains(&json!("watch")));
    let groups = client.get("/apis").await.json();
    assert_eq!(groups["kind"], "APIGroupList");
    let example = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "example.com")
        .unwrap();
    assert_eq!(
        example["preferredVersion"]["groupVersion"],
        "example.com/v1"
    );
    let group = client.get("/apis/example.com/v1").await.json();
    assert_eq!(group["resources"][0]["namespaced"], false);
    assert_eq!(
        client.get("/apis/nope/v1").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn https_with_http2_and_the_generated_ca() {
    let server = FakeApiServer::builder().tls(true).start().await.unwrap();
    assert!(server.url().starts_with("https://127.0.0.1:"));
    assert!(
        server
            .ca_pem()
            .unwrap()
            .starts_with("-----BEGIN CERTIFICATE-----")
    );
    server
        .create(&ServedResource::pods(), pod("ns", "a", "web"))
        .unwrap();
    let client = Client::new(&server);
    let reply = client.get("/api/v1/pods").await;
    assert_eq!(reply.version, Version::HTTP_2);
    assert_eq!(names(&reply.json()), ["a"]);
    let mut watch = client.watch("/api/v1/pods?watch=1").await;
    assert_eq!(summary(&watch.next().await).1, "a");
    assert!(
        server
            .kubeconfig("default")
            .contains("certificate-authority-data")
    );
}

#[tokio::test]
async fn slow_watchers_are_closed_without_blocking_writers() {
    let server = FakeApiServer::builder()
        .watcher_buffer(4)
        .start()
        .await
        .unwrap();
    let pods = ServedResource::pods();
    let client = Client::new(&server);
    let mut watch = client.watch("/api/v1/pods?watch=1&resourceVersion=1").await;
    // The stream task is parked on a full body channel; the watcher buffer overflows.
    create_pods(&server, "ns", (0..200).map(|i| format!("p{i:03}")));
    let mut seen = 0;
    loop {
        match watch.next_line(Duration::from_secs(5)).await {
            Ok(_) => seen += 1,
            Err(end) => {
                assert_eq!(end, End::Clean);
                break;
            }
        }
    }
    assert!(seen < 200, "the watcher was dropped, saw {seen}");
    assert_eq!(server.watcher_count(&pods), 0);
}

#[tokio::test]
async fn request_log_and_shutdown() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let _ = client.get("/api/v1/pods?resourceVersion=0&limit=500").await;
    // Found by its query, not by position: a client of an earlier test whose server had the
    // same port may still knock on it.
    let log = server.requests();
    let list = log
        .iter()
        .find(|r| r.path == "/api/v1/pods" && r.param("limit") == Some("500"))
        .expect("the list request is logged");
    assert_eq!(list.param("resourceVersion"), Some("0"));
    assert!(!list.is_watch());
    let addr = server.addr();
    server.shutdown().await;
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn status_bodies_decode_as_the_reflectors_status_type() {
    let server = FakeApiServer::builder()
        .history_limit(1)
        .too_large_rv_wait(Duration::from_millis(50))
        .start()
        .await
        .unwrap();
    create_pods(&server, "ns", ["a", "b"]);
    let client = Client::new(&server);
    let mut watch = client.watch("/api/v1/pods?watch=1&resourceVersion=1").await;
    let event = watch.next().await;
    let status: kcache_reflector::Status = serde_json::from_value(event["object"].clone()).unwrap();
    assert!(status.is_expired());
    let too_large = client
        .get("/api/v1/pods?resourceVersion=99&resourceVersionMatch=NotOlderThan")
        .await;
    let status: kcache_reflector::Status = serde_json::from_slice(&too_large.body).unwrap();
    assert!(status.is_too_large_rv());
    assert_eq!(status.retry_after(), Some(Duration::from_secs(1)));
}
