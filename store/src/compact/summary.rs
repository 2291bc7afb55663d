//! [`CompactMetadata`]: the metadata a [`Compact`](super::Compact) object keeps decoded, read
//! with serde from an object's `metadata` in any encoding that presents it as JSON names it.

use std::collections::BTreeMap;

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};

use super::meta::{CompactMeta, WireMeta};
use super::owners::OwnerFields;

/// The metadata a [`Compact`](super::Compact) object keeps decoded (the fields behind
/// [`Object`](crate::Object): name, namespace, resourceVersion, uid, labels, annotations,
/// generation, whether `deletionTimestamp` is set, ownerReferences), deserialized from an
/// object's `metadata` by any serde `Deserializer` that names its fields as JSON does; every
/// other field (`managedFields` included) is skipped, not built.
///
/// A decoder of another encoding reads it from the object's metadata and hands it to
/// [`CompactCodec::encode_parts`](super::CompactCodec::encode_parts) with the object's bytes.
///
/// ```
/// use kcache_store::CompactMetadata;
///
/// let metadata: CompactMetadata = serde_json::from_str(
///     r#"{"name":"a","namespace":"ns","labels":{"app":"web"},"deletionTimestamp":null,
///        "managedFields":[{"manager":"kubectl"}]}"#,
/// )?;
/// assert_eq!(metadata.name(), Some("a"));
/// assert_eq!(metadata.labels().map(|l| l["app"].as_str()), Some("web"));
/// assert!(!metadata.is_being_deleted());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactMetadata(pub(crate) CompactMeta);

impl CompactMetadata {
    /// `name`.
    pub fn name(&self) -> Option<&str> {
        self.0.name.as_deref()
    }

    /// `namespace`.
    pub fn namespace(&self) -> Option<&str> {
        self.0.namespace.as_deref()
    }

    /// `resourceVersion`.
    pub fn resource_version(&self) -> Option<&str> {
        self.0.resource_version.as_deref()
    }

    /// `labels`.
    pub fn labels(&self) -> Option<&BTreeMap<String, String>> {
        self.0
            .labels
            .as_ref()
            .map(super::string_map::StringMap::map)
    }

    /// Whether `deletionTimestamp` is set.
    pub fn is_being_deleted(&self) -> bool {
        self.0.being_deleted
    }
}

impl<'de> Deserialize<'de> for CompactMetadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WireMeta::<IgnoredAny, Vec<OwnerFields<'de>>>::deserialize(deserializer)?;
        Ok(Self(wire.into_meta().0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ExpectedType;
    use crate::compact::meta::read_meta;

    #[test]
    fn reads_what_the_json_path_reads() {
        let meta = r#"{"name":"a","namespace":"ns","resourceVersion":"7","uid":"u",
            "labels":{"app":"web"},"annotations":{"x":"y"},"generation":3,
            "deletionTimestamp":"2025-01-01T00:00:00Z","finalizers":["f"],
            "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs",
                "uid":"u1","controller":true}],
            "managedFields":[{"manager":"m","fieldsV1":{"f:spec":{}}}]}"#;
        let summary: CompactMetadata = serde_json::from_str(meta).unwrap();
        let (from_json, _) =
            read_meta(&format!(r#"{{"metadata":{meta}}}"#), &ExpectedType::any()).unwrap();
        assert_eq!(summary.0, from_json);
        assert!(summary.is_being_deleted());
        assert_eq!(summary.resource_version(), Some("7"));
    }

    #[test]
    fn a_null_deletion_timestamp_is_not_a_deletion() {
        let summary: CompactMetadata =
            serde_json::from_str(r#"{"name":"a","deletionTimestamp":null}"#).unwrap();
        assert!(!summary.is_being_deleted());
        assert_eq!(summary.namespace(), None);
    }

    #[test]
    fn metadata_of_the_wrong_types_is_an_error() {
        assert!(serde_json::from_str::<CompactMetadata>(r#"{"name":5}"#).is_err());
        assert!(serde_json::from_str::<CompactMetadata>(r#"{"labels":{"a":1}}"#).is_err());
    }
}
