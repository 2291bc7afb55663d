//! Server-side sharded list and watch on both backends, against the fake API server with the
//! feature on (it filters and echoes `shardInfo`) and off (it ignores the selector, as an
//! older kube-apiserver does, and `ShardedListerWatcher` filters instead): lists, paginated
//! lists, watches and streaming lists each bring exactly their shard, and four shards together
//! bring every object once.

use std::collections::BTreeSet;

use kcache_reflector::{
    ListOptions, ListerWatcher, ShardField, ShardSelector, ShardedListerWatcher, WatchEvent,
};
use kcache_store::{DynamicObject, Object};
use kcache_testing_server::FakeApiServer;

use crate::support::{BACKENDS, Backend, fake_pods, next};

const SHARDS: u32 = 4;

/// A server with `n` pods over 12 namespaces; `sharding`: whether it implements the selector.
async fn server(sharding: bool, n: usize) -> FakeApiServer {
    let server = FakeApiServer::builder()
        .sharded_list_watch(sharding)
        .start()
        .await
        .unwrap();
    for i in 0..n {
        let ns = format!("{}-{}", ["shop", "auth", "mail", "data"][i % 4], i % 3);
        server
            .create(
                &fake_pods(),
                DynamicObject::new(Some(&ns), &format!("p{i}")),
            )
            .unwrap();
    }
    server
}

async fn sharded(
    backend: Backend,
    server: &FakeApiServer,
    selector: &ShardSelector,
) -> ShardedListerWatcher<Box<dyn ListerWatcher<DynamicObject>>> {
    ShardedListerWatcher::new(backend.pods(server).await, selector.clone())
}

/// Lists `lw` to the end with pages of `limit` (everything at once with `None`).
async fn list_all(
    lw: &dyn ListerWatcher<DynamicObject>,
    limit: Option<i64>,
) -> (Vec<DynamicObject>, String) {
    let mut opts = ListOptions {
        limit,
        ..ListOptions::default()
    };
    let mut items = Vec::new();
    loop {
        let page = lw.list(&opts).await.unwrap();
        items.extend(page.items);
        match page.continue_token {
            Some(token) => opts.continue_token = token,
            None => return (items, page.resource_version),
        }
    }
}

fn keys(items: &[DynamicObject]) -> BTreeSet<String> {
    items.iter().map(|o| o.key().to_string()).collect()
}

async fn shards_partition_lists(sharding: bool, field: ShardField) {
    for &backend in BACKENDS {
        let server = server(sharding, 120).await;
        let (all, _) = list_all(&*backend.pods(&server).await, None).await;
        let mut union = BTreeSet::new();
        for shard in 0..SHARDS {
            let selector = ShardSelector::shard(field, shard, SHARDS);
            for limit in [None, Some(7)] {
                let lw = sharded(backend, &server, &selector).await;
                let (items, _) = list_all(&lw, limit).await;
                assert!(
                    items.iter().all(|o| selector.matches(o)),
                    "{backend:?} {field:?}"
                );
                let request = server.requests().last().unwrap().clone();
                assert_eq!(
                    request.param("shardSelector"),
                    Some(selector.to_string().as_str())
                );
                assert_eq!(
                    lw.server_honoured(),
                    Some(sharding),
                    "{backend:?} {limit:?}"
                );
                assert_eq!(lw.ignored_objects() > 0, !sharding, "{backend:?} {limit:?}");
                let got = keys(&items);
                assert!(
                    union.is_disjoint(&got) || limit.is_some(),
                    "objects in two shards"
                );
                union.extend(got);
            }
        }
        assert_eq!(
            union,
            keys(&all),
            "{backend:?} {field:?}: four shards bring every object"
        );
    }
}

#[tokio::test]
async fn uid_shards_partition_lists_on_a_sharding_server() {
    shards_partition_lists(true, ShardField::Uid).await;
}

#[tokio::test]
async fn namespace_shards_partition_lists_on_a_sharding_server() {
    shards_partition_lists(true, ShardField::Namespace).await;
}

#[tokio::test]
async fn a_server_ignoring_the_selector_is_filtered_on_the_client() {
    shards_partition_lists(false, ShardField::Uid).await;
}

/// A watch from the list's version, then a streaming list, each bringing the shard only.
async fn watches_bring_the_shard(sharding: bool) {
    for &backend in BACKENDS {
        let server = server(sharding, 40).await;
        let selector = ShardSelector::shard(ShardField::Uid, 1, SHARDS);
        let lw = sharded(backend, &server, &selector).await;
        let (_, rv) = list_all(&lw, None).await;
        let mut stream = lw
            .watch(&ListOptions::default().with_resource_version(rv))
            .await
            .unwrap();
        let mut expected = BTreeSet::new();
        for i in 0..40 {
            let pod = server
                .create(
                    &fake_pods(),
                    DynamicObject::new(Some("late"), &format!("w{i}")),
                )
                .unwrap();
            if selector.matches(&*pod) {
                expected.insert(pod.key().to_string());
            }
        }
        let mut seen = BTreeSet::new();
        while seen.len() < expected.len() {
            match next(&mut stream).await.expect("an event").unwrap() {
                WatchEvent::Added(o) => {
                    assert!(
                        selector.matches(&o),
                        "{backend:?}: {} outside the shard",
                        o.key()
                    );
                    seen.insert(o.key().to_string());
                }
                other => panic!("{backend:?}: unexpected {other:?}"),
            }
        }
        assert_eq!(seen, expected, "{backend:?}");
        let request = server.requests().last().unwrap().clone();
        assert_eq!(
            request.param("shardSelector"),
            Some(selector.to_string().as_str())
        );

        // A streaming list: the initial events are the shard's, then the bookmark.
        let mut stream = lw
            .watch(&ListOptions {
                send_initial_events: Some(true),
                resource_version_match: Some(kcache_reflector::ResourceVersionMatch::NotOlderThan),
                allow_watch_bookmarks: true,
                ..ListOptions::default()
            })
            .await
            .unwrap();
        let mut initial = BTreeSet::new();
        loop {
            match next(&mut stream).await.expect("an event").unwrap() {
                WatchEvent::Added(o) => {
                    assert!(
                        selector.matches(&o),
                        "{backend:?}: {} outside the shard",
                        o.key()
                    );
                    initial.insert(o.key().to_string());
                }
                WatchEvent::Bookmark(b) if b.initial_events_end => break,
                WatchEvent::Bookmark(_) => {}
                other => panic!("{backend:?}: unexpected {other:?}"),
            }
        }
        let (all, _) = list_all(&*backend.pods(&server).await, None).await;
        let shard: BTreeSet<String> = all
            .iter()
            .filter(|o| selector.matches(*o))
            .map(|o| o.key().to_string())
            .collect();
        assert_eq!(
            initial, shard,
            "{backend:?}: the streaming list is the shard"
        );
        assert_eq!(lw.ignored_objects() > 0, !sharding, "{backend:?}");
    }
}

#[tokio::test]
async fn watches_and_streaming_lists_bring_the_shard() {
    watches_bring_the_shard(true).await;
}

#[tokio::test]
async fn watches_of_a_server_ignoring_the_selector_are_filtered() {
    watches_bring_the_shard(false).await;
}

/// A plain-HTTP GET of `path_and_query` on `server`: the status code and the body.
async fn raw_get(server: &FakeApiServer, path_and_query: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut conn = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let request =
        format!("GET {path_and_query} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).await.unwrap();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

/// `text` percent-encoded for a query value.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn a_malformed_selector_is_a_bad_request_unless_the_server_lacks_the_feature() {
    let bad = "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')";
    let reason = ShardSelector::parse(bad).unwrap_err().to_string();
    for sharding in [true, false] {
        let server = server(sharding, 3).await;
        let (status, body) = raw_get(
            &server,
            &format!("/api/v1/pods?shardSelector={}", encode(bad)),
        )
        .await;
        if sharding {
            assert_eq!(status, 400, "{body}");
            assert!(body.contains("invalid shard selector"), "{body}");
            assert!(body.contains(&reason.replace('"', "\\\"")), "{body}");
        } else {
            assert_eq!(
                status, 200,
                "a server without the feature ignores it: {body}"
            );
        }
    }
}

#[cfg(feature = "k8s-openapi")]
#[tokio::test]
async fn protobuf_lists_carry_the_shard_info() {
    use k8s_openapi::api::core::v1::Pod;
    let server = server(true, 40).await;
    let selector = ShardSelector::shard(ShardField::Uid, 2, SHARDS);
    let pods = kcache_client_http::HttpListerWatcher::<Pod>::typed(crate::support::client(&server))
        .all_namespaces()
        .protobuf()
        .build();
    let lw = ShardedListerWatcher::new(pods, selector.clone());
    let page = lw.list(&ListOptions::default()).await.unwrap();
    let request = server.requests().last().unwrap().clone();
    assert!(
        request
            .accept
            .as_deref()
            .unwrap_or("")
            .starts_with("application/vnd.kubernetes.protobuf")
    );
    assert_eq!(
        page.shard_info.as_deref(),
        Some(selector.to_string().as_str())
    );
    assert!(!page.items.is_empty() && page.items.iter().all(|p| selector.matches(p)));
    assert_eq!(lw.server_honoured(), Some(true));
    assert_eq!(lw.ignored_objects(), 0);
}
