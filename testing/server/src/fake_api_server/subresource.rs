//! The `status` and `scale` subresources, as kube-apiserver serves them:
//!
//! - `status` (GET, PUT, PATCH on `<object>/status`) reads the whole object and writes only its
//!   `status`: a PUT's or patch result's other fields are ignored. Writes to the object itself
//!   keep the stored `status`, and a create over HTTP starts without one (the kind's defaults
//!   then set what kube-apiserver sets, a pod's `Pending` phase).
//! - `scale` (GET, PUT, PATCH on `<object>/scale`) is an `autoscaling/v1` `Scale` over the
//!   fields the kind's [`ScalePaths`] name (`spec.replicas`, `status.replicas` and the label
//!   selector `spec.selector`, as a selector string, for the built-in kinds; a custom
//!   resource's definition names its own); a write sets the desired replicas and nothing else.
//!
//! Both honour the `resourceVersion` and `uid` a write names, as writes to the object do, and
//! refuse a name that is not the URL's (400).

use kcache_store::DynamicObject;
use serde_json::{Map, Value, json};

use super::served_resource::ScalePaths;
use super::status::ApiError;

/// A subresource of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subresource {
    /// `<object>/status`.
    Status,
    /// `<object>/scale`.
    Scale,
}

impl Subresource {
    /// The subresource named by a path segment.
    pub(crate) fn parse(segment: &str) -> Option<Self> {
        match segment {
            "status" => Some(Self::Status),
            "scale" => Some(Self::Scale),
            _ => None,
        }
    }
}

/// `current` with the `status` of `written` (none if it has none), and the name, uid and
/// resource version `written` names, if any (checked by the write: a name that is not the
/// URL's is 400, a uid or resource version that is not the stored one's 409).
pub(crate) fn with_status(current: &DynamicObject, written: &DynamicObject) -> DynamicObject {
    let mut obj = current.clone();
    match written.data.get("status") {
        Some(status) => {
            obj.data.insert("status".into(), status.clone());
        }
        None => {
            obj.data.remove("status");
        }
    }
    let meta = &written.metadata;
    preconditions(
        &mut obj,
        meta.name.as_deref(),
        meta.uid.as_deref(),
        meta.resource_version.as_deref(),
    );
    obj
}

/// Sets on `obj` each of `name`, `uid` and `resource_version` a write names (not empty), for
/// the write to check against the URL's name and the stored object.
fn preconditions(
    obj: &mut DynamicObject,
    name: Option<&str>,
    uid: Option<&str>,
    resource_version: Option<&str>,
) {
    let meta = &mut obj.metadata;
    for (slot, value) in [
        (&mut meta.name, name),
        (&mut meta.uid, uid),
        (&mut meta.resource_version, resource_version),
    ] {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            *slot = Some(value.to_owned());
        }
    }
}

/// `written` with the `status` of `current` (a write to an object whose kind has a `status`
/// subresource).
pub(crate) fn keep_status(current: &DynamicObject, mut written: DynamicObject) -> DynamicObject {
    match current.data.get("status") {
        Some(status) => {
            written.data.insert("status".into(), status.clone());
        }
        None => {
            written.data.remove("status");
        }
    }
    written
}

/// The members of dotted path `path` (`.spec.replicas`).
fn members(path: &str) -> impl Iterator<Item = &str> {
    path.split('.').filter(|m| !m.is_empty())
}

/// The value at dotted path `path` of `obj`'s data.
fn at<'a>(obj: &'a DynamicObject, path: &str) -> Option<&'a Value> {
    let mut members = members(path);
    let first = obj.data.get(members.next()?)?;
    members.try_fold(first, |value, member| value.get(member))
}

/// Sets the value at dotted path `path` of `obj`'s data, making the objects on the way.
fn set_at(obj: &mut DynamicObject, path: &str, value: Value) {
    let names: Vec<&str> = members(path).collect();
    let Some((last, parents)) = names.split_last() else {
        return;
    };
    let mut map = &mut obj.data;
    for name in parents {
        let slot = map
            .entry(*name)
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        let Value::Object(next) = slot else {
            return;
        };
        map = next;
    }
    map.insert((*last).to_owned(), value);
}

/// The `autoscaling/v1` `Scale` of `obj`, read at `paths`.
pub(crate) fn scale_of(obj: &DynamicObject, paths: &ScalePaths) -> Value {
    let replicas = at(obj, &paths.spec_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let status_replicas = at(obj, &paths.status_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut metadata = Map::new();
    let meta = &obj.metadata;
    for (key, value) in [
        ("name", meta.name.as_deref()),
        ("namespace", meta.namespace.as_deref()),
        ("uid", meta.uid.as_deref()),
        ("resourceVersion", meta.resource_version.as_deref()),
        ("creationTimestamp", meta.creation_timestamp.as_deref()),
    ] {
        if let Some(value) = value {
            metadata.insert(key.into(), json!(value));
        }
    }
    let mut status = json!({"replicas": status_replicas});
    match paths
        .label_selector
        .as_deref()
        .and_then(|path| at(obj, path))
    {
        Some(Value::String(selector)) => status["selector"] = json!(selector),
        Some(selector @ Value::Object(_)) => status["selector"] = json!(selector_string(selector)),
        _ => {}
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": replicas},
        "status": status,
    })
}

/// `current` with the replicas of `scale` (a `Scale` object) at `paths`, and the name, uid and
/// resource version it names, if any (checked by the write, as [`with_status`]'s).
///
/// # Errors
///
/// 400 if `scale` is not a `Scale` with a number of replicas; 422 if it is negative.
pub(crate) fn with_scale(
    current: &DynamicObject,
    scale: &Value,
    paths: &ScalePaths,
) -> Result<DynamicObject, ApiError> {
    let replicas = match scale.get("spec").and_then(|s| s.get("replicas")) {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_i64().ok_or_else(|| {
            ApiError::bad_request(
                "the Scale provided is unrecognized: spec.replicas is not an integer",
            )
        })?,
    };
    if replicas < 0 {
        return Err(ApiError::new(
            422,
            "Invalid",
            &format!(
                "Scale.autoscaling \"{}\" is invalid: spec.replicas: Invalid value: {replicas}: \
                 must be greater than or equal to 0",
                current.metadata.name.as_deref().unwrap_or_default()
            ),
        ));
    }
    let mut obj = current.clone();
    set_at(&mut obj, &paths.spec_replicas, json!(replicas));
    let meta = |field: &str| {
        scale
            .get("metadata")
            .and_then(|m| m.get(field))
            .and_then(Value::as_str)
    };
    preconditions(&mut obj, meta("name"), meta("uid"), meta("resourceVersion"));
    Ok(obj)
}

/// A `LabelSelector` (`matchLabels`, `matchExpressions`) as a selector string
/// (`app=web,tier in (a,b)`).
fn selector_string(selector: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            parts.push(format!("{key}={}", value.as_str().unwrap_or_default()));
        }
    }
    if let Some(expressions) = selector.get("matchExpressions").and_then(Value::as_array) {
        for e in expressions {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let part = match e.get("operator").and_then(Value::as_str) {
                Some("In") => format!("{key} in ({})", values.join(",")),
                Some("NotIn") => format!("{key} notin ({})", values.join(",")),
                Some("Exists") => key.to_owned(),
                Some("DoesNotExist") => format!("!{key}"),
                _ => continue,
            };
            parts.push(part);
        }
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> DynamicObject {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default", "resourceVersion": "7"},
            "spec": {"replicas": 2, "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}],
            }},
            "status": {"replicas": 1},
        }))
        .unwrap()
    }

    #[test]
    fn the_scale_of_a_deployment_reads_its_replicas_and_selector() {
        let scale = scale_of(&deployment(), &ScalePaths::default());
        assert_eq!(scale["spec"]["replicas"], 2);
        assert_eq!(scale["status"]["replicas"], 1);
        assert_eq!(scale["status"]["selector"], "app=web,tier in (a,b)");
        assert_eq!(scale["metadata"]["resourceVersion"], "7");
    }

    #[test]
    fn a_scale_write_changes_only_the_replicas() {
        let paths = ScalePaths::default();
        let scaled = with_scale(&deployment(), &json!({"spec": {"replicas": 5}}), &paths).unwrap();
        assert_eq!(scaled.data["spec"]["replicas"], 5);
        assert_eq!(
            scaled.data["spec"]["selector"],
            deployment().data["spec"]["selector"]
        );
        let negative =
            with_scale(&deployment(), &json!({"spec": {"replicas": -1}}), &paths).unwrap_err();
        assert_eq!(negative.code, 422);
    }

    #[test]
    fn a_custom_resources_scale_follows_its_definitions_paths() {
        let paths = ScalePaths {
            spec_replicas: ".spec.workers".to_owned(),
            status_replicas: ".status.workers".to_owned(),
            label_selector: Some(".status.selector".to_owned()),
        };
        let widget: DynamicObject = serde_json::from_value(json!({
            "metadata": {"name": "w"},
            "spec": {"workers": 3},
            "status": {"workers": 2, "selector": "app=w"},
        }))
        .unwrap();
        let scale = scale_of(&widget, &paths);
        assert_eq!(scale["spec"]["replicas"], 3);
        assert_eq!(scale["status"], json!({"replicas": 2, "selector": "app=w"}));
        let scaled = with_scale(&widget, &json!({"spec": {"replicas": 7}}), &paths).unwrap();
        assert_eq!(scaled.data["spec"], json!({"workers": 7}));
    }

    #[test]
    fn a_subresource_write_carries_the_name_uid_and_version_it_names() {
        let mut written = deployment();
        written.metadata.name = Some("other".into());
        written.metadata.uid = Some("u2".into());
        written.metadata.resource_version = Some("6".into());
        let obj = with_status(&deployment(), &written);
        assert_eq!(obj.metadata.name.as_deref(), Some("other"));
        assert_eq!(obj.metadata.uid.as_deref(), Some("u2"));
        assert_eq!(obj.metadata.resource_version.as_deref(), Some("6"));
        // What a write leaves out or empty is the stored object's.
        let mut unnamed = deployment();
        unnamed.metadata.name = Some(String::new());
        unnamed.metadata.resource_version = None;
        let obj = with_status(&deployment(), &unnamed);
        assert_eq!(obj.metadata.name.as_deref(), Some("web"));
        assert_eq!(obj.metadata.resource_version.as_deref(), Some("7"));

        let paths = ScalePaths::default();
        let scale = json!({"metadata": {"name": "other", "uid": "u2"}, "spec": {"replicas": 1}});
        let obj = with_scale(&deployment(), &scale, &paths).unwrap();
        assert_eq!(obj.metadata.name.as_deref(), Some("other"));
        assert_eq!(obj.metadata.uid.as_deref(), Some("u2"));
        assert_eq!(obj.metadata.resource_version.as_deref(), Some("7"));
    }

    #[test]
    fn a_status_write_takes_only_the_status() {
        let mut written = deployment();
        written.data["spec"]["replicas"] = json!(9);
        written.data["status"] = json!({"replicas": 2});
        let obj = with_status(&deployment(), &written);
        assert_eq!(obj.data["spec"]["replicas"], 2);
        assert_eq!(obj.data["status"]["replicas"], 2);
        let kept = keep_status(&deployment(), written);
        assert_eq!(kept.data["status"]["replicas"], 1);
        assert_eq!(kept.data["spec"]["replicas"], 9);
    }
}
