//! The metadata a [`Compact`](super::Compact) object keeps decoded, read from an object's JSON
//! without decoding the rest, and the span of `metadata.managedFields` in that JSON.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::owners::{OwnerFields, PackedOwners};
use super::string_map::StringMap;
use crate::ExpectedType;

/// What keys, selectors, indexes and handlers read without a full decode: the fields behind
/// [`Object`](crate::Object).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CompactMeta {
    pub(crate) name: Option<Box<str>>,
    pub(crate) namespace: Option<Box<str>>,
    pub(crate) resource_version: Option<Box<str>>,
    pub(crate) uid: Option<Box<str>>,
    /// `labels` and `annotations` as their text, built into maps when first read.
    pub(crate) labels: Option<StringMap>,
    pub(crate) annotations: Option<StringMap>,
    pub(crate) generation: Option<i64>,
    pub(crate) being_deleted: bool,
    /// `ownerReferences`, the entries that parse, packed in one allocation (most objects
    /// have none: no allocation).
    pub(crate) owner_references: PackedOwners,
}

/// The object's top level: only `metadata` is decoded, in the same pass; every other field is
/// scanned past without being built.
#[derive(Deserialize)]
struct Top<'a> {
    #[serde(default, borrow)]
    metadata: Option<OnlyMap<WireMeta<&'a RawValue>>>,
    #[serde(default, borrow, rename = "apiVersion")]
    api_version: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    kind: Option<Cow<'a, str>>,
}

/// `T` decoded from a JSON object only: serde's derived structs also accept arrays, and a
/// Kubernetes object's metadata is a JSON object.
struct OnlyMap<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OnlyMap<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = OnlyMap<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(OnlyMap)
            }
        }
        deserializer.deserialize_map(Visit(std::marker::PhantomData))
    }
}

/// The fields of an object's `metadata` that [`CompactMeta`] keeps, as serde reads them, the
/// one list of them for every encoding. `R` holds the values only looked at in passing
/// (`deletionTimestamp`, `managedFields`) and `O` the `ownerReferences`: the JSON path
/// borrows all three as [`RawValue`]s from the text (nothing built but what it keeps), a
/// decoder of another encoding ([`CompactMetadata`](super::CompactMetadata)) reads them with
/// any `Deserializer`, as [`IgnoredAny`](serde::de::IgnoredAny) and a `Vec` of owner entries.
#[derive(Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(deserialize = "R: Deserialize<'de>, O: Deserialize<'de>")
)]
pub(crate) struct WireMeta<R, O = R> {
    #[serde(default)]
    name: Option<Box<str>>,
    #[serde(default)]
    namespace: Option<Box<str>>,
    #[serde(default)]
    resource_version: Option<Box<str>>,
    #[serde(default)]
    uid: Option<Box<str>>,
    #[serde(default)]
    labels: Option<StringMap>,
    #[serde(default)]
    annotations: Option<StringMap>,
    #[serde(default)]
    generation: Option<i64>,
    /// Set (and not `null`) when the object is being deleted.
    #[serde(default)]
    deletion_timestamp: Option<R>,
    #[serde(default)]
    managed_fields: Option<R>,
    #[serde(default)]
    owner_references: Option<O>,
}

/// A value read in passing: whether it is set (not `null`).
pub(crate) trait Passing {
    /// Whether the value is set: not `null`.
    fn is_set(&self) -> bool;
}

impl Passing for &RawValue {
    fn is_set(&self) -> bool {
        self.get() != "null"
    }
}

impl Passing for serde::de::IgnoredAny {
    /// `null` is `None` before an `IgnoredAny` is read: whatever is read is set.
    fn is_set(&self) -> bool {
        true
    }
}

/// `ownerReferences` as read: the references [`CompactMeta`] keeps, packed.
pub(crate) trait Owners {
    /// The references kept.
    fn into_owners(self) -> PackedOwners;
}

impl Owners for &RawValue {
    fn into_owners(self) -> PackedOwners {
        owner_references(self.get())
    }
}

impl Owners for Vec<OwnerFields<'_>> {
    fn into_owners(self) -> PackedOwners {
        PackedOwners::pack(&self)
    }
}

impl<R: Passing, O: Owners> WireMeta<R, O> {
    /// The metadata kept, and the `managedFields` value as read.
    pub(crate) fn into_meta(self) -> (CompactMeta, Option<R>) {
        let meta = CompactMeta {
            name: self.name,
            namespace: self.namespace,
            resource_version: self.resource_version,
            uid: self.uid,
            labels: self.labels,
            annotations: self.annotations,
            generation: self.generation,
            being_deleted: self.deletion_timestamp.is_some_and(|t| t.is_set()),
            owner_references: self
                .owner_references
                .map(Owners::into_owners)
                .unwrap_or_default(),
        };
        (meta, self.managed_fields)
    }
}

/// The metadata of the object in `json`, and the byte range of its `managedFields` value
/// (`None` when it has none), for an object of the `expected` type, as a typed decode would
/// find it.
pub(crate) fn read_meta(
    json: &str,
    expected: &ExpectedType,
) -> Result<(CompactMeta, Option<std::ops::Range<usize>>), serde_json::Error> {
    // serde's derived structs also accept arrays; a Kubernetes object and its metadata are
    // JSON objects only.
    let not_an_object = || serde::de::Error::custom("expected a JSON object");
    let top: Top<'_> = serde_json::from_str(json)?;
    if !json.trim_start().starts_with('{') {
        return Err(not_an_object());
    }
    expected
        .check_object(top.api_version.as_deref(), top.kind.as_deref())
        .map_err(serde::de::Error::custom)?;
    let Some(OnlyMap(wire)) = top.metadata else {
        return Ok((CompactMeta::default(), None));
    };
    let (meta, managed) = wire.into_meta();
    Ok((meta, managed.map(|v| span_in(json, v.get()))))
}

/// The entries of an `ownerReferences` value (its text, already delimited by the metadata's
/// pass) that parse as references; nothing if it is not an array. Lenient, as
/// [`Object::owner_references`](crate::Object::owner_references) of a `DynamicObject` is: a
/// bad entry is left out, it does not make the object undecodable.
fn owner_references(json: &str) -> PackedOwners {
    let Ok(entries) = serde_json::from_str::<Vec<&RawValue>>(json) else {
        return PackedOwners::default();
    };
    let references: Vec<OwnerFields<'_>> = entries
        .into_iter()
        .filter_map(|entry| serde_json::from_str(entry.get()).ok())
        .collect();
    PackedOwners::pack(&references)
}

/// Where `inner` (a slice borrowed from `outer`) sits in `outer`.
fn span_in(outer: &str, inner: &str) -> std::ops::Range<usize> {
    let start = (inner.as_ptr() as usize).saturating_sub(outer.as_ptr() as usize);
    start..start + inner.len()
}

/// `json` without the member whose value spans `value` (the `"managedFields": [...]` member of
/// `metadata`, and one comma next to it), written into `out` (cleared first; left empty on
/// `None`), so that a caller can reuse one buffer for every object. `None` when the text before
/// the value is not the plain key `"managedFields"` (an escaped key, say): the caller then
/// removes it the slow way.
pub(crate) fn without_member_into(
    json: &str,
    value: std::ops::Range<usize>,
    out: &mut String,
) -> Option<()> {
    const KEY: &str = "\"managedFields\"";
    out.clear();
    let bytes = json.as_bytes();
    let before = json.get(..value.start)?.trim_end();
    let before = before.strip_suffix(':')?.trim_end();
    let key_start = before.strip_suffix(KEY).map(str::len)?;
    let ahead = json.get(..key_start)?.trim_end();
    let (cut_start, cut_end) = if ahead.ends_with(',') {
        // `…, "managedFields": [...]`: drop from that comma to the value's end.
        (ahead.len() - 1, value.end)
    } else {
        // `{ "managedFields": [...], …`: drop the member and the comma after it, if any.
        let after = json.get(value.end..)?;
        let rest = after.trim_start();
        let skipped = after.len() - rest.len();
        let end = if rest.starts_with(',') {
            value.end + skipped + 1
        } else {
            value.end
        };
        (key_start, end)
    };
    let (head, tail) = (json.get(..cut_start)?, json.get(cut_end..)?);
    out.reserve(bytes.len() - (cut_end - cut_start));
    out.push_str(head);
    out.push_str(tail);
    Some(())
}

/// `json` without `metadata.managedFields`, the slow way: through a `serde_json::Value`.
pub(crate) fn without_managed_fields_slow(json: &str) -> Result<String, serde_json::Error> {
    let mut value: serde_json::Value = serde_json::from_str(json)?;
    if let Some(meta) = value
        .get_mut("metadata")
        .and_then(serde_json::Value::as_object_mut)
    {
        meta.remove("managedFields");
    }
    serde_json::to_string(&value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OwnerReference;

    /// [`without_member_into`] a new string.
    fn without_member(json: &str, value: std::ops::Range<usize>) -> Option<String> {
        let mut out = String::new();
        without_member_into(json, value, &mut out)?;
        Some(out)
    }

    fn strip(json: &str) -> String {
        let (_, span) = read_meta(json, &ExpectedType::any()).unwrap();
        without_member(json, span.unwrap()).unwrap()
    }

    #[test]
    fn reads_metadata_only() {
        let json = r#"{"kind":"Pod","metadata":{"name":"a","namespace":"ns","resourceVersion":"7",
            "uid":"u","labels":{"app":"web"},"generation":3,"deletionTimestamp":"2025-01-01T00:00:00Z"},
            "spec":{"containers":[{"name":"c"}]}}"#;
        let (meta, span) = read_meta(json, &ExpectedType::any()).unwrap();
        assert_eq!(meta.name.as_deref(), Some("a"));
        assert_eq!(meta.namespace.as_deref(), Some("ns"));
        assert_eq!(meta.resource_version.as_deref(), Some("7"));
        assert_eq!(meta.uid.as_deref(), Some("u"));
        assert_eq!(meta.labels.unwrap().map()["app"], "web");
        assert_eq!(meta.generation, Some(3));
        assert!(meta.being_deleted);
        assert!(span.is_none());
    }

    #[test]
    fn owner_references_are_read_with_the_metadata() {
        let json = r#"{"metadata":{"name":"a","ownerReferences":[
            {"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u1","controller":true},
            7, {"kind": 5}]}}"#;
        let (meta, _) = read_meta(json, &ExpectedType::any()).unwrap();
        assert_eq!(
            meta.owner_references.unpack(),
            [OwnerReference {
                uid: "u1".into(),
                ..OwnerReference::new("apps/v1", "ReplicaSet", "rs").controlled()
            }]
        );
        for odd in [
            r#"{"metadata":{"ownerReferences":null}}"#,
            r#"{"metadata":{"ownerReferences":{"kind":"ReplicaSet"}}}"#,
            r#"{"metadata":{"name":"a"}}"#,
        ] {
            let (meta, _) = read_meta(odd, &ExpectedType::any()).unwrap();
            assert!(meta.owner_references.is_empty(), "{odd}");
        }
    }

    #[test]
    fn null_deletion_timestamp_is_not_deleting() {
        let (meta, _) = read_meta(
            r#"{"metadata":{"name":"a","deletionTimestamp":null}}"#,
            &ExpectedType::any(),
        )
        .unwrap();
        assert!(!meta.being_deleted);
    }

    #[test]
    fn managed_fields_are_cut_wherever_they_stand() {
        assert_eq!(
            strip(r#"{"metadata":{"name":"a","managedFields":[{"manager":"m"}]},"spec":{}}"#),
            r#"{"metadata":{"name":"a"},"spec":{}}"#
        );
        assert_eq!(
            strip(r#"{"metadata":{"managedFields":[{"manager":"m"}],"name":"a"}}"#),
            r#"{"metadata":{"name":"a"}}"#
        );
        assert_eq!(
            strip(r#"{"metadata": { "managedFields" : [] }}"#),
            r#"{"metadata": {  }}"#
        );
        assert_eq!(
            strip("{\"metadata\":{\"name\":\"a\" ,\n \"managedFields\": [1], \"uid\":\"u\"}}"),
            "{\"metadata\":{\"name\":\"a\" , \"uid\":\"u\"}}"
        );
    }

    #[test]
    fn an_escaped_key_is_left_to_the_slow_way() {
        let json = r#"{"metadata":{"name":"a","managed\u0046ields":[1]}}"#;
        let (_, span) = read_meta(json, &ExpectedType::any()).unwrap();
        assert!(without_member(json, span.unwrap()).is_none());
        assert_eq!(
            without_managed_fields_slow(json).unwrap(),
            r#"{"metadata":{"name":"a"}}"#
        );
    }

    #[test]
    fn bad_metadata_is_an_error() {
        assert!(read_meta(r#"{"metadata":{"name":5}}"#, &ExpectedType::any()).is_err());
        assert!(read_meta(r#"{"metadata":[]}"#, &ExpectedType::any()).is_err());
        assert!(read_meta("[1]", &ExpectedType::any()).is_err());
        assert!(read_meta(r#"{"metadata":{"name":"a"}"#, &ExpectedType::any()).is_err());
    }
}
