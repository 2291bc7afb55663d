//! [`StringMap`]: a `labels` or `annotations` map as a [`Compact`](super::Compact) object keeps
//! it: its JSON text in one allocation, built into a `BTreeMap` on its first read.
//!
//! A `BTreeMap<String, String>` of a few entries costs a 544-byte node and two allocations per
//! entry, however short the strings; for a pod's four labels and two annotations that is
//! most of what a compact pod holds besides its compressed payload, and an informer that
//! never reads them client-side (the namespace index, keys and resource versions need
//! neither) pays for it on every object. The text is checked when it is written (an object
//! whose labels are not a map of strings is refused, as a typed decode refuses it), so
//! building the map later cannot fail; once built it is kept beside the text, for every
//! later read.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use serde::de::{DeserializeSeed, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// A map of strings kept as its JSON text, built into a `BTreeMap` when first read.
pub(crate) struct StringMap {
    /// `{"key":"value",...}`, entries in the order they came, escaped as `serde_json` writes
    /// strings.
    text: Box<str>,
    built: OnceLock<BTreeMap<String, String>>,
}

impl StringMap {
    /// The map, built from the text on the first call.
    pub(crate) fn map(&self) -> &BTreeMap<String, String> {
        self.built.get_or_init(|| {
            // Cannot fail: the text was written from strings by `serde_json` itself. Were
            // it ever to, the map would read as empty rather than stop the caller.
            serde_json::from_str(&self.text).unwrap_or_default()
        })
    }

    /// Whether the map was built (read at least once).
    #[cfg(test)]
    pub(crate) fn is_built(&self) -> bool {
        self.built.get().is_some()
    }

    /// The JSON text the map is kept as.
    #[cfg(test)]
    pub(crate) fn text(&self) -> &str {
        &self.text
    }
}

impl Clone for StringMap {
    fn clone(&self) -> Self {
        let built = OnceLock::new();
        if let Some(map) = self.built.get() {
            let _ = built.set(map.clone());
        }
        Self {
            text: self.text.clone(),
            built,
        }
    }
}

/// Equal when the maps are (two texts can list the same entries in another order).
impl PartialEq for StringMap {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text || self.map() == other.map()
    }
}

impl Eq for StringMap {}

impl fmt::Debug for StringMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.map()).finish()
    }
}

/// Reads a JSON object of strings (from any `Deserializer` that presents a map, protobuf's
/// `map<string, string>` included), writing its text without building a string per key or
/// value; anything else (a value that is not a string, an array) is refused as
/// `BTreeMap<String, String>` refuses it.
impl<'de> Deserialize<'de> for StringMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = StringMap;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StringMap, A::Error> {
        let mut text = Vec::with_capacity(2 + map.size_hint().unwrap_or(4).min(64) * 32);
        text.push(b'{');
        let mut first = true;
        while map.next_key_seed(Append(&mut text, if first { b'{' } else { b',' }))? == Some(()) {
            first = false;
            map.next_value_seed(Append(&mut text, b':'))?;
        }
        text.push(b'}');
        // Only `serde_json`'s escaped strings and ASCII punctuation were written.
        let text = String::from_utf8(text).map_err(serde::de::Error::custom)?;
        Ok(StringMap {
            text: text.into_boxed_str(),
            built: OnceLock::new(),
        })
    }
}

/// Appends one string, quoted and escaped, after `separator` (none when it is the opening
/// brace, already written).
struct Append<'a>(&'a mut Vec<u8>, u8);

impl<'de> DeserializeSeed<'de> for Append<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for Append<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        if self.1 != b'{' {
            self.0.push(self.1);
        }
        serde_json::to_writer(&mut *self.0, v).map_err(E::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_text_and_builds_the_same_map_as_a_btreemap() {
        let json = r#"{"app":"web","a/b":"x\"y\\z","é":"\u00e9\n","app":"again"}"#;
        let lazy: StringMap = serde_json::from_str(json).unwrap();
        let eager: BTreeMap<String, String> = serde_json::from_str(json).unwrap();
        assert_eq!(
            lazy.text(),
            r#"{"app":"web","a/b":"x\"y\\z","é":"é\n","app":"again"}"#
        );
        assert_eq!(lazy.map(), &eager);
        assert_eq!(
            lazy.map()["app"],
            "again",
            "the last of a repeated key wins"
        );
        assert_eq!(format!("{lazy:?}"), format!("{eager:?}"));
    }

    #[test]
    fn an_empty_map_is_empty() {
        let lazy: StringMap = serde_json::from_str("{}").unwrap();
        assert_eq!(lazy.text(), "{}");
        assert!(lazy.map().is_empty());
    }

    #[test]
    fn refuses_what_a_map_of_strings_refuses() {
        for json in [
            r#"{"a":1}"#,
            r#"{"a":null}"#,
            r#"{"a":{"b":"c"}}"#,
            r#"["a"]"#,
            r#""a""#,
            "7",
        ] {
            assert!(serde_json::from_str::<StringMap>(json).is_err(), "{json}");
            assert!(
                serde_json::from_str::<BTreeMap<String, String>>(json).is_err(),
                "{json}"
            );
        }
    }

    #[test]
    fn equal_maps_are_equal_whatever_their_order_and_clones_keep_what_was_built() {
        let a: StringMap = serde_json::from_str(r#"{"x":"1","y":"2"}"#).unwrap();
        let b: StringMap = serde_json::from_str(r#"{"y":"2","x":"1"}"#).unwrap();
        let c: StringMap = serde_json::from_str(r#"{"x":"1"}"#).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let built = a.clone();
        assert_eq!(built.map().len(), 2);
        assert_eq!(built.clone().built.get().map(BTreeMap::len), Some(2));
        let unread: StringMap = serde_json::from_str(r#"{"x":"1"}"#).unwrap();
        assert!(unread.clone().built.get().is_none());
    }
}
