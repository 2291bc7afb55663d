//! The fake API server's two benchmark switches: the latest state served as of an older
//! resource version with the changes since queued behind it (`set_latest_as_of`), and how watch
//! streams are cut into writes (`WatchFrames`).

use http::Method;
use http_body_util::BodyExt;
use kcache_testing_server::WatchFrames;
use kcache_testing_server::fake_api_server::{FakeApiServer, ServedResource};
use serde_json::Value;

use crate::fake_api_server::{assert_event, create_pods, pod};
use crate::fake_api_server_client::{Client, summary};

/// A server with pods `a`..`d` in `ns`, then `a` and `b` updated and `c` deleted; returns it
/// and the resource version before the changes.
async fn changed_server() -> (FakeApiServer, u64) {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    create_pods(&server, "ns", ["a", "b", "c", "d"]);
    let before = server.resource_version();
    for name in ["a", "b"] {
        let current = server.get(&pods, Some("ns"), name).unwrap();
        let mut changed = (*current).clone();
        changed.metadata.labels = Some([("app".to_owned(), "new".to_owned())].into());
        server.update(&pods, changed).unwrap();
    }
    server.delete(&pods, Some("ns"), "c").unwrap();
    (server, before)
}

fn names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn lists_of_the_latest_are_the_state_as_of_with_every_page_consistent() {
    let (server, before) = changed_server().await;
    let latest = server.resource_version();
    server.set_latest_as_of(Some(before)).unwrap();
    let client = Client::new(&server);
    for path in ["/api/v1/pods", "/api/v1/pods?resourceVersion=0"] {
        let list = client.get(path).await.json();
        assert_eq!(
            list["metadata"]["resourceVersion"],
            before.to_string(),
            "{path}"
        );
        assert_eq!(names(&list), ["a", "b", "c", "d"], "{path}");
        assert!(
            list["items"][0]["metadata"]["labels"]["app"] == "web",
            "the old version of a: {path}"
        );
    }
    // Pages of two: both of the same state.
    let first = client.get("/api/v1/pods?limit=2").await.json();
    assert_eq!(names(&first), ["a", "b"]);
    let token = first["metadata"]["continue"].as_str().unwrap();
    let second = client
        .get(&format!("/api/v1/pods?limit=2&continue={token}"))
        .await
        .json();
    assert_eq!(names(&second), ["c", "d"]);
    assert_eq!(second["metadata"]["resourceVersion"], before.to_string());
    // An explicit newer resource version is still served as asked.
    let exact = client
        .get(&format!(
            "/api/v1/pods?resourceVersion={latest}&resourceVersionMatch=Exact"
        ))
        .await
        .json();
    assert_eq!(names(&exact), ["a", "b", "d"]);
    // Switched off: the latest again.
    server.set_latest_as_of(None).unwrap();
    let list = client.get("/api/v1/pods").await.json();
    assert_eq!(list["metadata"]["resourceVersion"], latest.to_string());
}

#[tokio::test]
async fn a_watch_list_sends_the_state_as_of_then_every_change_since() {
    let (server, before) = changed_server().await;
    server.set_latest_as_of(Some(before)).unwrap();
    let client = Client::new(&server);
    let mut watch = client
        .watch(
            "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan\
             &allowWatchBookmarks=true",
        )
        .await;
    for name in ["a", "b", "c", "d"] {
        assert_eq!(summary(&watch.next().await).1, name);
    }
    let bookmark = watch.next().await;
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(
        bookmark["object"]["metadata"]["resourceVersion"],
        before.to_string()
    );
    assert_event(&watch.next().await, "MODIFIED", "a", before + 1);
    assert_event(&watch.next().await, "MODIFIED", "b", before + 2);
    assert_event(&watch.next().await, "DELETED", "c", before + 3);
    // Then live.
    server
        .create(&ServedResource::pods(), pod("ns", "e", "web"))
        .unwrap();
    assert_event(&watch.next().await, "ADDED", "e", before + 4);
}

#[tokio::test]
async fn a_watch_after_the_list_replays_the_queued_changes() {
    let (server, before) = changed_server().await;
    server.set_latest_as_of(Some(before)).unwrap();
    let client = Client::new(&server);
    let list = client.get("/api/v1/pods?limit=500").await.json();
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap();
    let mut watch = client
        .watch(&format!("/api/v1/pods?watch=1&resourceVersion={rv}"))
        .await;
    assert_event(&watch.next().await, "MODIFIED", "a", before + 1);
    assert_event(&watch.next().await, "MODIFIED", "b", before + 2);
    assert_event(&watch.next().await, "DELETED", "c", before + 3);
}

#[tokio::test]
async fn as_of_a_compacted_version_is_refused_and_compaction_past_it_ends_it() {
    let (server, before) = changed_server().await;
    server.compact_to(before + 1);
    assert_eq!(server.set_latest_as_of(Some(before)), Err(before + 1));
    server.set_latest_as_of(Some(before + 1)).unwrap();
    server.compact_to(before + 2);
    let list = Client::new(&server).get("/api/v1/pods").await.json();
    assert_eq!(
        list["metadata"]["resourceVersion"],
        server.resource_version().to_string(),
        "the latest again"
    );
}

/// The bytes of each frame the client reads of a watch-list of `n` pods, up to its bookmark.
async fn frames_of(frames: WatchFrames, n: usize) -> Vec<bytes::Bytes> {
    let server = FakeApiServer::builder()
        .watch_frames(frames)
        .start()
        .await
        .unwrap();
    create_pods(&server, "ns", (0..n).map(|i| format!("pod-{i}")));
    let client = Client::new(&server);
    let resp = client
        .send(
            Method::GET,
            "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan\
             &allowWatchBookmarks=true",
            None,
            None,
        )
        .await;
    let mut body = resp.into_body();
    let mut frames = Vec::new();
    let mut lines = 0;
    while lines < n + 1 {
        let frame = tokio::time::timeout(std::time::Duration::from_secs(5), body.frame())
            .await
            .expect("a frame within 5 s")
            .unwrap()
            .unwrap();
        let data = frame.into_data().unwrap();
        lines += newlines(&data);
        frames.push(data);
    }
    frames
}

/// The line ends in `bytes`.
fn newlines(bytes: &[u8]) -> usize {
    bytes.split(|b| *b == b'\n').count() - 1
}

/// The lines of `frames` joined, as events.
fn events(frames: &[bytes::Bytes]) -> Vec<Value> {
    let all: Vec<u8> = frames.iter().flat_map(|f| f.iter().copied()).collect();
    all.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

#[tokio::test]
async fn watch_frames_cut_the_stream_as_asked() {
    // The default: lines batched together (the client's reads may still cut a write).
    let batched = frames_of(WatchFrames::default(), 40).await;
    assert!(
        batched.iter().any(|f| newlines(f) > 1),
        "lines share frames"
    );
    // One event per write.
    let single = frames_of(WatchFrames::PerEvent, 40).await;
    assert!(
        single.iter().all(|f| newlines(f) <= 1),
        "one line per frame"
    );
    // Fixed-size frames cut lines anywhere; the events read the same.
    let split = frames_of(WatchFrames::Split(100), 40).await;
    assert!(split.iter().all(|f| f.len() <= 100));
    assert!(split.iter().any(|f| !f.ends_with(b"\n")), "lines are cut");
    for frames in [&batched, &single, &split] {
        let events = events(frames);
        assert_eq!(events.len(), 41);
        assert_eq!(events[40]["type"], "BOOKMARK");
        assert_eq!(events[1]["object"]["metadata"]["name"], "pod-1");
    }
}
