//! Skipping `metadata.managedFields` while parsing: a filtering deserializer.
//!
//! [`SkipManagedFields<T>`] decodes a `T` through a thin wrapper around the real deserializer.
//! At the top level of the object the wrapper watches the keys; the value of `metadata` is
//! decoded through a second wrapper whose map access drops the `managedFields` entry with
//! [`IgnoredAny`], so the parser only scans those bytes and `T` never sees them. Every other value
//! goes to `T` unwrapped: the cost is one key comparison per top-level and metadata field.
//!
//! It works for any `T` whose `Deserialize` reads a map (k8s-openapi types, `DynamicObject`,
//! derived structs): the field is simply absent, as if the server had not sent it.

use std::fmt;

use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

use crate::decode::exact_capacity::SKIPPED_VALUE;

/// The name of the skipped field.
const MANAGED_FIELDS: &str = "managedFields";

/// A `T` decoded with `metadata.managedFields` skipped by the parser (never built).
///
/// ```
/// use kcache_client_http::SkipManagedFields;
/// use kcache_store::DynamicObject;
///
/// let json = r#"{"metadata":{"name":"a","managedFields":[{"manager":"kubectl"}]},"spec":{}}"#;
/// let SkipManagedFields(obj) = serde_json::from_str::<SkipManagedFields<DynamicObject>>(json)?;
/// assert_eq!(obj.metadata.name.as_deref(), Some("a"));
/// assert!(!obj.metadata.other.contains_key("managedFields"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkipManagedFields<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for SkipManagedFields<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(Filter {
            inner: d,
            level: Level::Object,
        })
        .map(SkipManagedFields)
    }
}

/// Where in the object a wrapper sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// The object itself: watch for the `metadata` key.
    Object,
    /// The value of `metadata`: drop `managedFields`.
    Metadata,
}

/// The value of `managedFields`, skipped by the parser: asked for as the newtype
/// [`SKIPPED_VALUE`], which `serde_json` (and any deserializer) hands to the skip of an
/// [`IgnoredAny`], and the exact-capacity decoder to its parser's skip without walking it.
struct SkippedValue;

impl<'de> DeserializeSeed<'de> for SkippedValue {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_newtype_struct(SKIPPED_VALUE, IgnoredAny)
            .map(|_| ())
    }
}

/// The deserializer wrapper: every call goes to `inner` with the visitor wrapped.
struct Filter<D> {
    inner: D,
    level: Level,
}

/// The visitor wrapper: maps (and options or newtypes around them) get the filtering map access.
struct FilterVisitor<V> {
    inner: V,
    level: Level,
}

/// A seed that decodes its value through a [`Filter`].
struct FilterSeed<S> {
    inner: S,
    level: Level,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for FilterSeed<S> {
    type Value = S::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(Filter {
            inner: d,
            level: self.level,
        })
    }
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Filter<D> {
    type Error = D::Error;

    crate::decode::forward::forward_deserialize!(
        FilterVisitor { level };
        common;
        deserialize_newtype_struct(name: &'static str),
        deserialize_ignored_any(),
    );

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

impl<'de, V: Visitor<'de>> Visitor<'de> for FilterVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    crate::decode::forward::forward_primitive_visits!();

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_some(Filter {
            inner: d,
            level: self.level,
        })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_newtype_struct(Filter {
            inner: d,
            level: self.level,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_map(FilterMap {
            inner: map,
            level: self.level,
            metadata_next: false,
        })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_enum(data)
    }
}

/// A map key read ahead of the caller's seed, borrowed from the input when possible.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

/// Reads a map key as a [`Key`].
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key<'de>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key::Borrowed(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v))
    }
}

/// The filtering map access.
struct FilterMap<A> {
    inner: A,
    level: Level,
    /// The key just returned was the object's `metadata`.
    metadata_next: bool,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for FilterMap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.inner.next_key_seed(KeySeed)? else {
                return Ok(None);
            };
            match self.level {
                Level::Metadata if key.as_str() == MANAGED_FIELDS => {
                    self.inner.next_value_seed(SkippedValue)?;
                    continue;
                }
                Level::Object => self.metadata_next = key.as_str() == "metadata",
                Level::Metadata => {}
            }
            return match key {
                Key::Borrowed(s) => seed.deserialize(BorrowedStrDeserializer::new(s)),
                Key::Owned(s) => seed.deserialize(StringDeserializer::new(s)),
            }
            .map(Some);
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        if std::mem::take(&mut self.metadata_next) {
            self.inner.next_value_seed(FilterSeed {
                inner: seed,
                level: Level::Metadata,
            })
        } else {
            self.inner.next_value_seed(seed)
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcache_store::DynamicObject;
    use serde_json::{Value, json};

    fn pod() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "3",
                "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
                "labels": {"managedFields": "kept"}},
            "spec": {"metadata": {"managedFields": "not the object's, kept"}},
        })
    }

    #[test]
    fn dynamic_object_loses_only_managed_fields() {
        let text = serde_json::to_string(&pod()).unwrap();
        let SkipManagedFields(o) =
            serde_json::from_str::<SkipManagedFields<DynamicObject>>(&text).unwrap();
        let full: DynamicObject = serde_json::from_str(&text).unwrap();
        assert!(full.metadata.other.contains_key("managedFields"));
        assert!(!o.metadata.other.contains_key("managedFields"));
        assert_eq!(o.metadata.labels.as_ref().unwrap()["managedFields"], "kept");
        assert_eq!(o.data["spec"], full.data["spec"]);
        let mut stripped = full;
        stripped.metadata.other.remove("managedFields");
        assert_eq!(o, stripped);
    }

    #[test]
    fn value_and_escaped_keys() {
        let text = r#"{"metadata":{"manag\u0065dFields":[1],"name":"x"},"k\"":1}"#;
        let SkipManagedFields(v) = serde_json::from_str::<SkipManagedFields<Value>>(text).unwrap();
        assert_eq!(v, json!({"metadata": {"name": "x"}, "k\"": 1}));
    }

    #[test]
    fn null_metadata_and_non_objects() {
        let SkipManagedFields(v) =
            serde_json::from_str::<SkipManagedFields<Value>>(r#"{"metadata":null}"#).unwrap();
        assert_eq!(v, json!({"metadata": null}));
        assert!(serde_json::from_str::<SkipManagedFields<DynamicObject>>("[1]").is_err());
    }

    #[test]
    fn typed_pod_skips_managed_fields() {
        use k8s_openapi::api::core::v1::Pod;
        let text = serde_json::to_string(&pod()).unwrap();
        let SkipManagedFields(p) = serde_json::from_str::<SkipManagedFields<Pod>>(&text).unwrap();
        assert!(p.metadata.managed_fields.is_none());
        assert_eq!(p.metadata.name.as_deref(), Some("p"));
        let full: Pod = serde_json::from_str(&text).unwrap();
        assert_eq!(full.metadata.managed_fields.unwrap().len(), 1);
    }
}
