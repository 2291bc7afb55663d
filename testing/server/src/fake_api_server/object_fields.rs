//! The field paths of an object's JSON under a [`ListSemantics`]: the paths an applied
//! configuration sets ([`fields_of`]), and what a write changed ([`compare`]: the paths it
//! modified, added and removed), from which managers gain and lose ownership.
//!
//! Leaves are scalars, `null`, empty objects, atomic lists and empty lists; every entry of a
//! set or keyed list is a node owned in its own right (its presence), besides its fields.

use serde_json::{Map, Value};

use super::field_set::{FieldSet, PathElement, Scalar, path_string};
use super::list_semantics::{ListSemantics, ListType};

/// The path element of entry `index` of the list at `path`, of type `list_type`.
///
/// # Errors
///
/// An entry of a keyed list without a key field that has no default, or a set entry that is
/// not a scalar (the message kube-apiserver gives).
pub(crate) fn entry_element(
    list_type: &ListType,
    path: &[PathElement],
    index: usize,
    entry: &Value,
) -> Result<PathElement, String> {
    let at = || format!("{}: element {index}", path_string(path));
    match list_type {
        ListType::Map(keys) => {
            let Value::Object(fields) = entry else {
                return Err(format!(
                    "{}: associative list with keys has an element that is not a map",
                    at()
                ));
            };
            let mut key = Vec::with_capacity(keys.len());
            for k in keys {
                let value = match (fields.get(&k.name), &k.default) {
                    (Some(v), _) => v.clone(),
                    (None, Some(default)) => default.clone(),
                    (None, None) => {
                        return Err(format!(
                            "{}: associative list with keys has an element that omits key field \
                             {:?} (and doesn't have default value)",
                            at(),
                            k.name
                        ));
                    }
                };
                key.push((k.name.clone(), Scalar(value)));
            }
            key.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(PathElement::Key(key))
        }
        ListType::Set => match entry {
            Value::Array(_) | Value::Object(_) => Err(format!(
                "{}: associative list without keys has an element that's a map or a list",
                at()
            )),
            scalar => Ok(PathElement::Value(Scalar(scalar.clone()))),
        },
        ListType::Atomic => Ok(PathElement::Index(index)),
    }
}

/// The entries of a set or keyed list with their path elements.
fn entries<'v>(
    list_type: &ListType,
    path: &[PathElement],
    items: &'v [Value],
) -> Result<Vec<(PathElement, &'v Value)>, String> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| entry_element(list_type, path, i, item).map(|e| (e, item)))
        .collect()
}

/// The value of the entry `element` of a list's entries.
fn find<'v>(list: &[(PathElement, &'v Value)], element: &PathElement) -> Option<&'v Value> {
    list.iter().find(|(x, _)| x == element).map(|(_, v)| *v)
}

/// The paths an object (an applied configuration) sets: its leaves and the entries of its set
/// and keyed lists.
///
/// # Errors
///
/// A list entry without its key (see [`entry_element`]).
pub(crate) fn fields_of(
    object: &Map<String, Value>,
    lists: &dyn ListSemantics,
) -> Result<FieldSet, String> {
    let mut set = FieldSet::default();
    map_fields(object, &mut Vec::new(), &mut set, lists)?;
    Ok(set)
}

fn map_fields(
    map: &Map<String, Value>,
    path: &mut Vec<PathElement>,
    set: &mut FieldSet,
    lists: &dyn ListSemantics,
) -> Result<(), String> {
    for (name, value) in map {
        path.push(PathElement::Field(name.clone()));
        match value {
            Value::Object(inner) if !inner.is_empty() => map_fields(inner, path, set, lists)?,
            Value::Array(items) => match lists.list_type(path) {
                ListType::Atomic => set.insert(path),
                list_type => {
                    for (element, item) in entries(&list_type, path, items)? {
                        path.push(element);
                        set.insert(path);
                        if let Value::Object(inner) = item {
                            map_fields(inner, path, set, lists)?;
                        }
                        path.pop();
                    }
                }
            },
            _ => set.insert(path),
        }
        path.pop();
    }
    Ok(())
}

/// What a write changed, path by path.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Comparison {
    /// Leaves with a new value.
    pub(crate) modified: FieldSet,
    /// Paths that appeared.
    pub(crate) added: FieldSet,
    /// Paths that went, every node and leaf below a removed one included.
    pub(crate) removed: FieldSet,
}

/// What changed from `old` to `new`.
///
/// A node that appears is counted only by its leaves and list entries, except the maps right
/// under `metadata` (labels, annotations) and the set and keyed lists other than `containers`,
/// which a write that creates them owns as kube-apiserver's updates do.
pub(crate) fn compare(old: &Value, new: &Value, lists: &dyn ListSemantics) -> Comparison {
    let mut comparison = Comparison::default();
    compare_at(
        Some(old),
        Some(new),
        &mut Vec::new(),
        &mut comparison,
        lists,
    );
    comparison
}

fn compare_at(
    old: Option<&Value>,
    new: Option<&Value>,
    path: &mut Vec<PathElement>,
    c: &mut Comparison,
    lists: &dyn ListSemantics,
) {
    match (old, new) {
        (None, None) => {}
        (None, Some(new)) => added(new, path, &mut c.added, lists),
        (Some(old), None) => every_path(old, path, &mut c.removed, lists),
        (Some(Value::Object(a)), Some(Value::Object(b))) if !(a.is_empty() && b.is_empty()) => {
            let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
            names.sort();
            names.dedup();
            for name in names {
                path.push(PathElement::Field(name.clone()));
                compare_at(a.get(name), b.get(name), path, c, lists);
                path.pop();
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) if !(a.is_empty() && b.is_empty()) => {
            let list_type = lists.list_type(path);
            let (Ok(a_entries), Ok(b_entries)) =
                (entries(&list_type, path, a), entries(&list_type, path, b))
            else {
                if a != b {
                    c.modified.insert(path);
                }
                return;
            };
            if list_type == ListType::Atomic {
                if a != b {
                    c.modified.insert(path);
                }
                return;
            }
            let mut elements: Vec<&PathElement> =
                a_entries.iter().chain(&b_entries).map(|(e, _)| e).collect();
            elements.sort();
            elements.dedup();
            for element in elements {
                let (before, after) = (find(&a_entries, element), find(&b_entries, element));
                path.push(element.clone());
                if before.is_none() {
                    c.added.insert(path);
                }
                compare_at(before, after, path, c, lists);
                path.pop();
            }
        }
        (Some(old), Some(new)) => {
            if old != new {
                c.modified.insert(path);
                if old.is_object() || old.is_array() {
                    let mut below = FieldSet::default();
                    every_path(old, path, &mut below, lists);
                    let mut own = FieldSet::default();
                    own.insert(path);
                    c.removed.union_with(&below.difference(&own));
                }
            }
        }
    }
}

/// Adds the paths of a value that appeared at `path` (see [`compare`]).
fn added(
    value: &Value,
    path: &mut Vec<PathElement>,
    set: &mut FieldSet,
    lists: &dyn ListSemantics,
) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            if path.len() == 2 && path.first() == Some(&PathElement::Field("metadata".to_owned())) {
                set.insert(path);
            }
            for (name, inner) in map {
                path.push(PathElement::Field(name.clone()));
                added(inner, path, set, lists);
                path.pop();
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let list_type = lists.list_type(path);
            let Ok(list) = entries(&list_type, path, items).map_err(drop) else {
                set.insert(path);
                return;
            };
            if list_type == ListType::Atomic {
                set.insert(path);
                return;
            }
            if path.last() != Some(&PathElement::Field("containers".to_owned())) {
                set.insert(path);
            }
            for (element, item) in list {
                path.push(element);
                set.insert(path);
                if let Value::Object(map) = item {
                    for (name, inner) in map {
                        path.push(PathElement::Field(name.clone()));
                        added(inner, path, set, lists);
                        path.pop();
                    }
                }
                path.pop();
            }
        }
        _ => set.insert(path),
    }
}

/// Adds `path` and every path below it in `value`.
fn every_path(
    value: &Value,
    path: &mut Vec<PathElement>,
    set: &mut FieldSet,
    lists: &dyn ListSemantics,
) {
    set.insert(path);
    match value {
        Value::Object(map) => {
            for (name, inner) in map {
                path.push(PathElement::Field(name.clone()));
                every_path(inner, path, set, lists);
                path.pop();
            }
        }
        Value::Array(items) => {
            let list_type = lists.list_type(path);
            if list_type == ListType::Atomic {
                return;
            }
            if let Ok(list) = entries(&list_type, path, items) {
                for (element, item) in list {
                    path.push(element);
                    every_path(item, path, set, lists);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::fake_api_server::list_semantics::BuiltinLists;

    fn fields(value: &Value) -> Value {
        fields_of(value.as_object().unwrap(), &BuiltinLists)
            .unwrap()
            .to_fields_v1()
    }

    #[test]
    fn an_applied_object_owns_its_leaves_and_list_entries() {
        let deployment = json!({"spec": {"replicas": 2, "selector": {"matchLabels": {"app": "w"}},
            "template": {"spec": {"containers": [{"name": "web", "image": "nginx",
                "ports": [{"containerPort": 80}], "args": ["a"], "resources": {}}],
            "tolerations": [{"key": "k"}]}}},
            "metadata": {"labels": {"app": "w"}, "finalizers": ["x"]}});
        assert_eq!(
            fields(&deployment),
            json!({
                "f:metadata": {"f:labels": {"f:app": {}}, "f:finalizers": {"v:\"x\"": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:selector": {"f:matchLabels": {"f:app": {}}},
                    "f:template": {"f:spec": {
                        "f:containers": {"k:{\"name\":\"web\"}": {
                            ".": {}, "f:args": {}, "f:image": {}, "f:name": {}, "f:resources": {},
                            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                                ".": {}, "f:containerPort": {}}},
                        }},
                        "f:tolerations": {},
                    }},
                },
            })
        );
        let nameless = json!({"spec": {"containers": [{"image": "x"}]}});
        let err = fields_of(nameless.as_object().unwrap(), &BuiltinLists).unwrap_err();
        assert_eq!(
            err,
            ".spec.containers: element 0: associative list with keys has an element that omits \
             key field \"name\" (and doesn't have default value)"
        );
    }

    #[test]
    fn a_comparison_sees_modified_added_and_removed_paths() {
        let old = json!({"data": {"a": "1", "b": "2"}, "spec": {"containers": [
            {"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}});
        let new = json!({"data": {"a": "9", "c": "3"}, "metadata": {"labels": {"l": "v"}},
            "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "c", "image": "z"}]}});
        let c = compare(&old, &new, &BuiltinLists);
        assert_eq!(c.modified.to_fields_v1(), json!({"f:data": {"f:a": {}}}));
        assert_eq!(
            c.added.to_fields_v1(),
            json!({"f:data": {"f:c": {}}, "f:metadata": {"f:labels": {".": {}, "f:l": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}})
        );
        assert_eq!(
            c.removed.to_fields_v1(),
            json!({"f:data": {"f:b": {}},
                "f:spec": {"f:containers": {"k:{\"name\":\"b\"}": {".": {}, "f:image": {}, "f:name": {}}}}})
        );
        assert_eq!(compare(&new, &new, &BuiltinLists), Comparison::default());
    }
}
