//! Reading one value of a JSON document by its JSON pointer (RFC 6901, `/spec/nodeName`)
//! without building the rest: every member off the path is scanned past, not decoded.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A JSON pointer (RFC 6901, `/spec/nodeName`), parsed: the value it names is read by
/// [`seek`](Self::seek) from any serde `Deserializer` without building the rest (every member
/// off the path is scanned past), or from JSON text by [`read`](Self::read).
///
/// [`Compact::pointer`](super::Compact::pointer) parses one and reads it from the object's
/// JSON, or hands it to the object's [`PayloadFormat`](super::PayloadFormat) when the object is
/// kept in another encoding, which can seek it in its own bytes.
///
/// ```
/// use kcache_store::JsonPointer;
///
/// let pointer = JsonPointer::parse("/spec/containers/0/image")?;
/// let doc = r#"{"spec":{"containers":[{"name":"app","image":"nginx"}]}}"#;
/// assert_eq!(pointer.read(doc)?, Some("nginx".into()));
/// let value: serde_json::Value = serde_json::from_str(doc)?;
/// assert_eq!(pointer.seek(&value)?, Some("nginx".into()));
/// assert_eq!(JsonPointer::parse("/spec/nodeName")?.read(doc)?, None);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPointer {
    /// The reference tokens, unescaped; none for the whole document (`""`).
    tokens: Vec<String>,
}

impl JsonPointer {
    /// Parses `pointer`: `""` (the whole document), or `/` followed by reference tokens
    /// separated by `/`, in which `~1` stands for `/` and `~0` for `~`.
    ///
    /// # Errors
    ///
    /// The pointer is not empty and does not start with `/`.
    pub fn parse(pointer: &str) -> Result<Self, serde_json::Error> {
        if pointer.is_empty() {
            return Ok(Self { tokens: Vec::new() });
        }
        let Some(rest) = pointer.strip_prefix('/') else {
            return Err(de::Error::custom(format!(
                "a JSON pointer starts with '/': {pointer:?}"
            )));
        };
        Ok(Self {
            tokens: rest.split('/').map(unescape).collect(),
        })
    }

    /// The value at this pointer in the JSON document `json`; `Ok(None)` when the path does
    /// not exist.
    ///
    /// # Errors
    ///
    /// `json` is not valid JSON.
    pub fn read(&self, json: &str) -> Result<Option<Value>, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(json);
        let found = self.seek(&mut de)?;
        de.end()?;
        Ok(found)
    }

    /// The value at this pointer in the value `deserializer` presents (as JSON would present
    /// it: objects as maps, arrays as sequences); `Ok(None)` when the path does not exist.
    /// The same as deserializing the seed `&self` ([`DeserializeSeed`]).
    ///
    /// # Errors
    ///
    /// Whatever `deserializer` fails with.
    pub fn seek<'de, D: Deserializer<'de>>(
        &self,
        deserializer: D,
    ) -> Result<Option<Value>, D::Error> {
        Seek { path: &self.tokens }.deserialize(deserializer)
    }
}

/// Seeks the pointer's value in what the deserializer presents.
impl<'de> DeserializeSeed<'de> for &JsonPointer {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.seek(deserializer)
    }
}

/// The value at `pointer` in `json`; `Ok(None)` when the path does not exist.
///
/// # Errors
///
/// The pointer is not empty and does not start with `/`, or `json` is not valid JSON.
#[cfg(test)]
fn read_pointer(json: &str, pointer: &str) -> Result<Option<Value>, serde_json::Error> {
    JsonPointer::parse(pointer)?.read(json)
}

/// RFC 6901: `~1` is `/`, `~0` is `~`.
fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Walks to the value at `path`, below the value it is given.
struct Seek<'p> {
    path: &'p [String],
}

impl<'de> DeserializeSeed<'de> for Seek<'_> {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        match self.path.split_first() {
            None => Value::deserialize(d).map(Some),
            Some(_) => d.deserialize_any(self),
        }
    }
}

impl<'de> Visitor<'de> for Seek<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let Some((head, tail)) = self.path.split_first() else {
            return Ok(None);
        };
        let mut found = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if found.is_none() && key == head.as_str() {
                found = map.next_value_seed(Seek { path: tail })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let Some((head, tail)) = self.path.split_first() else {
            return Ok(None);
        };
        // RFC 6901: an index is `0` or digits without a leading zero.
        let canonical = head.bytes().all(|b| b.is_ascii_digit())
            && !head.is_empty()
            && (head == "0" || !head.starts_with('0'));
        let wanted = head.parse::<usize>().ok().filter(|_| canonical);
        let mut found = None;
        let mut index = 0;
        loop {
            if Some(index) == wanted {
                match seq.next_element_seed(Seek { path: tail })? {
                    Some(v) => found = v,
                    None => break,
                }
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                break;
            }
            index += 1;
        }
        Ok(found)
    }

    // A scalar has no members: the path goes no further.
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DOC: &str = r#"{"metadata":{"name":"a","labels":{"a/b":"x","t~":"y"}},
        "spec":{"nodeName":"n1","containers":[{"name":"c0"},{"name":"c1","ports":[{"containerPort":80}]}]},
        "status":null}"#;

    #[test]
    fn reads_what_the_pointer_names() {
        assert_eq!(
            read_pointer(DOC, "/spec/nodeName").unwrap(),
            Some(json!("n1"))
        );
        assert_eq!(
            read_pointer(DOC, "/spec/containers/1/ports/0/containerPort").unwrap(),
            Some(json!(80))
        );
        assert_eq!(
            read_pointer(DOC, "/metadata/labels/a~1b").unwrap(),
            Some(json!("x"))
        );
        assert_eq!(
            read_pointer(DOC, "/metadata/labels/t~0").unwrap(),
            Some(json!("y"))
        );
        assert_eq!(read_pointer(DOC, "/status").unwrap(), Some(Value::Null));
        let whole: Value = serde_json::from_str(DOC).unwrap();
        assert_eq!(read_pointer(DOC, "").unwrap(), Some(whole.clone()));
        for pointer in ["/spec", "/spec/containers/0", "/metadata/labels"] {
            assert_eq!(
                read_pointer(DOC, pointer).unwrap().as_ref(),
                whole.pointer(pointer),
                "{pointer}"
            );
        }
    }

    #[test]
    fn a_missing_path_is_none() {
        for pointer in [
            "/nope",
            "/spec/containers/2",
            "/spec/containers/x",
            "/spec/containers/+1",
            "/spec/containers/01",
            "/spec/nodeName/deeper",
            "/status/phase",
        ] {
            assert_eq!(read_pointer(DOC, pointer).unwrap(), None, "{pointer}");
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(read_pointer(DOC, "spec").is_err());
        assert!(read_pointer(r#"{"spec":"#, "/spec").is_err());
        assert!(read_pointer(r#"{"a":1} x"#, "/a").is_err());
    }
}
