//! [`Stored`]: one version of an object as the server keeps it, with its JSON encoded once, at
//! write time, for every list page, watch event and GET that serves it afterwards.
//!
//! Encoding a realistic pod (about 6 KB of JSON) costs tens of microseconds: serving 20,000 of
//! them in a list or a watch-list took the server over half a second of CPU, competing with the
//! client it serves. A stored version never changes (a write stores a new one), so its bytes are
//! encoded with the write and then only copied. They are the bytes `serde_json` writes for the
//! object, so what a client receives is unchanged.

use std::sync::Arc;

use kcache_store::DynamicObject;
use serde::Serialize;
use serde::ser::SerializeMap;

/// Serializes an object, with (`.1` true) or without `apiVersion`/`kind`.
///
/// Built-in list items carry no `apiVersion`/`kind`; watch events, single objects and
/// CRD-style list items do.
struct Item<'a>(&'a DynamicObject, bool);

impl Serialize for Item<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let obj = self.0;
        let mut map = s.serialize_map(None)?;
        if self.1 {
            if let Some(v) = &obj.api_version {
                map.serialize_entry("apiVersion", v)?;
            }
            if let Some(k) = &obj.kind {
                map.serialize_entry("kind", k)?;
            }
        }
        map.serialize_entry("metadata", &obj.metadata)?;
        for (k, v) in &obj.data {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

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
        let untyped = serde_json::to_vec(&Item(&object, false))?;
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
        Ok(Arc::new(Self {
            object: Arc::new(object),
            typed,
            members,
        }))
    }

    /// The length [`write_json`](Self::write_json) appends.
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
            let mut line = Vec::new();
            stored.write_event_line(&mut line, "ADDED");
            let mut expected = br#"{"type":"ADDED","object":"#.to_vec();
            expected.extend(serde_json::to_vec(&Item(&obj, true)).unwrap());
            expected.extend(b"}\n");
            assert_eq!(line, expected);
        }
    }
}
