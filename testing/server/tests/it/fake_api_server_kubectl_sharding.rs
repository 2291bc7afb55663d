//! The real kubectl asking the fake API server for shards (`shardSelector`, Kubernetes 1.36),
//! through `kubectl get --raw` as an operator would: four uid shards split the pods exactly,
//! each list echoes its selector in `metadata.shardInfo`, a watch with the selector sends only
//! its shard's events, and kubectl reports a malformed selector as the server's 400.
//!
//! Needs `/usr/bin/kubectl`, as the other kubectl tests (see `fake_api_server_kubectl.rs`).

use std::collections::BTreeSet;

use kcache_reflector::{ShardField, ShardSelector, shard_hash, shard_index};
use kcache_testing_server::fake_api_server::ServedResource;
use serde_json::Value;

use crate::fake_api_server::pod;
use crate::fake_api_server_kubectl::{env, fails, kubectl_available, run};
use crate::fake_api_server_sharding::enc;

const SHARDS: u32 = 4;

/// `/api/v1/pods?<query>shardSelector=<selector>`, encoded.
fn path(query: &str, selector: &str) -> String {
    format!("/api/v1/pods?{query}shardSelector={}", enc(selector))
}

/// `ns/name` and uid of each item.
fn items(list: &Value) -> Vec<(String, String)> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|i| {
            let m = &i["metadata"];
            (
                format!(
                    "{}/{}",
                    m["namespace"].as_str().unwrap(),
                    m["name"].as_str().unwrap()
                ),
                m["uid"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn kubectl_get_raw_lists_and_watches_uid_shards() {
    if !kubectl_available("kubectl_get_raw_lists_and_watches_uid_shards") {
        return;
    }
    let env = env(false).await;
    let pods = ServedResource::pods();
    for i in 0..60 {
        env.server
            .create(
                &pods,
                pod(&format!("team-{}", i % 5), &format!("p{i}"), "web"),
            )
            .unwrap();
    }
    let all: BTreeSet<String> = env
        .server
        .list(&pods)
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o.metadata.namespace.as_deref().unwrap(),
                o.metadata.name.as_deref().unwrap()
            )
        })
        .collect();
    let mut union = BTreeSet::new();
    for shard in 0..SHARDS {
        let selector = ShardSelector::shard(ShardField::Uid, shard, SHARDS).to_string();
        let list: Value =
            serde_json::from_str(&run(&env, &["get", "--raw", &path("", &selector)]).await)
                .unwrap();
        assert_eq!(list["metadata"]["shardInfo"]["selector"], selector.as_str());
        for (key, uid) in items(&list) {
            assert_eq!(
                shard_index(shard_hash(&uid), SHARDS),
                shard,
                "{key} in shard {shard}"
            );
            assert!(union.insert(key.clone()), "{key} in two shards");
        }
    }
    assert_eq!(union, all, "the shards' union is the collection");

    // A watch of shard 2 from the list's version, ended by the server after a second: only
    // the shard's new pods.
    let selector = ShardSelector::shard(ShardField::Uid, 2, SHARDS).to_string();
    let list: Value =
        serde_json::from_str(&run(&env, &["get", "--raw", &path("", &selector)]).await).unwrap();
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut want = BTreeSet::new();
    for i in 0..40 {
        let created = env
            .server
            .create(&pods, pod("team-w", &format!("w{i}"), "web"))
            .unwrap();
        let uid = created.metadata.uid.clone().unwrap();
        if shard_index(shard_hash(&uid), SHARDS) == 2 {
            want.insert(format!("team-w/w{i}"));
        }
    }
    let query = format!("watch=1&resourceVersion={rv}&timeoutSeconds=1&");
    let out = run(&env, &["get", "--raw", &path(&query, &selector)]).await;
    let mut seen = BTreeSet::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let event: Value = serde_json::from_str(line).unwrap();
        assert_eq!(event["type"], "ADDED", "{line}");
        let m = &event["object"]["metadata"];
        assert_eq!(
            shard_index(shard_hash(m["uid"].as_str().unwrap()), SHARDS),
            2,
            "{line}"
        );
        seen.insert(format!(
            "{}/{}",
            m["namespace"].as_str().unwrap(),
            m["name"].as_str().unwrap()
        ));
    }
    assert!(!want.is_empty());
    assert_eq!(
        seen, want,
        "the watch sent the shard's new pods, and only them"
    );
}

#[tokio::test]
async fn kubectl_reports_a_malformed_shard_selector_as_the_servers_400() {
    if !kubectl_available("kubectl_reports_a_malformed_shard_selector_as_the_servers_400") {
        return;
    }
    let env = env(false).await;
    let stderr = fails(
        &env,
        &[
            "get",
            "--raw",
            &path("", "shardRange(object.metadata.uid, '0x1', '0x2')"),
        ],
    )
    .await;
    assert!(
        stderr.contains("BadRequest") && stderr.contains("invalid shard selector"),
        "{stderr}"
    );
}
