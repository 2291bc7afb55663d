//! [`Compact<K>`]: an object cached as decoded metadata plus its compressed JSON, decoded into
//! a `K` only when asked.
//!
//! A typed Kubernetes object in Rust costs several times its JSON: every string, map and vector
//! is a separate allocation, and k8s-openapi's structs are wide. An informer needs only the
//! metadata to key, index, select and hand out objects; the rest is read by handlers, which can
//! decode it when (and on the thread where) they need it. `Compact<K>` holds exactly that:
//! the fields behind [`Object`], and the object's JSON (without `managedFields` by default)
//! compressed with LZ4 against a dictionary its [`CompactCodec`] shares between the objects of
//! one stream. Labels and annotations are kept as their JSON text, one allocation each, and
//! built into maps when first read (`string_map`): a map of a few entries costs a 544-byte
//! B-tree node and two allocations per entry, most of what the metadata would otherwise
//! hold, and many informers never read either client-side.
//!
//! It implements [`Object`], so it plugs into every store, queue, reflector and informer as
//! any object type does. Read the rest with [`typed`](Compact::typed) (a full decode),
//! [`pointer`](Compact::pointer) (one field, scanning past the others), or
//! [`json`](Compact::json).

mod codec;
mod meta;
mod owners;
mod payload;
mod pointer;
mod string_map;
mod summary;

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

pub use self::codec::CompactCodec;
use self::codec::Packed;
use self::meta::CompactMeta;
pub use self::payload::PayloadFormat;
pub use self::pointer::JsonPointer;
use self::string_map::StringMap;
pub use self::summary::CompactMetadata;
use crate::Object;

/// An object of type `K` kept compact: its metadata decoded, the rest as compressed JSON.
///
/// Built by a [`CompactCodec`] (a lister-watcher that produces compact objects owns one),
/// by [`from_typed`](Self::from_typed), or by deserializing one from `serde_json` (each object
/// then compressed on its own, without a shared dictionary).
///
/// `K` is only a label until [`typed`](Self::typed) decodes one: a `Compact<Pod>` is never
/// built as a `Pod` unless asked.
///
/// ```
/// use kcache_store::{Compact, DynamicObject, Object};
///
/// let json = r#"{"metadata":{"name":"a","namespace":"ns","labels":{"app":"web"}},
///                "spec":{"nodeName":"n1"}}"#;
/// let compact: Compact<DynamicObject> = serde_json::from_str(json)?;
/// assert_eq!(compact.namespace(), Some("ns"));
/// assert_eq!(compact.labels().map(|l| l["app"].as_str()), Some("web"));
/// let full: DynamicObject = compact.typed()?;
/// assert_eq!(full.data["spec"]["nodeName"], "n1");
/// # Ok::<(), serde_json::Error>(())
/// ```
pub struct Compact<K> {
    meta: CompactMeta,
    packed: Packed,
    /// How the payload is read when it is not JSON (an object decoded from protobuf).
    format: Option<Arc<dyn PayloadFormat<K>>>,
    _k: PhantomData<fn() -> K>,
}

impl<K> Clone for Compact<K> {
    fn clone(&self) -> Self {
        Self {
            meta: self.meta.clone(),
            packed: self.packed.clone(),
            format: self.format.clone(),
            _k: PhantomData,
        }
    }
}

impl<K> fmt::Debug for Compact<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compact")
            .field("namespace", &self.meta.namespace)
            .field("name", &self.meta.name)
            .field("resource_version", &self.meta.resource_version)
            .field("encoding", &self.encoding())
            .field("payload_len", &self.packed.len)
            .field("stored_len", &self.packed.bytes.len())
            .finish_non_exhaustive()
    }
}

impl<K> Compact<K> {
    /// The compact form of `object` (without `managedFields`), compressed on its own.
    ///
    /// # Errors
    ///
    /// `object` cannot be serialized to JSON, or its metadata is not what Kubernetes writes.
    pub fn from_typed(object: &K) -> Result<Self, serde_json::Error>
    where
        K: Serialize,
    {
        CompactCodec::standalone().encode_typed(object)
    }

    /// Decodes the whole object. Each call decodes again: keep the result if you need it twice.
    ///
    /// # Errors
    ///
    /// The JSON does not decode as a `K` (the server sent a field `K` cannot hold).
    pub fn typed(&self) -> Result<K, serde_json::Error>
    where
        K: DeserializeOwned,
    {
        match &self.format {
            None => serde_json::from_str(&self.packed.unpack()?),
            Some(format) => format.typed(&self.packed.unpack_bytes()?),
        }
    }

    /// The object's JSON (without `managedFields` unless the codec kept them). An object kept
    /// in another encoding is converted (as its [`PayloadFormat`] writes JSON).
    ///
    /// # Errors
    ///
    /// Only if the stored bytes were corrupted in memory, or (another encoding) they do not
    /// decode.
    pub fn json(&self) -> Result<String, serde_json::Error> {
        match &self.format {
            None => self.packed.unpack(),
            Some(format) => format.json(&self.packed.unpack_bytes()?),
        }
    }

    /// The encoding the object is kept in: `"json"`, or its [`PayloadFormat`]'s name.
    pub fn encoding(&self) -> &'static str {
        self.format.as_ref().map_or("json", |f| f.name())
    }

    /// The value at a JSON pointer (`/spec/nodeName`, `/spec/containers/0/image`; RFC 6901),
    /// read without building the rest of the object; `None` when there is no such value.
    /// For index functions that need a field beyond the metadata.
    ///
    /// An object kept in another encoding is read by its [`PayloadFormat`]'s
    /// [`pointer`](PayloadFormat::pointer).
    ///
    /// # Errors
    ///
    /// `pointer` is not empty and does not start with `/`; or, as for [`json`](Self::json),
    /// the stored bytes do not decode.
    pub fn pointer(&self, pointer: &str) -> Result<Option<Value>, serde_json::Error> {
        let pointer = JsonPointer::parse(pointer)?;
        match &self.format {
            None => pointer.read(&self.packed.unpack()?),
            Some(format) => format.pointer(&self.packed.unpack_bytes()?, &pointer),
        }
    }

    /// The size of the object as kept (without `managedFields` unless kept), in bytes, before
    /// compression: of its JSON, or of its payload in the [encoding](Self::encoding) it was
    /// decoded from.
    pub fn json_len(&self) -> usize {
        self.packed.len
    }

    /// The bytes the object takes in memory, compressed.
    pub fn stored_len(&self) -> usize {
        self.packed.bytes.len()
    }
}

impl<K: 'static> Object for Compact<K> {
    fn name(&self) -> Option<&str> {
        self.meta.name.as_deref()
    }
    fn namespace(&self) -> Option<&str> {
        self.meta.namespace.as_deref()
    }
    fn resource_version(&self) -> Option<&str> {
        self.meta.resource_version.as_deref()
    }
    fn uid(&self) -> Option<&str> {
        self.meta.uid.as_deref()
    }
    /// Kept as their JSON text and built into a map on the first read, then kept built.
    fn labels(&self) -> Option<&BTreeMap<String, String>> {
        self.meta.labels.as_ref().map(StringMap::map)
    }
    /// Kept as their JSON text and built into a map on the first read, then kept built.
    fn annotations(&self) -> Option<&BTreeMap<String, String>> {
        self.meta.annotations.as_ref().map(StringMap::map)
    }
    fn is_being_deleted(&self) -> bool {
        self.meta.being_deleted
    }
    fn generation(&self) -> Option<i64> {
        self.meta.generation
    }
    /// Decoded with the rest of the metadata when the object was encoded (the entries that
    /// parse), kept packed in one allocation; built on each call.
    fn owner_references(&self) -> Vec<crate::OwnerReference> {
        self.meta.owner_references.unpack()
    }
}

/// Deserializes from `serde_json` only (it keeps the object's text): the object is compressed
/// on its own, without `managedFields`. A lister-watcher that builds compact objects uses a
/// shared [`CompactCodec`] instead.
impl<'de, K> Deserialize<'de> for Compact<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        CompactCodec::standalone()
            .encode(raw.get())
            .map_err(D::Error::custom)
    }
}

/// Serializes as the object's JSON (without `managedFields` unless kept), to `serde_json`
/// verbatim; other serializers get the equivalent value.
impl<K> Serialize for Compact<K> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error as _;
        let json = self.json().map_err(S::Error::custom)?;
        let raw = RawValue::from_string(json).map_err(S::Error::custom)?;
        raw.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DynamicObject;

    const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"ns",
        "resourceVersion":"12","uid":"u-1","generation":2,"labels":{"app":"web"},
        "annotations":{"a":"b"},"managedFields":[{"manager":"kubelet","fieldsV1":{"f:status":{}}}]},
        "spec":{"nodeName":"n1","containers":[{"name":"c","image":"nginx"}]},"status":{"phase":"Running"}}"#;

    #[test]
    fn answers_object_from_metadata() {
        let c: Compact<DynamicObject> = CompactCodec::new().encode(POD).unwrap();
        assert_eq!(c.name(), Some("web-1"));
        assert_eq!(c.namespace(), Some("ns"));
        assert_eq!(c.resource_version(), Some("12"));
        assert_eq!(c.uid(), Some("u-1"));
        assert_eq!(c.generation(), Some(2));
        assert_eq!(c.labels().unwrap()["app"], "web");
        assert_eq!(c.annotations().unwrap()["a"], "b");
        assert!(!c.is_being_deleted());
    }

    #[test]
    fn labels_and_annotations_are_built_on_their_first_read_only() {
        let c: Compact<DynamicObject> = CompactCodec::new().encode(POD).unwrap();
        let (labels, annotations) = (
            c.meta.labels.as_ref().unwrap(),
            c.meta.annotations.as_ref().unwrap(),
        );
        assert!(!labels.is_built() && !annotations.is_built());
        assert_eq!(labels.text(), r#"{"app":"web"}"#);
        assert_eq!(c.labels().unwrap()["app"], "web");
        assert!(labels.is_built() && !annotations.is_built());
        let copy = c.clone();
        assert_eq!(copy.annotations().unwrap()["a"], "b");
        assert!(!annotations.is_built(), "a clone builds its own");
        let none: Compact<DynamicObject> = CompactCodec::new()
            .encode(r#"{"metadata":{"name":"a","labels":null}}"#)
            .unwrap();
        assert_eq!(none.labels(), None);
        assert_eq!(none.annotations(), None);
    }

    #[test]
    fn typed_is_the_object_without_managed_fields() {
        let c: Compact<DynamicObject> = CompactCodec::new().encode(POD).unwrap();
        let mut expected: DynamicObject = serde_json::from_str(POD).unwrap();
        expected.metadata.other.remove("managedFields");
        assert_eq!(c.typed().unwrap(), expected);
        let kept: Compact<DynamicObject> = CompactCodec::new()
            .keep_managed_fields(true)
            .encode(POD)
            .unwrap();
        assert_eq!(
            kept.typed().unwrap(),
            serde_json::from_str::<DynamicObject>(POD).unwrap()
        );
    }

    #[test]
    fn a_learned_dictionary_shrinks_siblings() {
        let codec = CompactCodec::new();
        let first: Compact<DynamicObject> = codec.encode(POD).unwrap();
        let sibling = POD.replace("web-1", "web-2").replace("u-1", "u-2");
        let second: Compact<DynamicObject> = codec.encode(&sibling).unwrap();
        let alone: Compact<DynamicObject> = CompactCodec::standalone().encode(&sibling).unwrap();
        assert!(codec.dictionary_len() > 0);
        assert!(
            second.stored_len() * 3 < alone.stored_len(),
            "{} vs {}",
            second.stored_len(),
            alone.stored_len()
        );
        assert_eq!(second.name(), Some("web-2"));
        assert_eq!(second.json().unwrap(), alone.json().unwrap());
        assert_eq!(first.pointer("/metadata/uid").unwrap(), Some("u-1".into()));
    }

    #[test]
    fn objects_larger_than_the_kept_scratch_buffer_round_trip_after_small_ones() {
        let codec = CompactCodec::new();
        // A small object first: the dictionary is learned from it and the thread's buffer is
        // small; then one of about a megabyte, whose buffer is not kept; then a small one again.
        let small: Compact<DynamicObject> = codec.encode(POD).unwrap();
        let big_note = "kcache ".repeat(150_000);
        let big_pod = POD.replace(
            "\"nodeName\":\"n1\"",
            &format!("\"nodeName\":\"n1\",\"note\":\"{big_note}\""),
        );
        assert!(big_pod.len() > 1_000_000);
        let big: Compact<DynamicObject> = codec.encode(&big_pod).unwrap();
        let again: Compact<DynamicObject> = codec.encode(POD).unwrap();
        assert!(
            big.stored_len() < big_pod.len() / 10,
            "{}",
            big.stored_len()
        );
        let value: serde_json::Value = serde_json::from_str(&big.json().unwrap()).unwrap();
        assert_eq!(
            value["spec"]["note"].as_str().map(str::len),
            Some(big_note.len())
        );
        assert_eq!(again.json().unwrap(), small.json().unwrap());
    }

    #[test]
    fn a_dictionary_of_three_bytes_or_fewer_is_not_used() {
        let codec = CompactCodec::new().dictionary(b"{}");
        let c: Compact<DynamicObject> = codec.encode(POD).unwrap();
        let plain: Compact<DynamicObject> = CompactCodec::standalone().encode(POD).unwrap();
        assert_eq!(c.stored_len(), plain.stored_len());
        assert_eq!(c.json().unwrap(), plain.json().unwrap());
    }

    #[test]
    fn serde_round_trip() {
        let c: Compact<DynamicObject> = serde_json::from_str(POD).unwrap();
        let text = serde_json::to_string(&c).unwrap();
        let back: Compact<DynamicObject> = serde_json::from_str(&text).unwrap();
        assert_eq!(back.json().unwrap(), c.json().unwrap());
        assert!(!text.contains("managedFields"));
        let value = serde_json::to_value(&c).unwrap();
        assert_eq!(value["spec"]["nodeName"], "n1");
    }

    #[test]
    fn tiny_objects_are_kept_as_they_are() {
        let c: Compact<DynamicObject> = CompactCodec::standalone()
            .encode(r#"{"metadata":{"name":"a"}}"#)
            .unwrap();
        assert_eq!(c.stored_len(), c.json_len());
        assert_eq!(c.json().unwrap(), r#"{"metadata":{"name":"a"}}"#);
    }

    #[test]
    fn bad_json_is_an_error() {
        let codec = CompactCodec::new();
        assert!(codec.encode::<DynamicObject>("{").is_err());
        assert!(
            codec
                .encode::<DynamicObject>(r#"{"metadata":{"name":1}}"#)
                .is_err()
        );
        assert!(codec.encode::<DynamicObject>("7").is_err());
        assert_eq!(
            codec.dictionary_len(),
            0,
            "nothing is learned from a failure"
        );
    }
}
