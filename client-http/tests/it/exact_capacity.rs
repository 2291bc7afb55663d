//! Exact vector capacities: typed pods listed and watched with
//! `HttpListerWatcherBuilder::exact_capacities` equal the plain decode and hold no slack; random
//! JSON decodes the same through the counting wrapper as without it.

use k8s_openapi::api::core::v1::Pod;
use kcache_client_http::WatchDecoder;
use kcache_store::DynamicObject;
use proptest::prelude::*;

use crate::support_chain;

/// Listing and watching typed pods (`HttpListerWatcher::typed` needs the `k8s-openapi` feature).
#[cfg(feature = "k8s-openapi")]
mod typed_pods {
    use k8s_openapi::api::core::v1::Pod;
    use kcache_client_http::HttpListerWatcher;
    use kcache_reflector::{ListOptions, ListerWatcher, WatchEvent};

    use futures_util::StreamExt;

    use crate::support::{self, fake_pods};

    /// Every `Vec` of a pod that k8s-openapi grows while decoding, as (what, len, capacity).
    fn vectors(pod: &Pod) -> Vec<(String, usize, usize)> {
        let mut out = Vec::new();
        let mut add = |what: &str, len: usize, cap: usize| out.push((what.to_owned(), len, cap));
        if let Some(m) = &pod.metadata.managed_fields {
            add("managedFields", m.len(), m.capacity());
        }
        if let Some(o) = &pod.metadata.owner_references {
            add("ownerReferences", o.len(), o.capacity());
        }
        if let Some(spec) = &pod.spec {
            add(
                "containers",
                spec.containers.len(),
                spec.containers.capacity(),
            );
            for c in &spec.containers {
                if let Some(env) = &c.env {
                    add("env", env.len(), env.capacity());
                }
                if let Some(ports) = &c.ports {
                    add("ports", ports.len(), ports.capacity());
                }
                if let Some(mounts) = &c.volume_mounts {
                    add("volumeMounts", mounts.len(), mounts.capacity());
                }
            }
            if let Some(v) = &spec.volumes {
                add("volumes", v.len(), v.capacity());
            }
            if let Some(t) = &spec.tolerations {
                add("tolerations", t.len(), t.capacity());
            }
        }
        if let Some(status) = &pod.status {
            if let Some(c) = &status.conditions {
                add("conditions", c.len(), c.capacity());
            }
            if let Some(s) = &status.container_statuses {
                add("containerStatuses", s.len(), s.capacity());
            }
        }
        out
    }

    fn assert_exact(pod: &Pod) {
        let vectors = vectors(pod);
        assert!(vectors.len() >= 8, "a realistic pod: {vectors:?}");
        for (what, len, cap) in vectors {
            assert_eq!(len, cap, "{what} of {:?}", pod.metadata.name);
        }
    }

    /// A server holding `n` realistic pods (managedFields, volumes, statuses, ...).
    async fn realistic_server(n: usize) -> kcache_testing_server::FakeApiServer {
        let server = kcache_testing_server::FakeApiServer::start().await.unwrap();
        for pod in kcache_testing::workload::pods(7, n, 2) {
            server.create(&fake_pods(), pod).unwrap();
        }
        server
    }

    fn typed(server: &kcache_testing_server::FakeApiServer, exact: bool) -> HttpListerWatcher<Pod> {
        HttpListerWatcher::<Pod>::typed(support::client(server))
            .exact_capacities(exact)
            .build()
    }

    #[tokio::test]
    async fn listed_and_watched_pods_have_no_slack_and_equal_the_plain_decode() {
        let server = realistic_server(20).await;
        let exact = typed(&server, true);
        let plain = typed(&server, false);
        let opts = ListOptions {
            limit: Some(7),
            ..ListOptions::default()
        };
        let list = exact.list(&opts).await.unwrap();
        let want = plain.list(&opts).await.unwrap();
        assert_eq!(list.items, want.items);
        assert!(
            want.items
                .iter()
                .flat_map(vectors)
                .any(|(_, len, cap)| cap > len),
            "the plain decode keeps slack, or this test shows nothing"
        );
        for pod in &list.items {
            assert_exact(pod);
        }

        // The streaming list (initial events) and a change after it.
        let mut stream = exact
            .watch(&ListOptions {
                send_initial_events: Some(true),
                allow_watch_bookmarks: true,
                resource_version_match: Some(kcache_reflector::ResourceVersionMatch::NotOlderThan),
                ..ListOptions::default()
            })
            .await
            .unwrap();
        let mut seen = 0;
        while seen < 20 {
            let item = tokio::time::timeout(std::time::Duration::from_secs(10), stream.next())
                .await
                .expect("an event within 10 s");
            match item {
                Some(Ok(WatchEvent::Added(pod))) => {
                    assert_exact(&pod);
                    seen += 1;
                }
                other => panic!("expected an initial pod, got {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn managed_fields_skipping_and_exact_capacities_combine() {
        let server = realistic_server(3).await;
        let lw = HttpListerWatcher::<Pod>::typed(support::client(&server))
            .exact_capacities(true)
            .skip_managed_fields(true)
            .build();
        let list = lw.list(&ListOptions::default()).await.unwrap();
        assert_eq!(list.items.len(), 3);
        for pod in &list.items {
            assert!(pod.metadata.managed_fields.is_none());
            let vectors = vectors(pod);
            assert!(
                vectors.iter().all(|(_, len, cap)| len == cap),
                "{vectors:?}"
            );
        }
    }
}

#[test]
fn a_bad_event_gives_the_same_error_with_or_without_counting() {
    for line in [
        &br#"{"type":"ADDED","object":{"metadata":{"name":5}}}"#[..],
        br#"{"type":"ADDED","object":{"spec":{"containers":[{"name":"a"},]}}}"#,
        br#"{"type":"ADDED","object":{"metadata":{"name":"a"}"#,
        b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"\xff\"}}}",
    ] {
        let decode = |exact: bool| {
            let mut d = WatchDecoder::<Pod>::new().exact_capacities(exact);
            let mut body = line.to_vec();
            body.push(b'\n');
            d.push(body.into());
            let event = d.next_event().expect("an event");
            event.map(|_| ()).map_err(|e| support_chain(&e))
        };
        let plain = decode(false);
        assert!(plain.is_err(), "{}", String::from_utf8_lossy(line));
        assert_eq!(decode(true), plain);
    }
}

/// A JSON value of bounded depth: the shapes a k8s object can take.
fn json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        (-1e6f64..1e6).prop_map(serde_json::Value::from),
        "[a-z\\\\\"\\[\\],{}: ]{0,12}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            prop::collection::btree_map("[a-z\\[\\]\",]{1,6}", inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, rng_seed: proptest::test_runner::RngSeed::Fixed(7), ..ProptestConfig::default() })]

    /// Any object decodes to the same value with and without counting, as a dynamic object
    /// and inside a watch event.
    #[test]
    fn counting_never_changes_what_is_decoded(value in json(), name in "[a-z]{1,8}") {
        let mut object = serde_json::json!({"metadata": {"name": name}, "extra": value});
        if let serde_json::Value::Object(m) = &mut object {
            m.insert("spec".into(), serde_json::json!({"list": [[1, 2], [], [3]]}));
        }
        let line = serde_json::json!({"type": "MODIFIED", "object": object}).to_string();
        let decode = |exact: bool| {
            let mut d = WatchDecoder::<DynamicObject>::new().exact_capacities(exact);
            d.push(format!("{line}\n").into());
            d.next_event().expect("an event").map_err(|e| e.to_string())
        };
        prop_assert_eq!(decode(true), decode(false));
    }
}
