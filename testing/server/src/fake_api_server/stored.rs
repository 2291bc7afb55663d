//! [`Stored`]: one version of an object as the server keeps it, with its JSON encoded once, at
//! write time, for every list page, watch event and GET that serves it afterwards.
//!
//! Encoding a realistic pod (about 6 KB of JSON) costs tens of microseconds: serving 20,000 of
//! them in a list or a watch-list took the server over half a second of CPU, competing with the
//! client it serves. A stored version never changes (a write stores a new one), so its bytes are
//! encoded with the write and then only copied. They are the bytes `serde_json` writes for the
//! object, so what a client receives is unchanged.
//!
//! The object's `metadata` is encoded first, so its bytes are a slice of the same encoding:
//! metadata-only answers (`PartialObjectMetadata`, see
//! [`partial_metadata`](super::partial_metadata)) copy that slice, encoding nothing either.

use std::cell::Cell;
use std::io;
use std::ops::Range;
use std::sync::Arc;

use kcache_store::DynamicObject;
#[cfg(test)]
use serde::Serialize;
use serde::ser::SerializeMap;

/// Serializes an object, with (`.1` true) or without `apiVersion`/`kind`.
///
/// Built-in list items carry no `apiVersion`/`kind`; watch events, single objects and
/// CRD-style list items do. (The stored encoding is [`serialize_item`]'s; this is what the tests
/// compare it with.)
#[cfg(test)]
struct Item<'a>(&'a DynamicObject, bool);

#[cfg(test)]
impl Serialize for Item<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_item(self.0, self.1, s, || {})
    }
}

/// Serializes `obj` as [`Item`] does, calling `metadata_written` once its `metadata` member is.
fn serialize_item<S: serde::Serializer>(
    obj: &DynamicObject,
    typed: bool,
    s: S,
    metadata_written: impl FnOnce(),
) -> Result<S::Ok, S::Error> {
    {
        let mut map = s.serialize_map(None)?;
        if typed {
            if let Some(v) = &obj.api_version {
                map.serialize_entry("apiVersion", v)?;
            }
            if let Some(k) = &obj.kind {
                map.serialize_entry("kind", k)?;
            }
        }
        map.serialize_entry("metadata", &obj.metadata)?;
        metadata_written();
        for (k, v) in &obj.data {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A writer into a `Vec` that keeps the count of bytes written where a serializer's caller can
/// read it while the serializer holds the writer.
struct Counted<'a> {
    out: Vec<u8>,
    written: &'a Cell<usize>,
}

impl io::Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.extend_from_slice(buf);
        self.written.set(self.out.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Encodes `Item(obj, false)` and where its `metadata` value ends in those bytes.
fn encode_untyped(obj: &DynamicObject) -> Result<(Vec<u8>, usize), serde_json::Error> {
    let written = Cell::new(0);
    let metadata_end = Cell::new(0);
    let mut ser = serde_json::Serializer::new(Counted {
        out: Vec::new(),
        written: &written,
    });
    // The compact formatter writes each member as it goes (the comma before the next one comes
    // with that one), so the count once `metadata` is serialized is where its value ends.
    serialize_item(obj, false, &mut ser, || metadata_end.set(written.get()))?;
    Ok((ser.into_inner().out, metadata_end.get()))
}

/// `{"metadata":`, with which the untyped encoding starts.
const METADATA_KEY: &[u8] = b"{\"metadata\":";

/// One stored version of an object and its encoding. Shared (`Arc<Stored>`) by the object map,
/// the history (as an event's new or previous state) and the watches it is queued for.
#[derive(Debug)]
pub(crate) struct Stored {
    /// The object, as the Rust handle returns it.
    pub(crate) object: Arc<DynamicObject>,
    /// `Item(object, true)` encoded: `{"apiVersion":..,"kind":..,"metadata":{...},...}`.
    typed: Vec<u8>,
    /// Where the members after `apiVersion`/`kind` start in `typed` (at `"metadata"`): the
    /// untyped encoding is `{` then `typed[members..]`.
    members: usize,
    /// Where the value of `metadata` (`{...}`) is in `typed`.
    metadata: Range<usize>,
    /// The object in protobuf, enveloped (`k8s\0`, its kind), made the first time a protobuf watch
    /// sends it and shared by every such watch after; `None` when its kind has no protobuf
    /// form (a custom resource) or it cannot be encoded.
    protobuf: std::sync::OnceLock<Option<Box<[u8]>>>,
    /// The object's `PartialObjectMetadata` message (its `ObjectMeta` as field 1, unenveloped),
    /// made the first time a metadata-only protobuf answer sends it; `None` when it cannot be
    /// encoded.
    metadata_protobuf: std::sync::OnceLock<Option<Box<[u8]>>>,
}

impl Stored {
    /// Stores `object`, encoding it now.
    ///
    /// # Errors
    ///
    /// When `serde_json` cannot encode it (it always can: every key is a string and a
    /// `serde_json::Value` holds no non-finite number); the write that stores it then fails
    /// instead of serving made-up bytes.
    pub(crate) fn new(object: DynamicObject) -> Result<Arc<Self>, serde_json::Error> {
        let (untyped, metadata_end) = encode_untyped(&object)?;
        // `{"apiVersion":..,"kind":..,` then the untyped members after their `{`: the compact
        // formatter writes members in order, comma-separated, so these are the bytes of
        // `Item(object, true)`.
        let mut typed = Vec::with_capacity(untyped.len() + 64);
        typed.push(b'{');
        if let Some(v) = &object.api_version {
            typed.extend_from_slice(b"\"apiVersion\":");
            write_str(&mut typed, v);
            typed.push(b',');
        }
        if let Some(k) = &object.kind {
            typed.extend_from_slice(b"\"kind\":");
            write_str(&mut typed, k);
            typed.push(b',');
        }
        let members = typed.len();
        typed.extend_from_slice(untyped.get(1..).unwrap_or_default());
        // Untyped offsets move by what precedes `"metadata"` in `typed` but `{`.
        let shift = members - 1;
        let metadata = METADATA_KEY.len() + shift..metadata_end + shift;
        Ok(Arc::new(Self {
            object: Arc::new(object),
            typed,
            members,
            metadata,
            protobuf: std::sync::OnceLock::new(),
            metadata_protobuf: std::sync::OnceLock::new(),
        }))
    }

    /// The length [`write_json`](Self::write_json) appends.
    /// The object in protobuf, enveloped (see the field), made on first use.
    pub(crate) fn protobuf(&self) -> Option<&[u8]> {
        self.protobuf
            .get_or_init(|| {
                let (api_version, kind) = (
                    self.object.api_version.as_deref()?,
                    self.object.kind.as_deref()?,
                );
                let message = kcache_protobuf::table::message_for_kind(api_version, kind)?;
                let value: serde_json::Value = serde_json::from_slice(&self.typed).ok()?;
                let raw = kcache_protobuf::encode::to_vec(&value, message).ok()?;
                let mut enveloped = Vec::with_capacity(raw.len() + 32);
                kcache_protobuf::envelope::write(api_version, kind, &raw, &mut enveloped);
                Some(enveloped.into_boxed_slice())
            })
            .as_deref()
    }

    /// The object's `PartialObjectMetadata` message, made on first use (for every kind, custom
    /// resources included: metadata-only answers are served in protobuf for all).
    pub(crate) fn metadata_protobuf(&self) -> Option<&[u8]> {
        self.metadata_protobuf
            .get_or_init(|| {
                let message = kcache_protobuf::table::message_named(
                    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                )?;
                let value: serde_json::Value = serde_json::from_slice(self.metadata_json()).ok()?;
                let metadata = kcache_protobuf::encode::to_vec(&value, message).ok()?;
                let mut partial = Vec::with_capacity(metadata.len() + 8);
                kcache_protobuf::wire::put_bytes(&mut partial, 1, &metadata);
                Some(partial.into_boxed_slice())
            })
            .as_deref()
    }

    pub(crate) fn json_len(&self, typed: bool) -> usize {
        if typed {
            self.typed.len()
        } else {
            self.typed.len() - self.members + 1
        }
    }

    /// Appends the object's JSON to `out`: exactly what `serde_json` writes for
    /// `Item(object, typed)`.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>, typed: bool) {
        if typed {
            out.extend_from_slice(&self.typed);
        } else {
            out.push(b'{');
            out.extend_from_slice(self.typed.get(self.members..).unwrap_or_default());
        }
    }

    /// The JSON of the object's `metadata`, as `serde_json` writes it: a slice of the stored
    /// encoding.
    pub(crate) fn metadata_json(&self) -> &[u8] {
        self.typed.get(self.metadata.clone()).unwrap_or(b"{}")
    }

    /// Appends the watch event line `{"type":"<kind>","object":{...}}\n` for this object.
    pub(crate) fn write_event_line(&self, out: &mut Vec<u8>, kind: &str) {
        out.reserve(self.typed.len() + kind.len() + 24);
        out.extend_from_slice(b"{\"type\":\"");
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(b"\",\"object\":");
        out.extend_from_slice(&self.typed);
        out.extend_from_slice(b"}\n");
    }
}

/// Appends `s` as a JSON string.
fn write_str(out: &mut Vec<u8>, s: &str) {
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: serde_json::Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn cached_bytes_are_what_serde_json_writes() {
        let objects = [
            object(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p\"1\u{e9}", "namespace": "a", "labels": {"x": "<y>"}},
                "spec": {"n": [1, 2.5, null, true]}, "status": {}})),
            object(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "annotations": {"a}\\\"{": "}]\\"}},
                "data": {"k": "}"}})),
            object(json!({"apiVersion": "example.com/v1", "metadata": {}})),
            object(json!({"kind": "Thing", "metadata": {"name": "t"}, "data": {"k": "v"}})),
            object(json!({"metadata": {"name": "bare"}})),
        ];
        for obj in objects {
            let stored = Stored::new(obj.clone()).unwrap();
            for typed in [false, true] {
                let mut out = b"prefix".to_vec();
                stored.write_json(&mut out, typed);
                assert_eq!(
                    out[6..],
                    serde_json::to_vec(&Item(&obj, typed)).unwrap()[..],
                    "typed: {typed}"
                );
                assert_eq!(stored.json_len(typed), out.len() - 6);
            }
            assert_eq!(
                stored.metadata_json(),
                serde_json::to_vec(&obj.metadata).unwrap(),
            );
            let mut line = Vec::new();
            stored.write_event_line(&mut line, "ADDED");
            let mut expected = br#"{"type":"ADDED","object":"#.to_vec();
            expected.extend(serde_json::to_vec(&Item(&obj, true)).unwrap());
            expected.extend(b"}\n");
            assert_eq!(line, expected);
        }
    }
}
