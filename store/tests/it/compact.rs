//! `Compact<K>` against the typed decode of the same JSON, for random pods: `typed()` gives the
//! same `Pod` (without managedFields unless kept), the `Object` accessors agree, and index
//! values computed from the compact form equal those from the typed form.

use k8s_openapi::api::core::v1::Pod;
use kcache_store::{Compact, CompactCodec, Object, namespace_index_func};
use proptest::prelude::*;
use serde_json::{Value, json};

fn word() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9-]{0,10}"
}

fn map() -> impl Strategy<Value = Option<std::collections::BTreeMap<String, String>>> {
    prop::option::of(prop::collection::btree_map(
        "[a-z]{1,6}(/[a-z]{1,6})?",
        "[ -~]{0,12}",
        0..4,
    ))
}

prop_compose! {
    fn container()(name in word(), image in word(), port in prop::option::of(1..65535_i32),
                   args in prop::collection::vec("[ -~]{0,8}", 0..3)) -> Value {
        let mut c = json!({"name": name, "image": format!("registry.example.com/{image}:v1"), "args": args});
        if let Some(p) = port {
            c["ports"] = json!([{"containerPort": p, "protocol": "TCP"}]);
        }
        c
    }
}

prop_compose! {
    /// A pod as the API server writes it, with or without managedFields, deletion and status.
    fn pod()(name in word(), namespace in prop::option::of(word()), rv in 1..1_000_000_u64,
             labels in map(), annotations in map(), generation in prop::option::of(0..50_i64),
             managed in prop::collection::vec(word(), 0..3), deleting in any::<bool>(),
             node in prop::option::of(word()), containers in prop::collection::vec(container(), 1..4),
             phase in prop::option::of(prop::sample::select(vec!["Pending", "Running", "Failed"])))
             -> Value {
        let mut meta = json!({"name": name, "resourceVersion": rv.to_string(),
                              "uid": format!("uid-{rv}")});
        if let Some(ns) = namespace { meta["namespace"] = json!(ns); }
        if let Some(l) = labels { meta["labels"] = json!(l); }
        if let Some(a) = annotations { meta["annotations"] = json!(a); }
        if let Some(g) = generation { meta["generation"] = json!(g); }
        if deleting { meta["deletionTimestamp"] = json!("2025-06-26T08:28:19Z"); }
        if !managed.is_empty() {
            meta["managedFields"] = Value::Array(managed.iter().map(|m| json!({
                "manager": m, "operation": "Update", "apiVersion": "v1",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}}
            })).collect());
        }
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                             "spec": {"containers": containers}});
        if let Some(n) = node { pod["spec"]["nodeName"] = json!(n); }
        if let Some(p) = phase { pod["status"] = json!({"phase": p}); }
        pod
    }
}

/// The JSON text of `pod`, compact or pretty (whitespace must not matter).
fn text(pod: &Value, pretty: bool) -> String {
    if pretty {
        serde_json::to_string_pretty(pod).unwrap()
    } else {
        serde_json::to_string(pod).unwrap()
    }
}

fn node_of_typed(p: &Pod) -> Vec<String> {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .into_iter()
        .collect()
}

fn node_of_compact(p: &Compact<Pod>) -> Vec<String> {
    p.pointer("/spec/nodeName")
        .unwrap()
        .and_then(|v| v.as_str().map(str::to_owned))
        .into_iter()
        .collect()
}

fn images_of_typed(p: &Pod) -> Vec<String> {
    p.spec
        .iter()
        .flat_map(|s| &s.containers)
        .filter_map(|c| c.image.clone())
        .collect()
}

fn images_of_compact(p: &Compact<Pod>) -> Vec<String> {
    let containers = p.pointer("/spec/containers").unwrap().unwrap_or_default();
    containers
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["image"].as_str().map(str::to_owned))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn typed_equals_the_typed_decode(pods in prop::collection::vec(pod(), 1..8), pretty in any::<bool>()) {
        // One codec for the whole stream: later pods are compressed against the first.
        let codec = CompactCodec::new();
        let keeping = CompactCodec::new().keep_managed_fields(true);
        for pod in &pods {
            let json = text(pod, pretty);
            let mut typed: Pod = serde_json::from_str(&json).unwrap();
            let compact: Compact<Pod> = codec.encode(&json).unwrap();
            let kept: Compact<Pod> = keeping.encode(&json).unwrap();
            prop_assert_eq!(&kept.typed().unwrap(), &typed);
            typed.metadata.managed_fields = None;
            prop_assert_eq!(&compact.typed().unwrap(), &typed);

            prop_assert_eq!(compact.name(), typed.name());
            prop_assert_eq!(compact.namespace(), typed.namespace());
            prop_assert_eq!(compact.resource_version(), typed.resource_version());
            prop_assert_eq!(compact.uid(), typed.uid());
            prop_assert_eq!(compact.labels(), typed.labels());
            prop_assert_eq!(compact.annotations(), typed.annotations());
            prop_assert_eq!(compact.generation(), typed.generation());
            prop_assert_eq!(compact.is_being_deleted(), typed.is_being_deleted());
        }
    }

    #[test]
    fn index_values_equal_the_typed_ones(pods in prop::collection::vec(pod(), 1..8)) {
        let codec = CompactCodec::new();
        for pod in &pods {
            let json = text(pod, false);
            let typed: Pod = serde_json::from_str(&json).unwrap();
            let compact: Compact<Pod> = codec.encode(&json).unwrap();
            prop_assert_eq!(namespace_index_func(&compact).unwrap(), namespace_index_func(&typed).unwrap());
            prop_assert_eq!(node_of_compact(&compact), node_of_typed(&typed));
            prop_assert_eq!(images_of_compact(&compact), images_of_typed(&typed));
        }
    }
}

#[test]
fn serde_round_trip_of_a_typed_pod() {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "a", "namespace": "ns", "managedFields": [{"manager": "m"}]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}
    }))
    .unwrap();
    let compact = Compact::from_typed(&pod).unwrap();
    let mut expected = pod.clone();
    expected.metadata.managed_fields = None;
    assert_eq!(compact.typed().unwrap(), expected);
}

/// The compact form refuses what a typed decode refuses: another `apiVersion` or `kind`; and an
/// object nested deeper than `MAX_NESTING`, kcache's limit on every path (one level under what
/// `serde_json` refuses, so that `typed` would fail a little deeper).
#[test]
fn compact_refuses_what_typed_refuses() {
    use kcache_store::{DynamicObject, ExpectedType, MAX_NESTING};

    let codec = CompactCodec::new().expect_type(ExpectedType::new("v1", Some("Pod")));
    for json in [
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}"#,
        r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"}}"#,
        r#"{"apiVersion":"apps/v1","kind":"Pod","metadata":{"name":"a"}}"#,
    ] {
        assert!(serde_json::from_str::<Pod>(json).is_err(), "{json}");
        assert!(codec.encode::<Pod>(json).is_err(), "{json}");
    }
    for json in [
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}"#,
        r#"{"metadata":{"name":"a"}}"#,
    ] {
        assert!(serde_json::from_str::<Pod>(json).is_ok(), "{json}");
        assert!(codec.encode::<Pod>(json).is_ok(), "{json}");
    }
    // `spec` is `n` nested arrays: the object nests `1 + n` levels.
    let nested = |n: usize| {
        format!(
            r#"{{"metadata":{{"name":"a"}},"spec":{}1{}}}"#,
            "[".repeat(n),
            "]".repeat(n)
        )
    };
    let at = codec
        .encode::<DynamicObject>(&nested(MAX_NESTING - 1))
        .unwrap();
    assert!(at.typed().is_ok());
    for n in [MAX_NESTING, 600, 100_000] {
        let e = codec.encode::<DynamicObject>(&nested(n)).unwrap_err();
        assert_eq!(e.to_string(), "the object nests deeper than 126 levels");
        if n > MAX_NESTING {
            assert!(serde_json::from_str::<DynamicObject>(&nested(n)).is_err());
        }
    }
}
