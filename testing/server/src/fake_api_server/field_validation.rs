//! Field validation of write bodies (`fieldValidation=Strict|Warn|Ignore` on POST, PUT and
//! PATCH) for kinds with a vendored schema ([`schema`](super::schema)), as kube-apiserver does
//! it when it decodes a body into the kind's Go type.
//!
//! - **Unknown fields**, at any depth (through references, list items and map values; a node
//!   with `x-kubernetes-preserve-unknown-fields` is not looked into), and **duplicate fields** of
//!   the JSON body: with `Strict` the write is refused (POST and PUT: 400 `BadRequest`
//!   `Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field
//!   "spec.foo", unknown field "spec.containers[0].bar"`; PATCH: 422 Invalid, the problem found
//!   in the patched object); with `Warn`, kube-apiserver's default when the parameter is absent,
//!   the write happens and the response carries one `Warning: 299 - "unknown field \"spec.foo\""`
//!   header per problem; with `Ignore`, nothing.
//! - **Wrong types** (a string where the schema has an integer or a list, an object where it has
//!   a string) are refused whatever the level, with the decoder's message (`json: cannot
//!   unmarshal string into Go struct field Container.spec.containers.image of type ...`): 400
//!   for POST and PUT, 422 for PATCH.
//!
//! The problems are listed duplicates first, then unknown fields with the members of each
//! object in name order (kube-apiserver lists them in the body's order). Apply patches are not
//! checked here (server-side apply reports unknown fields its own way).
//!
//! Custom resources served from a definition with a schema have their unknown fields found by
//! pruning ([`crd_schema`](super::crd_schema)), `metadata`'s first: refused with `Strict`
//! (`Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field
//! "spec.foo"`), else warned of (`Warn`) or not (`Ignore`) and pruned from what is stored;
//! their wrong types are their schema validation's (422). Kinds without a schema (custom
//! resources registered in Rust) are not checked. Only HTTP
//! writes with a body pay for this: the handle's writes, lists, watches and GETs never do.

use std::collections::HashSet;
use std::fmt::{self, Write as _};

use http::{HeaderValue, Response};
use kcache_reflector::{StatusCause, StatusDetails};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

use super::body::ResponseBody;
use super::crd_schema;
use super::patch::{self, PatchType};
use super::schema::{self, KindSchema, Node};
use super::served_resource::ServedResource;
use super::state::Shared;
use super::status::ApiError;

/// How unknown and duplicate fields are treated, from the `fieldValidation` parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// Refuse the write.
    Strict,
    /// Write, and warn in `Warning` headers (kube-apiserver's default).
    Warn,
    /// Write silently.
    Ignore,
}

impl Level {
    /// The level a write's query asks for (already checked by
    /// [`write_options`](super::write_options)).
    pub(crate) fn of(query: &[(String, String)]) -> Self {
        match query
            .iter()
            .find(|(k, _)| k == "fieldValidation")
            .map(|(_, v)| v.as_str())
        {
            Some("Strict") => Self::Strict,
            Some("Ignore") => Self::Ignore,
            _ => Self::Warn,
        }
    }
}

/// Checks the body of a POST or PUT of `resource`: `Ok` with the warnings to send, or the
/// error to answer. Kinds without a schema pass unchecked.
pub(crate) fn check_object(
    resource: &ServedResource,
    body: &[u8],
    level: Level,
) -> Result<Vec<String>, ApiError> {
    let built_in = schema::for_resource(resource);
    if built_in.is_none() && resource.definition.is_none() {
        return Ok(Vec::new());
    }
    // A body that is not JSON is left to the caller's own decoding error.
    let Ok((value, mut problems)) = parse_checked(body) else {
        return Ok(Vec::new());
    };
    let cannot_handle = |why: &str| {
        ApiError::bad_request(&format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {why}",
            kind = resource.kind,
            version = resource.api.version,
        ))
    };
    let Some(schema) = built_in else {
        // A custom resource: the fields its schema prunes (wrong types are its validation's).
        let Some(unknown) = crd_schema::unknown_fields(resource, &value) else {
            return Ok(Vec::new());
        };
        problems.extend(unknown);
        return finish(level, problems, |joined| cannot_handle(&joined));
    };
    let walk = Walk::new(schema, &value);
    if let Some(wrong) = walk.wrong_type {
        return Err(cannot_handle(&wrong));
    }
    problems.extend(walk.unknown);
    finish(level, problems, |joined| cannot_handle(&joined))
}

/// Checks a PATCH of object `name` of `resource` with `patch_type` and body `body` (decoded as
/// `patch`): the problems of the patch body (duplicate fields) and of the patched object
/// (unknown fields, wrong types). When the patched object cannot be computed (no such object,
/// a failing patch) nothing is reported here: the write itself answers the error. Apply
/// patches are not checked here.
pub(crate) fn check_patch(
    shared: &Shared,
    resource: &ServedResource,
    namespace: Option<&str>,
    name: &str,
    (patch_type, body, patch): (PatchType, &[u8], &Value),
    level: Level,
) -> Result<Vec<String>, ApiError> {
    let built_in = schema::for_resource(resource);
    if patch_type == PatchType::Apply || (built_in.is_none() && resource.definition.is_none()) {
        return Ok(Vec::new());
    }
    let Ok(current) = shared.lock().get(&resource.id(), namespace, name) else {
        return Ok(Vec::new());
    };
    let Ok(patched) = patch::patched(built_in, &current.object, patch_type, patch) else {
        return Ok(Vec::new());
    };
    let Ok(patched) = serde_json::to_value(&patched) else {
        return Ok(Vec::new());
    };
    let mut problems = parse_checked(body)
        .map(|(_, dups)| dups)
        .unwrap_or_default();
    if patch_type == PatchType::Json {
        for p in &mut problems {
            p.insert_str(0, "json patch ");
        }
    }
    // What kube-apiserver shows as the invalid value: the patched object's JSON, or for a
    // strategic merge patch the patch as Go prints a map.
    let shown = || match patch_type {
        PatchType::StrategicMerge => go_format(patch),
        _ => patched.to_string(),
    };
    if let Some(schema) = built_in {
        let walk = Walk::new(schema, &patched);
        if let Some(wrong) = walk.wrong_type {
            return Err(invalid_patch(&shown(), &wrong));
        }
        problems.extend(walk.unknown);
    } else {
        let Some(unknown) = crd_schema::unknown_fields(resource, &patched) else {
            return Ok(Vec::new());
        };
        problems.extend(unknown);
    }
    finish(level, problems, |joined| invalid_patch(&shown(), &joined))
}

/// The outcome of a check that found `problems`: nothing, warnings, or `strict(the joined
/// message)`.
fn finish(
    level: Level,
    problems: Vec<String>,
    strict: impl FnOnce(String) -> ApiError,
) -> Result<Vec<String>, ApiError> {
    match level {
        _ if problems.is_empty() => Ok(Vec::new()),
        Level::Strict => Err(strict(format!(
            "strict decoding error: {}",
            problems.join(", ")
        ))),
        Level::Warn => Ok(problems),
        Level::Ignore => Ok(Vec::new()),
    }
}

/// kube-apiserver's 422 for a patch whose result it cannot decode: an `Invalid` of field
/// `patch` with no kind and no name.
fn invalid_patch(shown: &str, detail: &str) -> ApiError {
    let cause = format!("Invalid value: {shown:?}: {detail}");
    ApiError::with_details(
        422,
        "Invalid",
        &format!(" \"\" is invalid: patch: {cause}"),
        StatusDetails {
            causes: vec![StatusCause {
                reason: Some("FieldValueInvalid".to_owned()),
                message: Some(cause),
                field: Some("patch".to_owned()),
            }],
            ..StatusDetails::default()
        },
    )
}

/// Adds one `Warning: 299 - "<text>"` header per warning to `response`.
pub(crate) fn add_warnings(response: &mut Response<ResponseBody>, warnings: &[String]) {
    for warning in warnings {
        let mut quoted = String::with_capacity(warning.len() + 8);
        quoted.push_str("299 - \"");
        for c in warning.chars() {
            match c {
                '"' | '\\' => {
                    quoted.push('\\');
                    quoted.push(c);
                }
                c if c.is_ascii_graphic() || c == ' ' => quoted.push(c),
                c => {
                    let _ = write!(quoted, "\\u{:04x}", u32::from(c));
                }
            }
        }
        quoted.push('"');
        if let Ok(value) = HeaderValue::from_str(&quoted) {
            response.headers_mut().append("warning", value);
        }
    }
}

/// Parses JSON `body`, reporting each member that repeats an earlier one of the same object as
/// `duplicate field "<path>"` (the last value is kept, as Go's decoder keeps it).
fn parse_checked(body: &[u8]) -> Result<(Value, Vec<String>), serde_json::Error> {
    let mut duplicates = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = Checked {
        path: String::new(),
        duplicates: &mut duplicates,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((value, duplicates))
}

/// A JSON value being parsed at `path`, noting duplicate members.
struct Checked<'a> {
    path: String,
    duplicates: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for Checked<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Checked<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            let seed = Checked {
                path: format!("{}[{}]", self.path, items.len()),
                duplicates: &mut *self.duplicates,
            };
            match seq.next_element_seed(seed)? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = serde_json::Map::new();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = join(&self.path, &key);
            if !seen.insert(key.clone()) {
                self.duplicates.push(format!("duplicate field {path:?}"));
            }
            let value = map.next_value_seed(Checked {
                path,
                duplicates: &mut *self.duplicates,
            })?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

/// `parent.field`, or `field` at the root.
fn join(parent: &str, field: &str) -> String {
    if parent.is_empty() {
        field.to_owned()
    } else {
        format!("{parent}.{field}")
    }
}

/// What walking an object along its kind's schema found.
struct Walk {
    /// `unknown field "<path>"`, in the order met.
    unknown: Vec<String>,
    /// The decoder's message for the first value of a wrong type.
    wrong_type: Option<String>,
}

impl Walk {
    fn new(schema: KindSchema, value: &Value) -> Self {
        let mut walk = Self {
            unknown: Vec::new(),
            wrong_type: None,
        };
        let short = short_name(schema.name);
        walk.value(schema.root, value, &Place::root(short));
        walk
    }

    /// Checks `value` against `node` at `place`.
    fn value(&mut self, node: Node, value: &Value, place: &Place<'_>) {
        if self.wrong_type.is_some() || value.is_null() {
            return;
        }
        if !accepts(node, value) {
            self.wrong_type = Some(format!(
                "json: cannot unmarshal {} into Go struct field {}.{} of type {}",
                json_kind(value),
                place.owner,
                place.fields,
                go_type(node)
            ));
            return;
        }
        if node.preserves_unknown_fields() {
            return;
        }
        match value {
            Value::Object(members) => {
                let owner = node.definition().map_or(place.owner, short_name);
                if let Some(properties) = node.properties() {
                    for (key, member) in members {
                        let inner = place.field(owner, key);
                        match properties.get(key) {
                            Some(field) => self.value(Node::of(field), member, &inner),
                            None => match node.map_values() {
                                Some(values) => self.value(values, member, &inner),
                                None => {
                                    self.unknown.push(format!("unknown field {:?}", inner.path));
                                }
                            },
                        }
                    }
                } else if let Some(values) = node.map_values() {
                    for (key, member) in members {
                        self.value(values, member, &place.field(owner, key));
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_node) = node.items() {
                    for (i, item) in items.iter().enumerate() {
                        self.value(item_node, item, &place.index(i));
                    }
                }
            }
            _ => {}
        }
    }
}

/// Where a value is: its path for unknown fields (`spec.containers[0].bar`), and for type
/// errors the Go struct that holds it and the field path without indices
/// (`Container`, `spec.containers.image`).
struct Place<'s> {
    path: String,
    owner: &'s str,
    fields: String,
}

impl<'s> Place<'s> {
    fn root(owner: &'s str) -> Self {
        Self {
            path: String::new(),
            owner,
            fields: String::new(),
        }
    }

    fn field(&self, owner: &'s str, key: &str) -> Self {
        Self {
            path: join(&self.path, key),
            owner,
            fields: join(&self.fields, key),
        }
    }

    fn index(&self, i: usize) -> Self {
        Self {
            path: format!("{}[{i}]", self.path),
            owner: self.owner,
            fields: self.fields.clone(),
        }
    }
}

/// `Container` for `io.k8s.api.core.v1.Container`.
fn short_name(definition: &str) -> &str {
    definition.rsplit('.').next().unwrap_or(definition)
}

/// `v1.Container` for `io.k8s.api.core.v1.Container`: how Go names the type.
fn go_name(definition: &str) -> String {
    let mut parts = definition.rsplit('.');
    let name = parts.next().unwrap_or(definition);
    match parts.next() {
        Some(package) => format!("{package}.{name}"),
        None => name.to_owned(),
    }
}

/// Whether `value` (not null) has a type `node` accepts.
fn accepts(node: Node, value: &Value) -> bool {
    let integral = |v: &Value| v.as_i64().is_some() || v.as_u64().is_some();
    let one_of = node.one_of_types();
    if !one_of.is_empty() {
        return one_of
            .iter()
            .any(|t| matches_type(t, value, integral(value)));
    }
    node.type_name()
        .is_none_or(|t| matches_type(t, value, integral(value)))
}

fn matches_type(type_name: &str, value: &Value, integral: bool) -> bool {
    match type_name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => integral,
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => true,
    }
}

/// How Go's decoder names a JSON value in its errors.
fn json_kind(value: &Value) -> String {
    match value {
        Value::Object(_) => "object".to_owned(),
        Value::Array(_) => "array".to_owned(),
        Value::String(_) => "string".to_owned(),
        Value::Bool(_) => "bool".to_owned(),
        Value::Number(n) if n.is_f64() => format!("number {n}"),
        Value::Number(_) | Value::Null => "number".to_owned(),
    }
}

/// The Go type a node decodes into, as Go's decoder names it (`int32`, `[]v1.Container`,
/// `map[string]string`).
fn go_type(node: Node) -> String {
    if node.format() == Some("int-or-string") {
        return "intstr.IntOrString".to_owned();
    }
    if let Some(definition) = node.definition()
        && node.type_name() == Some("object")
    {
        return go_name(definition);
    }
    match node.type_name() {
        Some("string") => "string".to_owned(),
        Some("boolean") => "bool".to_owned(),
        Some("number") => "float64".to_owned(),
        Some("integer") => match node.format() {
            Some(f @ ("int32" | "int64")) => f.to_owned(),
            _ => "int".to_owned(),
        },
        Some("array") => format!(
            "[]{}",
            node.items().map_or("interface {}".to_owned(), go_type)
        ),
        Some("object") => match node.map_values() {
            Some(values) => format!("map[string]{}", go_type(values)),
            None => "map[string]interface {}".to_owned(),
        },
        _ if node.definition().is_some() => go_name(node.definition().unwrap_or_default()),
        _ => "interface {}".to_owned(),
    }
}

/// `value` as Go's `%+v` prints the map a JSON document decodes into: `map[spec:map[foo:1]]`,
/// lists as `[a b]`, `null` as `<nil>`.
fn go_format(value: &Value) -> String {
    match value {
        Value::Object(members) => {
            let inner: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("{k}:{}", go_format(v)))
                .collect();
            format!("map[{}]", inner.join(" "))
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(go_format).collect();
            format!("[{}]", inner.join(" "))
        }
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pods() -> KindSchema {
        schema::for_resource(&ServedResource::pods()).unwrap()
    }

    #[test]
    fn unknown_fields_are_found_at_any_depth() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"any": "thing"}, "bogus": 1},
            "spec": {"foo": 1, "containers": [{"name": "a", "image": "i", "bar": true,
                "ports": [{"containerPort": 80, "baz": 1}]}]},
        });
        let walk = Walk::new(pods(), &pod);
        assert_eq!(walk.wrong_type, None);
        assert_eq!(
            walk.unknown,
            [
                "unknown field \"metadata.bogus\"",
                "unknown field \"spec.containers[0].bar\"",
                "unknown field \"spec.containers[0].ports[0].baz\"",
                "unknown field \"spec.foo\"",
            ]
        );
    }

    #[test]
    fn wrong_types_name_the_go_field() {
        let pod = json!({"spec": {"containers": [{"name": "a", "image": 3}]}});
        assert_eq!(
            Walk::new(pods(), &pod).wrong_type.as_deref(),
            Some(
                "json: cannot unmarshal number into Go struct field Container.spec.containers.image \
                 of type string"
            )
        );
        let pod = json!({"spec": {"containers": "a"}});
        assert_eq!(
            Walk::new(pods(), &pod).wrong_type.as_deref(),
            Some(
                "json: cannot unmarshal string into Go struct field PodSpec.spec.containers of \
                 type []v1.Container"
            )
        );
        let pod = json!({"metadata": {"name": {"a": 1}}});
        assert!(
            Walk::new(pods(), &pod)
                .wrong_type
                .unwrap()
                .ends_with("ObjectMeta.metadata.name of type string")
        );
        // Int-or-string and quantities take both.
        let deployments = schema::for_resource(&ServedResource::deployments()).unwrap();
        let ok = json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": 1, "memory": "1Gi"}}}]}}}});
        let walk = Walk::new(deployments, &ok);
        assert_eq!((walk.wrong_type, walk.unknown.len()), (None, 0));
    }

    #[test]
    fn duplicates_are_reported_with_their_path() {
        let body = br#"{"metadata": {"name": "a", "name": "b"}, "spec": {"containers": [{"name": "x", "name": "y"}]}}"#;
        let (value, dups) = parse_checked(body).unwrap();
        assert_eq!(value["metadata"]["name"], "b");
        assert_eq!(
            dups,
            [
                "duplicate field \"metadata.name\"",
                "duplicate field \"spec.containers[0].name\""
            ]
        );
    }

    #[test]
    fn go_prints_maps_sorted() {
        assert_eq!(
            go_format(&json!({"spec": {"foo": 1, "a": [true, null, "s"]}})),
            "map[spec:map[a:[true <nil> s] foo:1]]"
        );
    }
}
