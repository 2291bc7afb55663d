//! Strategic merge patch (`application/strategic-merge-patch+json`), driven by the kind's
//! schema ([`schema`](super::schema)) for built-in kinds.
//!
//! - Maps merge as in a merge patch (RFC 7386), `null` removes.
//! - A list whose schema has `x-kubernetes-patch-strategy` with `merge` merges with the stored
//!   one: entries of objects by `x-kubernetes-patch-merge-key` (a patch entry merges into the
//!   stored entry with the same key, new keys append), lists of scalars as a union
//!   (`finalizers`). Any other list replaces the stored one.
//! - The directives kubectl writes keep their meaning: `$setElementOrder/<list>` orders the list
//!   (and, without a schema, names the merge key: the one key of its entries, or marks a list of
//!   scalars as a set); `$deleteFromPrimitiveList/<list>` removes scalars; `$patch: delete` in
//!   an entry removes the stored entry with its key; `$patch: replace` / `$patch: delete` on a
//!   map replace or remove it, in a list replace the list; `$retainKeys` keeps only the members
//!   it names.
//!
//! Kinds without a vendored schema (custom resources) never get here: kube-apiserver refuses a
//! strategic merge patch for them with 415, and so does the fake server.

use serde_json::{Map, Value};

use super::schema::Node;

const SET_ORDER: &str = "$setElementOrder/";
const DELETE_FROM: &str = "$deleteFromPrimitiveList/";

/// Applies strategic merge patch `patch` to `target`, in place; `schema` is `target`'s node in
/// the kind's schema, `None` where the schema says nothing (then lists replace unless the
/// patch's directives say how to merge them).
pub(crate) fn merge(target: &mut Value, patch: &Value, schema: Option<Node>) {
    let Value::Object(members) = patch else {
        patch.clone_into(target);
        return;
    };
    match members.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *target = Value::Object(without_directives(members));
            return;
        }
        Some("delete") => {
            *target = Value::Object(Map::new());
            return;
        }
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target) = target else {
        return;
    };
    for (key, value) in members {
        if key.starts_with('$') {
            continue;
        }
        let order = members
            .get(&format!("{SET_ORDER}{key}"))
            .and_then(Value::as_array);
        let field = schema.and_then(|n| n.field(key));
        match value {
            Value::Null => {
                target.remove(key);
            }
            Value::Object(child)
                if child.get("$patch").and_then(Value::as_str) == Some("delete") =>
            {
                target.remove(key);
            }
            Value::Array(items)
                if order.is_some()
                    || has_patch_directive(items)
                    || field.is_some_and(Node::merges) =>
            {
                let stored = target.entry(key.as_str()).or_insert(Value::Null);
                merge_list(stored, items, order.map(Vec::as_slice), field);
            }
            _ => merge(
                target.entry(key.as_str()).or_insert(Value::Null),
                value,
                field,
            ),
        }
    }
    for (key, value) in members {
        if let Some(list) = key.strip_prefix(DELETE_FROM)
            && let (Some(Value::Array(stored)), Some(gone)) =
                (target.get_mut(list), value.as_array())
        {
            stored.retain(|v| !gone.contains(v));
        }
        if let Some(list) = key.strip_prefix(SET_ORDER)
            && !members.contains_key(list)
            && let (Some(stored @ Value::Array(_)), Some(order)) =
                (target.get_mut(list), value.as_array())
        {
            let field = schema.and_then(|n| n.field(list));
            let key = field
                .and_then(Node::patch_merge_key)
                .or_else(|| merge_key(order));
            reorder(stored, order, key);
        }
    }
    if let Some(keep) = members.get("$retainKeys").and_then(Value::as_array) {
        target.retain(|k, _| keep.iter().any(|w| w.as_str() == Some(k)));
    }
}

fn without_directives(members: &Map<String, Value>) -> Map<String, Value> {
    members
        .iter()
        .filter(|(k, _)| !k.starts_with('$'))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn has_patch_directive(items: &[Value]) -> bool {
    items.iter().any(|i| i.get("$patch").is_some())
}

/// The merge key a `$setElementOrder` list names: the one member of its entries.
fn merge_key(order: &[Value]) -> Option<&str> {
    let first = order.first()?.as_object()?;
    if first.len() != 1 {
        return None;
    }
    first.keys().next().map(String::as_str)
}

/// Merges patch entries `items` into the list `stored` by the merge key of its schema `list`,
/// or else the one `order` names (a set of scalars when the entries are scalars), then puts
/// the list in `order`.
fn merge_list(stored: &mut Value, items: &[Value], order: Option<&[Value]>, list: Option<Node>) {
    let entries = list.and_then(Node::items);
    let key = list.and_then(Node::patch_merge_key);
    let key = key.or_else(|| order.and_then(merge_key)).or_else(|| {
        items
            .iter()
            .find_map(|i| i.as_object().filter(|o| o.contains_key("$patch")))
            .and_then(|o| o.keys().find(|k| !k.starts_with('$')))
            .map(String::as_str)
    });
    if items
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        *stored = Value::Array(
            items
                .iter()
                .filter(|i| i.get("$patch").is_none())
                .cloned()
                .collect(),
        );
        return;
    }
    if !stored.is_array() {
        *stored = Value::Array(Vec::new());
    }
    let Value::Array(list) = stored else {
        return;
    };
    for item in items {
        let same = |existing: &Value| match key {
            Some(k) => item.get(k).is_some() && existing.get(k) == item.get(k),
            None => existing == item,
        };
        let found = list.iter().position(same);
        match (found, item.get("$patch").and_then(Value::as_str)) {
            (Some(i), Some("delete")) => {
                list.remove(i);
            }
            (Some(i), _) if key.is_some() => merge(&mut list[i], item, entries),
            // Deleting what is not there, adding a scalar that is.
            (None, Some("delete")) | (Some(_), _) => {}
            (None, _) if item.is_object() => {
                let mut added = Value::Null;
                merge(&mut added, item, entries);
                list.push(added);
            }
            (None, _) => list.push(item.clone()),
        }
    }
    if let Some(order) = order {
        reorder(stored, order, key);
    }
}

/// Sorts the list `stored` as `order` lists its entries (by merge key `key`, or by value);
/// entries it does not name keep their relative order, after those it names.
fn reorder(stored: &mut Value, order: &[Value], key: Option<&str>) {
    let Value::Array(list) = stored else {
        return;
    };
    let rank = |v: &Value| {
        order
            .iter()
            .position(|o| match key {
                Some(k) => o.get(k).is_some() && o.get(k) == v.get(k),
                None => o == v,
            })
            .unwrap_or(order.len())
    };
    list.sort_by_key(rank);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn patched(mut target: Value, patch: &Value) -> Value {
        merge(&mut target, patch, None);
        target
    }

    #[test]
    fn maps_merge_and_lists_are_replaced_without_directives() {
        let target =
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"ports": [1, 2]}});
        let patch = json!({"metadata": {"labels": {"a": null, "c": "3"}}, "spec": {"ports": [3]}});
        assert_eq!(
            patched(target, &patch),
            json!({"metadata": {"labels": {"b": "2", "c": "3"}}, "spec": {"ports": [3]}})
        );
    }

    #[test]
    fn kubectl_apply_directives_merge_lists_by_key() {
        let target = json!({"spec": {"containers": [
            {"name": "a", "image": "a:1", "ports": [80]},
            {"name": "b", "image": "b:1"},
        ], "finalizers": ["x", "y"]}});
        // What `kubectl apply` sends when container b's image changes, c is added, a removed
        // and finalizer y dropped.
        let patch = json!({"spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "b"}],
            "containers": [
                {"name": "b", "image": "b:2"},
                {"name": "c", "image": "c:1"},
                {"name": "a", "$patch": "delete"},
            ],
            "$deleteFromPrimitiveList/finalizers": ["y"],
        }});
        assert_eq!(
            patched(target, &patch),
            json!({"spec": {"containers": [
                {"name": "c", "image": "c:1"},
                {"name": "b", "image": "b:2"},
            ], "finalizers": ["x"]}})
        );
    }

    #[test]
    fn primitive_sets_replace_and_retain_keys() {
        let target = json!({"f": ["x"], "m": {"a": 1, "b": 2}, "s": {"keep": 1, "drop": 2}});
        let patch = json!({
            "$setElementOrder/f": ["z", "x"],
            "f": ["z"],
            "m": {"$patch": "replace", "c": 3},
            "s": {"$retainKeys": ["keep", "new"], "new": 3},
        });
        assert_eq!(
            patched(target, &patch),
            json!({"f": ["z", "x"], "m": {"c": 3}, "s": {"keep": 1, "new": 3}})
        );
        let deleted = patched(
            json!({"m": {"a": 1}, "n": 1}),
            &json!({"m": {"$patch": "delete"}}),
        );
        assert_eq!(deleted, json!({"n": 1}));
    }

    #[test]
    fn the_schema_merges_lists_by_key_and_unions_sets() {
        let pods = crate::fake_api_server::schema::for_resource(
            &crate::fake_api_server::ServedResource::pods(),
        )
        .unwrap();
        let target = json!({
            "metadata": {"finalizers": ["a"]},
            "spec": {"containers": [{"name": "web", "image": "w:1", "args": ["x"]},
                                    {"name": "log", "image": "l:1"}],
                     "tolerations": [{"key": "k"}]},
        });
        let patch = json!({
            "metadata": {"finalizers": ["b", "a"]},
            "spec": {"containers": [{"name": "web", "image": "w:2", "args": ["y"]},
                                    {"name": "side", "image": "s:1", "env": null},
                                    {"name": "log", "$patch": "delete"}],
                     "tolerations": [{"key": "j"}]},
        });
        let mut out = target;
        merge(&mut out, &patch, Some(pods.root));
        assert_eq!(
            out,
            json!({
                "metadata": {"finalizers": ["a", "b"]},
                "spec": {"containers": [{"name": "web", "image": "w:2", "args": ["y"]},
                                        {"name": "side", "image": "s:1"}],
                         "tolerations": [{"key": "j"}]},
            })
        );
    }
}
