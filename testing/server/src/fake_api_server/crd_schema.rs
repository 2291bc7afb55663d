//! The structural schema of a custom resource's served version (its definition's
//! `spec.versions[].schema.openAPIV3Schema`), applied as kube-apiserver applies it to every HTTP
//! write of the resource (create, update, patch, apply, `/status`):
//!
//! 1. **Pruning**: a field the schema does not declare (not in `properties`, no
//!    `additionalProperties` map, no `x-kubernetes-preserve-unknown-fields: true` on the way) is
//!    dropped, at any depth. At the root (and in an `x-kubernetes-embedded-resource`)
//!    `apiVersion`, `kind` and `metadata` are kept; `metadata` keeps the fields of `ObjectMeta`
//!    only. The dropped paths (`spec.foo`, `spec.items[0].bar`, `metadata.bogus`) are what
//!    field validation reports (see [`field_validation`](super::field_validation)).
//! 2. A `null` member whose schema is neither `nullable` nor has a `default` is dropped.
//! 3. **Defaulting**: a missing (or dropped `null`) member whose schema has a `default` takes
//!    it, wherever its parent object exists; defaults are defaulted in turn.
//! 4. **Validation**: `type` (with `x-kubernetes-int-or-string`), `nullable`, `enum`,
//!    `maximum`/`minimum` (and their `exclusive*` flags), `maxLength`/`minLength`,
//!    `maxItems`/`minItems` and `required`, answered as kube-apiserver answers them: 422
//!    `Invalid`, `Widget.example.com "w" is invalid: spec.size: Invalid value: "string":
//!    spec.size in body must be of type integer: "string"`, several problems joined as
//!    `[a, b]`, each a cause of the `Status`. Problems are listed in path order, a node's own
//!    before its members'. `pattern`, `format`, `uniqueItems`, `multipleOf`, `minProperties`/
//!    `maxProperties`, `oneOf`/`anyOf`/`allOf`/`not` and `x-kubernetes-validations` (CEL) are
//!    not checked.
//!
//! Only custom resources served from a definition with a schema pay for this, and only on HTTP
//! writes: the Rust handle's writes store what they are given.

use std::hash::{Hash, Hasher};

use kcache_reflector::{StatusCause, StatusDetails};
use kcache_store::DynamicObject;
use serde_json::Value;

use super::crd_columns::PrinterColumn;
use super::schema::definitions;
use super::served_resource::ServedResource;
use super::status::{self, ApiError};

/// What one served version of a custom resource definition says about its objects: its
/// structural schema and its printer columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CrdVersion {
    /// `schema.openAPIV3Schema`, if the version has one.
    pub(crate) schema: Option<Value>,
    /// `additionalPrinterColumns`, in order.
    pub(crate) columns: Vec<PrinterColumn>,
}

impl Hash for CrdVersion {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Equal versions hash alike; the schema's JSON is left out (it has no hash).
        self.columns.hash(state);
    }
}

impl CrdVersion {
    /// The version `version` (one entry of a definition's `spec.versions`) describes, `None`
    /// when it has neither a schema nor printer columns.
    pub(crate) fn of(version: &Value) -> Option<Self> {
        let schema = version
            .get("schema")
            .and_then(|s| s.get("openAPIV3Schema"))
            .filter(|s| s.is_object())
            .cloned();
        let columns = PrinterColumn::all_of(version);
        (schema.is_some() || !columns.is_empty()).then_some(Self { schema, columns })
    }
}

/// The paths of the fields of `obj` (a body written to a custom resource of `resource`) that
/// its schema does not declare, as field validation reports them (`unknown field "spec.foo"`),
/// `metadata`'s first; `None` when the resource has no schema.
pub(crate) fn unknown_fields(resource: &ServedResource, obj: &Value) -> Option<Vec<String>> {
    let schema = resource.definition.as_deref()?.schema.as_ref()?;
    let mut obj = obj.clone();
    let mut unknown = Vec::new();
    prune_metadata(&mut obj, "", &mut unknown);
    prune(&mut obj, Some(schema), "", true, &mut unknown);
    Some(
        unknown
            .into_iter()
            .map(|path| format!("unknown field {path:?}"))
            .collect(),
    )
}

/// Prunes, defaults and validates `obj`, named `name`, as an HTTP write of `resource` does
/// (nothing for resources without a schema).
///
/// # Errors
///
/// 422 `Invalid` listing every problem validation finds.
pub(crate) fn admit(
    resource: &ServedResource,
    name: &str,
    obj: &mut DynamicObject,
) -> Result<(), ApiError> {
    let Some(schema) = resource
        .definition
        .as_deref()
        .and_then(|d| d.schema.as_ref())
    else {
        return Ok(());
    };
    let mut value = serde_json::to_value(&*obj).map_err(status::internal)?;
    let mut unknown = Vec::new();
    prune_metadata(&mut value, "", &mut unknown);
    prune(&mut value, Some(schema), "", true, &mut unknown);
    drop_nulls(&mut value, schema);
    default(&mut value, schema);
    let mut problems = Vec::new();
    validate(&value, schema, "", true, &mut problems);
    if !problems.is_empty() {
        return Err(invalid(resource, name, &problems));
    }
    *obj = serde_json::from_value(value).map_err(status::internal)?;
    Ok(())
}

/// `parent.field`, or `field` at the root.
fn join(parent: &str, field: &str) -> String {
    if parent.is_empty() {
        field.to_owned()
    } else {
        format!("{parent}.{field}")
    }
}

/// Whether schema `s` sets boolean `key`.
fn flag(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// What schema an object's member has.
enum Member<'s> {
    /// Its property, or the schema of the map's values.
    Schema(&'s Value),
    /// Kept without a schema (`additionalProperties: true`, or unknown fields preserved).
    Kept,
    /// Not declared: pruned.
    Unknown,
}

/// The schema of member `key` of an object of schema `s`.
fn member_schema<'s>(s: &'s Value, key: &str) -> Member<'s> {
    if let Some(property) = s.get("properties").and_then(|p| p.get(key)) {
        return Member::Schema(property);
    }
    match s.get("additionalProperties") {
        Some(values @ Value::Object(_)) => Member::Schema(values),
        Some(Value::Bool(true)) => Member::Kept,
        _ if flag(s, "x-kubernetes-preserve-unknown-fields") => Member::Kept,
        _ => Member::Unknown,
    }
}

/// Whether `key` is one of the members of an object's root that are kept whatever the schema
/// says (`apiVersion`, `kind`, `metadata`).
fn is_type_or_metadata(key: &str) -> bool {
    matches!(key, "apiVersion" | "kind" | "metadata")
}

/// Drops the members of `value` that schema `schema` (none: keep everything) does not declare,
/// noting their paths under `path` in `unknown`. `root` for an object's root or an embedded
/// resource (whose type and metadata are kept).
fn prune(
    value: &mut Value,
    schema: Option<&Value>,
    path: &str,
    root: bool,
    unknown: &mut Vec<String>,
) {
    let Some(s) = schema else {
        return;
    };
    match value {
        Value::Object(members) => {
            let keys: Vec<String> = members.keys().cloned().collect();
            for key in keys {
                if root && is_type_or_metadata(&key) {
                    continue;
                }
                let inner = join(path, &key);
                let member = match member_schema(s, &key) {
                    Member::Schema(m) => Some(m),
                    Member::Kept => None,
                    Member::Unknown => {
                        members.remove(&key);
                        unknown.push(inner);
                        continue;
                    }
                };
                if let Some(v) = members.get_mut(&key) {
                    let embedded =
                        member.is_some_and(|m| flag(m, "x-kubernetes-embedded-resource"));
                    if embedded {
                        prune_metadata(v, &inner, unknown);
                    }
                    prune(v, member, &inner, embedded, unknown);
                }
            }
        }
        Value::Array(items) => {
            let item_schema = s.get("items");
            for (i, item) in items.iter_mut().enumerate() {
                prune(item, item_schema, &format!("{path}[{i}]"), false, unknown);
            }
        }
        _ => {}
    }
}

/// Drops the members of `obj`'s `metadata` that `ObjectMeta` does not have, noting their paths
/// (`metadata.bogus`, under `path`) in `unknown`.
fn prune_metadata(obj: &mut Value, path: &str, unknown: &mut Vec<String>) {
    let Some(known) = definitions()
        .schemas
        .get("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        .and_then(|m| m.get("properties"))
        .and_then(Value::as_object)
    else {
        return;
    };
    let Some(Value::Object(metadata)) = obj.get_mut("metadata") else {
        return;
    };
    let bogus: Vec<String> = metadata
        .keys()
        .filter(|k| !known.contains_key(*k))
        .cloned()
        .collect();
    for key in bogus {
        metadata.remove(&key);
        unknown.push(join(&join(path, "metadata"), &key));
    }
}

/// Drops each `null` member of `value` whose schema is neither `nullable` nor defaulted, at any
/// depth.
fn drop_nulls(value: &mut Value, s: &Value) {
    match value {
        Value::Object(members) => {
            members.retain(|key, v| {
                !v.is_null()
                    || match member_schema(s, key) {
                        Member::Schema(m) => flag(m, "nullable") || m.get("default").is_some(),
                        Member::Kept | Member::Unknown => true,
                    }
            });
            for (key, v) in members.iter_mut() {
                if let Member::Schema(m) = member_schema(s, key) {
                    drop_nulls(v, m);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.get("items") {
                for item in items {
                    drop_nulls(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

/// Sets the `default` of each member of `value` that is missing (or a `null` its schema does
/// not allow), wherever the object holding it exists, at any depth (defaults included).
fn default(value: &mut Value, s: &Value) {
    match value {
        Value::Object(members) => {
            if let Some(properties) = s.get("properties").and_then(Value::as_object) {
                for (key, property) in properties {
                    let Some(default) = property.get("default") else {
                        continue;
                    };
                    let missing = members
                        .get(key)
                        .is_none_or(|v| v.is_null() && !flag(property, "nullable"));
                    if missing {
                        members.insert(key.clone(), default.clone());
                    }
                }
            }
            for (key, v) in members.iter_mut() {
                if let Member::Schema(m) = member_schema(s, key) {
                    default(v, m);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.get("items") {
                for item in items {
                    if item.is_null()
                        && !flag(item_schema, "nullable")
                        && let Some(d) = item_schema.get("default")
                    {
                        *item = d.clone();
                    }
                    default(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

/// One problem validation found: the field, kube-apiserver's cause reason and the message
/// without the field (`Invalid value: 11: spec.size in body should be ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Problem {
    field: String,
    reason: &'static str,
    message: String,
}

impl Problem {
    fn new(field: &str, reason: &'static str, message: String) -> Self {
        Self {
            field: field.to_owned(),
            reason,
            message,
        }
    }
}

/// The type of `value` as the schema validator names it (`integer` for whole numbers).
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether `value` is of schema type `wanted`.
fn has_type(value: &Value, wanted: &str) -> bool {
    match (wanted, value) {
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        ("number", Value::Number(_))
        | ("boolean", Value::Bool(_))
        | ("string", Value::String(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_)) => true,
        _ => false,
    }
}

/// `value` as kube-apiserver prints a bad value: strings quoted, numbers and booleans as they
/// are, anything else as JSON.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "\"null\"".to_owned(),
        other => other.to_string(),
    }
}

/// Checks `value` at `path` against schema `s`, noting each problem in `problems`. `root`
/// for an object's root or an embedded resource (whose type and metadata are not checked).
fn validate(value: &Value, s: &Value, path: &str, root: bool, problems: &mut Vec<Problem>) {
    if value.is_null() && flag(s, "nullable") {
        return;
    }
    let int_or_string = flag(s, "x-kubernetes-int-or-string");
    let wanted = s.get("type").and_then(Value::as_str);
    let type_ok = if int_or_string {
        has_type(value, "integer") || has_type(value, "string")
    } else {
        wanted.is_none_or(|t| has_type(value, t))
    };
    if !type_ok {
        let actual = json_type(value);
        let wanted = if int_or_string {
            "integer,string"
        } else {
            wanted.unwrap_or_default()
        };
        problems.push(Problem::new(
            path,
            "FieldValueTypeInvalid",
            format!(
                "Invalid value: {actual:?}: {path} in body must be of type {wanted}: {actual:?}"
            ),
        ));
        return;
    }
    if value.is_null() {
        return;
    }
    if let Some(allowed) = s.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let supported: Vec<String> = allowed
            .iter()
            .map(|v| match v {
                Value::String(s) => format!("{s:?}"),
                other => format!("{:?}", other.to_string()),
            })
            .collect();
        problems.push(Problem::new(
            path,
            "FieldValueNotSupported",
            format!(
                "Unsupported value: {}: supported values: {}",
                shown(value),
                supported.join(", ")
            ),
        ));
    }
    match value {
        Value::Number(n) => bounds(n, s, path, problems),
        Value::String(text) => lengths(text, s, path, problems),
        Value::Array(items) => {
            counts(items.len(), s, path, problems);
            if let Some(item_schema) = s.get("items") {
                for (i, item) in items.iter().enumerate() {
                    validate(item, item_schema, &format!("{path}[{i}]"), false, problems);
                }
            }
        }
        Value::Object(members) => {
            if let Some(required) = s.get("required").and_then(Value::as_array) {
                for name in required.iter().filter_map(Value::as_str) {
                    if !(members.contains_key(name) || root && is_type_or_metadata(name)) {
                        problems.push(Problem::new(
                            &join(path, name),
                            "FieldValueRequired",
                            "Required value".to_owned(),
                        ));
                    }
                }
            }
            for (key, member) in members {
                if root && is_type_or_metadata(key) {
                    continue;
                }
                if let Member::Schema(m) = member_schema(s, key) {
                    let embedded = flag(m, "x-kubernetes-embedded-resource");
                    validate(member, m, &join(path, key), embedded, problems);
                }
            }
        }
        _ => {}
    }
}

/// `maximum`, `minimum` and their `exclusive*` flags.
fn bounds(n: &serde_json::Number, s: &Value, path: &str, problems: &mut Vec<Problem>) {
    let Some(x) = n.as_f64() else {
        return;
    };
    let limit = |key: &str| s.get(key).and_then(Value::as_f64);
    let bound = |key: &str| s.get(key).map(Value::to_string).unwrap_or_default();
    if let Some(max) = limit("maximum") {
        let exclusive = flag(s, "exclusiveMaximum");
        if x > max || (exclusive && (x - max).abs() < f64::EPSILON) {
            let relation = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            problems.push(Problem::new(
                path,
                "FieldValueInvalid",
                format!(
                    "Invalid value: {n}: {path} in body should be {relation} {}",
                    bound("maximum")
                ),
            ));
        }
    }
    if let Some(min) = limit("minimum") {
        let exclusive = flag(s, "exclusiveMinimum");
        if x < min || (exclusive && (x - min).abs() < f64::EPSILON) {
            let relation = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            problems.push(Problem::new(
                path,
                "FieldValueInvalid",
                format!(
                    "Invalid value: {n}: {path} in body should be {relation} {}",
                    bound("minimum")
                ),
            ));
        }
    }
}

/// `maxLength` and `minLength` (in characters).
fn lengths(text: &str, s: &Value, path: &str, problems: &mut Vec<Problem>) {
    let length = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
    if let Some(max) = s.get("maxLength").and_then(Value::as_u64)
        && length > max
    {
        let unit = if max == 1 { "byte" } else { "bytes" };
        problems.push(Problem::new(
            path,
            "FieldValueTooLong",
            format!("Too long: may not be more than {max} {unit}"),
        ));
    }
    if let Some(min) = s.get("minLength").and_then(Value::as_u64)
        && length < min
    {
        problems.push(Problem::new(
            path,
            "FieldValueInvalid",
            format!("Invalid value: {text:?}: {path} in body should be at least {min} chars long"),
        ));
    }
}

/// `maxItems` and `minItems`.
fn counts(len: usize, s: &Value, path: &str, problems: &mut Vec<Problem>) {
    let len = u64::try_from(len).unwrap_or(u64::MAX);
    if let Some(max) = s.get("maxItems").and_then(Value::as_u64)
        && len > max
    {
        let unit = if max == 1 { "item" } else { "items" };
        problems.push(Problem::new(
            path,
            "FieldValueTooMany",
            format!("Too many: {len}: must have at most {max} {unit}"),
        ));
    }
    if let Some(min) = s.get("minItems").and_then(Value::as_u64)
        && len < min
    {
        problems.push(Problem::new(
            path,
            "FieldValueInvalid",
            format!("Invalid value: {len}: {path} in body should have at least {min} items"),
        ));
    }
}

/// kube-apiserver's 422 for object `name` of `resource` with `problems`:
/// `Widget.example.com "w" is invalid: <problem>`, or `[<problem>, <problem>]` for several.
fn invalid(resource: &ServedResource, name: &str, problems: &[Problem]) -> ApiError {
    let group_kind = if resource.api.group.is_empty() {
        resource.kind.clone()
    } else {
        format!("{}.{}", resource.kind, resource.api.group)
    };
    let mut listed: Vec<String> = Vec::with_capacity(problems.len());
    for p in problems {
        let line = format!("{}: {}", p.field, p.message);
        if !listed.contains(&line) {
            listed.push(line);
        }
    }
    let joined = if listed.len() == 1 {
        listed.concat()
    } else {
        format!("[{}]", listed.join(", "))
    };
    ApiError::with_details(
        422,
        "Invalid",
        &format!("{group_kind} {name:?} is invalid: {joined}"),
        StatusDetails {
            name: Some(name.to_owned()),
            group: Some(resource.api.group.clone()),
            kind: Some(resource.kind.clone()),
            causes: problems
                .iter()
                .map(|p| StatusCause {
                    reason: Some(p.reason.to_owned()),
                    message: Some(p.message.clone()),
                    field: Some(p.field.clone()),
                })
                .collect(),
            ..StatusDetails::default()
        },
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["size"],
                    "properties": {
                        "size": {"type": "integer", "minimum": 1, "maximum": 10},
                        "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                        "name": {"type": "string", "minLength": 2, "maxLength": 5},
                        "tags": {"type": "array", "maxItems": 2, "minItems": 1,
                            "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "note": {"type": "string", "nullable": true},
                        "port": {"x-kubernetes-int-or-string": true},
                    },
                },
            },
        })
    }

    #[test]
    fn pruning_drops_what_the_schema_does_not_declare() {
        let s = schema();
        let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "bogus": 1},
            "spec": {"size": 1, "foo": 2, "tags": [{"k": "a", "x": 1}],
                "labels": {"a": "b"}, "free": {"any": {"thing": 1}}},
            "status": {"ready": true}});
        let mut unknown = Vec::new();
        prune_metadata(&mut obj, "", &mut unknown);
        prune(&mut obj, Some(&s), "", true, &mut unknown);
        assert_eq!(
            unknown,
            ["metadata.bogus", "spec.foo", "spec.tags[0].x", "status"]
        );
        assert_eq!(
            obj,
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                "spec": {"size": 1, "tags": [{"k": "a"}], "labels": {"a": "b"},
                    "free": {"any": {"thing": 1}}}})
        );
    }

    #[test]
    fn defaults_apply_where_the_parent_exists() {
        let s = schema();
        let mut obj = json!({"metadata": {}});
        default(&mut obj, &s);
        assert_eq!(obj, json!({"metadata": {}}));
        let mut obj = json!({"spec": {"size": 1, "color": null, "note": null}});
        drop_nulls(&mut obj, &s);
        default(&mut obj, &s);
        assert_eq!(
            obj["spec"],
            json!({"size": 1, "color": "red", "note": null})
        );
    }

    #[test]
    fn validation_names_each_problem() {
        let s = schema();
        let check = |spec: Value| {
            let mut problems = Vec::new();
            validate(&json!({"spec": spec}), &s, "", true, &mut problems);
            problems
                .into_iter()
                .map(|p| format!("{}: {}", p.field, p.message))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            check(json!({"size": "big"})),
            [
                "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\""
            ]
        );
        assert_eq!(check(json!({})), ["spec.size: Required value"]);
        assert_eq!(
            check(json!({"size": 11, "color": "pink"})),
            [
                "spec.color: Unsupported value: \"pink\": supported values: \"red\", \"blue\"",
                "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
            ]
        );
        assert_eq!(
            check(json!({"size": 0})),
            ["spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"]
        );
        assert_eq!(
            check(json!({"size": 1, "name": "toolong"})),
            ["spec.name: Too long: may not be more than 5 bytes"]
        );
        assert_eq!(
            check(json!({"size": 1, "name": "a"})),
            ["spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long"]
        );
        assert_eq!(
            check(json!({"size": 1, "tags": [{}, {}, {}]})),
            ["spec.tags: Too many: 3: must have at most 2 items"]
        );
        assert_eq!(
            check(json!({"size": 1, "tags": []})),
            ["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"]
        );
        assert_eq!(
            check(json!({"size": 1, "port": "http", "note": null})),
            Vec::<String>::new()
        );
        assert_eq!(
            check(json!({"size": 1, "port": true})),
            [
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\""
            ]
        );
    }
}
