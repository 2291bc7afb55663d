//! Server-side apply with field ownership ([`apply`]): the applied configuration merges into
//! the live object by the [`ListSemantics`] (keyed lists by key, sets as unions, atomic lists
//! replaced); the applier then owns exactly the configuration's fields, loses the fields it
//! applied before and no longer applies (removed from the object unless another manager owns
//! them), and changing a field another manager owns is a 409 `Conflict` naming each field,
//! unless the apply is forced (it then takes the fields). Applying the value a field already has
//! shares its ownership.
//!
//! An object with fields and no `managedFields` (written through the Rust handle) is first
//! given an `Update` entry of manager `before-first-apply` owning all its fields, as
//! kube-apiserver does, so that an apply changing them conflicts.

use kcache_reflector::{StatusCause, StatusDetails};
use kcache_store::DynamicObject;
use kcache_testing::generated::rfc3339;
use serde_json::{Map, Value};

use super::field_manager::{FieldManager, Operation};
use super::field_set::{FieldSet, PathElement, path_string};
use super::limits::MAX_OBJECT;
use super::list_semantics::{ListSemantics, ListType};
use super::managed_fields::{Entry, MANAGED_FIELDS, ManagedFields, strip_server_fields};
use super::object_fields::{compare, entry_element, fields_of};
use super::served_resource::ServedResource;
use super::status::ApiError;
use super::util::{json_len_within, now_secs};

/// The manager that owns the fields of an object first applied to without `managedFields`.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// The object that applying `applied` by `manager` to `live` (none: the apply creates it)
/// makes, with its `managedFields`; the write's own checks (name, resource version) follow.
///
/// # Errors
///
/// 409 `Conflict` with a cause per field another manager owns with another value (unless
/// forced); 500 for a configuration whose keyed lists miss a key field, as kube-apiserver
/// answers; 400 for a configuration that is not an object.
pub(crate) fn apply(
    live: Option<&DynamicObject>,
    applied: &Value,
    manager: &FieldManager,
    resource: &ServedResource,
    lists: &dyn ListSemantics,
    now: &str,
) -> Result<DynamicObject, ApiError> {
    let api_version = resource.api.api_version();
    let typed_error = |e: String| {
        ApiError::new(
            500,
            "InternalError",
            &format!(
                "Internal error occurred: failed to create typed patch object ({api_version}, \
                 Kind={}): {e}",
                resource.kind
            ),
        )
    };
    let Value::Object(mut config) = applied.clone() else {
        return Err(ApiError::bad_request("the applied object is not an object"));
    };
    if let Some(Value::Object(metadata)) = config.get_mut("metadata") {
        metadata.remove(MANAGED_FIELDS);
    }
    if manager.status_subresource {
        config.remove("status");
    }
    let mut owned_config = Value::Object(config.clone());
    strip_server_fields(&mut owned_config, manager.status_subresource);
    let applied_set = match &owned_config {
        Value::Object(members) => fields_of(members, lists).map_err(typed_error)?,
        _ => FieldSet::default(),
    };

    let mut live_json = match live {
        Some(obj) => serde_json::to_value(obj).map_err(super::status::internal)?,
        None => Value::Object(Map::new()),
    };
    if let Some(Value::Object(metadata)) = live_json.get_mut("metadata") {
        metadata.remove(MANAGED_FIELDS);
    }
    let mut live_owned = live_json.clone();
    strip_server_fields(&mut live_owned, manager.status_subresource);

    let mut ownership = live.map(ManagedFields::of).unwrap_or_default();
    if ownership.entries.is_empty()
        && let Some(obj) = live
    {
        ownership
            .entries
            .extend(before_first_apply(obj, &live_owned, manager, lists));
    }

    let mut merged = live_json.clone();
    merge(&mut merged, &Value::Object(config), &mut Vec::new(), lists).map_err(typed_error)?;

    let entry = ownership.entry_mut(manager, &api_version, now);
    let last = std::mem::replace(&mut entry.fields, applied_set.clone());
    let is_new = entry.time.as_deref() == Some(now) && last.is_empty();
    entry.api_version.clone_from(&api_version);
    let index = ownership
        .entries
        .iter()
        .position(|e| e.is_of(manager, &api_version));
    let owned = ownership
        .entries
        .iter()
        .fold(FieldSet::default(), |all, e| all.union(&e.fields));
    prune(&mut merged, &last, Some(&owned), &mut Vec::new(), lists);

    let mut merged_owned = merged.clone();
    strip_server_fields(&mut merged_owned, manager.status_subresource);
    let comparison = compare(&live_owned, &merged_owned, lists);
    if !manager.force {
        check_conflicts(
            &ownership.entries,
            index,
            &comparison.modified.union(&comparison.added),
        )?;
    }
    ownership.disown(&comparison, index);
    if let Some(entry) = index.and_then(|i| ownership.entries.get_mut(i))
        && (merged != live_json || is_new || last != applied_set)
    {
        entry.time = Some(now.to_owned());
    }
    let mut obj: DynamicObject = serde_json::from_value(merged).map_err(|e| {
        ApiError::new(
            422,
            "Invalid",
            &format!("the applied object is not a valid object: {e}"),
        )
    })?;
    ownership.store(&mut obj);
    Ok(obj)
}

/// The entry of manager `before-first-apply` owning every field of `live` (`owned`, its JSON
/// without the fields no manager owns), if it has any.
fn before_first_apply(
    live: &DynamicObject,
    owned: &Value,
    manager: &FieldManager,
    lists: &dyn ListSemantics,
) -> Option<Entry> {
    let Value::Object(members) = owned else {
        return None;
    };
    let fields = fields_of(members, lists).ok().filter(|f| !f.is_empty())?;
    let before = FieldManager {
        name: BEFORE_FIRST_APPLY.to_owned(),
        operation: Operation::Update,
        force: false,
        status_subresource: manager.status_subresource,
        lists: manager.lists,
    };
    let mut entry = Entry::new(&before, live.api_version.as_deref().unwrap_or_default(), "");
    entry.time = None;
    entry.fields = fields;
    Some(entry)
}

/// [`apply`] with the built-in list types at the current time, for an HTTP apply; 413 for an
/// object over [`MAX_OBJECT`] bytes of JSON, as for any patch.
///
/// # Errors
///
/// As [`apply`]'s.
pub(crate) fn apply_now(
    live: Option<&DynamicObject>,
    applied: &Value,
    manager: &FieldManager,
    resource: &ServedResource,
) -> Result<DynamicObject, ApiError> {
    let obj = apply(
        live,
        applied,
        manager,
        resource,
        &manager.lists,
        &rfc3339(now_secs()),
    )?;
    if json_len_within(&obj, MAX_OBJECT).is_none() {
        return Err(ApiError::entity_too_large(&format!(
            "the patched object is over the limit of {MAX_OBJECT} bytes"
        )));
    }
    Ok(obj)
}

/// 409 if a change of an apply (`changed`) is to a field an entry other than the applier's
/// (`applier`) owns.
fn check_conflicts(
    entries: &[Entry],
    applier: Option<usize>,
    changed: &FieldSet,
) -> Result<(), ApiError> {
    let mut conflicts: Vec<(&Entry, Vec<PathElement>)> = Vec::new();
    for (i, other) in entries.iter().enumerate() {
        if Some(i) != applier {
            for path in other.fields.intersection(changed).paths() {
                conflicts.push((other, path));
            }
        }
    }
    if conflicts.is_empty() {
        return Ok(());
    }
    conflicts.sort_by(|a, b| {
        (&a.0.manager, &a.0.operation, &a.0.api_version).cmp(&(
            &b.0.manager,
            &b.0.operation,
            &b.0.api_version,
        ))
    });
    Err(conflict_error(&conflicts))
}

/// The 409 of an apply that would change fields other managers own, worded as kube-apiserver
/// words it.
fn conflict_error(conflicts: &[(&Entry, Vec<PathElement>)]) -> ApiError {
    let causes = conflicts
        .iter()
        .map(|(entry, path)| StatusCause {
            reason: Some("FieldManagerConflict".to_owned()),
            message: Some(format!("conflict with {}", entry.describe())),
            field: Some(path_string(path)),
        })
        .collect();
    let message = if let [(entry, path)] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            entry.describe(),
            path_string(path)
        )
    } else {
        let mut lines: Vec<String> = Vec::new();
        let mut previous: Option<String> = None;
        for (entry, path) in conflicts {
            let who = entry.describe();
            if previous.as_ref() != Some(&who) {
                lines.push(format!("conflicts with {who}:"));
                previous = Some(who);
            }
            lines.push(format!("- {}", path_string(path)));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    ApiError::with_details(
        409,
        "Conflict",
        &message,
        StatusDetails {
            causes,
            ..StatusDetails::default()
        },
    )
}

/// Merges an applied configuration into `live` (at `path`): objects member by member (`null`
/// removes), set and keyed lists entry by entry, everything else replaced.
fn merge(
    live: &mut Value,
    config: &Value,
    path: &mut Vec<PathElement>,
    lists: &dyn ListSemantics,
) -> Result<(), String> {
    match (live, config) {
        (Value::Object(live), Value::Object(config)) => {
            for (name, value) in config {
                if value.is_null() {
                    live.remove(name);
                    continue;
                }
                path.push(PathElement::Field(name.clone()));
                if let Some(existing) = live.get_mut(name) {
                    merge(existing, value, path, lists)?;
                } else {
                    let mut fresh = Value::Null;
                    merge(&mut fresh, value, path, lists)?;
                    live.insert(name.clone(), fresh);
                }
                path.pop();
            }
            Ok(())
        }
        (Value::Array(live), Value::Array(config)) => {
            let list_type = lists.list_type(path);
            if list_type == ListType::Atomic {
                live.clone_from(config);
                return Ok(());
            }
            let merged = merge_list(live, config, &list_type, path, lists)?;
            *live = merged;
            Ok(())
        }
        (live, Value::Object(config)) => {
            *live = Value::Object(Map::new());
            merge(live, &Value::Object(config.clone()), path, lists)
        }
        (live, config) => {
            live.clone_from(config);
            Ok(())
        }
    }
}

/// The entries of a set or keyed list merged: the live order kept, the entries both have
/// merged where the configuration has them, its new entries where it has them.
fn merge_list(
    live: &[Value],
    config: &[Value],
    list_type: &ListType,
    path: &mut Vec<PathElement>,
    lists: &dyn ListSemantics,
) -> Result<Vec<Value>, String> {
    let elements = |items: &[Value]| {
        items
            .iter()
            .enumerate()
            .map(|(i, item)| entry_element(list_type, path, i, item))
            .collect::<Result<Vec<_>, _>>()
    };
    let (live_elements, config_elements) = (elements(live)?, elements(config)?);
    let mut out = Vec::with_capacity(live.len().max(config.len()));
    let mut done: Vec<&PathElement> = Vec::new();
    let (mut l, mut r) = (0, 0);
    while l < live.len() || r < config.len() {
        if let Some(element) = live_elements.get(l) {
            let in_config = config_elements.contains(element);
            if !in_config {
                out.push(live[l].clone());
                l += 1;
                continue;
            }
            if done.contains(&element) {
                l += 1;
                continue;
            }
        }
        let Some(element) = config_elements.get(r) else {
            l += 1;
            continue;
        };
        let mut item = live_elements
            .iter()
            .position(|e| e == element)
            .map_or(Value::Null, |i| live[i].clone());
        path.push(element.clone());
        merge(&mut item, &config[r], path, lists)?;
        path.pop();
        out.push(item);
        done.push(element);
        r += 1;
    }
    Ok(out)
}

/// Removes from `value` (at `path`) the paths of `last` (what the applier applied before) that
/// no manager owns any more (`owned`, the applier's new fields included), with everything
/// below them; a map emptied so is removed too.
fn prune(
    value: &mut Value,
    last: &FieldSet,
    owned: Option<&FieldSet>,
    path: &mut Vec<PathElement>,
    lists: &dyn ListSemantics,
) {
    for element in last.elements() {
        if !owned.is_some_and(|o| o.has(element)) {
            remove_element(value, element, path, lists);
            continue;
        }
        let Some(last_below) = last.child(element) else {
            continue;
        };
        path.push(element.clone());
        let list_type = list_type_of_parent(value, path, lists);
        if let Some(child) = element_mut(value, element, list_type.as_ref(), path) {
            let was_empty = child.as_object().is_some_and(Map::is_empty);
            prune(
                child,
                last_below,
                owned.and_then(|o| o.child(element)),
                path,
                lists,
            );
            let emptied = !was_empty && child.as_object().is_some_and(Map::is_empty);
            if emptied
                && let (PathElement::Field(name), Value::Object(members)) = (element, &mut *value)
            {
                members.remove(name);
            }
        }
        path.pop();
    }
}

/// The list type of the list holding the entry at `path` (whose last element is the entry),
/// when `value` is that list.
fn list_type_of_parent(
    value: &Value,
    path: &[PathElement],
    lists: &dyn ListSemantics,
) -> Option<ListType> {
    let parent = path.split_last()?.1;
    value.is_array().then(|| lists.list_type(parent))
}

/// The member or list entry `element` of `value`.
fn element_mut<'v>(
    value: &'v mut Value,
    element: &PathElement,
    list_type: Option<&ListType>,
    path: &[PathElement],
) -> Option<&'v mut Value> {
    match (value, element) {
        (Value::Object(members), PathElement::Field(name)) => members.get_mut(name),
        (Value::Array(items), _) => {
            let list_type = list_type?;
            let parent = path.split_last()?.1;
            items.iter_mut().enumerate().find_map(|(i, item)| {
                (entry_element(list_type, parent, i, item).ok().as_ref() == Some(element))
                    .then_some(item)
            })
        }
        _ => None,
    }
}

/// Removes the member or list entry `element` from `value` (at `path`).
fn remove_element(
    value: &mut Value,
    element: &PathElement,
    path: &[PathElement],
    lists: &dyn ListSemantics,
) {
    match (value, element) {
        (Value::Object(members), PathElement::Field(name)) => {
            members.remove(name);
        }
        (Value::Array(items), PathElement::Key(_) | PathElement::Value(_)) => {
            let list_type = lists.list_type(path);
            let mut index = 0;
            items.retain(|item| {
                let keep =
                    entry_element(&list_type, path, index, item).ok().as_ref() != Some(element);
                index += 1;
                keep
            });
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::fake_api_server::list_semantics::BuiltinLists;

    fn applier(name: &str, force: bool) -> FieldManager {
        FieldManager {
            name: name.to_owned(),
            operation: Operation::Apply,
            force,
            status_subresource: false,
            lists: crate::fake_api_server::list_semantics::SchemaLists(None),
        }
    }

    fn deployments() -> ServedResource {
        ServedResource::deployments()
    }

    fn deployment(replicas: i64, containers: &Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns"},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": containers}}}})
    }

    fn run(
        live: Option<&DynamicObject>,
        applied: &Value,
        m: &FieldManager,
    ) -> Result<DynamicObject, ApiError> {
        apply(live, applied, m, &deployments(), &BuiltinLists, "T")
    }

    fn managers(obj: &DynamicObject) -> Vec<(String, Value)> {
        obj.metadata.other[MANAGED_FIELDS]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["manager"].as_str().unwrap().to_owned(),
                    e["fieldsV1"].clone(),
                )
            })
            .collect()
    }

    #[test]
    fn applies_share_equal_values_conflict_on_others_and_force_takes_them() {
        let a = run(
            None,
            &deployment(2, &json!([{"name": "x", "image": "1"}])),
            &applier("a", false),
        )
        .unwrap();
        assert_eq!(
            managers(&a),
            [(
                "a".to_owned(),
                json!({"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {
                "f:containers": {"k:{\"name\":\"x\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}})
            )]
        );
        // Same replicas, another container: shared, and a's container stays.
        let b = run(
            Some(&a),
            &deployment(2, &json!([{"name": "y", "image": "2"}])),
            &applier("b", false),
        )
        .unwrap();
        let containers = &b.data["spec"]["template"]["spec"]["containers"];
        assert_eq!(
            containers,
            &json!([{"name": "x", "image": "1"}, {"name": "y", "image": "2"}])
        );
        assert_eq!(managers(&b).len(), 2);
        assert_eq!(managers(&b)[1].1["f:spec"]["f:replicas"], json!({}));
        // Other replicas: a conflict with a.
        let err = run(
            Some(&b),
            &deployment(3, &json!([{"name": "y", "image": "2"}])),
            &applier("b", false),
        )
        .unwrap_err();
        assert_eq!(err.code, 409);
        let crate::fake_api_server::status::ErrorBody::Status(status) = &err.body else {
            panic!()
        };
        assert_eq!(
            status.message.as_deref(),
            Some("Apply failed with 1 conflict: conflict with \"a\": .spec.replicas")
        );
        let cause = &status.details.as_ref().unwrap().causes[0];
        assert_eq!(cause.reason.as_deref(), Some("FieldManagerConflict"));
        assert_eq!(cause.field.as_deref(), Some(".spec.replicas"));
        assert_eq!(cause.message.as_deref(), Some("conflict with \"a\""));
        // Forced: b takes replicas from a.
        let forced = run(
            Some(&b),
            &deployment(3, &json!([{"name": "y", "image": "2"}])),
            &applier("b", true),
        )
        .unwrap();
        assert_eq!(forced.data["spec"]["replicas"], 3);
        let a_fields = &managers(&forced)[0].1;
        assert_eq!(a_fields["f:spec"].get("f:replicas"), None);
        // a stops applying its container: removed, nobody else owns it.
        let a2 = run(
            Some(&forced),
            &json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": []}}}}),
            &applier("a", false),
        )
        .unwrap();
        assert_eq!(
            a2.data["spec"]["template"]["spec"]["containers"],
            json!([{"name": "y", "image": "2"}])
        );
        assert_eq!(managers(&a2).len(), 1, "{:?}", managers(&a2));
    }

    #[test]
    fn an_unapplied_field_owned_by_another_manager_stays() {
        let a = run(
            None,
            &deployment(2, &json!([{"name": "x", "image": "1"}])),
            &applier("a", false),
        )
        .unwrap();
        let b = run(
            Some(&a),
            &deployment(2, &json!([{"name": "x", "image": "1"}])),
            &applier("b", false),
        )
        .unwrap();
        let mut shrunk = deployment(2, &json!([{"name": "x", "image": "1"}]));
        shrunk["spec"].as_object_mut().unwrap().remove("replicas");
        let a2 = run(Some(&b), &shrunk, &applier("a", false)).unwrap();
        assert_eq!(a2.data["spec"]["replicas"], 2);
        let b2 = run(Some(&a2), &shrunk, &applier("b", false)).unwrap();
        assert_eq!(b2.data["spec"].get("replicas"), None);
    }

    #[test]
    fn first_apply_to_an_unmanaged_object_conflicts_with_before_first_apply() {
        let live: DynamicObject = serde_json::from_value(deployment(1, &json!([]))).unwrap();
        let err = run(
            Some(&live),
            &deployment(2, &json!([])),
            &applier("a", false),
        )
        .unwrap_err();
        assert_eq!(
            crate::fake_api_server::FakeApiError::from(err).message,
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1: \
             .spec.replicas"
        );
        let nameless = run(
            None,
            &deployment(1, &json!([{"image": "x"}])),
            &applier("a", false),
        )
        .unwrap_err();
        assert_eq!(nameless.code, 500);
    }

    #[test]
    fn lists_merge_by_their_semantics() {
        let mut live = json!({"metadata": {"finalizers": ["a", "b"]}, "spec": {"tolerations": [{"key": "x"}],
            "ports": [{"port": 80, "name": "http"}, {"port": 443}]}});
        let config = json!({"metadata": {"finalizers": ["c", "a"]}, "spec": {"tolerations": [{"key": "y"}],
            "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}, {"port": 53, "protocol": "UDP"}]}});
        merge(&mut live, &config, &mut Vec::new(), &BuiltinLists).unwrap();
        assert_eq!(
            live,
            json!({"metadata": {"finalizers": ["c", "a", "b"]}, "spec": {"tolerations": [{"key": "y"}],
                "ports": [{"port": 80, "name": "http", "protocol": "TCP", "targetPort": 8080},
                    {"port": 443}, {"port": 53, "protocol": "UDP"}]}})
        );
    }
}
