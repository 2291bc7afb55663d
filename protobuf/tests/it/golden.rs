//! Kubernetes' own vectors: for every built-in kind of every release, the Kubernetes project
//! publishes one fuzzed object encoded by kube-apiserver's own code both in protobuf
//! (`<group>.<version>.<Kind>.pb`) and in JSON (`.json`). Every `.pb` of a kind the table has
//! must decode to exactly its `.json`, as a `serde_json::Value` and, for the kinds controllers
//! watch most, as the k8s-openapi type.
//!
//! The vectors of three releases are kept in `tests/data/kubernetes-api/` (see its README; the
//! JSON is rewritten without its indentation, nothing else). `KCACHE_K8S_API_TESTDATA` points
//! the test at another folder of the same layout (one folder per release, `v1.36.0/`, ...).
//!
//! A release newer than the table's ([`table::kubernetes_version`]) has fields the table does
//! not know: there, the only difference allowed is such a field left out.

use std::fmt::Debug;
use std::path::{Path, PathBuf};

use k8s_openapi::api::{
    apps, batch, coordination, core, discovery, events, networking, rbac, scheduling, storage,
};
use kcache_protobuf::{envelope, table};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The releases kept in the repository; each must be there and checked.
const KEPT: [&str; 3] = ["v1.34.0", "v1.35.0", "v1.36.0"];

/// The folder of vectors: `KCACHE_K8S_API_TESTDATA`, else the ones kept here.
fn root() -> PathBuf {
    std::env::var_os("KCACHE_K8S_API_TESTDATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kubernetes-api"),
        PathBuf::from,
    )
}

/// `v1.36.0` as numbers, for comparing releases.
fn version(name: &str) -> Vec<u32> {
    name.trim_start_matches('v')
        .split('.')
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Every release folder under `root`, sorted.
fn releases(root: &Path) -> Vec<(String, PathBuf)> {
    let mut releases: Vec<_> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    releases.sort();
    releases
}

/// The `.pb` vectors of one release, sorted, as (file stem, path).
fn vectors(release: &Path) -> Vec<(String, PathBuf)> {
    let mut files: Vec<_> = std::fs::read_dir(release)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pb"))
        .filter(|p| !p.to_string_lossy().contains("after_roundtrip"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    files.sort();
    files
}

#[test]
fn kubernetes_vectors_decode_to_their_json() {
    let root = root();
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut skipped = 0;
    let releases = releases(&root);
    if std::env::var_os("KCACHE_K8S_API_TESTDATA").is_none() {
        let names: Vec<&str> = releases.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, KEPT, "the kept releases");
    }
    for (release_name, release) in &releases {
        let newer = version(release_name) > version(table::kubernetes_version());
        let mut in_release = 0;
        for (name, path) in vectors(release) {
            let pb = std::fs::read(&path).unwrap();
            let Ok(env) = envelope::parse(&pb) else {
                failures.push(format!("{name}: no envelope"));
                continue;
            };
            if env.message().is_err() {
                continue;
            }
            let json: Value =
                serde_json::from_slice(&std::fs::read(path.with_extension("json")).unwrap())
                    .unwrap();
            match envelope::decode::<Value>(&pb) {
                Ok(decoded) => {
                    let mut differences = Vec::new();
                    diff("", &decoded, &json, &mut differences);
                    if newer {
                        // Fields added after the table's release are skipped, nothing else.
                        differences.retain(|d| !d.contains(": missing (want"));
                        skipped += 1;
                    }
                    if !differences.is_empty() {
                        failures.push(format!("{release_name}/{name}: {}", differences.join("; ")));
                    }
                }
                Err(e) => failures.push(format!("{release_name}/{name}: {e}")),
            }
            in_release += 1;
        }
        // Each release has 71 kinds the table reads; far fewer means the files are gone.
        assert!(
            in_release >= 60,
            "{release_name}: only {in_release} vectors"
        );
        checked += in_release;
    }
    eprintln!(
        "{checked} Kubernetes vectors checked ({skipped} of releases newer than the table's)"
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The `.pb` of `stem` decodes to the same `T` as its `.json`, in every release (but for the
/// fields of a release newer than the table, which the protobuf decode skips).
fn typed_same<T: DeserializeOwned + Serialize + PartialEq + Debug>(stem: &str) -> usize {
    let mut checked = 0;
    for (release_name, release) in releases(&root()) {
        let pb_path = release.join(format!("{stem}.pb"));
        let Ok(pb) = std::fs::read(&pb_path) else {
            continue;
        };
        let json = std::fs::read(pb_path.with_extension("json")).unwrap();
        let from_protobuf = envelope::decode::<T>(&pb);
        let from_json = match serde_json::from_slice::<T>(&json) {
            Ok(t) => t,
            Err(e) => {
                // k8s-openapi cannot hold some of the fuzzed values (a `null` time in a
                // condition): then the protobuf decode must refuse the object alike.
                assert!(
                    from_protobuf.is_err(),
                    "{release_name}/{stem}: the JSON does not decode ({e}), the protobuf does"
                );
                continue;
            }
        };
        let from_protobuf = from_protobuf.unwrap_or_else(|e| panic!("{release_name}/{stem}: {e}"));
        if from_protobuf != from_json {
            let mut differences = Vec::new();
            let (got, want) = (
                serde_json::to_value(&from_protobuf),
                serde_json::to_value(&from_json),
            );
            diff("", &got.unwrap(), &want.unwrap(), &mut differences);
            if version(&release_name) > version(table::kubernetes_version()) {
                // Fields added after the table's release are skipped, nothing else.
                differences.retain(|d| !d.contains(": missing (want"));
            }
            assert!(
                differences.is_empty(),
                "{release_name}/{stem}: {}",
                differences.join("; ")
            );
        }
        checked += 1;
    }
    checked
}

/// The kinds controllers watch most decode from Kubernetes' protobuf to the same k8s-openapi
/// value as from its JSON (a newer release's fields are unknown to both decodes alike).
#[test]
fn kubernetes_vectors_decode_to_the_same_typed_values() {
    let checked = [
        typed_same::<core::v1::Pod>("core.v1.Pod"),
        typed_same::<core::v1::Service>("core.v1.Service"),
        typed_same::<core::v1::ConfigMap>("core.v1.ConfigMap"),
        typed_same::<core::v1::Secret>("core.v1.Secret"),
        typed_same::<core::v1::Namespace>("core.v1.Namespace"),
        typed_same::<core::v1::Node>("core.v1.Node"),
        typed_same::<core::v1::Endpoints>("core.v1.Endpoints"),
        typed_same::<core::v1::Event>("core.v1.Event"),
        typed_same::<core::v1::ServiceAccount>("core.v1.ServiceAccount"),
        typed_same::<core::v1::PersistentVolume>("core.v1.PersistentVolume"),
        typed_same::<core::v1::PersistentVolumeClaim>("core.v1.PersistentVolumeClaim"),
        typed_same::<core::v1::ReplicationController>("core.v1.ReplicationController"),
        typed_same::<core::v1::ResourceQuota>("core.v1.ResourceQuota"),
        typed_same::<core::v1::LimitRange>("core.v1.LimitRange"),
        typed_same::<core::v1::PodTemplate>("core.v1.PodTemplate"),
        typed_same::<apps::v1::Deployment>("apps.v1.Deployment"),
        typed_same::<apps::v1::ReplicaSet>("apps.v1.ReplicaSet"),
        typed_same::<apps::v1::StatefulSet>("apps.v1.StatefulSet"),
        typed_same::<apps::v1::DaemonSet>("apps.v1.DaemonSet"),
        typed_same::<apps::v1::ControllerRevision>("apps.v1.ControllerRevision"),
        typed_same::<batch::v1::Job>("batch.v1.Job"),
        typed_same::<batch::v1::CronJob>("batch.v1.CronJob"),
        typed_same::<coordination::v1::Lease>("coordination.k8s.io.v1.Lease"),
        typed_same::<events::v1::Event>("events.k8s.io.v1.Event"),
        typed_same::<discovery::v1::EndpointSlice>("discovery.k8s.io.v1.EndpointSlice"),
        typed_same::<networking::v1::Ingress>("networking.k8s.io.v1.Ingress"),
        typed_same::<networking::v1::NetworkPolicy>("networking.k8s.io.v1.NetworkPolicy"),
        typed_same::<networking::v1::IngressClass>("networking.k8s.io.v1.IngressClass"),
        typed_same::<rbac::v1::Role>("rbac.authorization.k8s.io.v1.Role"),
        typed_same::<rbac::v1::RoleBinding>("rbac.authorization.k8s.io.v1.RoleBinding"),
        typed_same::<rbac::v1::ClusterRole>("rbac.authorization.k8s.io.v1.ClusterRole"),
        typed_same::<rbac::v1::ClusterRoleBinding>(
            "rbac.authorization.k8s.io.v1.ClusterRoleBinding",
        ),
        typed_same::<scheduling::v1::PriorityClass>("scheduling.k8s.io.v1.PriorityClass"),
        typed_same::<storage::v1::StorageClass>("storage.k8s.io.v1.StorageClass"),
        typed_same::<storage::v1::CSIDriver>("storage.k8s.io.v1.CSIDriver"),
    ];
    // Each kind is compared in at least two releases (all three for most).
    for (i, n) in checked.iter().enumerate() {
        assert!(*n >= 2, "kind {i} compared in {n} releases only");
    }
    let compared: usize = checked.iter().sum();
    eprintln!("{compared} Kubernetes vectors compared as typed values");
}

/// Where `got` and `want` differ, as `path: got != want`.
fn diff(path: &str, got: &Value, want: &Value, out: &mut Vec<String>) {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for (k, wv) in w {
                let p = format!("{path}.{k}");
                match g.get(k) {
                    Some(gv) => diff(&p, gv, wv, out),
                    None => out.push(format!("{p}: missing (want {wv})")),
                }
            }
            for (k, gv) in g {
                if !w.contains_key(k) {
                    out.push(format!("{path}.{k}: extra {gv}"));
                }
            }
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                diff(&format!("{path}[{i}]"), gv, wv, out);
            }
        }
        _ if got == want => {}
        _ => out.push(format!("{path}: {got} != {want}")),
    }
}
