//! [`Compact`] objects straight from protobuf: only the object's metadata (field 1 of every
//! Kubernetes object message) is decoded; the rest stays protobuf, compressed by the
//! lister-watcher's shared [`CompactCodec`], and is decoded into `K` by
//! [`Compact::typed`] through `kcache-protobuf`'s field table when a handler asks.
//!
//! `metadata.managedFields` (field 17 of `ObjectMeta`) is cut out on the wire unless the
//! codec keeps it: the object's message is rewritten without it in a buffer the thread reuses,
//! with the metadata's length written anew. Nothing else of the object is read, so an event
//! costs a walk over the top-level fields, the metadata's decode and the compression.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use kcache_protobuf::de::from_message_seed;
use kcache_protobuf::table::{Kind, Message, message as table_message};
use kcache_protobuf::wire::{self, Reader, Wire};
use kcache_protobuf::{Error, TypeMeta, from_message};
use kcache_store::{Compact, CompactCodec, CompactMetadata, JsonPointer, PayloadFormat};
use serde::de::DeserializeOwned;

use crate::decode::protobuf::ProtoObjectFn;

/// How the objects of one message type are read back: their message and the `apiVersion` and
/// kind the protobuf form keeps outside it.
struct ProtoFormat<K> {
    message: &'static Message,
    api_version: Box<str>,
    kind: Box<str>,
    _k: PhantomData<fn() -> K>,
}

impl<K> ProtoFormat<K> {
    fn type_meta(&self) -> TypeMeta<'_> {
        TypeMeta {
            api_version: &self.api_version,
            kind: &self.kind,
        }
    }

    fn is_for(&self, message: &'static Message, type_meta: TypeMeta<'_>) -> bool {
        std::ptr::eq(self.message, message) && self.type_meta() == type_meta
    }
}

fn json_error(e: &Error) -> serde_json::Error {
    serde::de::Error::custom(e)
}

impl<K: DeserializeOwned> PayloadFormat<K> for ProtoFormat<K> {
    fn name(&self) -> &'static str {
        "protobuf"
    }

    fn typed(&self, payload: &[u8]) -> Result<K, serde_json::Error> {
        from_message(payload, self.message, Some(self.type_meta())).map_err(|e| json_error(&e))
    }

    fn json(&self, payload: &[u8]) -> Result<String, serde_json::Error> {
        let value: serde_json::Value = from_message(payload, self.message, Some(self.type_meta()))
            .map_err(|e| json_error(&e))?;
        serde_json::to_string(&value)
    }

    /// Sought in the protobuf itself: the message is walked as the JSON form would be, every
    /// field off the path skipped unread, and only the value found is built.
    fn pointer(
        &self,
        payload: &[u8],
        pointer: &JsonPointer,
    ) -> Result<Option<serde_json::Value>, serde_json::Error> {
        from_message_seed(payload, self.message, Some(self.type_meta()), pointer)
            .map_err(|e| json_error(&e))
    }
}

/// The largest rewrite buffer a thread keeps between objects.
const MAX_KEPT_SCRATCH: usize = 256 * 1024;

thread_local! {
    /// Where this thread rewrites an object's message without its managedFields.
    static REWRITTEN: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The object function of a compact lister-watcher for protobuf answers, sharing `codec` (and
/// its dictionary) with the JSON one.
pub(crate) fn compact_proto_objects<K: DeserializeOwned + 'static>(
    codec: Arc<CompactCodec>,
) -> ProtoObjectFn<Compact<K>> {
    // The format of the stream's type, made once; another type (which the expected type
    // check lets through only for metadata-only streams) gets its own.
    let first: OnceLock<Arc<ProtoFormat<K>>> = OnceLock::new();
    Arc::new(move |raw, message, type_meta| {
        codec
            .expected_type()
            .check_object(named(type_meta.api_version), named(type_meta.kind))
            .map_err(Error::Custom)?;
        let format = first.get_or_init(|| Arc::new(format_of(message, type_meta)));
        let format: Arc<dyn PayloadFormat<K>> = if format.is_for(message, type_meta) {
            format.clone()
        } else {
            Arc::new(format_of::<K>(message, type_meta))
        };
        encode(&codec, raw, message, format)
    })
}

fn format_of<K>(message: &'static Message, type_meta: TypeMeta<'_>) -> ProtoFormat<K> {
    ProtoFormat {
        message,
        api_version: type_meta.api_version.into(),
        kind: type_meta.kind.into(),
        _k: PhantomData,
    }
}

/// Where an object's metadata lies in its message.
struct MetadataField {
    /// The whole field: tag, length and content.
    field: Range<usize>,
    /// Its content: the `ObjectMeta` message.
    content: Range<usize>,
    /// `ObjectMeta`'s definition.
    message: &'static Message,
    /// The field's number.
    number: u32,
}

/// The metadata field of `raw`, an object of `message`; `None` when it has none.
fn metadata_field(raw: &[u8], message: &'static Message) -> Result<Option<MetadataField>, Error> {
    let Some(field) = message.field_named("metadata") else {
        return Ok(None);
    };
    let Kind::Message(meta_index) = field.kind else {
        return Ok(None);
    };
    let mut reader = Reader::new(raw);
    let mut found: Option<MetadataField> = None;
    loop {
        let start = reader.position();
        let Some((number, value)) = reader.field()? else {
            break;
        };
        if number != field.number {
            continue;
        }
        let Wire::Len(bytes) = value else {
            return Err(Error::Mismatch {
                message: message.name,
                field: field.json,
                wire_type: value.wire_type(),
            });
        };
        if found.is_some() {
            // Protobuf would merge the two; Kubernetes never writes them, and the compact
            // metadata could not be read from one place.
            return Err(Error::Custom(format!(
                "`metadata` of {} is written more than once",
                message.name
            )));
        }
        let end = reader.position();
        found = Some(MetadataField {
            field: start..end,
            content: end - bytes.len()..end,
            message: table_message(meta_index),
            number,
        });
    }
    Ok(found)
}

/// The compact form of the object `raw` (a message of `message`).
fn encode<K>(
    codec: &CompactCodec,
    raw: &[u8],
    message: &'static Message,
    format: Arc<dyn PayloadFormat<K>>,
) -> Result<Compact<K>, Error> {
    let Some(meta) = metadata_field(raw, message)? else {
        return Ok(codec.encode_parts(CompactMetadata::default(), raw, format));
    };
    let content = &raw[meta.content.clone()];
    let metadata: CompactMetadata = from_message(content, meta.message, None)?;
    let managed = match meta.message.field_named("managedFields") {
        Some(f) if !codec.keeps_managed_fields() => f.number,
        _ => return Ok(codec.encode_parts(metadata, raw, format)),
    };
    REWRITTEN
        .try_with(|buffer| {
            // Not reentrant in practice; a fresh buffer if it ever is.
            let mut fresh = Vec::new();
            let mut reused = buffer.try_borrow_mut().ok();
            let out = reused.as_deref_mut().unwrap_or(&mut fresh);
            out.clear();
            let compact = if without_field(raw, &meta, managed, out)? {
                codec.encode_parts(metadata, out, format)
            } else {
                codec.encode_parts(metadata, raw, format)
            };
            if out.capacity() > MAX_KEPT_SCRATCH {
                *out = Vec::new();
            }
            Ok(compact)
        })
        .map_err(|_| Error::Custom("decoding while the thread exits".to_owned()))?
}

/// Writes `raw` into `out` without the field `number` of its metadata; `false` (and nothing
/// written) when the metadata has no such field.
fn without_field(
    raw: &[u8],
    meta: &MetadataField,
    number: u32,
    out: &mut Vec<u8>,
) -> Result<bool, Error> {
    let content = &raw[meta.content.clone()];
    // Two walks over the metadata's fields (tags and lengths only): what is dropped, then
    // what is kept, so that nothing is allocated but the output.
    let mut dropped = 0;
    let mut reader = Reader::new(content);
    loop {
        let start = reader.position();
        match reader.field()? {
            Some((n, _)) if n == number => dropped += reader.position() - start,
            Some(_) => {}
            None => break,
        }
    }
    if dropped == 0 {
        return Ok(false);
    }
    out.reserve(raw.len() - dropped);
    out.extend_from_slice(&raw[..meta.field.start]);
    wire::put_tag(out, meta.number, wire::LEN);
    wire::put_varint(out, (content.len() - dropped) as u64);
    let mut reader = Reader::new(content);
    loop {
        let start = reader.position();
        match reader.field()? {
            Some((n, _)) if n == number => {}
            Some(_) => out.extend_from_slice(reader.since(start)),
            None => break,
        }
    }
    out.extend_from_slice(&raw[meta.field.end..]);
    Ok(true)
}

/// `s`, unless it is empty (the protobuf form's absent `apiVersion` or kind).
fn named(s: &str) -> Option<&str> {
    Some(s).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcache_store::{DynamicObject, ExpectedType, Object};
    use serde_json::json;

    fn pod() -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "ns", "resourceVersion": "7", "uid": "u",
                "labels": {"app": "web"}, "generation": 2,
                "creationTimestamp": "2024-05-01T10:00:00Z",
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": "rs", "uid": "u1", "controller": true}],
                "managedFields": [{"manager": "kubectl", "operation": "Apply",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "nginx"}]},
        })
    }

    fn pods() -> ProtoObjectFn<Compact<DynamicObject>> {
        compact_proto_objects(Arc::new(
            CompactCodec::new().expect_type(ExpectedType::new("v1", Some("Pod"))),
        ))
    }

    const POD: TypeMeta<'static> = TypeMeta {
        api_version: "v1",
        kind: "Pod",
    };

    fn message() -> &'static Message {
        kcache_protobuf::table::message_for_kind("v1", "Pod").unwrap()
    }

    #[test]
    fn metadata_is_read_and_managed_fields_are_cut_on_the_wire() {
        let raw = kcache_protobuf::encode::to_vec(&pod(), message()).unwrap();
        let compact = pods()(&raw, message(), POD).unwrap();
        assert_eq!(compact.encoding(), "protobuf");
        assert_eq!(compact.name(), Some("web"));
        assert_eq!(compact.namespace(), Some("ns"));
        assert_eq!(compact.generation(), Some(2));
        assert_eq!(compact.owner_references()[0].name, "rs");
        assert!(compact.json_len() < raw.len(), "managedFields cut");
        let mut want: DynamicObject = serde_json::from_value(pod()).unwrap();
        want.metadata.other.remove("managedFields");
        assert_eq!(compact.typed().unwrap(), want);
        assert_eq!(
            compact.pointer("/spec/nodeName").unwrap(),
            Some(json!("n1"))
        );
    }

    #[test]
    fn kept_managed_fields_stay() {
        let raw = kcache_protobuf::encode::to_vec(&pod(), message()).unwrap();
        let objects = compact_proto_objects::<DynamicObject>(Arc::new(
            CompactCodec::new().keep_managed_fields(true),
        ));
        let compact = objects(&raw, message(), POD).unwrap();
        assert_eq!(compact.json_len(), raw.len());
        assert_eq!(
            compact.typed().unwrap(),
            serde_json::from_value::<DynamicObject>(pod()).unwrap()
        );
    }

    #[test]
    fn the_wrong_type_and_a_twice_written_metadata_are_refused() {
        let raw = kcache_protobuf::encode::to_vec(&pod(), message()).unwrap();
        let config_map = TypeMeta {
            api_version: "v1",
            kind: "ConfigMap",
        };
        assert!(
            pods()(&raw, message(), config_map)
                .unwrap_err()
                .to_string()
                .contains("ConfigMap")
        );
        let meta = metadata_field(&raw, message()).unwrap().unwrap();
        let mut twice = raw.clone();
        twice.extend_from_slice(&raw[meta.field]);
        assert!(
            pods()(&twice, message(), POD)
                .unwrap_err()
                .to_string()
                .contains("more than once")
        );
        assert!(pods()(&raw[..raw.len() - 3], message(), POD).is_err());
    }

    #[test]
    fn an_object_without_metadata_has_none() {
        let raw = kcache_protobuf::encode::to_vec(&json!({"spec": {"nodeName": "n"}}), message())
            .unwrap();
        let compact = pods()(&raw, message(), POD).unwrap();
        assert_eq!(compact.name(), None);
        assert_eq!(compact.pointer("/spec/nodeName").unwrap(), Some(json!("n")));
    }

    #[test]
    fn a_pointer_is_sought_in_the_protobuf_as_in_the_json() {
        let mut pod = pod();
        pod["spec"]["containers"] = json!([
            {"name": "app", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}]},
            {"name": "sidecar", "image": "envoy", "args": ["--a", "--b"]},
        ]);
        pod["status"] = json!({"phase": "Running", "startTime": "2024-05-01T10:00:01Z"});
        let raw = kcache_protobuf::encode::to_vec(&pod, message()).unwrap();
        let from_protobuf = pods()(&raw, message(), POD).unwrap();
        let from_json: Compact<DynamicObject> =
            CompactCodec::new().encode(&pod.to_string()).unwrap();
        let pointers = [
            // Present: scalars, nested arrays, objects, the whole object.
            "/spec/containers/0/image",
            "/spec/containers/1/image",
            "/spec/containers/1/args/1",
            "/spec/containers/0/ports/0/containerPort",
            "/spec/containers/0",
            "/spec",
            "/metadata/labels/app",
            "/metadata/creationTimestamp",
            "/metadata/ownerReferences/0/controller",
            "/status/phase",
            "/apiVersion",
            "/kind",
            "",
            // Absent: a missing member, an index past the end or not canonical, a path
            // through a scalar, the managedFields cut out.
            "/spec/containers/2/image",
            "/spec/containers/01/image",
            "/spec/containers/x",
            "/spec/nodeName/deeper",
            "/spec/hostname",
            "/metadata/managedFields",
            "/nope",
        ];
        for pointer in pointers {
            let want = from_json.pointer(pointer).unwrap();
            assert_eq!(from_protobuf.pointer(pointer).unwrap(), want, "{pointer}");
        }
        assert_eq!(
            from_protobuf.pointer("/spec/containers/1/image").unwrap(),
            Some(json!("envoy"))
        );
        assert_eq!(
            from_protobuf.pointer("/spec/containers/2/image").unwrap(),
            None
        );
        assert!(from_protobuf.pointer("spec").is_err());
    }

    /// Index values an informer would compute: by owner, by app label, by node (a field
    /// beyond the metadata, read through the compact form's pointer).
    fn index_values(object: &impl Object, node: Option<String>) -> Vec<String> {
        let mut values = kcache_store::namespace_index_func(object).unwrap();
        values.extend(object.owner_references().into_iter().map(|o| o.uid));
        values.extend(object.labels().and_then(|l| l.get("app")).cloned());
        values.extend(node);
        values
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 96,
            rng_seed: proptest::test_runner::RngSeed::Fixed(31),
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Realistic pods (both shapes), changed as controllers change them, encoded in
        /// protobuf by the fake server's encoder: the compact form read from protobuf gives
        /// the pod the JSON decode gives, the metadata the JSON compact form reads, and the
        /// same index values as the typed pod.
        #[test]
        fn compact_over_protobuf_equals_the_json_forms(
            seed in 0..u64::MAX,
            heavy in proptest::bool::ANY,
            mutations in 0..3_usize,
            deleting in proptest::bool::ANY,
            owners in 0..3_usize,
            keep in proptest::bool::ANY,
        ) {
            use k8s_openapi::api::core::v1::Pod;
            use kcache_testing::workload::{PodGenerator, PodShape};

            let shape = if heavy { PodShape::Heavy } else { PodShape::Light };
            let mut pods = PodGenerator::with_shape(seed, 3, shape);
            let mut pod = pods.next_pod();
            for _ in 0..mutations {
                pod = pods.mutate(&pod);
            }
            pod.metadata.resource_version = Some((seed % 100_000).to_string());
            if deleting {
                pod.metadata.deletion_timestamp = Some("2025-06-26T08:28:19Z".into());
            }
            let refs: Vec<_> = (0..owners)
                .map(|i| json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": format!("rs-{i}"), "uid": format!("u-{i}"), "controller": i == 0}))
                .collect();
            if owners > 0 {
                pod.metadata.other.insert("ownerReferences".into(), json!(refs));
            }
            let value = serde_json::to_value(&pod).unwrap();
            let json = value.to_string();
            let raw = kcache_protobuf::encode::to_vec(&value, message()).unwrap();

            let codec = || Arc::new(CompactCodec::new().keep_managed_fields(keep));
            let from_protobuf: Compact<Pod> =
                compact_proto_objects(codec())(&raw, message(), POD).unwrap();
            let from_json: Compact<Pod> = codec().encode(&json).unwrap();
            let mut typed: Pod = serde_json::from_str(&json).unwrap();
            if !keep {
                typed.metadata.managed_fields = None;
            }
            proptest::prop_assert_eq!(from_protobuf.typed().unwrap(), typed.clone());
            proptest::prop_assert_eq!(from_json.typed().unwrap(), typed.clone());
            proptest::prop_assert_eq!(format!("{from_protobuf:?}").contains("protobuf"), true);

            proptest::prop_assert_eq!(from_protobuf.name(), from_json.name());
            proptest::prop_assert_eq!(from_protobuf.namespace(), from_json.namespace());
            proptest::prop_assert_eq!(from_protobuf.resource_version(), from_json.resource_version());
            proptest::prop_assert_eq!(from_protobuf.uid(), from_json.uid());
            proptest::prop_assert_eq!(from_protobuf.labels(), from_json.labels());
            proptest::prop_assert_eq!(from_protobuf.annotations(), from_json.annotations());
            proptest::prop_assert_eq!(from_protobuf.generation(), from_json.generation());
            proptest::prop_assert_eq!(from_protobuf.is_being_deleted(), deleting);
            proptest::prop_assert_eq!(from_json.is_being_deleted(), deleting);
            proptest::prop_assert_eq!(from_protobuf.owner_references(), from_json.owner_references());
            let typed_owners = typed.metadata.owner_references.as_ref().map_or(0, Vec::len);
            proptest::prop_assert_eq!(from_protobuf.owner_references().len(), typed_owners);

            let node = |c: &Compact<Pod>| {
                c.pointer("/spec/nodeName").unwrap().and_then(|v| v.as_str().map(str::to_owned))
            };
            let typed_node = typed.spec.as_ref().and_then(|s| s.node_name.clone());
            proptest::prop_assert_eq!(node(&from_protobuf), typed_node.clone());
            // Fields beyond the metadata, sought in the protobuf as in the JSON.
            for pointer in [
                "/spec/containers/0/image",
                "/spec/containers/0/resources/requests/cpu",
                "/spec/containers/1/name",
                "/status/phase",
                "/status/conditions/0/lastTransitionTime",
            ] {
                proptest::prop_assert_eq!(
                    from_protobuf.pointer(pointer).unwrap(),
                    from_json.pointer(pointer).unwrap(),
                    "{}", pointer
                );
            }
            let want = index_values(&typed, typed_node);
            proptest::prop_assert_eq!(index_values(&from_protobuf, node(&from_protobuf)), want.clone());
            proptest::prop_assert_eq!(index_values(&from_json, node(&from_json)), want);
        }
    }
}
