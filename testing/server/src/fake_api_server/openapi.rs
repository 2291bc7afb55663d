//! `OpenAPI` v3 documents generated from the registered resources, for clients that read the
//! server's schema before they write: kubectl's `create`, `apply` and `replace` fetch
//! `/openapi/v3` and then the document of the object's group-version, and look for a PATCH
//! operation tagged with the object's `x-kubernetes-group-version-kind` that takes the
//! `fieldValidation` query parameter. Finding it, kubectl leaves validation to the server and
//! sends `fieldValidation=Strict`; without it, it validates on its side from `/openapi/v2`
//! (protobuf, not served here) and fails with "failed to download openapi". `kubectl explain`
//! reads the same documents.
//!
//! Built-in kinds (those with a vendored definition, see [`schema`](super::schema)) carry their
//! real schema and every definition it references, under kube-apiserver's names
//! (`io.k8s.api.core.v1.Pod`), and their PATCH operations list the four patch media types, the
//! strategic merge one included, as kube-apiserver lists them; kubectl then computes `apply`'s
//! strategic merge patches from these schemas.
//!
//! Custom resources served from a definition with a schema carry that schema (see
//! [`crd_schema`](super::crd_schema)), with `apiVersion`, `kind` and `metadata` described and
//! tagged with their group-version-kind, as kube-apiserver publishes it, so that `kubectl
//! explain widgets.spec` prints its fields and descriptions.
//!
//! Other kinds (custom resources registered in Rust) get a permissive schema: an object with
//! `apiVersion`, `kind`, `metadata` and `x-kubernetes-preserve-unknown-fields`, tagged with its
//! group-version-kind, so that nothing a test writes is refused; their PATCH operations list
//! JSON, merge and apply patches but not strategic merge, which kube-apiserver refuses for
//! custom resources.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::params::query;
use super::patch::PatchType;
use super::schema::{self, definitions};
use super::served_resource::ServedResource;
use super::util::fnv1a;

/// The documents of a set of registered resources, encoded once: `/openapi/v3` and each
/// group-version's.
#[derive(Debug)]
pub(crate) struct Documents {
    /// `/openapi/v3`: every group-version's document, as `serverRelativeURL` with a hash of its
    /// content (clients cache documents by URL).
    root: Bytes,
    /// The document of each group-version, by `api/v1`, `apis/<group>/<version>`.
    by_group_version: BTreeMap<String, Bytes>,
}

impl Documents {
    /// The documents of `resources`.
    pub(crate) fn new(resources: &[ServedResource]) -> Self {
        let mut by_group_version = BTreeMap::new();
        let mut paths = Map::new();
        for gv in group_versions(resources) {
            let Some(doc) = document(resources, &gv) else {
                continue;
            };
            let encoded = serde_json::to_vec(&doc).unwrap_or_default();
            let hash = fnv1a(&encoded, 0);
            paths.insert(
                gv.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash={hash:016X}")}),
            );
            by_group_version.insert(gv, Bytes::from(encoded));
        }
        let root = serde_json::to_vec(&json!({"paths": paths})).unwrap_or_default();
        Self {
            root: Bytes::from(root),
            by_group_version,
        }
    }

    /// `/openapi/v3`.
    pub(crate) fn root(&self) -> Bytes {
        self.root.clone()
    }

    /// The document of group-version `gv` (`api/v1`, `apis/apps/v1`), `None` if nothing is
    /// served there.
    pub(crate) fn document(&self, gv: &str) -> Option<Bytes> {
        self.by_group_version.get(gv).cloned()
    }
}

/// The `api/v1` or `apis/<group>/<version>` of every registered resource.
fn group_versions(resources: &[ServedResource]) -> Vec<String> {
    let mut gvs: Vec<String> = resources.iter().map(gv_path).collect();
    gvs.sort();
    gvs.dedup();
    gvs
}

/// `api/v1` or `apis/<group>/<version>`: where a group-version's document is under
/// `/openapi/v3`. (`ApiResource` has paths of collections only; this is their root without its
/// leading `/`.)
fn gv_path(r: &ServedResource) -> String {
    if r.api.group.is_empty() {
        format!("api/{}", r.api.version)
    } else {
        format!("apis/{}/{}", r.api.group, r.api.version)
    }
}

/// The document of group-version `gv` (`api/v1`, `apis/apps/v1`), `None` if nothing is served
/// there.
fn document(resources: &[ServedResource], gv: &str) -> Option<Value> {
    let served: Vec<&ServedResource> = resources.iter().filter(|r| gv_path(r) == gv).collect();
    if served.is_empty() {
        return None;
    }
    let mut paths = BTreeMap::new();
    let mut schemas = BTreeMap::new();
    for r in served {
        describe(r, &mut paths, &mut schemas);
    }
    for name in [
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    ] {
        add_definition(name, &mut schemas);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (kcache fake API server)",
            "version": format!("v{}", definitions().kubernetes_version)},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// Adds the paths and schemas of resource `r` (its paths are [`ApiResource::collection_path`]'s,
/// with `{namespace}` and `{name}` for the path parameters).
///
/// [`ApiResource::collection_path`]: kcache_store::ApiResource::collection_path
fn describe(
    r: &ServedResource,
    paths: &mut BTreeMap<String, Value>,
    schemas: &mut BTreeMap<String, Value>,
) {
    let gvk = json!({"group": r.api.group, "version": r.api.version, "kind": r.kind});
    let built_in = schema::for_resource(r);
    let list_name = built_in.and_then(|_| {
        definitions().kind_name(&r.api.group, &r.api.version, &format!("{}List", r.kind))
    });
    let (name, list_name) = if let (Some(kind), Some(list)) = (built_in, list_name) {
        add_definition(kind.name, schemas);
        add_definition(list, schemas);
        (kind.name.to_owned(), list.to_owned())
    } else {
        let name = schema_name(r);
        match r.definition.as_ref().and_then(|d| d.schema.as_ref()) {
            Some(schema) => structural(r, &name, schema, &gvk, schemas),
            None => permissive(r, &name, &gvk, schemas),
        }
        (name.clone(), format!("{name}List"))
    };
    let ops = Operations {
        resource: r,
        schema: schema_ref(&name),
        list_schema: schema_ref(&list_name),
        gvk,
        strategic_merge: built_in.is_some(),
    };

    // Across namespaces (a namespaced kind's list of every namespace, or a cluster-scoped
    // kind's collection), and in namespace `{namespace}`.
    let everywhere = r.api.collection_path(None);
    let (collection, scope) = if r.api.namespaced {
        paths.insert(everywhere, json!({"get": ops.list("AllNamespaces")}));
        (r.api.collection_path(Some("{namespace}")), "Namespaced")
    } else {
        (everywhere, "")
    };
    let item = format!("{collection}/{{name}}");
    let collection_params: Vec<Value> = r
        .api
        .namespaced
        .then(|| path_param("namespace"))
        .into_iter()
        .collect();
    let mut item_params = collection_params.clone();
    item_params.insert(0, path_param("name"));
    let write_params = ["fieldManager", "fieldValidation"];
    paths.insert(
        collection,
        json!({
            "get": ops.list(scope),
            "post": ops.write("create", "post", scope, &write_params),
            "parameters": collection_params,
        }),
    );
    paths.insert(
        item,
        json!({
            "get": ops.read(scope),
            "put": ops.write("replace", "put", scope, &write_params),
            "patch": ops.patch(scope),
            "delete": ops.delete(scope),
            "parameters": item_params,
        }),
    );
}

/// Adds definition `name` and every definition it references to `schemas`.
fn add_definition(name: &str, schemas: &mut BTreeMap<String, Value>) {
    let defs = definitions();
    for reached in defs.closure(name) {
        if !schemas.contains_key(reached)
            && let Some(schema) = defs.schemas.get(reached)
        {
            schemas.insert(reached.to_owned(), schema.clone());
        }
    }
}

/// Adds the permissive schemas of kind `r` (named `name`) and of its list.
fn permissive(r: &ServedResource, name: &str, gvk: &Value, schemas: &mut BTreeMap<String, Value>) {
    let list_gvk = json!({"group": r.api.group, "version": r.api.version,
        "kind": format!("{}List", r.kind)});
    let metadata = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    schemas.insert(
        name.to_owned(),
        json!({
            "description": format!("{} (schema kept permissive by the fake API server)", r.kind),
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": metadata,
            },
            "x-kubernetes-preserve-unknown-fields": true,
            "x-kubernetes-group-version-kind": [gvk],
        }),
    );
    schemas.insert(
        format!("{name}List"),
        json!({
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": metadata,
                "items": {"type": "array", "items": {"$ref": schema_ref(name)}},
            },
            "x-kubernetes-group-version-kind": [list_gvk],
        }),
    );
}

/// Adds the schemas of custom resource `r` (named `name`) served from a definition with
/// structural schema `schema`, and of its list: the schema as the definition gives it, with
/// `apiVersion`, `kind` and `metadata` (`ObjectMeta`) described and the group-version-kind
/// tag, as kube-apiserver publishes a definition's schema.
fn structural(
    r: &ServedResource,
    name: &str,
    schema: &Value,
    gvk: &Value,
    schemas: &mut BTreeMap<String, Value>,
) {
    const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
    let api_version = json!({"type": "string", "description": "APIVersion defines the versioned \
        schema of this representation of an object. Servers should convert recognized schemas to \
        the latest internal value, and may reject unrecognized values. More info: \
        https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"});
    let kind = json!({"type": "string", "description": "Kind is a string value representing the \
        REST resource this object represents. Servers may infer this from the endpoint the client \
        submits requests to. Cannot be updated. In CamelCase. More info: \
        https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"});
    let mut published = schema.clone();
    if let Some(object) = published.as_object_mut() {
        object.entry("type").or_insert_with(|| json!("object"));
        let properties = object.entry("properties").or_insert_with(|| json!({}));
        if let Some(properties) = properties.as_object_mut() {
            properties.insert("apiVersion".into(), api_version.clone());
            properties.insert("kind".into(), kind.clone());
            properties.insert(
                "metadata".into(),
                json!({"allOf": [{"$ref": schema_ref(OBJECT_META)}], "default": {},
                    "description": "Standard object's metadata. More info: \
                    https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}),
            );
        }
        object.insert("x-kubernetes-group-version-kind".into(), json!([gvk]));
    }
    schemas.insert(name.to_owned(), published);
    let list_gvk = json!({"group": r.api.group, "version": r.api.version,
        "kind": format!("{}List", r.kind)});
    schemas.insert(
        format!("{name}List"),
        json!({
            "description": format!("{}List is a list of {}", r.kind, r.kind),
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": api_version,
                "kind": kind,
                "metadata": {"allOf": [{"$ref": schema_ref(LIST_META)}], "default": {}},
                "items": {"type": "array", "items": {"$ref": schema_ref(name)}},
            },
            "x-kubernetes-group-version-kind": [list_gvk],
        }),
    );
    add_definition(OBJECT_META, schemas);
    add_definition(LIST_META, schemas);
}

/// `io.k8s.api.core.v1.Pod`, `io.k8s.api.apps.v1.Deployment`,
/// `io.k8s.api.coordination.v1.Lease`, `com.example.v1.Widget`: the schema names of the real
/// server for built-in kinds, the reversed group for others.
fn schema_name(r: &ServedResource) -> String {
    let group = r.api.group.as_str();
    let prefix = if group.is_empty() {
        "io.k8s.api.core".to_owned()
    } else if !group.contains('.') {
        format!("io.k8s.api.{group}")
    } else if let Some(built_in) = group.strip_suffix(".k8s.io") {
        format!(
            "io.k8s.api.{}",
            built_in.split('.').next().unwrap_or(built_in)
        )
    } else {
        group.rsplit('.').collect::<Vec<_>>().join(".")
    };
    format!("{prefix}.{}.{}", r.api.version, r.kind)
}

fn schema_ref(name: &str) -> Value {
    json!(format!("#/components/schemas/{name}"))
}

fn path_param(name: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}})
}

fn query_param(name: &str) -> Value {
    let kind = match name {
        query::LIMIT | query::TIMEOUT_SECONDS | "gracePeriodSeconds" => "integer",
        query::WATCH | query::ALLOW_WATCH_BOOKMARKS | query::SEND_INITIAL_EVENTS | "force" => {
            "boolean"
        }
        _ => "string",
    };
    json!({"name": name, "in": "query", "schema": {"type": kind, "uniqueItems": true}})
}

fn json_content(schema: &Value) -> Value {
    json!({"application/json": {"schema": {"$ref": schema}}})
}

/// The operations of one resource.
struct Operations<'r> {
    resource: &'r ServedResource,
    schema: Value,
    list_schema: Value,
    gvk: Value,
    /// Whether PATCH lists the strategic merge patch media type (built-in kinds only).
    strategic_merge: bool,
}

impl Operations<'_> {
    fn operation(
        &self,
        action: &str,
        verb: &str,
        scope: &str,
        params: &[&str],
        response: &Value,
    ) -> Map<String, Value> {
        let kind = &self.resource.kind;
        let mut op = Map::new();
        op.insert("operationId".into(), json!(format!("{verb}{scope}{kind}")));
        op.insert("description".into(), json!(format!("{action} {kind}")));
        op.insert(
            "parameters".into(),
            Value::Array(params.iter().map(|p| query_param(p)).collect()),
        );
        op.insert(
            "responses".into(),
            json!({"200": {"description": "OK", "content": json_content(response)}}),
        );
        op.insert("x-kubernetes-action".into(), json!(action));
        op.insert("x-kubernetes-group-version-kind".into(), self.gvk.clone());
        op
    }

    fn list(&self, scope: &str) -> Value {
        Value::Object(self.operation("list", "list", scope, &query::ALL, &self.list_schema))
    }

    fn read(&self, scope: &str) -> Value {
        Value::Object(self.operation("get", "read", scope, &[], &self.schema))
    }

    fn write(&self, action: &str, verb: &str, scope: &str, params: &[&str]) -> Value {
        let mut op = self.operation(action, verb, scope, params, &self.schema);
        op.insert(
            "requestBody".into(),
            json!({"content": json_content(&self.schema), "required": true}),
        );
        Value::Object(op)
    }

    fn patch(&self, scope: &str) -> Value {
        let params = ["fieldManager", "fieldValidation", "force"];
        let mut op = self.operation("patch", "patch", scope, &params, &self.schema);
        let patch =
            json!({"schema": {"$ref": schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")}});
        let content: Map<String, Value> = PatchType::ALL
            .into_iter()
            .filter(|t| self.strategic_merge || *t != PatchType::StrategicMerge)
            .map(|t| (t.content_type().to_owned(), patch.clone()))
            .collect();
        op.insert(
            "requestBody".into(),
            json!({"content": content, "required": true}),
        );
        Value::Object(op)
    }

    fn delete(&self, scope: &str) -> Value {
        let status = schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Status");
        let params = ["gracePeriodSeconds", "propagationPolicy"];
        Value::Object(self.operation("delete", "delete", scope, &params, &status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_follow_the_real_servers() {
        let names: Vec<String> = [
            ServedResource::pods(),
            ServedResource::deployments(),
            ServedResource::leases(),
            ServedResource::new(
                kcache_store::ApiResource::new("example.com", "v1", "widgets", true),
                "Widget",
            ),
        ]
        .iter()
        .map(schema_name)
        .collect();
        assert_eq!(
            names,
            [
                "io.k8s.api.core.v1.Pod",
                "io.k8s.api.apps.v1.Deployment",
                "io.k8s.api.coordination.v1.Lease",
                "com.example.v1.Widget"
            ]
        );
    }
}
