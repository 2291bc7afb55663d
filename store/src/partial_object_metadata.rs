//! [`PartialObjectMetadata`]: an object's metadata alone, what a metadata-only list or watch
//! (`Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`) sends.

use std::fmt;
use std::sync::Arc;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ObjectMeta;
use crate::meta::{FieldKey, FieldKeySeed};

/// The `apiVersion` of the metadata-only forms (`meta.k8s.io/v1`).
pub const META_V1: &str = "meta.k8s.io/v1";

/// The `kind` the API server gives a metadata-only object.
pub const PARTIAL_OBJECT_METADATA: &str = "PartialObjectMetadata";

/// An object's `apiVersion`, `kind` and [`ObjectMeta`], and nothing else: the cache of a
/// metadata-only informer holds these, a fraction of each whole object (no `spec`, no
/// `status`), for any kind, custom resources included.
///
/// The API server sends them as `meta.k8s.io/v1` `PartialObjectMetadata`; a metadata-only
/// lister-watcher sets [`api_version`](Self::api_version) and [`kind`](Self::kind) to those of
/// the resource it lists (`v1`, `Secret`), so that an object says what it describes. Decoded
/// from a whole object (a server that answers metadata-only requests with whole objects), every
/// other top-level field is skipped unread.
///
/// ```
/// use kcache_store::{Object, PartialObjectMetadata};
///
/// let meta: PartialObjectMetadata = serde_json::from_str(
///     r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",
///         "metadata":{"name":"tls","namespace":"web","resourceVersion":"7",
///                     "labels":{"app":"web"}}}"#,
/// )?;
/// assert_eq!(meta.name(), Some("tls"));
/// assert_eq!(meta.labels().map(|l| l["app"].as_str()), Some("web"));
/// let whole: PartialObjectMetadata = serde_json::from_str(
///     r#"{"kind":"Secret","apiVersion":"v1","metadata":{"name":"tls"},"data":{"k":"dg=="}}"#,
/// )?;
/// assert_eq!(whole.kind.as_deref(), Some("Secret"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PartialObjectMetadata {
    /// `apiVersion`: of the object described once a metadata-only lister-watcher has set it
    /// (one string shared by all its objects), else as sent.
    pub api_version: Option<Arc<str>>,
    /// `kind`: as [`api_version`](Self::api_version).
    pub kind: Option<Arc<str>>,
    /// `metadata`.
    pub metadata: ObjectMeta,
}

const FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

impl PartialObjectMetadata {
    /// Whether `api_version` and `kind` are the metadata-only form's (`meta.k8s.io/v1`
    /// `PartialObjectMetadata`, the kind possibly left out), rather than an object's own.
    pub fn is_metadata_form(api_version: Option<&str>, kind: Option<&str>) -> bool {
        api_version == Some(META_V1) && kind.is_none_or(|k| k == PARTIAL_OBJECT_METADATA)
    }
}

// The typed metadata, and `apiVersion` and `kind` as data.
crate::impl_object!(PartialObjectMetadata, type_meta);

impl<'de> Deserialize<'de> for PartialObjectMetadata {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PartialObjectMetadata;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Kubernetes object's metadata")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<PartialObjectMetadata, A::Error> {
                let mut o = PartialObjectMetadata::default();
                while let Some(key) = map.next_key_seed(FieldKeySeed(&FIELDS))? {
                    match key {
                        FieldKey::Known(0) => {
                            o.api_version = map.next_value::<Option<String>>()?.map(Arc::from);
                        }
                        FieldKey::Known(1) => {
                            o.kind = map.next_value::<Option<String>>()?.map(Arc::from);
                        }
                        FieldKey::Known(_) => {
                            o.metadata =
                                map.next_value::<Option<ObjectMeta>>()?.unwrap_or_default();
                        }
                        FieldKey::Other(_) => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(o)
            }
        }
        d.deserialize_map(V)
    }
}

impl Serialize for PartialObjectMetadata {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(v) = &self.api_version {
            map.serialize_entry("apiVersion", &**v)?;
        }
        if let Some(v) = &self.kind {
            map.serialize_entry("kind", &**v)?;
        }
        map.serialize_entry("metadata", &self.metadata)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Object;
    use serde_json::json;

    #[test]
    fn the_metadata_form_and_a_whole_object_decode_alike() {
        let meta = json!({"name": "c", "namespace": "d", "resourceVersion": "9", "uid": "u",
            "labels": {"app": "x"}, "ownerReferences": [{"apiVersion": "apps/v1",
            "kind": "ReplicaSet", "name": "rs", "uid": "o", "controller": true}]});
        let partial: PartialObjectMetadata = serde_json::from_value(
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}),
        )
        .unwrap();
        let whole: PartialObjectMetadata = serde_json::from_value(json!({"kind": "Pod",
            "apiVersion": "v1", "metadata": meta, "spec": {"containers": [{"name": "c"}]},
            "status": {"phase": "Running"}}))
        .unwrap();
        assert_eq!(partial.metadata, whole.metadata);
        assert_eq!(partial.owner_references()[0].name, "rs");
        assert!(PartialObjectMetadata::is_metadata_form(
            partial.api_version.as_deref(),
            partial.kind.as_deref()
        ));
        assert!(!PartialObjectMetadata::is_metadata_form(
            whole.api_version.as_deref(),
            whole.kind.as_deref()
        ));
        let again: PartialObjectMetadata =
            serde_json::from_value(serde_json::to_value(&partial).unwrap()).unwrap();
        assert_eq!(again, partial);
    }
}
