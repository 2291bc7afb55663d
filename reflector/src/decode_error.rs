//! [`DecodeError`]: an object or a watch event that could not be decoded, described by what
//! could still be read of it (event type, namespace, name, resource version) and by the serde
//! error's *path*, never by the values the server sent.
//!
//! The reflector's rule for such an object (see [`Reflector`](crate::Reflector)):
//! - when its identity could be read ([`DecodeError::identity`]), the key is dealt with
//!   precisely: the object is left out of the cache (an older version is removed, and handlers
//!   hear of the removal) and the resource version moves on;
//! - otherwise the watch ends and the reflector relists, as client-go does.

use std::fmt;

use kcache_store::ObjectKey;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::{EventType, WatchEvent};

/// What could be read of an undecodable object's metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ObjectRef {
    /// `metadata.namespace`.
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: Option<String>,
    /// `metadata.resourceVersion`.
    pub resource_version: Option<String>,
    /// `metadata.uid`.
    pub uid: Option<String>,
}

impl ObjectRef {
    /// An object reference from its parts.
    #[must_use]
    pub fn new(namespace: Option<&str>, name: &str, resource_version: &str) -> Self {
        Self {
            namespace: namespace.filter(|n| !n.is_empty()).map(str::to_owned),
            name: Some(name.to_owned()),
            resource_version: Some(resource_version.to_owned()),
            uid: None,
        }
    }

    /// The `namespace/name` key, when the name is known.
    pub fn key(&self) -> Option<ObjectKey> {
        let name = self.name.as_deref().filter(|n| !n.is_empty())?;
        Some(ObjectKey::new(self.namespace.as_deref(), name))
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.key() {
            Some(k) => f.write_str(k.as_str())?,
            None => f.write_str("<no name>")?,
        }
        if let Some(rv) = self.resource_version.as_deref().filter(|r| !r.is_empty()) {
            write!(f, " at resourceVersion {rv}")?;
        }
        Ok(())
    }
}

/// One object or watch event that could not be decoded.
///
/// Its `Display` names what was decoded, the object (when its metadata could be read), the
/// serde error's path and a reason from which every value sent by the server has been removed
/// (values may be secret data):
///
/// ```
/// use kcache_reflector::{DecodeError, EventType};
///
/// #[derive(serde::Deserialize)]
/// struct Pod {
///     #[allow(dead_code)]
///     metadata: kcache_store::ObjectMeta,
///     #[allow(dead_code)]
///     spec: Spec,
/// }
/// #[derive(serde::Deserialize)]
/// struct Spec {
///     #[allow(dead_code)]
///     replicas: u32,
/// }
///
/// let line = br#"{"type":"MODIFIED","object":{"metadata":{"name":"web","namespace":"shop",
///     "resourceVersion":"7"},"spec":{"replicas":"hunter2"}}}"#;
/// let err = DecodeError::of_watch_event::<Pod>(line);
/// assert_eq!(err.event_type, Some(EventType::Modified));
/// assert_eq!(err.identity().unwrap().0.as_str(), "shop/web");
/// assert_eq!(err.path.as_deref(), Some("object.spec.replicas"));
/// let text = err.to_string();
/// assert!(!text.contains("hunter2"), "{text}");
/// assert_eq!(
///     text,
///     "could not decode watch event (MODIFIED shop/web at resourceVersion 7): \
///      invalid type: string \"…\", expected u32 at object.spec.replicas"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DecodeError {
    /// What was being decoded (`watch event`, `list item 3`, ...).
    pub context: String,
    /// The watch event's type, when it could be read.
    pub event_type: Option<EventType>,
    /// What could be read of the object's metadata.
    pub object: Option<ObjectRef>,
    /// Where in the document decoding failed (`object.spec.containers[0].ports`), when known.
    pub path: Option<String>,
    /// Why, without any value from the document.
    pub reason: String,
}

impl DecodeError {
    /// The context of a list body that is not a list at all (no `items`, another kind, not
    /// JSON): a failure of the whole list, not of one object.
    pub const LIST_RESPONSE: &'static str = "list response";

    /// Whether this is about one object (an item or an event), reported on its own when it
    /// was found, rather than about a whole list body.
    #[must_use]
    pub fn is_of_an_object(&self) -> bool {
        !self.context.starts_with(Self::LIST_RESPONSE)
    }

    /// A decode error with only a context and a reason (which must not quote server data).
    #[must_use]
    pub fn new(context: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            context: context.into(),
            event_type: None,
            object: None,
            path: None,
            reason: reason.into(),
        }
    }

    /// Sets what could be read of the object.
    #[must_use]
    pub fn with_object(mut self, object: Option<ObjectRef>) -> Self {
        self.object = object;
        self
    }

    /// Sets the watch event's type.
    #[must_use]
    pub fn with_event_type(mut self, event_type: Option<EventType>) -> Self {
        self.event_type = event_type;
        self
    }

    /// Sets the path at which decoding failed.
    #[must_use]
    pub fn with_path(mut self, path: Option<String>) -> Self {
        self.path = path.filter(|p| !p.is_empty() && p != "." && p != "?");
        self
    }

    /// Describes why the watch event `line` does not decode as a `WatchEvent<T>`: its type and
    /// metadata as far as they can be read, the serde path and a value-free reason. Decodes the
    /// line again (with path tracking), so call it only on the failure path.
    #[must_use]
    pub fn of_watch_event<T: DeserializeOwned>(line: &[u8]) -> Self {
        let (path, reason) = locate::<WatchEvent<T>>(line);
        let head = serde_json::from_slice::<EventHead>(line).ok();
        let (event_type, object) = match head {
            Some(h) => (
                h.kind.as_deref().and_then(EventType::parse),
                h.object.and_then(|o| o.metadata).map(ObjectRef::from),
            ),
            None => (None, None),
        };
        Self::new("watch event", reason)
            .with_event_type(event_type)
            .with_object(object)
            .with_path(path)
    }

    /// Describes why `json` does not decode as a `T`: the object's metadata as far as it can be
    /// read, the serde path and a value-free reason (decoding again, on the failure path only).
    #[must_use]
    pub fn of_object<T: DeserializeOwned>(context: impl Into<String>, json: &str) -> Self {
        let (path, reason) = locate::<T>(json.as_bytes());
        let object = serde_json::from_str::<ObjectHead>(json)
            .ok()
            .and_then(|o| o.metadata)
            .map(ObjectRef::from);
        Self::new(context, reason)
            .with_object(object)
            .with_path(path)
    }

    /// The key, resource version and event type of an undecodable watch event whose identity
    /// could be read: an `ADDED`, `MODIFIED` or `DELETED` event with a name and a resource
    /// version. With it the reflector removes just that key; without it, it relists.
    pub fn identity(&self) -> Option<(ObjectKey, &str, EventType)> {
        let object = self.object.as_ref()?;
        let key = object.key()?;
        let rv = object
            .resource_version
            .as_deref()
            .filter(|r| !r.is_empty())?;
        match self.event_type? {
            t @ (EventType::Added | EventType::Modified | EventType::Deleted) => Some((key, rv, t)),
            EventType::Bookmark | EventType::Error => None,
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "could not decode {}", self.context)?;
        match (&self.event_type, &self.object) {
            (Some(t), Some(o)) => write!(f, " ({} {o})", t.as_str())?,
            (Some(t), None) => write!(f, " ({})", t.as_str())?,
            (None, Some(o)) => write!(f, " ({o})")?,
            (None, None) => {}
        }
        write!(f, ": {}", self.reason)?;
        if let Some(path) = &self.path {
            write!(f, " at {path}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DecodeError {}

/// Decodes `json` as `T` again, tracking the path, and gives the path of the failure and its
/// reason without values.
fn locate<T: DeserializeOwned>(json: &[u8]) -> (Option<String>, String) {
    let mut de = serde_json::Deserializer::from_slice(json);
    match serde_path_to_error::deserialize::<_, T>(&mut de) {
        // Trailing characters are an error of the whole document.
        Ok(_) => match de.end() {
            Ok(()) => (
                None,
                "decoding failed where the error could not be located".to_owned(),
            ),
            Err(e) => (None, reason_of(&e)),
        },
        Err(e) => (Some(e.path().to_string()), reason_of(e.inner())),
    }
}

/// A `serde_json` error's message without the values it quotes and without its position.
///
/// Syntax and end-of-input messages are fixed texts; data errors quote the offending value
/// (`invalid type: string "..."`), which is replaced by `…`.
#[must_use]
pub fn reason_of(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let text = match text.rfind(" at line ") {
        Some(at) if e.line() > 0 => &text[..at],
        _ => &text[..],
    };
    match e.classify() {
        serde_json::error::Category::Data => redact(text),
        _ => text.to_owned(),
    }
}

/// Replaces every quoted value of a serde data error with `…`.
///
/// serde quotes strings with `Debug` escaping (`"a\"b"`), and numbers, booleans, variant and
/// field names in backticks. Names of unknown variants and fields come from the document and
/// may hold backticks themselves, so their messages are cut short.
fn redact(text: &str) -> String {
    for prefix in ["unknown variant", "unknown field"] {
        if text.starts_with(prefix) {
            return format!("{prefix} `…`");
        }
    }
    // Missing and duplicate fields are named by the type, not by the document.
    if text.starts_with("missing field `") || text.starts_with("duplicate field `") {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push_str("\"…\"");
                let mut escaped = false;
                for c in chars.by_ref() {
                    match c {
                        _ if escaped => escaped = false,
                        '\\' => escaped = true,
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '`' => {
                out.push_str("`…`");
                for c in chars.by_ref() {
                    if c == '`' {
                        break;
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

#[derive(Deserialize)]
struct EventHead {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    object: Option<ObjectHead>,
}

#[derive(Deserialize)]
struct ObjectHead {
    #[serde(default)]
    metadata: Option<MetaHead>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaHead {
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default)]
    uid: Option<String>,
}

impl From<MetaHead> for ObjectRef {
    fn from(m: MetaHead) -> Self {
        Self {
            namespace: m.namespace.filter(|n| !n.is_empty()),
            name: m.name,
            resource_version: m.resource_version,
            uid: m.uid,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcache_store::DynamicObject;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code, reason = "only decoded")]
    struct Typed {
        metadata: kcache_store::ObjectMeta,
        #[serde(default)]
        spec: Option<Spec>,
    }
    #[derive(Debug, Deserialize)]
    #[allow(dead_code, reason = "only decoded")]
    struct Spec {
        count: Option<u32>,
        mode: Option<Mode>,
        list: Option<Vec<u8>>,
    }
    #[derive(Debug, Deserialize)]
    enum Mode {
        On,
    }

    #[test]
    fn values_never_reach_the_text() {
        let cases: &[(&str, &str, &str)] = &[
            (
                r#"{"metadata":{"name":"a"},"spec":{"count":"s3cr\"et"}}"#,
                "invalid type: string \"…\", expected u32",
                "spec.count",
            ),
            (
                r#"{"metadata":{"name":"a"},"spec":{"count":-41}}"#,
                "invalid value: integer `…`, expected u32",
                "spec.count",
            ),
            (
                r#"{"metadata":{"name":"a"},"spec":{"mode":"se`cret"}}"#,
                "unknown variant `…`",
                "spec.mode",
            ),
            (
                r#"{"metadata":{"name":"a"},"spec":{"list":[1,2,999]}}"#,
                "invalid value: integer `…`, expected u8",
                "spec.list[2]",
            ),
        ];
        for (json, reason, path) in cases {
            let e = DecodeError::of_object::<Typed>("list item 0", json);
            assert_eq!(e.reason, *reason, "{json}");
            assert_eq!(e.path.as_deref(), Some(*path), "{json}");
            for secret in ["s3cr", "41", "se`cret", "999"] {
                assert!(!e.to_string().contains(secret), "{e}");
            }
        }
    }

    #[test]
    fn syntax_errors_keep_their_text() {
        let e = DecodeError::of_object::<DynamicObject>("list item 1", r#"{"metadata":{"name""#);
        assert_eq!(e.reason, "EOF while parsing an object");
        assert!(e.object.is_none());
        assert_eq!(
            e.to_string(),
            format!("could not decode list item 1: {} at metadata", e.reason)
        );
    }

    #[test]
    fn identity_needs_a_type_a_name_and_a_resource_version() {
        let bad = |ty: &str, meta: &str| {
            let line = format!(
                r#"{{"type":"{ty}","object":{{"metadata":{meta},"spec":{{"count":"x"}}}}}}"#
            );
            DecodeError::of_watch_event::<Typed>(line.as_bytes())
        };
        let e = bad(
            "DELETED",
            r#"{"name":"a","namespace":"ns","resourceVersion":"9"}"#,
        );
        let (key, rv, ty) = e.identity().unwrap();
        assert_eq!((key.as_str(), rv, ty), ("ns/a", "9", EventType::Deleted));
        assert!(bad("DELETED", r#"{"name":"a"}"#).identity().is_none());
        assert!(
            bad("MODIFIED", r#"{"resourceVersion":"9"}"#)
                .identity()
                .is_none()
        );
        assert!(
            bad("BOOKMARK", r#"{"name":"a","resourceVersion":"9"}"#)
                .identity()
                .is_none()
        );
        // Metadata that is itself malformed cannot be trusted at all.
        assert!(
            bad("MODIFIED", r#"{"name":5,"resourceVersion":"9"}"#)
                .object
                .is_none()
        );
        assert!(
            DecodeError::of_watch_event::<Typed>(b"{garbage")
                .identity()
                .is_none()
        );
    }
}
