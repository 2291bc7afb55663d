//! `PartialObjectMetadata`: objects reduced to their `metadata`, for clients that ask for it
//! with the `Accept` media type parameters `as`, `g` and `v` (metadata informers and watchers).
//!
//! - `application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` on a list answers a
//!   `PartialObjectMetadataList` (with the list's `resourceVersion`, `continue` and
//!   `remainingItemCount`) whose items are `PartialObjectMetadata`, each with its `kind` and
//!   `apiVersion`;
//! - `as=PartialObjectMetadata` on a GET, a write or a watch answers the object's
//!   `PartialObjectMetadata` (every watch event's object, bookmarks included; ERROR events keep
//!   their `Status`);
//! - `v=v1beta1` answers the same in `meta.k8s.io/v1beta1`; another group or version, or no `g`
//!   and `v`, makes the media range unacceptable (the next one is tried, else 406);
//! - the one-object kind on a list, or the list kind on one object, is 406 `NotAcceptable`
//!   naming the Go type of what was asked for, as kube-apiserver answers once it has the result
//!   (a write is done before its answer is refused); a watch asking for the list kind ends at
//!   its first object, unencodable as kube-apiserver's ends.
//!
//! The metadata's JSON is a slice of the stored encoding ([`Stored::metadata_json`]): nothing
//! is encoded per request but the list's own metadata.

use serde_json::Value;

use super::served_resource::ServedResource;
use super::status::{ApiError, internal};
use super::stored::Stored;

/// The kind of one object's metadata.
pub(crate) const KIND: &str = "PartialObjectMetadata";

/// The kind of a list of [`KIND`].
pub(crate) const LIST_KIND: &str = "PartialObjectMetadataList";

/// The group both kinds are in.
const GROUP: &str = "meta.k8s.io";

/// The `meta.k8s.io` version a metadata-only answer is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetaVersion {
    /// `meta.k8s.io/v1`.
    V1,
    /// `meta.k8s.io/v1beta1`, still served.
    V1beta1,
}

impl MetaVersion {
    /// The `apiVersion` of the answer's objects.
    pub(crate) fn api_version(self) -> &'static str {
        match self {
            Self::V1 => "meta.k8s.io/v1",
            Self::V1beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

/// A request for metadata only: of one object or of a list, in a `meta.k8s.io` version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Partial {
    /// `as=PartialObjectMetadataList` (else `as=PartialObjectMetadata`).
    pub(crate) list: bool,
    /// The `v` parameter.
    pub(crate) version: MetaVersion,
    /// Asked in protobuf (`application/vnd.kubernetes.protobuf;as=...`): served for every
    /// resource, custom ones included, as kube-apiserver serves its `meta.k8s.io` conversions.
    pub(crate) protobuf: bool,
}

impl Partial {
    /// The request the media range parameters `as`, `g` and `v` make, if they ask for metadata
    /// in a group and version that has it. Values are case-sensitive, as kube-apiserver
    /// compares them.
    pub(crate) fn from_params(
        as_kind: Option<&str>,
        group: Option<&str>,
        version: Option<&str>,
    ) -> Option<Self> {
        let list = match as_kind? {
            KIND => false,
            LIST_KIND => true,
            _ => return None,
        };
        if group? != GROUP {
            return None;
        }
        let version = match version? {
            "v1" => MetaVersion::V1,
            "v1beta1" => MetaVersion::V1beta1,
            _ => return None,
        };
        Some(Self {
            list,
            version,
            protobuf: false,
        })
    }

    /// The version of a list's answer; 406 when one object's metadata was asked for.
    pub(crate) fn for_list(self, resource: &ServedResource) -> Result<MetaVersion, ApiError> {
        if self.list {
            return Ok(self.version);
        }
        Err(not_acceptable(&format!(
            "you requested {KIND}, but the requested object is a list ({})",
            go_type(resource, true)
        )))
    }

    /// The version of one object's answer; 406 when a list's metadata was asked for.
    pub(crate) fn for_object(self, resource: &ServedResource) -> Result<MetaVersion, ApiError> {
        if !self.list {
            return Ok(self.version);
        }
        Err(not_acceptable(&format!(
            "you requested {LIST_KIND}, but the requested object is not a list ({})",
            go_type(resource, false)
        )))
    }
}

/// A 406 `NotAcceptable` Status with `message`.
fn not_acceptable(message: &str) -> ApiError {
    ApiError::new(406, "NotAcceptable", message)
}

/// The Go type kube-apiserver holds objects (or lists) of `resource` in, as its 406 messages
/// name them: the internal type of a built-in kind (`*core.Pod`, `*apps.DeploymentList`), an
/// unstructured one for a custom resource.
fn go_type(resource: &ServedResource, list: bool) -> String {
    let suffix = if list { "List" } else { "" };
    if resource.crd_style || resource.definition.is_some() {
        return format!("*unstructured.Unstructured{suffix}");
    }
    let package = match resource.api.group.as_str() {
        "" | "events.k8s.io" => "core",
        group => group.split('.').next().unwrap_or(group),
    };
    format!("*{package}.{}{suffix}", resource.kind)
}

/// Appends `{"kind":"PartialObjectMetadata","apiVersion":..,"metadata":{...}}` for `stored`.
pub(crate) fn write_object(out: &mut Vec<u8>, version: MetaVersion, stored: &Stored) {
    let metadata = stored.metadata_json();
    out.reserve(metadata.len() + 80);
    out.extend_from_slice(b"{\"kind\":\"");
    out.extend_from_slice(KIND.as_bytes());
    out.extend_from_slice(b"\",\"apiVersion\":\"");
    out.extend_from_slice(version.api_version().as_bytes());
    out.extend_from_slice(b"\",\"metadata\":");
    out.extend_from_slice(metadata);
    out.push(b'}');
}

/// Appends the enveloped protobuf `PartialObjectMetadata` of `stored`; `None` when its
/// metadata has no protobuf form.
pub(crate) fn write_protobuf_object(
    out: &mut Vec<u8>,
    version: MetaVersion,
    stored: &Stored,
) -> Option<()> {
    let raw = stored.metadata_protobuf()?;
    kcache_protobuf::envelope::write(version.api_version(), KIND, raw, out);
    Some(())
}

/// The body of one object's `PartialObjectMetadata`.
pub(crate) fn object_body(version: MetaVersion, stored: &Stored) -> Vec<u8> {
    let mut out = Vec::new();
    write_object(&mut out, version, stored);
    out
}

/// Appends the watch event line `{"type":"<kind>","object":<PartialObjectMetadata>}\n`.
pub(crate) fn write_event_line(
    out: &mut Vec<u8>,
    kind: &str,
    version: MetaVersion,
    stored: &Stored,
) {
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    write_object(out, version, stored);
    out.extend_from_slice(b"}\n");
}

/// The JSON of a `PartialObjectMetadataList` with `meta` (the list's metadata) and the
/// `PartialObjectMetadata` of `items`.
pub(crate) fn list_body(
    version: MetaVersion,
    meta: &serde_json::Map<String, Value>,
    items: &[&Stored],
) -> Result<Vec<u8>, ApiError> {
    let items_len: usize = items.iter().map(|s| s.metadata_json().len() + 80).sum();
    let mut out = Vec::with_capacity(256 + items_len);
    out.extend_from_slice(b"{\"kind\":\"");
    out.extend_from_slice(LIST_KIND.as_bytes());
    out.extend_from_slice(b"\",\"apiVersion\":\"");
    out.extend_from_slice(version.api_version().as_bytes());
    out.extend_from_slice(b"\",\"metadata\":");
    serde_json::to_writer(&mut out, meta).map_err(internal)?;
    out.extend_from_slice(b",\"items\":[");
    for (i, obj) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_object(&mut out, version, obj);
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_meta_k8s_io_v1_and_v1beta1_convert() {
        let v1 = Partial::from_params(Some(KIND), Some(GROUP), Some("v1"));
        assert_eq!(
            v1,
            Some(Partial {
                list: false,
                version: MetaVersion::V1,
                protobuf: false,
            })
        );
        let beta = Partial::from_params(Some(LIST_KIND), Some(GROUP), Some("v1beta1"));
        assert_eq!(
            beta.map(|p| (p.list, p.version)),
            Some((true, MetaVersion::V1beta1))
        );
        for (kind, group, version) in [
            (Some(KIND), None, Some("v1")),
            (Some(KIND), Some(GROUP), None),
            (Some(KIND), Some("meta.k8s.io"), Some("v2")),
            (Some(KIND), Some("apps"), Some("v1")),
            (Some("partialobjectmetadata"), Some(GROUP), Some("v1")),
            (Some("Table"), Some(GROUP), Some("v1")),
            (None, Some(GROUP), Some("v1")),
        ] {
            assert_eq!(
                Partial::from_params(kind, group, version),
                None,
                "{kind:?} {group:?} {version:?}"
            );
        }
    }

    #[test]
    fn go_types_name_internal_and_unstructured_types() {
        assert_eq!(go_type(&ServedResource::pods(), true), "*core.PodList");
        assert_eq!(
            go_type(&ServedResource::deployments(), false),
            "*apps.Deployment"
        );
        let widgets = ServedResource::new(
            kcache_store::ApiResource::new("example.com", "v1", "widgets", true),
            "Widget",
        );
        assert_eq!(go_type(&widgets, true), "*unstructured.UnstructuredList");
    }

    #[test]
    fn objects_and_lists_copy_the_stored_metadata() {
        let obj: kcache_store::DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b"}, "resourceVersion": "7"},
            "spec": {"containers": []},
        }))
        .unwrap();
        let stored = Stored::new(obj).unwrap();
        let one: Value = serde_json::from_slice(&object_body(MetaVersion::V1, &stored)).unwrap();
        assert_eq!(
            one,
            json!({"kind": KIND, "apiVersion": "meta.k8s.io/v1",
                "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b"}, "resourceVersion": "7"}})
        );
        let mut meta = serde_json::Map::new();
        meta.insert("resourceVersion".into(), json!("9"));
        let list = list_body(MetaVersion::V1beta1, &meta, &[&stored, &stored]).unwrap();
        let list: Value = serde_json::from_slice(&list).unwrap();
        assert_eq!(list["kind"], LIST_KIND);
        assert_eq!(list["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(list["metadata"], json!({"resourceVersion": "9"}));
        assert_eq!(list["items"][1]["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(list["items"][1]["metadata"], one["metadata"]);
        let mut line = Vec::new();
        write_event_line(&mut line, "ADDED", MetaVersion::V1, &stored);
        let event: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(event, json!({"type": "ADDED", "object": one}));
        assert!(line.ends_with(b"}\n"));
    }
}
