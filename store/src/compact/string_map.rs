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

/// A map of strings kept as its JSON text, built into a `BTreeMap` when first read (a clone
/// keeps what was built).
#[derive(Clone)]
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

/// Equal when the maps are (two texts can list the same entries in another order); unless
/// the texts are the same, both maps are built.
impl PartialEq for StringMap {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text || self.map() == other.map()
    }
}

impl Eq for StringMap {}

/// The text, as it is kept: printing an object does not build its maps.
impl fmt::Debug for StringMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
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
        let mut separator = None;
        while map.next_key_seed(Append(&mut text, separator))? == Some(()) {
            separator = Some(b',');
            map.next_value_seed(Append(&mut text, Some(b':')))?;
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

/// Appends one string, quoted and escaped, after its separator, if any.
struct Append<'a>(&'a mut Vec<u8>, Option<u8>);

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
        if let Some(separator) = self.1 {
            self.0.push(separator);
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
        assert_eq!(format!("{lazy:?}"), lazy.text());
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

    #[test]
    fn readers_racing_for_the_first_read_all_see_one_map() {
        let lazy: StringMap = serde_json::from_str(r#"{"app":"web","tier":"frontend"}"#).unwrap();
        let maps: Vec<usize> = std::thread::scope(|scope| {
            let readers: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| std::ptr::from_ref(lazy.map()) as usize))
                .collect();
            readers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        assert!(maps.windows(2).all(|w| w[0] == w[1]), "{maps:?}");
        assert_eq!(lazy.map()["tier"], "frontend");
    }

    proptest::proptest! {
        /// Any strings (control characters, quotes, backslashes, any Unicode), written by
        /// `serde_json` plainly or with every non-ASCII character as `\u` escapes, and with
        /// repeated keys: the map built from the kept text is the map a `BTreeMap` decodes.
        #[test]
        fn any_strings_build_the_map_a_btreemap_decodes(
            entries in proptest::collection::vec((".{0,8}", ".{0,12}"), 0..6),
            escaped in proptest::bool::ANY,
        ) {
            use std::fmt::Write as _;
            let mut json = String::from("{");
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    json.push(',');
                }
                for text in [k, v] {
                    let quoted = serde_json::to_string(text).unwrap();
                    if escaped {
                        for c in quoted.chars() {
                            if c.is_ascii() {
                                json.push(c);
                            } else {
                                let mut units = [0u16; 2];
                                for unit in c.encode_utf16(&mut units) {
                                    let _ = write!(json, "\\u{unit:04x}");
                                }
                            }
                        }
                    } else {
                        json.push_str(&quoted);
                    }
                    if std::ptr::eq(text, k) {
                        json.push(':');
                    }
                }
            }
            json.push('}');
            let eager: BTreeMap<String, String> = serde_json::from_str(&json).unwrap();
            let lazy: StringMap = serde_json::from_str(&json).unwrap();
            proptest::prop_assert_eq!(lazy.map(), &eager);
        }
    }
}
