//! Decoding straight into [`Compact`] objects: only the metadata is decoded on the watch's
//! thread; the rest of each object is kept compressed (see `kcache_store::CompactCodec`).
//!
//! A lister-watcher built with [`HttpListerWatcher::compact`](crate::HttpListerWatcher::compact)
//! holds an [`ObjectFn`] around one shared codec, so its list and its watches compress against
//! the same dictionary. A watch line as the API server writes it (`{"type":"MODIFIED","object":`
//! ... `}`) has its object's text cut out without a scan and given to the codec, whose one
//! pass validates it; any other line is read as an envelope first (`type` and the object's
//! text, borrowed).

use std::sync::Arc;

use kcache_reflector::{DecodeError, Error, WatchEvent};
use kcache_store::{Compact, CompactCodec};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

/// Builds one object from its JSON text, with state shared across a stream (the codec).
pub(crate) type ObjectFn<T> = Arc<dyn Fn(&str) -> Result<T, serde_json::Error> + Send + Sync>;

/// The object function of a compact lister-watcher.
pub(crate) fn compact_objects<K: 'static>(codec: Arc<CompactCodec>) -> ObjectFn<Compact<K>> {
    Arc::new(move |json: &str| codec.encode::<K>(json))
}

/// A watch event with its object left as text.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    object: &'a RawValue,
}

/// Makes a watch event of one kind around its object.
type MakeEvent<T> = fn(T) -> WatchEvent<T>;

/// The kind and the object's text of a line written exactly as the API server writes one:
/// `{"type":"ADDED","object":` OBJECT `}`. Whether OBJECT is one JSON value is not checked
/// here: the codec's decode fails if it is not (it rejects trailing text), and the line is then
/// read the careful way. When it is, the line is that two-member object, so the careful way
/// would have found the same kind and text.
fn as_written<T>(line: &[u8]) -> Option<(MakeEvent<T>, &str)> {
    let text = std::str::from_utf8(line).ok()?.trim_ascii();
    let rest = text.strip_prefix(r#"{"type":""#)?;
    let (make, rest): (MakeEvent<T>, &str) =
        if let Some(rest) = rest.strip_prefix(r#"MODIFIED","object":"#) {
            (WatchEvent::Modified, rest)
        } else if let Some(rest) = rest.strip_prefix(r#"ADDED","object":"#) {
            (WatchEvent::Added, rest)
        } else if let Some(rest) = rest.strip_prefix(r#"DELETED","object":"#) {
            (WatchEvent::Deleted, rest)
        } else {
            return None;
        };
    let object = rest.strip_suffix('}')?;
    object.starts_with('{').then_some((make, object))
}

/// Decodes one watch line, building `ADDED`, `MODIFIED` and `DELETED` objects with `objects`;
/// bookmarks and errors are decoded as usual.
pub(crate) fn decode_event<T: DeserializeOwned>(
    objects: &ObjectFn<T>,
    line: &[u8],
) -> Result<WatchEvent<T>, Error> {
    if let Some((make, object)) = as_written::<T>(line)
        && let Ok(o) = objects(object)
    {
        return Ok(make(o));
    }
    let envelope = std::str::from_utf8(line)
        .ok()
        .and_then(|text| serde_json::from_str::<Envelope<'_>>(text).ok());
    let Some(envelope) = envelope else {
        // Not UTF-8, not JSON or no object: the usual decode reports it.
        return WatchEvent::<T>::from_json(line);
    };
    let make: MakeEvent<T> = match &*envelope.kind {
        "ADDED" => WatchEvent::Added,
        "MODIFIED" => WatchEvent::Modified,
        "DELETED" => WatchEvent::Deleted,
        _ => return WatchEvent::<T>::from_json(line),
    };
    objects(envelope.object.get())
        .map(make)
        .map_err(|_| Error::decode(DecodeError::of_watch_event::<T>(line)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcache_store::{DynamicObject, Object};

    fn decode(line: &str) -> Result<WatchEvent<Compact<DynamicObject>>, Error> {
        decode_event(
            &compact_objects(Arc::new(CompactCodec::new())),
            line.as_bytes(),
        )
    }

    #[test]
    fn objects_go_through_the_codec() {
        let event = decode(
            r#"{"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"3","managedFields":[{}]},"spec":{"x":1}}}"#,
        )
        .unwrap();
        let WatchEvent::Modified(o) = event else {
            panic!("expected MODIFIED, got {event:?}");
        };
        assert_eq!(o.name(), Some("a"));
        assert_eq!(o.resource_version(), Some("3"));
        assert_eq!(
            o.json().unwrap(),
            r#"{"metadata":{"name":"a","resourceVersion":"3"},"spec":{"x":1}}"#
        );
    }

    #[test]
    fn lines_not_as_the_server_writes_them_take_the_careful_way() {
        let spaced = decode(
            r#" { "object" : {"metadata":{"name":"a","resourceVersion":"3"}} , "type" : "ADDED" } "#,
        )
        .unwrap();
        assert!(matches!(spaced, WatchEvent::Added(o) if o.name() == Some("a")));
        // Cut as the server writes a line, the "object" would be `{...},"extra":1`: not one
        // value, so the envelope is read instead, and the extra member ignored.
        let extra = decode(
            r#"{"type":"MODIFIED","object":{"metadata":{"name":"b","resourceVersion":"4"}},"extra":1}"#,
        )
        .unwrap();
        assert!(matches!(extra, WatchEvent::Modified(o) if o.name() == Some("b")));
        let deleted = decode(
            r#"{"type":"DELETED","object":{"metadata":{"name":"e","resourceVersion":"5"}}}"#,
        )
        .unwrap();
        assert!(matches!(deleted, WatchEvent::Deleted(o) if o.name() == Some("e")));
    }

    #[test]
    fn bookmarks_and_errors_decode_as_usual() {
        let bookmark =
            decode(r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}"#).unwrap();
        assert!(matches!(bookmark, WatchEvent::Bookmark(b) if b.resource_version == "9"));
        let error =
            decode(r#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}"#)
                .unwrap();
        assert!(matches!(error, WatchEvent::Error(s) if s.code == Some(410)));
    }

    #[test]
    fn a_bad_object_is_a_decode_error_with_what_could_be_read() {
        let e = decode(r#"{"type":"ADDED","object":{"metadata":{"name":"a","namespace":"ns","resourceVersion":"4","labels":7}}}"#)
            .unwrap_err();
        let Error::Decode(d) = &e else {
            panic!("expected a decode error, got {e:?}");
        };
        let object = d.object.as_ref().expect("the identity is readable");
        assert_eq!(object.name.as_deref(), Some("a"));
        assert_eq!(object.resource_version.as_deref(), Some("4"));
        for garbage in [
            "{",
            "\u{0}",
            r#"{"type":"ADDED"}"#,
            r#"{"type":"ADDED","object":[]}"#,
        ] {
            assert!(
                matches!(decode(garbage), Err(Error::Decode(_))),
                "{garbage}"
            );
        }
    }
}
