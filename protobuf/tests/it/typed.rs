//! The types users already have (k8s-openapi's) read from protobuf exactly as from JSON, for
//! random objects of the kinds controllers watch most.

use k8s_openapi::api::{apps, coordination, core, events};
use kcache_protobuf::envelope;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

use crate::generate::{Rng, object};

fn same_as_json<T: DeserializeOwned + PartialEq + Debug>(api_version: &str, kind: &str) {
    for seed in 0..48 {
        let json = object(&mut Rng::new(seed), api_version, kind);
        let from_json: T = match serde_json::from_value(json.clone()) {
            Ok(t) => t,
            Err(e) => panic!("{kind} seed {seed}: the JSON itself does not decode: {e}"),
        };
        let bytes = envelope::encode_object(&json).unwrap();
        let from_protobuf: T =
            envelope::decode(&bytes).unwrap_or_else(|e| panic!("{kind} seed {seed}: {e}"));
        assert_eq!(from_protobuf, from_json, "{kind} seed {seed}");
    }
}

#[test]
fn core_kinds_decode_as_from_json() {
    same_as_json::<core::v1::Pod>("v1", "Pod");
    same_as_json::<core::v1::Service>("v1", "Service");
    same_as_json::<core::v1::ConfigMap>("v1", "ConfigMap");
    same_as_json::<core::v1::Secret>("v1", "Secret");
    same_as_json::<core::v1::Namespace>("v1", "Namespace");
    same_as_json::<core::v1::Node>("v1", "Node");
    same_as_json::<core::v1::PersistentVolumeClaim>("v1", "PersistentVolumeClaim");
    same_as_json::<core::v1::PersistentVolume>("v1", "PersistentVolume");
    same_as_json::<k8s_openapi::List<core::v1::Pod>>("v1", "PodList");
}

#[test]
fn workload_and_other_kinds_decode_as_from_json() {
    same_as_json::<apps::v1::Deployment>("apps/v1", "Deployment");
    same_as_json::<apps::v1::ReplicaSet>("apps/v1", "ReplicaSet");
    same_as_json::<apps::v1::StatefulSet>("apps/v1", "StatefulSet");
    same_as_json::<apps::v1::DaemonSet>("apps/v1", "DaemonSet");
    same_as_json::<coordination::v1::Lease>("coordination.k8s.io/v1", "Lease");
    same_as_json::<events::v1::Event>("events.k8s.io/v1", "Event");
}

/// A user's own serde type with Rust enums where Kubernetes has strings: a unit variant from a
/// string, as `serde_json` reads it, and an unknown one refused alike.
#[test]
fn user_types_with_enums_decode_as_from_json() {
    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Spec {
        restart_policy: RestartPolicy,
        dns_policy: Option<DnsPolicy>,
    }
    #[derive(Debug, PartialEq, serde::Deserialize)]
    enum RestartPolicy {
        Always,
        OnFailure,
        Never,
    }
    #[derive(Debug, PartialEq, serde::Deserialize)]
    enum DnsPolicy {
        ClusterFirst,
        Default,
    }
    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Pod {
        spec: Spec,
    }
    let pod = |policy: &str| {
        serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"},
            "spec": {"restartPolicy": policy, "dnsPolicy": "ClusterFirst",
                "containers": [{"name": "c", "image": "i"}]}})
    };
    let json = pod("OnFailure");
    let from_json: Pod = serde_json::from_value(json.clone()).unwrap();
    let from_protobuf: Pod = envelope::decode(&envelope::encode_object(&json).unwrap()).unwrap();
    assert_eq!(from_protobuf, from_json);
    assert_eq!(from_protobuf.spec.restart_policy, RestartPolicy::OnFailure);
    let unknown = envelope::decode::<Pod>(&envelope::encode_object(&pod("Sometimes")).unwrap());
    assert!(
        unknown
            .unwrap_err()
            .to_string()
            .contains("unknown variant `Sometimes`")
    );
}
