//! Custom resources through the API, as kube-apiserver's `apiextensions` controllers serve
//! them: a `CustomResourceDefinition` (`apiextensions.k8s.io/v1`) written to the server serves
//! each of its `served` versions at once (discovery, lists, watches, writes, its short names,
//! categories and `status`/`scale` subresources), with the status the controllers would give it
//! (`acceptedNames`, the `NamesAccepted` and `Established` conditions, `storedVersions`);
//! changing it serves the versions it names now; deleting it deletes its objects (each with its
//! DELETED event) and stops serving them.
//!
//! Each served version keeps its structural schema and printer columns
//! ([`CrdVersion`](crate::fake_api_server::crd_schema::CrdVersion)): HTTP writes of its objects
//! are pruned, defaulted and validated against the schema (see
//! [`crd_schema`](crate::fake_api_server::crd_schema)), field validation reports the fields it
//! prunes, its `OpenAPI` document carries the schema and its Tables the printer columns.
//! Changing the definition's schema or columns serves the new ones at once (and drops the
//! cached `OpenAPI` documents). Versions are not converted: each holds its own objects.

use kcache_store::{ApiResource, DynamicObject};
use serde_json::{Value, json};

use super::{EventType, State};
use crate::fake_api_server::crd_schema::CrdVersion;
use crate::fake_api_server::served_resource::{ResourceId, ScalePaths, ServedResource};
use crate::fake_api_server::status::ApiError;
use crate::fake_api_server::util::now_secs;

/// The resources a definition serves, one per served version.
///
/// # Errors
///
/// 422 when the definition lacks its group, names or versions, or its name is not
/// `<plural>.<group>`, as kube-apiserver's validation answers.
pub(crate) fn served_of(crd: &DynamicObject) -> Result<Vec<ServedResource>, ApiError> {
    let name = crd.metadata.name.as_deref().unwrap_or_default();
    let spec = crd.data.get("spec").cloned().unwrap_or(Value::Null);
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let group = text(&spec["group"]);
    let names = &spec["names"];
    let plural = text(&names["plural"]);
    let kind = text(&names["kind"]);
    let invalid = |field: &str, why: &str| {
        ApiError::new(
            422,
            "Invalid",
            &format!(
                "CustomResourceDefinition.apiextensions.k8s.io {name:?} is invalid: {field}: {why}"
            ),
        )
    };
    if group.is_empty() {
        return Err(invalid("spec.group", "Required value"));
    }
    if plural.is_empty() {
        return Err(invalid("spec.names.plural", "Required value"));
    }
    if kind.is_empty() {
        return Err(invalid("spec.names.kind", "Required value"));
    }
    if name != format!("{plural}.{group}") {
        return Err(invalid(
            "metadata.name",
            &format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    let namespaced = match spec["scope"].as_str() {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        _ => {
            return Err(invalid(
                "spec.scope",
                "Unsupported value: supported values: \"Cluster\", \"Namespaced\"",
            ));
        }
    };
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        return Err(invalid(
            "spec.versions",
            "Required value: must have exactly one version marked as storage version",
        ));
    }
    if versions
        .iter()
        .filter(|v| v["storage"] == json!(true))
        .count()
        != 1
    {
        return Err(invalid(
            "spec.versions",
            "Invalid value: must have exactly one version marked as storage version",
        ));
    }
    let mut served = Vec::new();
    for version in versions.iter().filter(|v| v["served"] == json!(true)) {
        let mut resource = ServedResource::new(
            ApiResource::new(
                &group,
                version["name"].as_str().unwrap_or_default(),
                &plural,
                namespaced,
            ),
            &kind,
        )
        .with_crd_style(true)
        .with_status_subresource(version["subresources"].get("status").is_some())
        .with_scale_subresource(version["subresources"].get("scale").is_some())
        .with_definition(CrdVersion::of(version));
        if let Some(scale) = version["subresources"].get("scale") {
            resource.scale_paths = ScalePaths {
                spec_replicas: text(&scale["specReplicasPath"]),
                status_replicas: text(&scale["statusReplicasPath"]),
                label_selector: scale["labelSelectorPath"].as_str().map(str::to_owned),
            };
        }
        resource.short_names = strings(&names["shortNames"]);
        resource.categories = strings(&names["categories"]);
        served.push(resource);
    }
    Ok(served)
}

/// Sets the status the `apiextensions` controllers give an accepted definition.
pub(crate) fn accept(crd: &mut DynamicObject) {
    let spec = crd.data.get("spec").cloned().unwrap_or(Value::Null);
    let stored: Vec<Value> = spec["versions"]
        .as_array()
        .map(|v| {
            v.iter()
                .filter(|v| v["storage"] == json!(true))
                .map(|v| v["name"].clone())
                .collect()
        })
        .unwrap_or_default();
    let now = kcache_testing::generated::rfc3339(now_secs());
    let condition = |kind: &str, reason: &str, message: &str| json!({"type": kind, "status": "True", "lastTransitionTime": now, "reason": reason, "message": message});
    crd.data.insert(
        "status".into(),
        json!({
            "acceptedNames": spec["names"],
            "conditions": [
                condition("NamesAccepted", "NoConflicts", "no conflicts found"),
                condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
            ],
            "storedVersions": stored,
        }),
    );
}

impl State {
    /// Serves what definition `crd` (just written) names, and stops serving the versions of
    /// `old` (its previous state) it no longer names.
    pub(super) fn definition_written(&mut self, crd: &DynamicObject, old: Option<&DynamicObject>) {
        let now: Vec<ServedResource> = served_of(crd).unwrap_or_default();
        if let Some(old) = old {
            for before in served_of(old).unwrap_or_default() {
                if !now.iter().any(|r| r.id() == before.id()) {
                    self.unregister(&before.id());
                }
            }
        }
        for resource in now {
            match self.resources.get_mut(&resource.id()) {
                Some(rs) if rs.resource != resource => {
                    rs.resource = resource;
                    self.registrations += 1;
                    self.openapi = None;
                }
                Some(_) => {}
                None => self.register(resource),
            }
        }
    }

    /// Deletes every object of definition `crd`'s resources (each with its DELETED event), as
    /// its deletion does before the definition goes.
    pub(super) fn delete_definition_objects(
        &mut self,
        crd: &DynamicObject,
    ) -> Result<(), ApiError> {
        for resource in served_of(crd).unwrap_or_default() {
            let id = resource.id();
            let keys: Vec<String> = match self.resources.get(&id) {
                Some(rs) => rs.objects.keys().cloned().collect(),
                None => continue,
            };
            for key in keys {
                let Some(old) = self.resource(&id)?.objects.get(&key).cloned() else {
                    continue;
                };
                let last = (*old.object).clone();
                self.commit(&id, EventType::Deleted, key, last, Some(old))?;
            }
        }
        Ok(())
    }

    /// Stops serving `id`: its objects go without events and its watches end.
    pub(super) fn unregister(&mut self, id: &ResourceId) {
        if self.resources.remove(id).is_some() {
            self.registrations += 1;
            self.openapi = None;
        }
    }
}
