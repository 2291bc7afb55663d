//! `cargo xtask openapi-data [--version V]`: refreshes the Kubernetes schemas the fake API
//! server serves and validates against (`testing/server/data/kubernetes-definitions.json`).
//!
//! The source is the `PyPI` package `kubernetes-validate`, which ships each Kubernetes release's
//! `OpenAPI` definitions converted to JSON Schema. The task downloads one version with `pip
//! download --no-deps`, unpacks the wheel with `python3 -m zipfile -e`, and writes a reduced
//! copy: only the definitions reachable from the kinds of the groups the fake server serves or
//! may serve, plus the `meta/v1` types, normalized back to the `OpenAPI` v3 form kube-apiserver
//! serves (single types instead of `[type, "null"]`, int-or-string and quantity as kube-apiserver
//! writes them, references as `#/components/schemas/<name>` wrapped in `allOf` when they carry a
//! description).

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value, json};

use crate::{Failure, status};

/// The version refreshed when `--version` is not given.
pub(crate) const DEFAULT_VERSION: &str = "1.37.0";

/// Where the reduced definitions go, relative to the workspace root.
const OUTPUT: &str = "testing/server/data/kubernetes-definitions.json";

/// The group-versions whose kinds (and what they reference) are kept; `""` is the core group.
const GROUP_VERSIONS: [(&str, &str); 7] = [
    ("", "v1"),
    ("apps", "v1"),
    ("coordination.k8s.io", "v1"),
    ("events.k8s.io", "v1"),
    ("authorization.k8s.io", "v1"),
    ("autoscaling", "v1"),
    ("apiextensions.k8s.io", "v1"),
];

/// The prefix of the `meta/v1` definitions, all kept.
const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.";

/// Parses the arguments after `openapi-data`: the version to fetch.
pub(crate) fn parse(args: &[OsString]) -> Result<String, String> {
    match args {
        [] => Ok(DEFAULT_VERSION.to_owned()),
        [flag, value] if flag == "--version" => value
            .to_str()
            .filter(|v| {
                !v.is_empty()
                    && v.chars().all(|c| c.is_ascii_digit() || c == '.')
                    && v.contains('.')
            })
            .map(str::to_owned)
            .ok_or_else(|| {
                format!(
                    "expected a version such as 1.37.0, got `{}`",
                    value.to_string_lossy()
                )
            }),
        _ => Err("`openapi-data` takes `--version V` (default 1.37.0)".to_owned()),
    }
}

/// Downloads `kubernetes-validate==version` and writes the reduced definitions.
pub(crate) fn run(root: &Path, version: &str) -> Result<(), Failure> {
    let work = std::env::temp_dir().join(format!("kcache-openapi-data-{}", std::process::id()));
    let result = fetch_and_write(root, version, &work);
    // Best effort: a leftover temporary folder is not worth failing the task for.
    let _ = fs::remove_dir_all(&work);
    result
}

fn fetch_and_write(root: &Path, version: &str, work: &Path) -> Result<(), Failure> {
    let defs = download_definitions(version, work)?;
    let schemas = reduce(&defs);
    let count = schemas.len();
    let out = json!({
        "kubernetesVersion": version,
        "source": format!("PyPI kubernetes-validate=={version}, v{version}-local/_definitions.json"),
        "schemas": schemas,
    });
    let mut encoded = serde_json::to_string_pretty(&out)
        .map_err(|e| Failure::new(format!("could not encode the definitions: {e}")))?;
    encoded.push('\n');
    let path = root.join(OUTPUT);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)
            .map_err(|e| Failure::new(format!("could not create {}: {e}", dir.display())))?;
    }
    fs::write(&path, encoded)
        .map_err(|e| Failure::new(format!("could not write {}: {e}", path.display())))?;
    eprintln!(
        "wrote {count} definitions of Kubernetes {version} to {}",
        path.display()
    );
    Ok(())
}

/// The `$defs` of `kubernetes-validate==version`, downloaded and unpacked into `work`.
pub(crate) fn download_definitions(
    version: &str,
    work: &Path,
) -> Result<Map<String, Value>, Failure> {
    fs::create_dir_all(work)
        .map_err(|e| Failure::new(format!("could not create {}: {e}", work.display())))?;
    status(
        Command::new("pip")
            .args(["download", "--no-deps", "--quiet", "--dest"])
            .arg(work)
            .arg(format!("kubernetes-validate=={version}")),
        "pip download",
    )?;
    let wheel = wheel_in(work)?;
    let unpacked = work.join("unpacked");
    status(
        Command::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(&wheel)
            .arg(&unpacked),
        "python3 -m zipfile",
    )?;
    let source = unpacked.join(format!(
        "kubernetes_validate/kubernetes-json-schema/v{version}-local/_definitions.json"
    ));
    let text = fs::read_to_string(&source)
        .map_err(|e| Failure::new(format!("could not read {}: {e}", source.display())))?;
    let mut parsed: Value = serde_json::from_str(&text)
        .map_err(|e| Failure::new(format!("{} is not JSON: {e}", source.display())))?;
    match parsed.get_mut("$defs").map(Value::take) {
        Some(Value::Object(defs)) => Ok(defs),
        _ => Err(Failure::new(format!("{} has no $defs", source.display()))),
    }
}

/// The one `.whl` file `pip download` left in `dir`.
fn wheel_in(dir: &Path) -> Result<PathBuf, Failure> {
    let entries = fs::read_dir(dir)
        .map_err(|e| Failure::new(format!("could not list {}: {e}", dir.display())))?;
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| Failure::new(format!("pip left no wheel in {}", dir.display())))
}

/// The definitions reachable from the kept kinds and `meta/v1`, normalized.
fn reduce(defs: &Map<String, Value>) -> Map<String, Value> {
    let mut pending: Vec<String> = defs
        .iter()
        .filter(|(name, schema)| name.starts_with(META) || is_kept_kind(schema))
        .map(|(name, _)| name.clone())
        .collect();
    let mut kept = BTreeSet::new();
    while let Some(name) = pending.pop() {
        if !kept.insert(name.clone()) {
            continue;
        }
        if let Some(schema) = defs.get(&name) {
            let mut refs = Vec::new();
            references(schema, &mut refs);
            pending.extend(refs.into_iter().filter(|r| !kept.contains(r)));
        }
    }
    kept.into_iter()
        .filter_map(|name| {
            let schema = defs.get(&name)?;
            let normalized = normalize_definition(&name, schema);
            Some((name, normalized))
        })
        .collect()
}

/// Whether `schema` is a kind of one of [`GROUP_VERSIONS`].
fn is_kept_kind(schema: &Value) -> bool {
    schema
        .get("x-kubernetes-group-version-kind")
        .and_then(Value::as_array)
        .is_some_and(|gvks| {
            gvks.iter().any(|gvk| {
                let group = gvk.get("group").and_then(Value::as_str).unwrap_or_default();
                let version = gvk
                    .get("version")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                GROUP_VERSIONS.contains(&(group, version))
            })
        })
}

/// The names `schema` refers to (`#/$defs/<name>`).
fn references(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(members) => {
            for (key, value) in members {
                if key == "$ref"
                    && let Some(name) = value.as_str().and_then(|r| r.strip_prefix("#/$defs/"))
                {
                    out.push(name.to_owned());
                } else {
                    references(value, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| references(i, out)),
        _ => {}
    }
}

/// Definition `name` in kube-apiserver's `OpenAPI` v3 form.
fn normalize_definition(name: &str, schema: &Value) -> Value {
    let description = schema.get("description").cloned();
    let special = match name {
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => Some(json!({
            "format": "int-or-string",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": true,
        })),
        "io.k8s.apimachinery.pkg.api.resource.Quantity" => {
            Some(json!({"oneOf": [{"type": "string"}, {"type": "number"}]}))
        }
        _ => None,
    };
    let mut out = special.unwrap_or_else(|| normalize(schema));
    if let (Some(d), Value::Object(members)) = (description, &mut out) {
        members.insert("description".to_owned(), d);
    }
    // The converter pins `apiVersion` and `kind` to the kind's own with an `enum`;
    // kube-apiserver does not.
    if let Some(Value::Object(props)) = out.get_mut("properties") {
        for field in ["apiVersion", "kind"] {
            if let Some(Value::Object(p)) = props.get_mut(field) {
                p.remove("enum");
            }
        }
    }
    out
}

/// `schema` with single types, `#/components/schemas/` references (in `allOf` when the
/// reference has siblings) and `oneOf`s of `[type, "null"]` alternatives flattened.
fn normalize(schema: &Value) -> Value {
    match schema {
        Value::Object(members) => {
            let mut out = Map::new();
            let mut reference = None;
            for (key, value) in members {
                match key.as_str() {
                    "$ref" => {
                        let target = value
                            .as_str()
                            .map(|r| r.replace("#/$defs/", "#/components/schemas/"))
                            .unwrap_or_default();
                        reference = Some(target);
                    }
                    "type" => {
                        out.insert(key.clone(), single_type(value));
                    }
                    "properties" | "patternProperties" => {
                        let props = value
                            .as_object()
                            .map(|p| p.iter().map(|(k, v)| (k.clone(), normalize(v))).collect())
                            .unwrap_or_default();
                        out.insert(key.clone(), Value::Object(props));
                    }
                    _ => {
                        out.insert(key.clone(), normalize(value));
                    }
                }
            }
            match reference {
                Some(r) if out.is_empty() => json!({"$ref": r}),
                Some(r) => {
                    out.insert("allOf".to_owned(), json!([{"$ref": r}]));
                    Value::Object(out)
                }
                None => Value::Object(out),
            }
        }
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

/// `"x"` for `["x", "null"]`; other types unchanged.
fn single_type(value: &Value) -> Value {
    match value {
        Value::Array(types) => {
            let real: Vec<&Value> = types
                .iter()
                .filter(|t| t.as_str() != Some("null"))
                .collect();
            match real.as_slice() {
                [one] => (*one).clone(),
                _ => value.clone(),
            }
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(parse(&[]), Ok(DEFAULT_VERSION.to_owned()));
        let args: Vec<OsString> = ["--version", "1.36.0"].iter().map(OsString::from).collect();
        assert_eq!(parse(&args), Ok("1.36.0".to_owned()));
        let bad: Vec<OsString> = ["--version", "x"].iter().map(OsString::from).collect();
        assert!(parse(&bad).is_err());
    }

    #[test]
    fn definitions_take_kube_apiservers_form() {
        let defs = json!({
            "io.k8s.api.core.v1.Pod": {
                "type": ["object", "null"],
                "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Pod"}],
                "properties": {
                    "kind": {"type": ["string", "null"], "enum": ["Pod"]},
                    "spec": {"$ref": "#/$defs/io.k8s.api.core.v1.PodSpec", "description": "d"},
                },
            },
            "io.k8s.api.core.v1.PodSpec": {"type": "object", "properties": {
                "port": {"$ref": "#/$defs/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
            }},
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"oneOf": []},
            "io.k8s.api.batch.v1.Job": {"x-kubernetes-group-version-kind":
                [{"group": "batch", "version": "v1", "kind": "Job"}]},
        });
        let reduced = reduce(defs.as_object().unwrap());
        let names: Vec<&String> = reduced.keys().collect();
        assert_eq!(
            names,
            [
                "io.k8s.api.core.v1.Pod",
                "io.k8s.api.core.v1.PodSpec",
                "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
            ]
        );
        let pod = &reduced["io.k8s.api.core.v1.Pod"];
        assert_eq!(pod["type"], "object");
        assert_eq!(pod["properties"]["kind"], json!({"type": "string"}));
        assert_eq!(
            pod["properties"]["spec"],
            json!({"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}], "description": "d"})
        );
        assert_eq!(
            reduced["io.k8s.api.core.v1.PodSpec"]["properties"]["port"],
            json!({"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString"})
        );
        assert_eq!(
            reduced["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"],
            "int-or-string"
        );
    }
}
