//! Server-side sharded list and watch (`shardSelector`, Kubernetes 1.36) against the fake API
//! server over HTTP: lists and their pages, watches and streaming lists, `metadata.uid` and
//! `metadata.namespace`, ranges joined by `||`, four shards that split a collection exactly,
//! the 400s of malformed selectors, label selectors alongside, the `shardInfo` echo in JSON,
//! metadata-only JSON and protobuf, the feature switched off, and a property test of the
//! server's filtering against the FNV-1a definition.

use http::{Method, StatusCode};
use kcache_protobuf::envelope;
use kcache_protobuf::wire::{Reader, Wire};
use kcache_reflector::{ShardField, ShardSelector, shard_hash, shard_index};
use kcache_store::DynamicObject;
use kcache_testing_server::fake_api_server::{FakeApiServer, INITIAL_EVENTS_END, ServedResource};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

use crate::fake_api_server::{pod, widgets_server};
use crate::fake_api_server_client::{Client, Reply, Watch, summary};

/// `text` as a query value.
pub(crate) fn enc(text: &str) -> String {
    utf8_percent_encode(text, NON_ALPHANUMERIC).to_string()
}

/// `shardSelector=<selector>`, encoded.
fn param(selector: &ShardSelector) -> String {
    format!("shardSelector={}", enc(&selector.to_string()))
}

/// The `(namespace, name)` of each item of a list.
fn keys(list: &Value) -> BTreeSet<(String, String)> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|i| {
            let m = &i["metadata"];
            let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (s(&m["namespace"]), s(&m["name"]))
        })
        .collect()
}

/// The value of `field` of each item of a list, by `(namespace, name)`.
fn values(list: &Value, field: ShardField) -> BTreeMap<(String, String), String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let m = &i["metadata"];
            let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            let value = match field {
                ShardField::Uid => s(&m["uid"]),
                ShardField::Namespace => s(&m["namespace"]),
            };
            ((s(&m["namespace"]), s(&m["name"])), value)
        })
        .collect()
}

/// A 200 list's JSON.
#[track_caller]
fn ok(reply: &Reply) -> Value {
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    reply.json()
}

/// Namespaces whose hashes spread over the four quarters of the hash space (1, 0, 0, 3, 1, 2,
/// 2, 2 by [`shard_index`] of 4). Names alike but for their last characters (`ns-0`, `ns-1`)
/// hash alike, FNV-1a mixing late bytes into the high bits only a little: all in one shard.
const NAMESPACES: [&str; 8] = [
    "alpha", "delta", "echo", "foxtrot", "hotel", "bravo", "charlie", "golf",
];

/// `pods` pods, `p0`..., spread over the first `namespaces` of [`NAMESPACES`] in turn,
/// labelled `app=web` and `app=db` by turns (every namespace with more than `namespaces` pods
/// has both).
fn seed_pods(server: &FakeApiServer, pods: usize, namespaces: usize) {
    for i in 0..pods {
        let app = if (i / namespaces).is_multiple_of(2) {
            "web"
        } else {
            "db"
        };
        server
            .create(
                &ServedResource::pods(),
                pod(NAMESPACES[i % namespaces], &format!("p{i}"), app),
            )
            .unwrap();
    }
}

/// Every page of `path` (which has a query) `limit` at a time, each checked to echo `selector`
/// and to leave `remainingItemCount` out.
async fn pages(client: &Client, path: &str, limit: usize, selector: &str) -> Vec<Value> {
    let mut token = String::new();
    let mut out = Vec::new();
    loop {
        let page = ok(&client
            .get(&format!("{path}&limit={limit}&continue={token}"))
            .await);
        assert_eq!(page["metadata"]["shardInfo"], json!({"selector": selector}));
        assert!(
            page["metadata"].get("remainingItemCount").is_none(),
            "{page}"
        );
        assert!(page["items"].as_array().unwrap().len() <= limit);
        page["metadata"]["continue"]
            .as_str()
            .unwrap_or_default()
            .clone_into(&mut token);
        out.push(page);
        if token.is_empty() {
            return out;
        }
    }
}

#[tokio::test]
async fn four_shards_split_a_list_exactly_by_uid_and_by_namespace() {
    let server = FakeApiServer::start().await.unwrap();
    seed_pods(&server, 40, 7);
    let client = Client::new(&server);
    let all = ok(&client.get("/api/v1/pods").await);
    assert!(all["metadata"].get("shardInfo").is_none(), "not sharded");
    for field in [ShardField::Uid, ShardField::Namespace] {
        let by_key = values(&all, field);
        let mut union = BTreeSet::new();
        for i in 0..4 {
            let selector = ShardSelector::shard(field, i, 4);
            let list = ok(&client
                .get(&format!("/api/v1/pods?{}", param(&selector)))
                .await);
            assert_eq!(
                list["metadata"]["shardInfo"],
                json!({"selector": selector.to_string()})
            );
            let shard = keys(&list);
            let expected: BTreeSet<_> = by_key
                .iter()
                .filter(|(_, v)| shard_index(shard_hash(v), 4) == i)
                .map(|(k, _)| k.clone())
                .collect();
            assert_eq!(shard, expected, "{field:?} shard {i}");
            assert!(union.is_disjoint(&shard), "{field:?} shard {i} overlaps");
            union.extend(shard);
        }
        assert_eq!(union, keys(&all), "{field:?}: the shards make the whole");
    }
    // A namespace's list, sharded by uid, is that namespace's part of the shard.
    let selector = ShardSelector::shard(ShardField::Uid, 1, 4);
    let whole = keys(&ok(&client
        .get(&format!("/api/v1/pods?{}", param(&selector)))
        .await));
    let ns = ok(&client
        .get(&format!(
            "/api/v1/namespaces/foxtrot/pods?{}",
            param(&selector)
        ))
        .await);
    let expected: BTreeSet<_> = whole.into_iter().filter(|(n, _)| n == "foxtrot").collect();
    assert_eq!(keys(&ns), expected);
}

#[tokio::test]
async fn ranges_joined_by_or_select_their_union() {
    let server = FakeApiServer::start().await.unwrap();
    seed_pods(&server, 30, 5);
    let client = Client::new(&server);
    let all = ok(&client.get("/api/v1/pods").await);
    let get = |text: String| {
        let client = &client;
        async move {
            let list = ok(&client
                .get(&format!("/api/v1/pods?shardSelector={}", enc(&text)))
                .await);
            assert_eq!(list["metadata"]["shardInfo"]["selector"], text.as_str());
            keys(&list)
        }
    };
    // The whole hash space in two ranges: everything.
    let halves = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') \
                  || shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')";
    assert_eq!(get(halves.to_owned()).await, keys(&all));
    // Two quarters apart (0 and 2 of 4): the union of those shards, as written with `||`.
    let two = ShardSelector::shards(ShardField::Uid, &[0, 2], 4).unwrap();
    assert_eq!(two.ranges().len(), 2);
    assert!(two.to_string().contains(" || "));
    let mut expected = get(ShardSelector::shard(ShardField::Uid, 0, 4).to_string()).await;
    expected.extend(get(ShardSelector::shard(ShardField::Uid, 2, 4).to_string()).await);
    assert_eq!(get(two.to_string()).await, expected);
    // Parenthesized, with the request's own spacing echoed.
    let spaced = format!("({two})");
    assert_eq!(get(spaced).await, expected);
}

#[tokio::test]
async fn pages_of_a_shard_are_the_shard_with_a_label_selector_too() {
    let server = FakeApiServer::start().await.unwrap();
    seed_pods(&server, 37, 4);
    let client = Client::new(&server);
    for selector in [
        ShardSelector::shard(ShardField::Uid, 0, 2),
        ShardSelector::shard(ShardField::Namespace, 1, 2),
    ] {
        let text = selector.to_string();
        let whole = keys(&ok(&client
            .get(&format!("/api/v1/pods?{}", param(&selector)))
            .await));
        let paged = pages(
            &client,
            &format!("/api/v1/pods?{}", param(&selector)),
            4,
            &text,
        )
        .await;
        let mut seen = BTreeSet::new();
        for page in &paged {
            let page = keys(page);
            assert!(seen.is_disjoint(&page));
            seen.extend(page);
        }
        assert_eq!(seen, whole, "{text}");
        // And with a label selector: both must hold.
        let web = keys(&ok(&client
            .get("/api/v1/pods?labelSelector=app%3Dweb")
            .await));
        let both = format!("/api/v1/pods?labelSelector=app%3Dweb&{}", param(&selector));
        let expected: BTreeSet<_> = whole.intersection(&web).cloned().collect();
        assert!(!expected.is_empty() && expected.len() < whole.len());
        assert_eq!(keys(&ok(&client.get(&both).await)), expected);
        let mut seen = BTreeSet::new();
        for page in pages(&client, &both, 3, &text).await {
            seen.extend(keys(&page));
        }
        assert_eq!(seen, expected);
    }
}

#[tokio::test]
async fn metadata_only_and_custom_resource_lists_are_sharded_too() {
    let (server, widgets) = widgets_server().await;
    seed_pods(&server, 12, 3);
    for i in 0..12 {
        server
            .create(
                &widgets,
                DynamicObject::new(Some("default"), &format!("w{i}")),
            )
            .unwrap();
    }
    let client = Client::new(&server);
    let selector = ShardSelector::shard(ShardField::Uid, 1, 2);
    let text = selector.to_string();
    let full = ok(&client
        .get(&format!("/api/v1/pods?{}", param(&selector)))
        .await);
    let resp = client
        .send(
            Method::GET,
            &format!("/api/v1/pods?{}", param(&selector)),
            None,
            Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
        )
        .await;
    let partial = ok(&Client::read(resp).await);
    assert_eq!(partial["kind"], "PartialObjectMetadataList");
    assert_eq!(partial["metadata"]["shardInfo"]["selector"], text.as_str());
    assert_eq!(keys(&partial), keys(&full));
    let all = ok(&client.get("/apis/example.com/v1/widgets").await);
    let shard = ok(&client
        .get(&format!(
            "/apis/example.com/v1/widgets?{}",
            param(&selector)
        ))
        .await);
    assert_eq!(shard["metadata"]["shardInfo"]["selector"], text.as_str());
    let expected: BTreeSet<_> = values(&all, ShardField::Uid)
        .into_iter()
        .filter(|(_, uid)| selector.matches_value(uid))
        .map(|(k, _)| k)
        .collect();
    assert!(!expected.is_empty() && expected.len() < 12);
    assert_eq!(keys(&shard), expected);
}

/// The `shardInfo.selector` of the `ListMeta` of an enveloped protobuf list, read off the wire
/// (field 1 of the list, field 5 of `ListMeta`, field 1 of `ShardInfo`).
fn protobuf_shard_info(body: &[u8]) -> Option<String> {
    let field = |bytes: &[u8], number: u32| -> Option<Vec<u8>> {
        let mut reader = Reader::new(bytes);
        while let Some((n, value)) = reader.field().unwrap() {
            if let (true, Wire::Len(b)) = (n == number, value) {
                return Some(b.to_vec());
            }
        }
        None
    };
    let raw = envelope::parse(body).unwrap().raw;
    let list_meta = field(raw, 1)?;
    let info = field(&list_meta, 5)?;
    field(&info, 1).map(|s| String::from_utf8(s).unwrap())
}

#[tokio::test]
async fn protobuf_lists_echo_the_selector_in_list_meta() {
    let server = FakeApiServer::start().await.unwrap();
    seed_pods(&server, 20, 3);
    let client = Client::new(&server);
    let selector = ShardSelector::shard(ShardField::Namespace, 0, 2);
    let path = format!("/api/v1/pods?limit=3&{}", param(&selector));
    let resp = client
        .send(
            Method::GET,
            &path,
            None,
            Some("application/vnd.kubernetes.protobuf"),
        )
        .await;
    let reply = Client::read(resp).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers["content-type"], envelope::CONTENT_TYPE);
    assert_eq!(
        protobuf_shard_info(&reply.body).as_deref(),
        Some(selector.to_string().as_str())
    );
    let decoded: Value = envelope::decode(&reply.body).unwrap();
    let json = ok(&client.get(&path).await);
    assert_eq!(keys(&decoded), keys(&json));
    assert_eq!(
        decoded["metadata"]["continue"],
        json["metadata"]["continue"]
    );
    // The metadata-only protobuf list goes through the same `ListMeta`.
    let resp = client
        .send(
            Method::GET,
            &path,
            None,
            Some("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
        )
        .await;
    let reply = Client::read(resp).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        protobuf_shard_info(&reply.body).as_deref(),
        Some(selector.to_string().as_str())
    );
    // Without a selector there is no field 5.
    let resp = client
        .send(
            Method::GET,
            "/api/v1/pods",
            None,
            Some("application/vnd.kubernetes.protobuf"),
        )
        .await;
    assert_eq!(protobuf_shard_info(&Client::read(resp).await.body), None);
}

/// The `(type, name)` of the events of `watch` before the next bookmark.
async fn events_until_bookmark(watch: &mut Watch) -> (Vec<(String, String)>, Value) {
    let mut events = Vec::new();
    loop {
        let event = watch.next().await;
        if event["type"] == "BOOKMARK" {
            return (events, event);
        }
        let (kind, name, _) = summary(&event);
        events.push((kind, name));
    }
}

#[tokio::test]
async fn watches_send_the_shards_events_and_every_bookmark() {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    let client = Client::new(&server);
    let selector = ShardSelector::shard(ShardField::Uid, 0, 2);
    let rv = server.resource_version();
    let mut watch = client
        .watch(&format!(
            "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion={rv}&{}",
            param(&selector)
        ))
        .await;
    let mut expected = Vec::new();
    for i in 0..16 {
        let name = format!("p{i}");
        let created = server.create(&pods, pod("ns", &name, "web")).unwrap();
        if selector.matches(&*created) {
            expected.push(("ADDED".to_owned(), name));
        }
    }
    for i in 0..16 {
        let name = format!("p{i}");
        let labels = json!({"metadata": {"labels": {"round": "2"}}});
        let patched = server
            .patch(
                &pods,
                Some("ns"),
                &name,
                kcache_testing_server::PatchType::Merge,
                &labels,
            )
            .unwrap();
        if selector.matches(&*patched) {
            expected.push(("MODIFIED".to_owned(), name.clone()));
        }
        if i % 3 == 0 {
            let deleted = server.delete(&pods, Some("ns"), &name).unwrap();
            if selector.matches(&*deleted) {
                expected.push(("DELETED".to_owned(), name));
            }
        }
    }
    assert!(expected.len() > 4 && expected.len() < 40, "{expected:?}");
    server.send_bookmark();
    let (events, bookmark) = events_until_bookmark(&mut watch).await;
    assert_eq!(events, expected);
    assert_eq!(
        bookmark["object"]["metadata"]["resourceVersion"],
        server.resource_version().to_string()
    );
}

#[tokio::test]
async fn streaming_lists_start_with_the_shard() {
    let server = FakeApiServer::start().await.unwrap();
    seed_pods(&server, 24, 6);
    let client = Client::new(&server);
    let all = keys(&ok(&client.get("/api/v1/pods").await));
    let mut some = None;
    for i in 0..4 {
        let selector = ShardSelector::shard(ShardField::Namespace, i, 4);
        let list = ok(&client
            .get(&format!("/api/v1/pods?{}", param(&selector)))
            .await);
        if !keys(&list).is_empty() && keys(&list).len() < all.len() {
            some = Some((selector, list));
            break;
        }
    }
    let (selector, list) = some.expect("a shard with some of the namespaces");
    let mut watch = client
        .watch(&format!(
            "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan\
             &allowWatchBookmarks=true&{}",
            param(&selector)
        ))
        .await;
    let (events, end) = events_until_bookmark(&mut watch).await;
    assert_eq!(
        end["object"]["metadata"]["annotations"][INITIAL_EVENTS_END],
        "true"
    );
    assert!(events.iter().all(|(kind, _)| kind == "ADDED"));
    let names: BTreeSet<String> = events.into_iter().map(|(_, n)| n).collect();
    let listed: BTreeSet<String> = keys(&list).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, listed);
}

#[tokio::test]
async fn malformed_selectors_are_bad_requests_and_empty_is_none() {
    let server = FakeApiServer::start().await.unwrap();
    seed_pods(&server, 4, 2);
    let client = Client::new(&server);
    for text in [
        "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x00000000000000G0', '0x8000000000000000')",
        "hashRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') &&",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') \
         || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
        " ",
    ] {
        let why = ShardSelector::parse(text).unwrap_err().to_string();
        for path in [
            format!("/api/v1/pods?shardSelector={}", enc(text)),
            format!("/api/v1/pods?limit=1&shardSelector={}", enc(text)),
            format!("/api/v1/pods?watch=1&shardSelector={}", enc(text)),
        ] {
            let reply = client.get(&path).await;
            assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{path}");
            let status = reply.json();
            assert_eq!(status["kind"], "Status");
            assert_eq!(status["reason"], "BadRequest");
            assert_eq!(status["code"], 400);
            assert_eq!(status["message"], format!("invalid shard selector: {why}"));
        }
    }
    let empty = ok(&client.get("/api/v1/pods?shardSelector=").await);
    assert!(empty["metadata"].get("shardInfo").is_none());
    assert_eq!(keys(&empty).len(), 4);
}

#[tokio::test]
async fn without_the_feature_the_parameter_is_ignored() {
    let server = FakeApiServer::builder()
        .sharded_list_watch(false)
        .start()
        .await
        .unwrap();
    seed_pods(&server, 10, 3);
    let client = Client::new(&server);
    let all = ok(&client.get("/api/v1/pods").await);
    let selector = ShardSelector::shard(ShardField::Uid, 0, 4);
    let list = ok(&client
        .get(&format!("/api/v1/pods?{}", param(&selector)))
        .await);
    assert!(list["metadata"].get("shardInfo").is_none());
    assert_eq!(keys(&list), keys(&all));
    let paged = ok(&client
        .get(&format!("/api/v1/pods?limit=3&{}", param(&selector)))
        .await);
    assert_eq!(paged["metadata"]["remainingItemCount"], 7);
    let malformed = client.get("/api/v1/pods?shardSelector=nonsense((").await;
    assert_eq!(malformed.status, StatusCode::OK);
    assert_eq!(keys(&malformed.json()), keys(&all));
    let mut watch = client
        .watch(&format!(
            "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan\
             &allowWatchBookmarks=true&{}",
            param(&selector)
        ))
        .await;
    let (events, _) = events_until_bookmark(&mut watch).await;
    assert_eq!(events.len(), 10);
}

/// The FNV-1a 64 vectors `shard_hash("") == 0xcbf29ce484222325`, `shard_hash("a") ==
/// 0xaf63dc4c8601ec8c` and `shard_hash("foobar") == 0x85944171f73967e8`, through the server:
/// namespaces `a` and `foobar`, and cluster-scoped nodes (namespace `""`), each selected by a
/// range exactly as wide as its hash and by no range beside it.
#[tokio::test]
async fn the_fnv_vectors_decide_what_the_server_sends() {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    for ns in ["a", "foobar"] {
        for i in 0..3 {
            server
                .create(&pods, pod(ns, &format!("p{i}"), "web"))
                .unwrap();
        }
    }
    for i in 0..3 {
        server
            .create(
                &ServedResource::nodes(),
                DynamicObject::new(None, &format!("n{i}")),
            )
            .unwrap();
    }
    let client = Client::new(&server);
    let list = |path: &'static str, lo: u128, hi: u128| {
        let client = &client;
        async move {
            let text =
                format!("shardRange(object.metadata.namespace, '0x{lo:016x}', '0x{hi:016x}')");
            keys(&ok(&client
                .get(&format!("{path}?shardSelector={}", enc(&text)))
                .await))
        }
    };
    for (ns, hash) in [
        ("a", 0xaf63_dc4c_8601_ec8c_u64),
        ("foobar", 0x8594_4171_f739_67e8),
    ] {
        assert_eq!(shard_hash(ns), hash);
        let h = u128::from(hash);
        let only: BTreeSet<_> = (0..3).map(|i| (ns.to_owned(), format!("p{i}"))).collect();
        assert_eq!(list("/api/v1/pods", h, h + 1).await, only, "{ns}");
        assert!(
            list("/api/v1/pods", h + 1, 1 << 64)
                .await
                .iter()
                .all(|(n, _)| n != ns)
        );
        assert!(
            list("/api/v1/pods", 0, h)
                .await
                .iter()
                .all(|(n, _)| n != ns)
        );
    }
    let empty = u128::from(0xcbf2_9ce4_8422_2325_u64);
    assert_eq!(shard_hash(""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(list("/api/v1/nodes", empty, empty + 1).await.len(), 3);
    assert!(list("/api/v1/nodes", 0, empty).await.is_empty());
    assert!(list("/api/v1/nodes", empty + 1, 1 << 64).await.is_empty());
}

/// One server's objects, sharded `shards` ways over `field`: the shards the server sends, by
/// index, and each object's field value.
type Sharded = (
    Vec<BTreeSet<(String, String)>>,
    BTreeMap<(String, String), String>,
);

async fn shard_lists(seed: u64, namespaces: &[String], field: ShardField, shards: u32) -> Sharded {
    let server = FakeApiServer::builder().seed(seed).start().await.unwrap();
    let pods = ServedResource::pods();
    for (i, ns) in namespaces.iter().enumerate() {
        server
            .create(&pods, pod(ns, &format!("p{i}"), "web"))
            .unwrap();
    }
    let client = Client::new(&server);
    let all = values(&ok(&client.get("/api/v1/pods").await), field);
    let mut lists = Vec::new();
    for i in 0..shards {
        let selector = ShardSelector::shard(field, i, shards);
        lists.push(keys(&ok(&client
            .get(&format!("/api/v1/pods?{}", param(&selector)))
            .await)));
    }
    (lists, all)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        rng_seed: RngSeed::Fixed(0x6b63_6163_6865),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// For random uids (the server's seed) and namespaces, shard `i` of `n` holds exactly the
    /// objects with `shard_index(shard_hash(value), n) == i`, as `ShardSelector::shard(field, i,
    /// n).matches` says of each.
    #[test]
    fn the_server_filters_as_shard_index_says(
        seed in any::<u64>(),
        namespaces in proptest::collection::vec("[a-z][a-z0-9-]{0,10}[a-z0-9]", 1..24),
        uid in any::<bool>(),
        shards in 1u32..9,
    ) {
        let field = if uid { ShardField::Uid } else { ShardField::Namespace };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (lists, all) = rt.block_on(shard_lists(seed, &namespaces, field, shards));
        for (key, value) in &all {
            let index = shard_index(shard_hash(value), shards);
            for (i, list) in (0u32..).zip(&lists) {
                let mut obj = DynamicObject::new(Some(&key.0), &key.1);
                match field {
                    ShardField::Uid => obj.metadata.uid = Some(value.clone()),
                    ShardField::Namespace => {}
                }
                let selected = ShardSelector::shard(field, i, shards).matches(&obj);
                prop_assert_eq!(selected, i == index, "{:?} {}", key, value);
                prop_assert_eq!(list.contains(key), selected, "{:?} in shard {}", key, i);
            }
        }
        let total: usize = lists.iter().map(BTreeSet::len).sum();
        prop_assert_eq!(total, all.len());
    }
}

#[tokio::test]
async fn openapi_lists_the_parameter_on_list_operations() {
    let server = FakeApiServer::start().await.unwrap();
    let client = Client::new(&server);
    let discovery = ok(&client.get("/openapi/v3").await);
    let url = discovery["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_owned();
    let doc = ok(&client.get(&url).await);
    for path in ["/api/v1/pods", "/api/v1/namespaces/{namespace}/pods"] {
        let params = doc["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{path} lists parameters"));
        let shard = params
            .iter()
            .find(|p| p["name"] == "shardSelector")
            .unwrap_or_else(|| panic!("{path}: {params:?}"));
        assert_eq!(shard["in"], "query");
        assert_eq!(shard["schema"]["type"], "string");
    }
}

#[tokio::test]
async fn deletecollection_deletes_the_shard_only() {
    let server = FakeApiServer::start().await.unwrap();
    seed_pods(&server, 16, 2);
    let client = Client::new(&server);
    let selector = ShardSelector::shard(ShardField::Uid, 1, 2);
    let path = format!("/api/v1/namespaces/alpha/pods?{}", param(&selector));
    let shard = keys(&ok(&client.get(&path).await));
    let all = keys(&ok(&client.get("/api/v1/namespaces/alpha/pods").await));
    assert!(!shard.is_empty() && shard.len() < all.len());
    let deleted = ok(&client.request(Method::DELETE, &path, None).await);
    assert_eq!(
        deleted["metadata"]["shardInfo"]["selector"],
        selector.to_string()
    );
    assert_eq!(keys(&deleted), shard);
    let left = keys(&ok(&client.get("/api/v1/namespaces/alpha/pods").await));
    assert_eq!(left, all.difference(&shard).cloned().collect());
}
