//! The vendored Kubernetes schemas of the built-in kinds, loaded once, and a small API to walk
//! them: a kind's schema, the node at a field path, and what a list node says about merging
//! (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-patch-strategy`,
//! `x-kubernetes-patch-merge-key`).
//!
//! The data (`testing/server/data/kubernetes-definitions.json`) is kube-apiserver's `OpenAPI` v3
//! `components.schemas` for the group-versions the fake server serves or may serve, written by
//! `cargo xtask openapi-data` (see the module docs of [`fake_api_server`](super)). It is parsed
//! the first time a schema is asked for; a kind's schema is then a hash lookup, and walking it
//! follows references without copying anything.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::{Map, Value};

use super::served_resource::ServedResource;

/// The vendored definitions, as the xtask writes them.
const DATA: &str = include_str!("../../data/kubernetes-definitions.json");

/// How deep references are followed from one node before giving up (definitions do not chain
/// references to references; this only guards against a malformed file).
const MAX_REFERENCE_HOPS: usize = 8;

/// The parsed definitions and the kinds they describe.
#[derive(Debug)]
pub(crate) struct Definitions {
    /// The Kubernetes version the schemas come from (`1.37.0`).
    pub(crate) kubernetes_version: String,
    /// Every definition, by name (`io.k8s.api.core.v1.Pod`).
    pub(crate) schemas: Map<String, Value>,
    /// The definition name of each (group, version, kind).
    kinds: HashMap<(String, String, String), String>,
}

static DEFINITIONS: LazyLock<Definitions> = LazyLock::new(|| {
    let parsed: Value = serde_json::from_str(DATA).unwrap_or_default();
    let kubernetes_version = parsed
        .get("kubernetesVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let schemas = match parsed.get("schemas") {
        Some(Value::Object(schemas)) => schemas.clone(),
        _ => Map::new(),
    };
    let mut kinds = HashMap::new();
    for (name, schema) in &schemas {
        let gvks = schema
            .get("x-kubernetes-group-version-kind")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        // Types listed under many group-versions (`DeleteOptions`, `WatchEvent`) are not kinds
        // anything is stored as.
        if let [gvk] = gvks {
            let field = |k: &str| {
                gvk.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            kinds.insert(
                (field("group"), field("version"), field("kind")),
                name.clone(),
            );
        }
    }
    Definitions {
        kubernetes_version,
        schemas,
        kinds,
    }
});

/// The vendored definitions.
pub(crate) fn definitions() -> &'static Definitions {
    &DEFINITIONS
}

impl Definitions {
    /// The definition name of a kind, `None` if it is not a vendored built-in kind.
    pub(crate) fn kind_name(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.kinds
            .get(&(group.to_owned(), version.to_owned(), kind.to_owned()))
            .map(String::as_str)
    }

    /// The names of every definition `name` reaches through references, `name` included.
    pub(crate) fn closure(&self, name: &str) -> Vec<&str> {
        let mut seen: Vec<&str> = Vec::new();
        let mut pending = vec![name];
        while let Some(next) = pending.pop() {
            let Some((key, schema)) = self.schemas.get_key_value(next) else {
                continue;
            };
            if seen.contains(&key.as_str()) {
                continue;
            }
            seen.push(key.as_str());
            references(schema, &mut pending);
        }
        seen.sort_unstable();
        seen
    }
}

/// Collects the definition names `schema` refers to into `out`.
fn references<'a>(schema: &'a Value, out: &mut Vec<&'a str>) {
    match schema {
        Value::Object(members) => {
            for (key, value) in members {
                match (key.as_str(), value.as_str()) {
                    ("$ref", Some(r)) => out.extend(definition_of(r)),
                    _ => references(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| references(i, out)),
        _ => {}
    }
}

/// `io.k8s.api.core.v1.Pod` for `#/components/schemas/io.k8s.api.core.v1.Pod`.
fn definition_of(reference: &str) -> Option<&str> {
    reference.strip_prefix("#/components/schemas/")
}

/// The schema of a built-in kind, `None` for kinds without a vendored definition (custom
/// resources registered in Rust).
pub(crate) fn for_resource(resource: &ServedResource) -> Option<KindSchema> {
    for_kind(&resource.api.group, &resource.api.version, &resource.kind)
}

/// The schema of kind `kind` of `group`/`version`, `None` without a vendored definition.
pub(crate) fn for_kind(group: &str, version: &str, kind: &str) -> Option<KindSchema> {
    let defs = definitions();
    let (name, schema) = defs
        .schemas
        .get_key_value(defs.kind_name(group, version, kind)?)?;
    Some(KindSchema {
        name: name.as_str(),
        root: Node(schema),
    })
}

/// A built-in kind's schema.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KindSchema {
    /// The definition's name (`io.k8s.api.core.v1.Pod`).
    pub(crate) name: &'static str,
    /// The kind's object.
    pub(crate) root: Node,
}

impl KindSchema {
    /// The node at `path`, a list of field names from the object's root (`["spec",
    /// "containers"]`); a list or map on the way is stepped into (its items, its values), so
    /// `["spec", "containers", "name"]` is the containers' `name`. `None` where the schema has
    /// no such field.
    #[allow(
        dead_code,
        reason = "crate-internal API for the server's other schema-driven features (field ownership)"
    )]
    pub(crate) fn node_at(&self, path: &[&str]) -> Option<Node> {
        path.iter().try_fold(self.root, |node, field| {
            let node = node.items().unwrap_or(node);
            node.field(field)
        })
    }
}

/// How a list is merged, from `x-kubernetes-list-type`.
#[allow(
    dead_code,
    reason = "crate-internal API for the server's other schema-driven features (field ownership)"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListType {
    /// Replaced as a whole.
    Atomic,
    /// A set of scalars.
    Set,
    /// Entries identified by their map keys.
    Map,
}

/// One node of a schema: a field, a list's items, a map's values. Its annotations are read on
/// the node itself, its structure (properties, items, type) on what it refers to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Node(&'static Value);

impl Node {
    /// The node of schema `value` (a member of a node's `properties`).
    pub(crate) fn of(value: &'static Value) -> Self {
        Self(value)
    }

    /// The schema this node describes, references (`$ref`, or a one-entry `allOf`) followed.
    fn target(self) -> &'static Value {
        let mut node = self.0;
        for _ in 0..MAX_REFERENCE_HOPS {
            let reference = node.get("$ref").or_else(|| {
                node.get("allOf")
                    .and_then(Value::as_array)
                    .filter(|all| all.len() == 1)
                    .and_then(|all| all[0].get("$ref"))
            });
            let Some(next) = reference
                .and_then(Value::as_str)
                .and_then(definition_of)
                .and_then(|name| definitions().schemas.get(name))
            else {
                return node;
            };
            node = next;
        }
        node
    }

    /// The annotation `key` of this node, or else of what it refers to.
    fn annotation(self, key: &str) -> Option<&'static Value> {
        self.0.get(key).or_else(|| self.target().get(key))
    }

    /// The raw JSON schema of this node.
    #[allow(
        dead_code,
        reason = "crate-internal API for the server's other schema-driven features (field ownership)"
    )]
    pub(crate) fn raw(self) -> &'static Value {
        self.0
    }

    /// The `type` this node says (`object`, `array`, `string`, `integer`, `number`,
    /// `boolean`), `None` when it says none (any value, or a `oneOf`).
    pub(crate) fn type_name(self) -> Option<&'static str> {
        self.target().get("type").and_then(Value::as_str)
    }

    /// The `format` (`int32`, `int64`, `date-time`, `int-or-string`).
    pub(crate) fn format(self) -> Option<&'static str> {
        self.annotation("format").and_then(Value::as_str)
    }

    /// The types a `oneOf` node accepts (int-or-string, quantity), empty otherwise.
    pub(crate) fn one_of_types(self) -> Vec<&'static str> {
        self.target()
            .get("oneOf")
            .and_then(Value::as_array)
            .map(|all| {
                all.iter()
                    .filter_map(|a| a.get("type").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The definition this node refers to (`io.k8s.api.core.v1.Container`), if any.
    pub(crate) fn definition(self) -> Option<&'static str> {
        let node = self.0;
        node.get("$ref")
            .or_else(|| {
                node.get("allOf")
                    .and_then(Value::as_array)
                    .and_then(|all| all.first())
                    .and_then(|first| first.get("$ref"))
            })
            .and_then(Value::as_str)
            .and_then(definition_of)
    }

    /// The declared fields of an object node, `None` for other nodes and free-form objects.
    pub(crate) fn properties(self) -> Option<&'static Map<String, Value>> {
        self.target().get("properties").and_then(Value::as_object)
    }

    /// Field `name` of an object node: a declared field, or a map's value.
    pub(crate) fn field(self, name: &str) -> Option<Node> {
        if let Some(field) = self.properties().and_then(|p| p.get(name)) {
            return Some(Node(field));
        }
        self.map_values()
    }

    /// The values of a map node (`additionalProperties`).
    pub(crate) fn map_values(self) -> Option<Node> {
        self.target()
            .get("additionalProperties")
            .filter(|v| v.is_object())
            .map(Node)
    }

    /// The items of a list node.
    pub(crate) fn items(self) -> Option<Node> {
        self.target()
            .get("items")
            .filter(|v| v.is_object())
            .map(Node)
    }

    /// Whether the node keeps fields its schema does not declare
    /// (`x-kubernetes-preserve-unknown-fields`), which stops the unknown-field check.
    pub(crate) fn preserves_unknown_fields(self) -> bool {
        self.annotation("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// The list type of a list node.
    #[allow(
        dead_code,
        reason = "crate-internal API for the server's other schema-driven features (field ownership)"
    )]
    pub(crate) fn list_type(self) -> Option<ListType> {
        match self.annotation("x-kubernetes-list-type")?.as_str()? {
            "atomic" => Some(ListType::Atomic),
            "set" => Some(ListType::Set),
            "map" => Some(ListType::Map),
            _ => None,
        }
    }

    /// The keys of a `map` list's entries.
    #[allow(
        dead_code,
        reason = "crate-internal API for the server's other schema-driven features (field ownership)"
    )]
    pub(crate) fn list_map_keys(self) -> Vec<&'static str> {
        self.annotation("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .map(|keys| keys.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// The strategic merge patch strategy (`merge`, `retainKeys`, `merge,retainKeys`).
    pub(crate) fn patch_strategy(self) -> Option<&'static str> {
        self.annotation("x-kubernetes-patch-strategy")?.as_str()
    }

    /// Whether the patch strategy includes `merge`.
    pub(crate) fn merges(self) -> bool {
        self.patch_strategy()
            .is_some_and(|s| s.split(',').any(|p| p.trim() == "merge"))
    }

    /// The strategic merge patch merge key of a list of objects (`name` for containers).
    pub(crate) fn patch_merge_key(self) -> Option<&'static str> {
        self.annotation("x-kubernetes-patch-merge-key")?.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_kinds_have_their_schemas() {
        assert!(definitions().kubernetes_version.starts_with("1."));
        let pods = for_resource(&ServedResource::pods()).unwrap();
        assert_eq!(pods.name, "io.k8s.api.core.v1.Pod");
        let containers = pods.node_at(&["spec", "containers"]).unwrap();
        assert_eq!(containers.type_name(), Some("array"));
        assert_eq!(containers.list_type(), Some(ListType::Map));
        assert_eq!(containers.list_map_keys(), ["name"]);
        assert_eq!(containers.patch_merge_key(), Some("name"));
        assert!(containers.merges());
        let name = pods.node_at(&["spec", "containers", "name"]).unwrap();
        assert_eq!(name.type_name(), Some("string"));
        let finalizers = pods.node_at(&["metadata", "finalizers"]).unwrap();
        assert_eq!(finalizers.list_type(), Some(ListType::Set));
        assert!(finalizers.merges());
        let labels = pods.node_at(&["metadata", "labels", "app"]).unwrap();
        assert_eq!(labels.type_name(), Some("string"));
        assert!(pods.node_at(&["spec", "nope"]).is_none());
        let deployments = for_resource(&ServedResource::deployments()).unwrap();
        let surge = deployments
            .node_at(&["spec", "strategy", "rollingUpdate", "maxSurge"])
            .unwrap();
        assert_eq!(surge.format(), Some("int-or-string"));
        assert_eq!(surge.one_of_types(), ["integer", "string"]);
        for r in ServedResource::defaults() {
            assert!(for_resource(&r).is_some(), "{}", r.kind);
        }
        let widgets = ServedResource::new(
            kcache_store::ApiResource::new("example.com", "v1", "widgets", true),
            "Widget",
        );
        assert!(for_resource(&widgets).is_none());
        let closure = definitions().closure("io.k8s.api.coordination.v1.Lease");
        assert!(closure.contains(&"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
    }
}
