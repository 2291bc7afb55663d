//! `metadata.managedFields`: the entries of an object (one per manager, operation, and for
//! updates API version), read and written as kube-apiserver writes them, and the ownership an
//! `Update` (a create, a PUT, a patch other than an apply) takes: the fields it changed, taken
//! from every other manager ([`record_update`]). Applies are [`apply`](super::apply)'s.
//!
//! No entry owns the fields the server sets (`apiVersion`, `kind`, and `metadata`'s `name`,
//! `namespace`, `uid`, `resourceVersion`, `generation`, `creationTimestamp`, `selfLink`,
//! `managedFields`), nor `status` for a kind with a status subresource. Entries whose field set
//! is empty are dropped; an entry's `time` is that of the last write that took fields for it.
//! Entries are written Apply first, then by time, manager, API version and subresource. Only
//! HTTP writes keep entries: the Rust handle's writes (benchmarks prepare 100,000 of them) leave
//! `managedFields` as they find them.

use std::fmt::Write as _;

use kcache_store::DynamicObject;
use kcache_testing::generated::rfc3339;
use serde_json::{Map, Value};

use super::field_manager::{FieldManager, Operation};
use super::field_set::FieldSet;
use super::list_semantics::ListSemantics;
use super::object_fields::{Comparison, compare};
use super::util::now_secs;

/// The metadata field.
pub(crate) const MANAGED_FIELDS: &str = "managedFields";

/// The metadata fields no manager owns.
const SERVER_METADATA: [&str; 9] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "selfLink",
    "clusterName",
    MANAGED_FIELDS,
];

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) manager: String,
    pub(crate) operation: String,
    pub(crate) api_version: String,
    pub(crate) time: Option<String>,
    pub(crate) subresource: String,
    pub(crate) fields: FieldSet,
}

impl Entry {
    /// A new entry of `manager` for a write of `api_version` at `time`.
    pub(crate) fn new(manager: &FieldManager, api_version: &str, time: &str) -> Self {
        Self {
            manager: manager.name.clone(),
            operation: manager.operation.as_str().to_owned(),
            api_version: api_version.to_owned(),
            time: Some(time.to_owned()),
            subresource: String::new(),
            fields: FieldSet::default(),
        }
    }

    /// Whether this is the entry `manager` writes for a write of `api_version`: same manager,
    /// operation and subresource, and for updates the same API version (an applier has one
    /// entry whatever the version it applies).
    pub(crate) fn is_of(&self, manager: &FieldManager, api_version: &str) -> bool {
        self.manager == manager.name
            && self.operation == manager.operation.as_str()
            && self.subresource.is_empty()
            && (manager.operation == Operation::Apply || self.api_version == api_version)
    }

    /// The manager as conflict messages name it: `"name"`, plus `using <apiVersion>` for an
    /// update.
    pub(crate) fn describe(&self) -> String {
        let mut out = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            let _ = write!(out, " with subresource {:?}", self.subresource);
        }
        if self.operation == "Update" {
            let _ = write!(out, " using {}", self.api_version);
        }
        out
    }

    fn decode(value: &Value) -> Option<Self> {
        let text = |name: &str| value.get(name).and_then(Value::as_str).map(str::to_owned);
        let fields = match value.get("fieldsV1") {
            Some(v) => FieldSet::from_fields_v1(v).ok()?,
            None => FieldSet::default(),
        };
        Some(Self {
            manager: text("manager").unwrap_or_default(),
            operation: text("operation").unwrap_or_default(),
            api_version: text("apiVersion").unwrap_or_default(),
            time: text("time"),
            subresource: text("subresource").unwrap_or_default(),
            fields,
        })
    }

    fn encode(&self) -> Value {
        let mut out = Map::new();
        out.insert("manager".into(), Value::from(self.manager.as_str()));
        out.insert("operation".into(), Value::from(self.operation.as_str()));
        out.insert("apiVersion".into(), Value::from(self.api_version.as_str()));
        if let Some(time) = &self.time {
            out.insert("time".into(), Value::from(time.as_str()));
        }
        out.insert("fieldsType".into(), Value::from("FieldsV1"));
        out.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if !self.subresource.is_empty() {
            out.insert("subresource".into(), Value::from(self.subresource.as_str()));
        }
        Value::Object(out)
    }
}

/// The entries of an object, and those it has that are not readable (kept as they are).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ManagedFields {
    pub(crate) entries: Vec<Entry>,
    unreadable: Vec<Value>,
}

impl ManagedFields {
    /// The entries of `managedFields` JSON (none if it is not a list).
    pub(crate) fn decode(value: Option<&Value>) -> Self {
        let mut out = Self::default();
        for item in value.and_then(Value::as_array).into_iter().flatten() {
            match Entry::decode(item) {
                Some(entry) => out.entries.push(entry),
                None => out.unreadable.push(item.clone()),
            }
        }
        out
    }

    /// The entries of `obj`.
    pub(crate) fn of(obj: &DynamicObject) -> Self {
        Self::decode(obj.metadata.other.get(MANAGED_FIELDS))
    }

    /// Whether there is no entry.
    fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.unreadable.is_empty()
    }

    /// The entry of `manager` for a write of `api_version`, made if missing.
    pub(crate) fn entry_mut(
        &mut self,
        manager: &FieldManager,
        api_version: &str,
        time: &str,
    ) -> &mut Entry {
        let found = self
            .entries
            .iter()
            .position(|e| e.is_of(manager, api_version));
        let index = found.unwrap_or_else(|| {
            self.entries.push(Entry::new(manager, api_version, time));
            self.entries.len() - 1
        });
        &mut self.entries[index]
    }

    /// Takes what a write changed from every entry but `except`: the paths it modified or
    /// added, and those it removed.
    pub(crate) fn disown(&mut self, comparison: &Comparison, except: Option<usize>) {
        let changed = comparison.modified.union(&comparison.added);
        for (i, entry) in self.entries.iter_mut().enumerate() {
            if Some(i) != except {
                entry.fields = entry
                    .fields
                    .difference(&changed)
                    .difference(&comparison.removed);
            }
        }
    }

    /// Writes the entries into `obj` (dropping the empty ones), or removes `managedFields` if
    /// none is left.
    pub(crate) fn store(mut self, obj: &mut DynamicObject) {
        self.entries.retain(|e| !e.fields.is_empty());
        if self.is_empty() {
            obj.metadata.other.remove(MANAGED_FIELDS);
            return;
        }
        self.entries.sort_by(|a, b| {
            (
                &a.operation,
                &a.time,
                &a.manager,
                &a.api_version,
                &a.subresource,
            )
                .cmp(&(
                    &b.operation,
                    &b.time,
                    &b.manager,
                    &b.api_version,
                    &b.subresource,
                ))
        });
        let list = self
            .entries
            .iter()
            .map(Entry::encode)
            .chain(self.unreadable)
            .collect();
        obj.metadata
            .other
            .insert(MANAGED_FIELDS.to_owned(), Value::Array(list));
    }
}

/// `obj`'s JSON without the fields no manager owns (see the module docs).
pub(crate) fn owned_part(obj: &DynamicObject, status_subresource: bool) -> Value {
    let mut value = serde_json::to_value(obj).unwrap_or_default();
    strip_server_fields(&mut value, status_subresource);
    value
}

/// Removes from an object's JSON the fields no manager owns (see the module docs), and
/// `metadata` if nothing else is left in it.
pub(crate) fn strip_server_fields(value: &mut Value, status_subresource: bool) {
    let Value::Object(members) = value else {
        return;
    };
    members.remove("apiVersion");
    members.remove("kind");
    if status_subresource {
        members.remove("status");
    }
    if let Some(Value::Object(metadata)) = members.get_mut("metadata") {
        for name in SERVER_METADATA {
            metadata.remove(name);
        }
        if metadata.is_empty() {
            members.remove("metadata");
        }
    }
}

/// Records an `Update` by `manager` that turns `old` (none for a create) into `new`, in `new`'s
/// `managedFields`: the fields it changed leave every other entry and join the manager's
/// (its time then `now`). The entries are those `new` brings, if it brings any, else `old`'s
/// (a client that does not know about them does not erase them).
pub(crate) fn record_update(
    old: Option<&DynamicObject>,
    new: &mut DynamicObject,
    manager: &FieldManager,
    lists: &dyn ListSemantics,
    now: &str,
) {
    let supplied = ManagedFields::of(new);
    let mut ownership = match old {
        Some(old) if supplied.is_empty() => ManagedFields::of(old),
        _ => supplied,
    };
    let before = old.map_or_else(
        || Value::Object(Map::new()),
        |o| owned_part(o, manager.status_subresource),
    );
    let after = owned_part(new, manager.status_subresource);
    let comparison = compare(&before, &after, lists);
    ownership.disown(&comparison, None);
    let changed = comparison.modified.union(&comparison.added);
    if !changed.is_empty() {
        let api_version = new.api_version.clone().unwrap_or_default();
        let entry = ownership.entry_mut(manager, &api_version, now);
        entry.fields.union_with(&changed);
        entry.time = Some(now.to_owned());
    }
    ownership.store(new);
}

/// Records the `Update` of an HTTP write by `manager` (see [`record_update`]), with the
/// kind's list types, at the current time. Nothing for an apply (whose entries
/// [`apply`](super::apply) made) nor for a write through the Rust handle (no manager).
pub(crate) fn record(
    manager: Option<&FieldManager>,
    old: Option<&DynamicObject>,
    new: &mut DynamicObject,
) {
    if let Some(manager) = manager.filter(|m| m.operation == Operation::Update) {
        let now = rfc3339(now_secs());
        record_update(old, new, manager, &manager.lists, &now);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::fake_api_server::list_semantics::BuiltinLists;

    fn object(value: Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    fn update(name: &str) -> FieldManager {
        FieldManager {
            name: name.to_owned(),
            operation: Operation::Update,
            force: false,
            status_subresource: false,
            lists: crate::fake_api_server::list_semantics::SchemaLists(None),
        }
    }

    fn managed(obj: &DynamicObject) -> Value {
        obj.metadata.other[MANAGED_FIELDS].clone()
    }

    #[test]
    fn updates_own_what_they_change_and_take_it_from_others() {
        let mut created = object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "ns", "uid": "u", "labels": {"a": "1"}},
            "data": {"x": "1", "y": "2"}}));
        record_update(None, &mut created, &update("creator"), &BuiltinLists, "T1");
        assert_eq!(
            managed(&created),
            json!([{"manager": "creator", "operation": "Update", "apiVersion": "v1", "time": "T1",
                "fieldsType": "FieldsV1", "fieldsV1": {
                    "f:data": {"f:x": {}, "f:y": {}},
                    "f:metadata": {"f:labels": {".": {}, "f:a": {}}}}}])
        );
        let mut edited = created.clone();
        edited
            .data
            .insert("data".into(), json!({"x": "9", "y": "2"}));
        record_update(
            Some(&created),
            &mut edited,
            &update("editor"),
            &BuiltinLists,
            "T2",
        );
        assert_eq!(
            managed(&edited),
            json!([
                {"manager": "creator", "operation": "Update", "apiVersion": "v1", "time": "T1",
                    "fieldsType": "FieldsV1", "fieldsV1": {
                        "f:data": {"f:y": {}},
                        "f:metadata": {"f:labels": {".": {}, "f:a": {}}}}},
                {"manager": "editor", "operation": "Update", "apiVersion": "v1", "time": "T2",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:x": {}}}},
            ])
        );
        // A write that changes nothing takes nothing and keeps the times.
        let mut same = edited.clone();
        record_update(
            Some(&edited),
            &mut same,
            &update("third"),
            &BuiltinLists,
            "T3",
        );
        assert_eq!(same, edited);
        // Removing the last field of a manager drops its entry.
        let mut removed = edited.clone();
        removed.data.insert("data".into(), json!({"y": "2"}));
        record_update(
            Some(&edited),
            &mut removed,
            &update("creator"),
            &BuiltinLists,
            "T4",
        );
        assert_eq!(managed(&removed).as_array().unwrap().len(), 1);
        assert_eq!(managed(&removed)[0]["manager"], "creator");
        assert_eq!(managed(&removed)[0]["time"], "T1");
    }

    #[test]
    fn nothing_is_recorded_for_server_fields_alone() {
        let mut bare = object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "ns", "resourceVersion": "3"}}));
        record_update(None, &mut bare, &update("m"), &BuiltinLists, "T");
        assert!(!bare.metadata.other.contains_key(MANAGED_FIELDS));
    }

    #[test]
    fn status_is_not_owned_through_the_object_with_a_status_subresource() {
        let mut pod = object(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"nodeName": "n"}, "status": {"phase": "Running"}}),
        );
        let mut manager = update("m");
        manager.status_subresource = true;
        record_update(None, &mut pod, &manager, &BuiltinLists, "T");
        assert_eq!(
            managed(&pod)[0]["fieldsV1"],
            json!({"f:spec": {"f:nodeName": {}}})
        );
    }
}
