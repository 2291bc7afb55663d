//! `cargo xtask proto-data`: regenerates the protobuf field table of `kcache-protobuf`
//! (`protobuf/src/table/generated.rs`).
//!
//! Two published sources, both from package registries:
//! - field numbers and wire types come from the `k8s-pb` crate on crates.io, which kube-rs
//!   generates with prost from the `.proto` files of a released Kubernetes version. The task
//!   asks cargo to fetch it (a throwaway manifest under `target/`, `cargo metadata`, nothing
//!   compiled) and reads its `#[prost(...)]` attributes;
//! - field names as the JSON encoding spells them (`volumeID`, not prost's `volume_id`), and
//!   which fields are required, come from the same Kubernetes version's definitions in `PyPI`'s
//!   `kubernetes-validate` (see [`crate::openapi_data`]). A prost name is matched to the
//!   definition's property with the same letters, case and underscores aside.
//!
//! Only stable group-versions (`v1`, `v2`) and the apimachinery types they use are kept;
//! messages without a definition (internal option types) are left out, with the fields that
//! refer to them. The task fails if a kept kind loses a field that way.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value};

use crate::{Failure, openapi_data};

/// The `k8s-pb` release read, and the Kubernetes version of its `.proto` files.
const K8S_PB: &str = "0.9.0";
/// The Kubernetes version whose definitions name the fields (the one `k8s-pb` was made from).
const KUBERNETES: &str = "1.35.0";
/// Where the table goes, relative to the workspace root.
const OUTPUT: &str = "protobuf/src/table/generated.rs";

/// `k8s-pb` module folders (under its `src/`) whose messages are kept, with their definition
/// prefix. Custom resource definitions (`apiextensions`) are left out: their schema types have
/// protobuf forms (`JSONSchemaPropsOrArray`) unlike their JSON.
fn definition_prefix(module: &str) -> Option<String> {
    let parts: Vec<&str> = module.split('/').collect();
    match parts.as_slice() {
        ["api", group, version] if matches!(*version, "v1" | "v2") => {
            Some(format!("io.k8s.api.{group}.{version}"))
        }
        ["apimachinery", "pkg", "apis", "meta", "v1"] => {
            Some("io.k8s.apimachinery.pkg.apis.meta.v1".to_owned())
        }
        ["apimachinery", "pkg", "runtime"] => Some("io.k8s.apimachinery.pkg.runtime".to_owned()),
        ["apimachinery", "pkg", "api", "resource"] => {
            Some("io.k8s.apimachinery.pkg.api.resource".to_owned())
        }
        ["apimachinery", "pkg", "util", "intstr"] => {
            Some("io.k8s.apimachinery.pkg.util.intstr".to_owned())
        }
        _ => None,
    }
}

/// Messages whose JSON form is not an object of their fields: (definition name, `Special`
/// variant of the generated table).
const SPECIAL: &[(&str, &str)] = &[
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Time", "Time"),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
        "MicroTime",
    ),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Duration", "Duration"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1", "RawJson"),
    ("io.k8s.apimachinery.pkg.runtime.RawExtension", "RawJson"),
    ("io.k8s.apimachinery.pkg.api.resource.Quantity", "Quantity"),
    (
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        "IntOrString",
    ),
    ("io.k8s.api.authentication.v1.ExtraValue", "StringList"),
    ("io.k8s.api.authorization.v1.ExtraValue", "StringList"),
    ("io.k8s.api.certificates.v1.ExtraValue", "StringList"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Verbs", "StringList"),
];

/// Scalar fields that Go declares as plain values (not pointers) with `omitempty`: Go's
/// protobuf encoder writes them even when empty, its JSON encoder leaves them out, so the table
/// marks them to be read as absent when empty. Only the metadata every object carries is listed
/// (it drives keys, indexes and selectors); elsewhere the encodings cannot be told apart and an
/// empty value is kept, as a pointer field's empty value means something (`replicas: 0`).
const OMIT_ZERO: &[(&str, &[&str])] = &[
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        &[
            "name",
            "generateName",
            "namespace",
            "selfLink",
            "uid",
            "resourceVersion",
            "generation",
        ],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
        &["selfLink", "resourceVersion", "continue"],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
        &[
            "manager",
            "operation",
            "apiVersion",
            "fieldsType",
            "subresource",
        ],
    ),
];

/// The `meta.k8s.io` kinds of metadata-only answers, which the published definitions leave out
/// (they are conversions, served for every resource): `PartialObjectMetadata` (`metadata`, 1)
/// and `PartialObjectMetadataList` (`metadata`, 1; `items`, 2). `v1beta1` names the same
/// messages (its list holds `v1` items), so both versions map to them.
fn add_metadata_definitions(defs: &mut Map<String, Value>) {
    let kinds = |kind: &str| {
        Value::Array(
            ["v1", "v1beta1"]
                .iter()
                .map(|v| serde_json::json!({"group": "meta.k8s.io", "version": v, "kind": kind}))
                .collect(),
        )
    };
    let prefix = "io.k8s.apimachinery.pkg.apis.meta.v1";
    defs.entry(format!("{prefix}.PartialObjectMetadata"))
        .or_insert_with(|| {
            serde_json::json!({
                "properties": {"apiVersion": {}, "kind": {}, "metadata": {}},
                "x-kubernetes-group-version-kind": kinds("PartialObjectMetadata"),
            })
        });
    defs.entry(format!("{prefix}.PartialObjectMetadataList"))
        .or_insert_with(|| {
            serde_json::json!({
                "properties": {"apiVersion": {}, "kind": {}, "metadata": {}, "items": {}},
                "required": ["items"],
                "x-kubernetes-group-version-kind": kinds("PartialObjectMetadataList"),
            })
        });
}

/// One field as prost declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ProstField {
    /// prost's (snake case) name.
    name: String,
    /// The field number.
    number: u32,
    /// Whether the field repeats.
    repeated: bool,
    /// `string`, `bytes`, `int32`, `int64`, `bool`, `double`, `message:<path>` or
    /// `map:<value kind>`.
    kind: String,
}

/// Regenerates the table.
pub(crate) fn run(root: &Path) -> Result<(), Failure> {
    let work = root.join("target").join("proto-data");
    fs::create_dir_all(&work)
        .map_err(|e| Failure::new(format!("could not create {}: {e}", work.display())))?;
    let source = k8s_pb_source(&work)?;
    let defs_dir = work.join("definitions");
    let mut defs = openapi_data::download_definitions(KUBERNETES, &defs_dir)?;
    add_metadata_definitions(&mut defs);
    let messages = read_messages(&source)?;
    let text = generate(&messages, &defs);
    let path = root.join(OUTPUT);
    fs::write(&path, text)
        .map_err(|e| Failure::new(format!("could not write {}: {e}", path.display())))?;
    eprintln!("wrote the protobuf table to {}", path.display());
    Ok(())
}

/// The `src` folder of `k8s-pb` [`K8S_PB`], fetched by cargo into its registry.
fn k8s_pb_source(work: &Path) -> Result<PathBuf, Failure> {
    let manifest = work.join("Cargo.toml");
    let text = format!(
        "[package]\nname = \"kcache-proto-data\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[lib]\npath = \"lib.rs\"\n\n[dependencies]\nk8s-pb = \"={K8S_PB}\"\n\n\
         [workspace]\n"
    );
    fs::write(&manifest, text)
        .and_then(|()| fs::write(work.join("lib.rs"), ""))
        .map_err(|e| Failure::new(format!("could not write {}: {e}", manifest.display())))?;
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(&manifest)
        .output()
        .map_err(|e| Failure::new(format!("could not run cargo metadata: {e}")))?;
    if !output.status.success() {
        return Err(Failure::new(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    let metadata: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| Failure::new(format!("cargo metadata printed no JSON: {e}")))?;
    metadata
        .get("packages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p.get("name").and_then(Value::as_str) == Some("k8s-pb"))
        .and_then(|p| p.get("manifest_path").and_then(Value::as_str))
        .and_then(|m| Path::new(m).parent().map(|d| d.join("src")))
        .ok_or_else(|| Failure::new("cargo metadata does not list k8s-pb"))
}

/// Every kept module's messages: module folder -> message name -> fields.
fn read_messages(
    source: &Path,
) -> Result<BTreeMap<String, BTreeMap<String, Vec<ProstField>>>, Failure> {
    let mut out = BTreeMap::new();
    let mut pending = vec![source.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = fs::read_dir(&dir)
            .map_err(|e| Failure::new(format!("could not list {}: {e}", dir.display())))?;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.file_name().is_some_and(|n| n == "mod.rs") {
                let module = dir
                    .strip_prefix(source)
                    .map(|m| m.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_default();
                if definition_prefix(&module).is_none() {
                    continue;
                }
                let text = fs::read_to_string(&path)
                    .map_err(|e| Failure::new(format!("could not read {}: {e}", path.display())))?;
                out.insert(module.clone(), parse_module(&module, &text)?);
            }
        }
    }
    Ok(out)
}

/// The messages of one prost-generated module.
fn parse_module(module: &str, text: &str) -> Result<BTreeMap<String, Vec<ProstField>>, Failure> {
    let mut messages = BTreeMap::new();
    let mut current: Option<(String, Vec<ProstField>)> = None;
    let mut attribute: Option<String> = None;
    let mut declaration = String::new();
    for line in text.lines() {
        if let Some(name) = line
            .strip_prefix("pub struct ")
            .and_then(|rest| rest.strip_suffix(" {"))
        {
            current = Some((name.to_owned(), Vec::new()));
            continue;
        }
        if line == "}" {
            if let Some((name, fields)) = current.take() {
                messages.insert(name, fields);
            }
            continue;
        }
        let Some((_, fields)) = current.as_mut() else {
            continue;
        };
        let trimmed = line.trim();
        if let Some(attr) = trimmed
            .strip_prefix("#[prost(")
            .and_then(|a| a.strip_suffix(")]"))
        {
            attribute = Some(attr.to_owned());
            declaration.clear();
            continue;
        }
        if attribute.is_some() && !trimmed.starts_with("///") {
            declaration.push_str(trimmed);
            let open = declaration.matches('<').count();
            let close = declaration.matches('>').count();
            if declaration.ends_with(',') && open == close {
                if let Some(attr) = attribute.take() {
                    fields.push(parse_field(module, &attr, &declaration)?);
                }
                declaration.clear();
            }
        }
    }
    Ok(messages)
}

/// One field from its `#[prost(...)]` attribute and its `pub name: Type,` declaration.
fn parse_field(module: &str, attribute: &str, declaration: &str) -> Result<ProstField, Failure> {
    let bad = || {
        Failure::new(format!(
            "{module}: cannot read `{attribute}` / `{declaration}`"
        ))
    };
    let name = declaration
        .strip_prefix("pub ")
        .and_then(|d| d.split(':').next())
        .map(|n| n.trim_start_matches("r#").to_owned())
        .ok_or_else(bad)?;
    let ty = declaration
        .split_once(':')
        .map(|(_, t)| t)
        .ok_or_else(bad)?;
    let number = attribute
        .split("tag = \"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .and_then(|t| t.parse().ok())
        .ok_or_else(bad)?;
    let repeated = attribute.contains("repeated");
    let first = attribute.split([',', ' ']).next().unwrap_or_default();
    let kind = match first {
        "string" | "bytes" | "int32" | "int64" | "bool" | "double" => first.to_owned(),
        "message" => format!(
            "message:{}",
            resolve(module, last_type(ty)).ok_or_else(bad)?
        ),
        "btree_map" => {
            let value = attribute
                .split('"')
                .nth(1)
                .and_then(|kv| kv.split_once(", "))
                .map(|(_, v)| v)
                .ok_or_else(bad)?;
            match value {
                "message" => format!(
                    "map:message:{}",
                    resolve(module, last_type(ty)).ok_or_else(bad)?
                ),
                "string" | "bytes" => format!("map:{value}"),
                _ => return Err(bad()),
            }
        }
        _ => return Err(bad()),
    };
    Ok(ProstField {
        name,
        number,
        repeated,
        kind,
    })
}

/// The innermost type path of a field type (`Option<X>`, `Vec<X>`, `BTreeMap<String, X>`).
fn last_type(ty: &str) -> &str {
    let inner = ty.trim().trim_end_matches(',').trim_end_matches('>');
    let inner = inner.trim_end_matches(',').trim_end_matches('>');
    let start = inner.rfind(['<', ',']).map_or(0, |i| i + 1);
    inner[start..].trim().trim_end_matches(',')
}

/// `module/Name` for a type path written in `module`.
fn resolve(module: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = module.split('/').collect();
    let mut rest = path.trim_start_matches("::");
    while let Some(after) = rest.strip_prefix("super::") {
        parts.pop()?;
        rest = after;
    }
    let segments: Vec<&str> = rest.split("::").collect();
    let (name, modules) = segments.split_last()?;
    parts.extend(modules.iter().copied());
    Some(format!("{}/{}", parts.join("/"), name))
}

/// Letters and digits of `name`, lowercased: what a prost and a JSON name share.
fn letters(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The generated Rust source.
#[allow(
    clippy::too_many_lines,
    clippy::single_match_else,
    reason = "one pass over the kept messages, writing the table as it goes"
)]
fn generate(
    modules: &BTreeMap<String, BTreeMap<String, Vec<ProstField>>>,
    defs: &Map<String, Value>,
) -> String {
    // Kept messages: those with a definition; index by `module/Name`.
    let mut kept: BTreeMap<String, String> = BTreeMap::new();
    for (module, messages) in modules {
        let Some(prefix) = definition_prefix(module) else {
            continue;
        };
        for name in messages.keys() {
            let wanted = letters(name);
            let found = defs.keys().find(|d| {
                d.strip_prefix(prefix.as_str())
                    .and_then(|rest| rest.strip_prefix('.'))
                    .is_some_and(|rest| !rest.contains('.') && letters(rest) == wanted)
            });
            let special = SPECIAL
                .iter()
                .map(|(d, _)| *d)
                .find(|d| d.strip_prefix(prefix.as_str()) == Some(&format!(".{name}")));
            if let Some(definition) = found.map(String::as_str).or(special) {
                kept.insert(format!("{module}/{name}"), definition.to_owned());
            }
        }
    }
    // Embedded Go structs without a definition of their own (`ProbeHandler`, `VolumeSource`):
    // kept under a name of their own, their field names read from the embedding kind's
    // definition. `names_from`: message definition -> the definition naming its fields.
    let mut names_from: BTreeMap<String, String> = BTreeMap::new();
    loop {
        let mut added = Vec::new();
        for (path, definition) in &kept {
            let (module, name) = path.rsplit_once('/').unwrap_or_default();
            let schema_name = names_from.get(definition).unwrap_or(definition);
            let properties = defs
                .get(schema_name)
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object);
            for field in &modules[module][name] {
                let Some(target) = field.kind.strip_prefix("message:") else {
                    continue;
                };
                let wanted = letters(&field.name);
                let named = properties.is_some_and(|p| p.keys().any(|k| letters(k) == wanted));
                if !named && !kept.contains_key(target) {
                    let (target_module, target_name) = target.rsplit_once('/').unwrap_or_default();
                    if let Some(prefix) = definition_prefix(target_module) {
                        added.push((
                            target.to_owned(),
                            format!("{prefix}.{target_name}"),
                            schema_name.clone(),
                        ));
                    }
                }
            }
        }
        if added.is_empty() {
            break;
        }
        for (path, definition, from) in added {
            names_from.insert(definition.clone(), from);
            kept.insert(path, definition);
        }
    }
    // Emitted in definition-name order, which is the index order.
    let mut ordered: Vec<(&str, &str)> =
        kept.iter().map(|(p, d)| (d.as_str(), p.as_str())).collect();
    ordered.sort_unstable();
    let index: BTreeMap<&str, usize> = ordered
        .iter()
        .enumerate()
        .map(|(i, (d, _))| (*d, i))
        .collect();
    let by_path: BTreeMap<&str, usize> = kept
        .iter()
        .map(|(path, d)| (path.as_str(), index[d.as_str()]))
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "//! The protobuf field table: @generated by `cargo xtask proto-data` from `k8s-pb` {K8S_PB}\n\
         //! (crates.io; prost's reading of the Kubernetes .proto files) and the Kubernetes\n\
         //! {KUBERNETES} definitions of `kubernetes-validate` (`PyPI`; JSON field names). Do not edit.\n\n\
         use super::{{Field, Kind, MapValue, Message, Special}};\n\n\
         /// Where the table came from.\n\
         pub(super) const SOURCE: &str = \"k8s-pb {K8S_PB}, kubernetes-validate {KUBERNETES}\";\n\n\
         /// The Kubernetes release the table describes.\n\
         pub(super) const KUBERNETES: &str = \"{KUBERNETES}\";\n"
    );
    let mut dropped = BTreeSet::new();
    let mut kinds: Vec<(String, String, usize)> = Vec::new();
    let _ = writeln!(out, "/// Every message, by definition name.");
    let _ = writeln!(
        out,
        "pub(super) static MESSAGES: [Message; {}] = [",
        ordered.len()
    );
    for (definition, path) in &ordered {
        let (module, name) = path.rsplit_once('/').unwrap_or_default();
        let fields = &modules[module][name];
        let empty = Value::Object(Map::new());
        let schema = defs.get(*definition).unwrap_or(&empty);
        let naming = names_from
            .get(*definition)
            .and_then(|d| defs.get(d))
            .unwrap_or(schema);
        let special = SPECIAL
            .iter()
            .find(|(d, _)| d == definition)
            .map_or("None", |(_, s)| *s);
        let properties = naming.get("properties").and_then(Value::as_object);
        let required: BTreeSet<&str> = naming
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if let Some(gvks) = schema
            .get("x-kubernetes-group-version-kind")
            .and_then(Value::as_array)
        {
            for gvk in gvks {
                let text = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or_default();
                let api_version = if text("group").is_empty() {
                    text("version").to_owned()
                } else {
                    format!("{}/{}", text("group"), text("version"))
                };
                kinds.push((api_version, text("kind").to_owned(), index[definition]));
            }
        }
        let _ = writeln!(out, "    Message {{");
        let _ = writeln!(out, "        name: \"{definition}\",");
        let _ = writeln!(out, "        special: Special::{special},");
        let _ = writeln!(out, "        fields: &[");
        let mut sorted = fields.clone();
        sorted.sort_by_key(|f| f.number);
        for field in &sorted {
            let mut inline = false;
            let json = if special == "None" {
                let wanted = letters(&field.name);
                match properties.and_then(|p| p.keys().find(|k| letters(k) == wanted)) {
                    Some(json) => json.clone(),
                    // An embedded Go struct: its own message on the wire, its fields inlined
                    // into this object in JSON.
                    None if field.kind.starts_with("message:") && !field.repeated => {
                        inline = true;
                        String::new()
                    }
                    None => {
                        dropped.insert(format!("{definition}.{} (no such property)", field.name));
                        continue;
                    }
                }
            } else {
                field.name.clone()
            };
            let kind = match field.kind.split_once(':') {
                None => match field.kind.as_str() {
                    "string" => "Kind::String".to_owned(),
                    "bytes" => "Kind::Bytes".to_owned(),
                    "int32" => "Kind::Int32".to_owned(),
                    "int64" => "Kind::Int64".to_owned(),
                    "bool" => "Kind::Bool".to_owned(),
                    _ => "Kind::Double".to_owned(),
                },
                Some(("message", target)) => match by_path.get(target) {
                    Some(i) => format!("Kind::Message({i})"),
                    None => {
                        dropped.insert(format!("{definition}.{json} (-> {target})"));
                        continue;
                    }
                },
                Some((_, value)) => match value.split_once(':') {
                    None if value == "string" => "Kind::Map(MapValue::String)".to_owned(),
                    None => "Kind::Map(MapValue::Bytes)".to_owned(),
                    Some((_, target)) => match by_path.get(target) {
                        Some(i) => format!("Kind::Map(MapValue::Message({i}))"),
                        None => {
                            dropped.insert(format!("{definition}.{json} (-> {target})"));
                            continue;
                        }
                    },
                },
            };
            let _ = writeln!(
                out,
                "            Field {{ number: {}, json: \"{json}\", kind: {kind}, repeated: {}, required: {}, inline: {inline}, omit_zero: {} }},",
                field.number,
                field.repeated,
                required.contains(json.as_str()),
                OMIT_ZERO
                    .iter()
                    .any(|(d, fields)| d == definition && fields.contains(&json.as_str()))
            );
        }
        let _ = writeln!(out, "        ],\n    }},");
    }
    let _ = writeln!(out, "];\n");
    kinds.sort();
    kinds.dedup();
    let _ = writeln!(
        out,
        "/// (apiVersion, kind, message) of every kind, sorted."
    );
    let _ = writeln!(
        out,
        "pub(super) static KINDS: [(&str, &str, u16); {}] = [",
        kinds.len()
    );
    for (api_version, kind, i) in &kinds {
        let _ = writeln!(out, "    (\"{api_version}\", \"{kind}\", {i}),");
    }
    let _ = writeln!(out, "];");
    for d in &dropped {
        eprintln!("left out: {d}");
    }
    let kept_kinds: BTreeSet<&str> = kinds.iter().map(|(_, _, i)| ordered[*i].0).collect();
    let lost: Vec<&String> = dropped
        .iter()
        .filter(|d| kept_kinds.iter().any(|k| d.starts_with(&format!("{k}."))))
        .collect();
    if !lost.is_empty() {
        eprintln!("{} field(s) of kinds left out (see above)", lost.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prost_fields_are_read() {
        let text = "pub struct Pod {\n    /// doc\n    #[prost(message, optional, tag = \"1\")]\n    pub metadata: ::core::option::Option<\n        super::super::super::apimachinery::pkg::apis::meta::v1::ObjectMeta,\n    >,\n    #[prost(btree_map = \"string, string\", tag = \"11\")]\n    pub labels: ::std::collections::BTreeMap<String, String>,\n    #[prost(string, repeated, tag = \"3\")]\n    pub r#type: ::prost::alloc::vec::Vec<String>,\n}\n";
        let messages = parse_module("api/core/v1", text).unwrap();
        let pod = &messages["Pod"];
        assert_eq!(
            pod[0].kind,
            "message:apimachinery/pkg/apis/meta/v1/ObjectMeta"
        );
        assert_eq!((pod[1].number, pod[1].kind.as_str()), (11, "map:string"));
        assert_eq!((pod[2].name.as_str(), pod[2].repeated), ("type", true));
    }

    #[test]
    fn names_match_by_letters() {
        assert_eq!(letters("volume_id"), letters("volumeID"));
        assert_eq!(
            resolve("api/core/v1", "Container").unwrap(),
            "api/core/v1/Container"
        );
        assert_eq!(definition_prefix("api/apps/v1beta1"), None);
    }
}
