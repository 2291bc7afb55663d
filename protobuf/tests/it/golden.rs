//! Kubernetes' own vectors: the kubernetes/api repository publishes, for every built-in kind of
//! every release, one fuzzed object encoded by kube-apiserver's own code both in protobuf
//! (`testdata/<version>/<group>.<version>.<Kind>.pb`) and in JSON (`.json`). Every `.pb` of a
//! kind the table has must decode to exactly the `.json`.
//!
//! The vectors are not shipped with kcache; point `KCACHE_K8S_API_TESTDATA` at a folder holding
//! one folder per release (`v1.35.0/`, `v1.36.0/`, copies of kubernetes/api's `testdata/<release>`)
//! and run the ignored tests (`cargo test -p kcache-protobuf -- --ignored golden`). It is
//! ignored by default so that a run without the vectors does not count it as passed.
//!
//! A release newer than the table's ([`table::kubernetes_version`]) has fields the table does
//! not know: there, the only difference allowed is such a field left out.

use std::path::Path;

use kcache_protobuf::{envelope, table};
use serde_json::Value;

/// `v1.36.0` as numbers, for comparing releases.
fn version(name: &str) -> Vec<u32> {
    name.trim_start_matches('v')
        .split('.')
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[test]
#[ignore = "needs Kubernetes' vectors: KCACHE_K8S_API_TESTDATA=<dir>"]
fn kubernetes_vectors_decode_to_their_json() {
    let root = std::env::var_os("KCACHE_K8S_API_TESTDATA")
        .expect("KCACHE_K8S_API_TESTDATA names the folder of Kubernetes' vectors");
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut releases: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(Result::ok)
        .collect();
    releases.sort_by_key(std::fs::DirEntry::file_name);
    let mut skipped = 0;
    for release in releases {
        let release_name = release.file_name().to_string_lossy().into_owned();
        let mut files: Vec<_> = std::fs::read_dir(release.path())
            .unwrap()
            .filter_map(Result::ok)
            .collect();
        files.sort_by_key(std::fs::DirEntry::file_name);
        for file in files {
            let path = file.path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.extension().is_none_or(|e| e != "pb") || name.contains("after_roundtrip") {
                continue;
            }
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
                    let newer = version(&release_name) > version(table::kubernetes_version());
                    if newer {
                        // Fields added after the table's release are skipped, nothing else.
                        differences.retain(|d| !d.contains(": missing (want"));
                        skipped += 1;
                    }
                    if !differences.is_empty() {
                        failures.push(format!("{release_name}/{name}: {}", differences.join("; ")));
                    }
                }
                Err(e) => failures.push(format!("{name}: {e}")),
            }
            checked += 1;
        }
    }
    eprintln!(
        "{checked} Kubernetes vectors checked ({skipped} of releases newer than the table's)"
    );
    assert!(
        checked > 0,
        "no vectors under {}",
        Path::new(&root).display()
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
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
