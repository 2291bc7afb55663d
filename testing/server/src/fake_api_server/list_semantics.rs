//! [`ListSemantics`]: how the lists of an object merge and are owned under server-side apply
//! (atomic, a set of scalars, or a map keyed by some fields of their entries); [`SchemaLists`],
//! which reads them from a built-in kind's vendored schema ([`schema`](super::schema):
//! `x-kubernetes-list-type` and `x-kubernetes-list-map-keys`, else a merge strategy with its
//! merge key, else atomic); and [`BuiltinLists`], the table of the lists controllers and kubectl
//! write on the built-in kinds, for kinds without a schema.
//!
//! Every list the table does not name is atomic, as the lists of a custom resource without
//! `x-kubernetes-list-type` are: a manager owns the whole list and an apply replaces it.

use serde_json::Value;

use super::field_set::PathElement;
use super::schema::{self, KindSchema, Node};

/// How a list merges and how its entries are owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListType {
    /// One value: replaced whole, owned whole.
    Atomic,
    /// Unique scalars: merged as a union, each entry owned (`v:<value>`).
    Set,
    /// Objects keyed by these fields: merged by key, each entry and each of its fields owned
    /// (`k:{...}`).
    Map(Vec<MapKey>),
}

/// A key field of a [`ListType::Map`] entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MapKey {
    /// The field name.
    pub(crate) name: String,
    /// The value of an entry that leaves the field out (`TCP` for a port's `protocol`).
    pub(crate) default: Option<Value>,
}

impl MapKey {
    fn required(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            default: None,
        }
    }

    fn with_default(name: &str, default: &str) -> Self {
        Self {
            name: name.to_owned(),
            default: Some(Value::from(default)),
        }
    }
}

/// Where list types come from: a kind's schema, or [`BuiltinLists`].
pub(crate) trait ListSemantics {
    /// The type of the list at `path` (from the object's root; list entries appear as
    /// [`PathElement::Key`] or [`PathElement::Value`]).
    fn list_type(&self, path: &[PathElement]) -> ListType;
}

/// The list types of the fields controllers and kubectl touch on the default kinds, by field
/// name and position; everything else atomic.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BuiltinLists;

impl ListSemantics for BuiltinLists {
    fn list_type(&self, path: &[PathElement]) -> ListType {
        let field = |i: usize| match path.get(i) {
            Some(PathElement::Field(name)) => Some(name.as_str()),
            _ => None,
        };
        let Some(last) = path.len().checked_sub(1) else {
            return ListType::Atomic;
        };
        let parent_is_entry = last > 0 && field(last - 1).is_none();
        let keyed =
            |names: &[&str]| ListType::Map(names.iter().map(|n| MapKey::required(n)).collect());
        match (field(last), path.len()) {
            (Some("finalizers"), 2) if field(0) == Some("metadata") => ListType::Set,
            (Some("ownerReferences"), 2) if field(0) == Some("metadata") => keyed(&["uid"]),
            (Some("containers" | "initContainers" | "ephemeralContainers"), _) => keyed(&["name"]),
            (Some("ports"), _) if parent_is_entry => ListType::Map(vec![
                MapKey::required("containerPort"),
                MapKey::with_default("protocol", "TCP"),
            ]),
            (Some("ports"), 2) if field(0) == Some("spec") => ListType::Map(vec![
                MapKey::required("port"),
                MapKey::with_default("protocol", "TCP"),
            ]),
            (Some("env" | "volumes" | "imagePullSecrets" | "resourceClaims"), _) => {
                keyed(&["name"])
            }
            (Some("volumeMounts"), _) => keyed(&["mountPath"]),
            (Some("volumeDevices"), _) => keyed(&["devicePath"]),
            (Some("hostAliases"), _) => keyed(&["ip"]),
            (Some("topologySpreadConstraints"), _) => keyed(&["topologyKey", "whenUnsatisfiable"]),
            (Some("conditions"), 2) if field(0) == Some("status") => keyed(&["type"]),
            _ => ListType::Atomic,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(names: &[&str]) -> Vec<PathElement> {
        names
            .iter()
            .map(|n| match *n {
                "#" => PathElement::Key(Vec::new()),
                n => PathElement::Field(n.to_owned()),
            })
            .collect()
    }

    #[test]
    fn the_table_knows_the_common_lists_and_the_rest_is_atomic() {
        let lists = BuiltinLists;
        let keys = |names: &[&str]| match lists.list_type(&path(names)) {
            ListType::Map(keys) => keys.into_iter().map(|k| k.name).collect::<Vec<_>>(),
            other => panic!("{names:?}: {other:?}"),
        };
        assert_eq!(keys(&["spec", "template", "spec", "containers"]), ["name"]);
        assert_eq!(
            keys(&["spec", "containers", "#", "ports"]),
            ["containerPort", "protocol"]
        );
        assert_eq!(keys(&["spec", "ports"]), ["port", "protocol"]);
        assert_eq!(keys(&["spec", "containers", "#", "env"]), ["name"]);
        assert_eq!(
            keys(&["spec", "containers", "#", "volumeMounts"]),
            ["mountPath"]
        );
        assert_eq!(keys(&["metadata", "ownerReferences"]), ["uid"]);
        assert_eq!(keys(&["status", "conditions"]), ["type"]);
        assert_eq!(
            lists.list_type(&path(&["metadata", "finalizers"])),
            ListType::Set
        );
        for atomic in [
            &["spec", "tolerations"][..],
            &["spec", "containers", "#", "args"],
            &["spec", "finalizers"],
            &["items"],
        ] {
            assert_eq!(
                lists.list_type(&path(atomic)),
                ListType::Atomic,
                "{atomic:?}"
            );
        }
    }
}

/// The list types of a kind with a vendored schema; the [`BuiltinLists`] table answers for a
/// kind without one, and for a path the schema does not describe.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SchemaLists(pub(crate) Option<KindSchema>);

impl PartialEq for SchemaLists {
    fn eq(&self, other: &Self) -> bool {
        self.0.map(|k| k.name) == other.0.map(|k| k.name)
    }
}

impl Eq for SchemaLists {}

impl SchemaLists {
    /// The node at `path` from the kind's root: fields by name (a map's values for a map),
    /// list entries by the list's items.
    fn node_at(root: Node, path: &[PathElement]) -> Option<Node> {
        path.iter().try_fold(root, |node, element| match element {
            PathElement::Field(name) => node.field(name),
            PathElement::Key(_) | PathElement::Value(_) | PathElement::Index(_) => node.items(),
        })
    }
}

impl ListSemantics for SchemaLists {
    fn list_type(&self, path: &[PathElement]) -> ListType {
        let Some(node) = self.0.and_then(|kind| Self::node_at(kind.root, path)) else {
            return BuiltinLists.list_type(path);
        };
        let keys = |names: Vec<&str>| {
            let items = node.items();
            ListType::Map(
                names
                    .into_iter()
                    .map(|name| MapKey {
                        name: name.to_owned(),
                        default: items
                            .and_then(|i| i.field(name))
                            .and_then(|f| f.raw().get("default"))
                            .cloned(),
                    })
                    .collect(),
            )
        };
        match node.list_type() {
            Some(schema::ListType::Set) => ListType::Set,
            Some(schema::ListType::Map) => keys(node.list_map_keys()),
            // A list without a list type merges as its patch strategy says.
            None if node.merges() => match node.patch_merge_key() {
                Some(key) => keys(vec![key]),
                None => ListType::Set,
            },
            Some(schema::ListType::Atomic) | None => ListType::Atomic,
        }
    }
}

#[cfg(test)]
mod schema_tests {
    use super::*;
    use crate::fake_api_server::served_resource::ServedResource;

    fn field(name: &str) -> PathElement {
        PathElement::Field(name.to_owned())
    }

    #[test]
    fn the_schema_gives_the_list_types_of_a_pod() {
        let lists = SchemaLists(schema::for_resource(&ServedResource::pods()));
        let containers = [field("spec"), field("containers")];
        assert_eq!(
            lists.list_type(&containers),
            ListType::Map(vec![MapKey::required("name")])
        );
        assert_eq!(
            lists.list_type(&[field("metadata"), field("finalizers")]),
            ListType::Set
        );
        let entry = PathElement::Key(Vec::new());
        let ports = [field("spec"), field("containers"), entry, field("ports")];
        let ListType::Map(keys) = lists.list_type(&ports) else {
            panic!("ports are keyed");
        };
        let names: Vec<&str> = keys.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["containerPort", "protocol"]);
        let args = [
            field("spec"),
            field("containers"),
            PathElement::Key(Vec::new()),
            field("args"),
        ];
        assert_eq!(lists.list_type(&args), ListType::Atomic);
    }

    #[test]
    fn without_a_schema_the_table_answers() {
        let lists = SchemaLists(None);
        assert_eq!(
            lists.list_type(&[field("spec"), field("containers")]),
            ListType::Map(vec![MapKey::required("name")])
        );
    }
}
