//! Discovery (`/version`, `/api`, `/api/v1`, `/apis`, `/apis/<g>`, `/apis/<g>/<v>`) and the
//! `OpenAPI` v3 documents (`/openapi/v3`, `/openapi/v3/<gv>`).
//!
//! Every GET asks first whether its path is one of these, lists and watches included, so the
//! path is matched before anything else and the state's lock is taken only for a discovery
//! path, just long enough to copy out the resources it describes: the JSON is built after the
//! lock is released. The `OpenAPI` documents, which describe every registered resource, are
//! built once per registration and kept in the state, encoded, until a resource is registered.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};

use super::access;
use super::openapi::Documents;
use super::served_resource::ServedResource;
use super::state::Shared;

/// The verbs every served resource has.
const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The verbs of a `status` or `scale` subresource.
const SUBRESOURCE_VERBS: [&str; 3] = ["get", "patch", "update"];

/// The encoded discovery or `OpenAPI` document at `segs` (the path's segments), `None` when the
/// path is not one (nor a group or group-version the server serves).
pub(crate) fn document(shared: &Shared, segs: &[&str], address: &str) -> Option<Bytes> {
    let value = match segs {
        ["version"] => version(),
        ["api"] => json!({
            "kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
        }),
        ["api", version] => resource_list("", version, &served(shared, "", Some(version)))?,
        ["apis", access::GROUP, access::VERSION] => access::resource_list(),
        ["apis"] => {
            let groups = groups(shared);
            json!({
                "kind": "APIGroupList", "apiVersion": "v1",
                "groups": groups.iter().map(|(g, vs)| group_json(g, vs)).collect::<Vec<_>>(),
            })
        }
        ["apis", group] => {
            let groups = groups(shared);
            let mut g = group_json(group, groups.get(*group)?);
            g["kind"] = json!("APIGroup");
            g["apiVersion"] = json!("v1");
            g
        }
        ["apis", group, version] => {
            resource_list(group, version, &served(shared, group, Some(version)))?
        }
        ["openapi", "v3"] => return Some(openapi(shared).root()),
        ["openapi", "v3", gv @ ..] => return openapi(shared).document(&gv.join("/")),
        _ => return None,
    };
    Some(Bytes::from(serde_json::to_vec(&value).unwrap_or_default()))
}

/// `/version`: a Kubernetes 1.37 of the fake server's own, the version its vendored schemas
/// come from.
fn version() -> Value {
    json!({
        "major": "1", "minor": "37", "gitVersion": "v1.37.0-kcache-fake",
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24", "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// Copies of the resources served in `group` (and `version`, if given), taken under the lock.
fn served(shared: &Shared, group: &str, version: Option<&str>) -> Vec<ServedResource> {
    shared
        .lock()
        .resources
        .values()
        .map(|r| &r.resource)
        .filter(|r| r.api.group == group && version.is_none_or(|v| r.api.version == v))
        .cloned()
        .collect()
}

/// The named groups served and their versions (in the order of the resources' ids: by group,
/// then version), taken under the lock.
fn groups(shared: &Shared) -> BTreeMap<String, Vec<String>> {
    let state = shared.lock();
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    groups.insert(access::GROUP.to_owned(), vec![access::VERSION.to_owned()]);
    for r in state.resources.values().map(|r| &r.resource) {
        if r.api.group.is_empty() {
            continue;
        }
        let versions = groups.entry(r.api.group.clone()).or_default();
        if !versions.contains(&r.api.version) {
            versions.push(r.api.version.clone());
        }
    }
    groups
}

/// The `APIResourceList` of `group`/`version`, `None` when nothing is served there.
fn resource_list(group: &str, version: &str, resources: &[ServedResource]) -> Option<Value> {
    if resources.is_empty() {
        return None;
    }
    let mut items: Vec<Value> = Vec::new();
    for r in resources {
        let mut item = json!({
            "name": r.api.plural,
            "singularName": r.singular(),
            "namespaced": r.api.namespaced,
            "kind": r.kind,
            "verbs": VERBS,
            "shortNames": r.short_names,
        });
        if !r.categories.is_empty() {
            item["categories"] = json!(r.categories);
        }
        items.push(item);
        if r.status_subresource {
            items.push(json!({
                "name": format!("{}/status", r.api.plural),
                "singularName": "",
                "namespaced": r.api.namespaced,
                "kind": r.kind,
                "verbs": SUBRESOURCE_VERBS,
            }));
        }
        if r.scale_subresource {
            items.push(json!({
                "name": format!("{}/scale", r.api.plural),
                "singularName": "",
                "namespaced": r.api.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": SUBRESOURCE_VERBS,
            }));
        }
    }
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
        "resources": items,
    }))
}

/// An `APIGroup` (without `kind`/`apiVersion`, as `APIGroupList` items are): the first version
/// is the preferred one.
fn group_json(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(Value::Null)})
}

/// The `OpenAPI` documents of the registered resources: the state's, or built (outside the lock)
/// and kept there unless a resource was registered meanwhile.
fn openapi(shared: &Shared) -> Arc<Documents> {
    let (resources, registrations) = {
        let state = shared.lock();
        if let Some(documents) = &state.openapi {
            return Arc::clone(documents);
        }
        let resources: Vec<ServedResource> = state
            .resources
            .values()
            .map(|r| r.resource.clone())
            .collect();
        (resources, state.registrations)
    };
    let documents = Arc::new(Documents::new(&resources));
    let mut state = shared.lock();
    if state.registrations == registrations {
        state.openapi = Some(Arc::clone(&documents));
    }
    documents
}
