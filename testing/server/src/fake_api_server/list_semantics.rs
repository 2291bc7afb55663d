//! [`ListSemantics`]: how the lists of an object merge and are owned under server-side apply
//! (atomic, a set of scalars, or a map keyed by some fields of their entries), and
//! [`BuiltinLists`], the table of the lists controllers and kubectl write on the built-in kinds.
//!
//! Every list the table does not name is atomic, as the lists of a custom resource without
//! `x-kubernetes-list-type` are: a manager owns the whole list and an apply replaces it.

use serde_json::Value;

use super::field_set::PathElement;

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
