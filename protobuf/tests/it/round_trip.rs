//! Every kind of the table, as random JSON objects: written in protobuf and read back, the
//! JSON is what it was. Also the tolerant pass: fields split or sent twice.

use kcache_protobuf::envelope;
use kcache_protobuf::table::{kinds, message_for_kind};
use kcache_protobuf::wire::{put_bytes, put_nested};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::generate::{Rng, object};

#[test]
fn every_kind_round_trips_through_protobuf() {
    let mut checked = 0;
    for (api_version, kind, _) in kinds() {
        for seed in 0..8 {
            let mut rng = Rng::new(seed ^ kind.len() as u64);
            let json = object(&mut rng, api_version, kind);
            let bytes = envelope::encode_object(&json).unwrap();
            let back: Value = envelope::decode(&bytes)
                .unwrap_or_else(|e| panic!("{api_version} {kind} seed {seed}: {e}"));
            assert_eq!(back, json, "{api_version} {kind} seed {seed}");
            checked += 1;
        }
    }
    assert!(checked > 1000, "only {checked} objects");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn pods_round_trip(seed in any::<u64>()) {
        let json = object(&mut Rng::new(seed), "v1", "Pod");
        let bytes = envelope::encode_object(&json).unwrap();
        let back: Value = envelope::decode(&bytes).unwrap();
        prop_assert_eq!(back, json);
    }
}

#[test]
fn split_and_repeated_fields_are_read_as_protobuf_allows() {
    // ObjectMeta: name (1) sent twice, finalizers (14) split around it, an unknown field 99.
    let meta = message_for_kind("v1", "Pod").unwrap().fields[0];
    assert_eq!(meta.json, "metadata");
    let mut pod = Vec::new();
    put_nested(&mut pod, 1, |m| {
        put_bytes(m, 14, b"a");
        put_bytes(m, 1, b"first");
        put_bytes(m, 14, b"b");
        put_bytes(m, 99, b"from a newer server");
        put_bytes(m, 1, b"web");
        Ok(())
    })
    .unwrap();
    let mut body = Vec::new();
    envelope::write("v1", "Pod", &pod, &mut body);
    let back: Value = envelope::decode(&body).unwrap();
    assert_eq!(
        back,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"finalizers": ["a", "b"], "name": "web"}})
    );
    let typed: k8s_openapi::api::core::v1::Pod = envelope::decode(&body).unwrap();
    assert_eq!(typed.metadata.name.as_deref(), Some("web"));
    assert_eq!(
        typed.metadata.finalizers,
        Some(vec!["a".to_owned(), "b".to_owned()])
    );
}

#[test]
fn special_types_take_their_json_forms() {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "p", "creationTimestamp": "2024-02-29T23:59:59Z",
            "managedFields": [{"manager": "m", "operation": "Apply", "time": "2024-01-01T00:00:00Z",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {"containers": [{"name": "c",
            "ports": [{"containerPort": 8080}],
            "livenessProbe": {"httpGet": {"port": "http", "path": "/"}, "periodSeconds": 5},
            "resources": {"requests": {"memory": "64Mi"}}}],
            "volumes": [{"name": "v", "configMap": {"name": "cm", "defaultMode": 420}}]},
    });
    let bytes = envelope::encode_object(&pod).unwrap();
    let back: Value = envelope::decode(&bytes).unwrap();
    assert_eq!(back, pod);
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
        "eventTime": "2024-05-01T10:00:00.123456Z", "series": {"count": 2, "lastObservedTime": "2024-05-01T10:00:01.000001Z"}});
    let back: Value = envelope::decode(&envelope::encode_object(&event).unwrap()).unwrap();
    assert_eq!(back, event);
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "data": {"password": "aHVudGVyMg=="}, "type": "Opaque"});
    let back: Value = envelope::decode(&envelope::encode_object(&secret).unwrap()).unwrap();
    assert_eq!(back, secret);
}

#[test]
fn plain_metadata_fields_go_writes_empty_read_as_absent() {
    // What `kubectl create configmap settings -n team-a --from-literal=level=3
    // --from-literal=mode=fast` sends: Go's encoder writes every plain field of ObjectMeta,
    // empty ones included (`generateName: ""`, `generation: 0`, ...), which its JSON leaves out.
    let hex = "6b3873000a0f0a0276311209436f6e6669674d6170123a0a1e0a0873657474696e677312001a067465616d2d6122002a00320038004200120a0a056c6576656c120133120c0a046d6f64651204666173741a002200";
    let body: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let decoded: Value = envelope::decode(&body).unwrap();
    assert_eq!(
        decoded,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"creationTimestamp": null, "name": "settings", "namespace": "team-a"},
            "data": {"level": "3", "mode": "fast"}})
    );
    let typed: k8s_openapi::api::core::v1::ConfigMap = envelope::decode(&body).unwrap();
    let from_json: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(decoded).unwrap();
    assert_eq!(typed, from_json);
    assert_eq!(typed.metadata.generate_name, None);
}

#[test]
fn packed_numbers_read_as_unpacked_ones() {
    // PodFailurePolicyOnExitCodesRequirement.values (3): repeated int32, written packed
    // (one length-delimited run of varints) and unpacked, both read in order.
    let message = kcache_protobuf::table::message_named(
        "io.k8s.api.batch.v1.PodFailurePolicyOnExitCodesRequirement",
    )
    .unwrap();
    let mut bytes = Vec::new();
    put_bytes(&mut bytes, 2, b"In");
    put_bytes(&mut bytes, 3, &[1, 2, 0x96, 0x01]);
    kcache_protobuf::wire::put_varint_field(&mut bytes, 3, 7);
    put_bytes(&mut bytes, 3, &[9]);
    let v: Value = kcache_protobuf::from_message(&bytes, message, None).unwrap();
    assert_eq!(v, json!({"operator": "In", "values": [1, 2, 150, 7, 9]}));
}
