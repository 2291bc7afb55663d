//! [`WatchEvent`]: one event of a watch stream, with its JSON wire form.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Error, Status};

/// The annotation that marks the bookmark ending a streaming list's initial events.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// One event of a watch. Objects are owned: the reflector wraps each one in an `Arc` once.
///
/// The wire form is `{"type":"ADDED","object":{...}}`; an `ERROR` event's object decodes as a
/// [`Status`] and a `BOOKMARK`'s keeps only its resource version and annotations.
///
/// ```
/// use kcache_reflector::WatchEvent;
/// use kcache_store::DynamicObject;
///
/// let ev: WatchEvent<DynamicObject> = WatchEvent::from_json(
///     br#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{
///         "resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}"#,
/// )?;
/// let WatchEvent::Bookmark(b) = ev else { panic!("a bookmark") };
/// assert_eq!(b.resource_version, "12");
/// assert!(b.initial_events_end);
///
/// let ev: WatchEvent<DynamicObject> = WatchEvent::from_json(
///     br#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}"#,
/// )?;
/// assert!(matches!(ev, WatchEvent::Error(s) if s.is_gone()));
/// # Ok::<(), kcache_reflector::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent<T> {
    /// `ADDED`: a new object (or, on a watch from RV `""`/`"0"`, a synthetic one for the state).
    Added(T),
    /// `MODIFIED`: the object's new state.
    Modified(T),
    /// `DELETED`: the object's last state, with the deletion's resource version.
    Deleted(T),
    /// `BOOKMARK`: everything up to this resource version has been sent.
    Bookmark(Bookmark),
    /// `ERROR`: the watch failed (a 410 means relist). Boxed: it is rare and large.
    Error(Box<Status>),
}

/// A `BOOKMARK` event: only the resource version and the annotations mean anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bookmark {
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// Whether the annotation `k8s.io/initial-events-end` is `"true"`.
    pub initial_events_end: bool,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
}

impl Bookmark {
    /// A bookmark at `resource_version`.
    #[must_use]
    pub fn new(resource_version: impl Into<String>) -> Self {
        Self {
            resource_version: resource_version.into(),
            ..Self::default()
        }
    }

    /// The bookmark that ends a streaming list's initial events.
    #[must_use]
    pub fn initial_events_end(resource_version: impl Into<String>) -> Self {
        Self {
            resource_version: resource_version.into(),
            initial_events_end: true,
            annotations: [(INITIAL_EVENTS_END_ANNOTATION.to_owned(), "true".to_owned())].into(),
        }
    }
}

/// The watch event types on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
    /// `BOOKMARK`.
    Bookmark,
    /// `ERROR`.
    Error,
}

impl EventType {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
            Self::Bookmark => "BOOKMARK",
            Self::Error => "ERROR",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "ADDED" => Self::Added,
            "MODIFIED" => Self::Modified,
            "DELETED" => Self::Deleted,
            "BOOKMARK" => Self::Bookmark,
            "ERROR" => Self::Error,
            _ => return None,
        })
    }
}

impl<T> WatchEvent<T> {
    /// The event's type.
    pub fn event_type(&self) -> EventType {
        match self {
            Self::Added(_) => EventType::Added,
            Self::Modified(_) => EventType::Modified,
            Self::Deleted(_) => EventType::Deleted,
            Self::Bookmark(_) => EventType::Bookmark,
            Self::Error(_) => EventType::Error,
        }
    }
}

impl<T: DeserializeOwned> WatchEvent<T> {
    /// Decodes one JSON watch event line.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] when the bytes are not a watch event of `T`.
    pub fn from_json(bytes: &[u8]) -> Result<Self, Error> {
        // One UTF-8 check of the whole line is cheaper than serde_json's check of every string
        // in it (from a `&str` it checks none); invalid UTF-8 goes the slow way for serde_json's
        // error, with its position.
        let decoded = match std::str::from_utf8(bytes) {
            Ok(text) => serde_json::from_str(text),
            Err(_) => serde_json::from_slice(bytes),
        };
        decoded.map_err(|_| Error::decode(crate::DecodeError::of_watch_event::<T>(bytes)))
    }
}

#[derive(Deserialize, Default)]
struct BookmarkMeta {
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize, Default)]
struct BookmarkObject {
    #[serde(default)]
    metadata: Option<BookmarkMeta>,
}

impl From<BookmarkObject> for Bookmark {
    fn from(o: BookmarkObject) -> Self {
        let meta = o.metadata.unwrap_or_default();
        let annotations = meta.annotations.unwrap_or_default();
        Self {
            resource_version: meta.resource_version.unwrap_or_default(),
            initial_events_end: annotations
                .get(INITIAL_EVENTS_END_ANNOTATION)
                .is_some_and(|v| v == "true"),
            annotations,
        }
    }
}

/// Decodes the `object` of an event of type `ty` from `d`.
fn object_of<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    ty: EventType,
    d: D,
) -> Result<WatchEvent<T>, D::Error> {
    Ok(match ty {
        EventType::Added => WatchEvent::Added(T::deserialize(d)?),
        EventType::Modified => WatchEvent::Modified(T::deserialize(d)?),
        EventType::Deleted => WatchEvent::Deleted(T::deserialize(d)?),
        EventType::Bookmark => WatchEvent::Bookmark(BookmarkObject::deserialize(d)?.into()),
        EventType::Error => WatchEvent::Error(Box::new(Status::deserialize(d)?)),
    })
}

struct TypedObject<T>(EventType, PhantomData<T>);

impl<'de, T: Deserialize<'de>> de::DeserializeSeed<'de> for TypedObject<T> {
    type Value = WatchEvent<T>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        object_of(self.0, d)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for WatchEvent<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = WatchEvent<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a watch event")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut ty: Option<EventType> = None;
                // The object, when it came before the type (never from a real server).
                let mut early: Option<serde_json::Value> = None;
                let mut event: Option<WatchEvent<T>> = None;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "type" => {
                            let s: String = map.next_value()?;
                            ty = Some(EventType::parse(&s).ok_or_else(|| {
                                de::Error::custom("got an invalid watch event type")
                            })?);
                        }
                        "object" => match ty {
                            Some(t) => {
                                event = Some(map.next_value_seed(TypedObject(t, PhantomData))?);
                            }
                            None => early = Some(map.next_value()?),
                        },
                        _ => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                    }
                }
                if let Some(ev) = event {
                    return Ok(ev);
                }
                let ty = ty.ok_or_else(|| de::Error::missing_field("type"))?;
                let obj = early.ok_or_else(|| de::Error::missing_field("object"))?;
                object_of(ty, obj).map_err(de::Error::custom)
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

#[derive(Serialize)]
struct BookmarkWire<'a> {
    metadata: BookmarkMetaWire<'a>,
}

#[derive(Serialize)]
struct BookmarkMetaWire<'a> {
    #[serde(rename = "resourceVersion")]
    resource_version: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: &'a BTreeMap<String, String>,
}

impl<T: Serialize> Serialize for WatchEvent<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("type", self.event_type().as_str())?;
        match self {
            Self::Added(o) | Self::Modified(o) | Self::Deleted(o) => {
                map.serialize_entry("object", o)?;
            }
            Self::Bookmark(b) => map.serialize_entry(
                "object",
                &BookmarkWire {
                    metadata: BookmarkMetaWire {
                        resource_version: &b.resource_version,
                        annotations: &b.annotations,
                    },
                },
            )?,
            Self::Error(st) => map.serialize_entry("object", st)?,
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn round_trip_every_type() {
        let events: Vec<WatchEvent<Value>> = vec![
            WatchEvent::Added(json!({"metadata": {"name": "a"}})),
            WatchEvent::Modified(json!({"metadata": {"name": "a"}})),
            WatchEvent::Deleted(json!({"metadata": {"name": "a"}})),
            WatchEvent::Bookmark(Bookmark::initial_events_end("5")),
            WatchEvent::Bookmark(Bookmark::new("6")),
            WatchEvent::Error(Box::new(Status::expired("old"))),
        ];
        for ev in events {
            let text = serde_json::to_vec(&ev).unwrap();
            assert_eq!(WatchEvent::<Value>::from_json(&text).unwrap(), ev);
        }
    }

    #[test]
    fn object_before_type_still_decodes() {
        let ev: WatchEvent<Value> =
            WatchEvent::from_json(br#"{"object":{"code":410},"type":"ERROR"}"#).unwrap();
        assert!(matches!(ev, WatchEvent::Error(s) if s.is_gone()));
    }

    #[test]
    fn bookmark_annotation_false_does_not_end() {
        let ev: WatchEvent<Value> = WatchEvent::from_json(
            br#"{"type":"BOOKMARK","object":{"spec":{"containers":null},"metadata":{"resourceVersion":"3","annotations":{"k8s.io/initial-events-end":"false"}}}}"#,
        )
        .unwrap();
        let WatchEvent::Bookmark(b) = ev else {
            panic!()
        };
        assert!(!b.initial_events_end);
    }

    #[test]
    fn unknown_type_is_a_decode_error() {
        let e = WatchEvent::<Value>::from_json(br#"{"type":"WAT","object":{}}"#).unwrap_err();
        assert!(matches!(e, Error::Decode { .. }));
    }

    #[test]
    fn invalid_utf8_is_a_decode_error_with_its_position() {
        let mut line = br#"{"type":"ADDED","object":{"name":"ab"}}"#.to_vec();
        let ok = WatchEvent::<Value>::from_json(&line).unwrap();
        assert!(matches!(ok, WatchEvent::Added(v) if v["name"] == "ab"));
        line[35] = 0xFF; // inside "ab"
        let e = WatchEvent::<Value>::from_json(&line).unwrap_err();
        let Error::Decode(d) = &e else { panic!("{e}") };
        assert!(d.reason.contains("invalid unicode"), "{d}");
    }
}
