//! [`DynamicObject`]: any Kubernetes object, with typed metadata and the rest as JSON.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::ObjectMeta;
use crate::meta::{FieldKey, FieldKeySeed, next_typed};

/// An object of any kind: `apiVersion`, `kind` and [`ObjectMeta`] typed, every other top-level
/// field (`spec`, `status`, `data`, ...) kept as JSON in [`data`](Self::data).
///
/// Use it for custom resources and whenever no Rust type exists. Decoding and encoding again loses
/// nothing.
///
/// ```
/// use kcache_store::{DynamicObject, Object};
///
/// let obj: DynamicObject = serde_json::from_str(
///     r#"{"apiVersion":"example.com/v1","kind":"Widget",
///         "metadata":{"name":"w","namespace":"prod","resourceVersion":"12"},
///         "spec":{"size":3}}"#,
/// )?;
/// assert_eq!(obj.name(), Some("w"));
/// assert_eq!(obj.data["spec"]["size"], 3);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DynamicObject {
    /// `apiVersion`.
    pub api_version: Option<String>,
    /// `kind`.
    pub kind: Option<String>,
    /// `metadata`.
    pub metadata: ObjectMeta,
    /// Every other top-level field.
    pub data: Map<String, Value>,
}

const FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

impl DynamicObject {
    /// An empty object with the given name and, for namespaced kinds, namespace.
    #[must_use]
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        Self {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: namespace.map(str::to_owned),
                ..ObjectMeta::default()
            },
            ..Self::default()
        }
    }
}

// The typed metadata, and `apiVersion` and `kind` as data.
crate::impl_object!(DynamicObject, type_meta);

impl<'de> Deserialize<'de> for DynamicObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DynamicObject;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Kubernetes object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DynamicObject, A::Error> {
                let mut o = DynamicObject::default();
                while let Some(key) = map.next_key_seed(FieldKeySeed(&FIELDS))? {
                    match key {
                        FieldKey::Known(0) => {
                            o.api_version = next_typed(&mut map, FIELDS[0], &mut o.data)?;
                        }
                        FieldKey::Known(1) => {
                            o.kind = next_typed(&mut map, FIELDS[1], &mut o.data)?;
                        }
                        FieldKey::Known(_) => {
                            let m: Option<ObjectMeta> =
                                next_typed(&mut map, FIELDS[2], &mut o.data)?;
                            match m {
                                // An empty `{}` is kept as sent, like `null`.
                                Some(m) if m == ObjectMeta::default() => {
                                    o.data
                                        .insert("metadata".to_owned(), Value::Object(Map::new()));
                                }
                                m => o.metadata = m.unwrap_or_default(),
                            }
                        }
                        FieldKey::Other(k) => {
                            let v: Value = map.next_value()?;
                            o.data.insert(k, v);
                        }
                    }
                }
                Ok(o)
            }
        }
        d.deserialize_map(V)
    }
}

impl Serialize for DynamicObject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(v) = &self.api_version {
            map.serialize_entry("apiVersion", v)?;
        }
        if let Some(v) = &self.kind {
            map.serialize_entry("kind", v)?;
        }
        // Empty metadata is written only as it came (`{}`, `null`, or not at all).
        let typed_meta = self.metadata != ObjectMeta::default();
        if typed_meta {
            map.serialize_entry("metadata", &self.metadata)?;
        }
        for (k, v) in &self.data {
            let shadowed = match k.as_str() {
                "apiVersion" => self.api_version.is_some(),
                "kind" => self.kind.is_some(),
                "metadata" => typed_meta,
                _ => false,
            };
            if !shadowed {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Object;
    use serde_json::json;

    #[test]
    fn round_trip_is_lossless() {
        let v = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "d", "resourceVersion": "9",
                         "labels": {"app": "x"}, "managedFields": []},
            "data": {"k": "v"}, "binaryData": null, "immutable": true
        });
        let o: DynamicObject = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(o.kind.as_deref(), Some("ConfigMap"));
        assert_eq!(o.namespace(), Some("d"));
        assert_eq!(o.resource_version(), Some("9"));
        assert_eq!(o.labels().unwrap()["app"], "x");
        assert_eq!(serde_json::to_value(&o).unwrap(), v);
    }

    #[test]
    fn null_and_missing_metadata_round_trip() {
        for v in [
            json!({"kind": "X", "metadata": null}),
            json!({"kind": null}),
            json!({"metadata": {}}),
        ] {
            let o: DynamicObject = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&o).unwrap(), v);
        }
        let o: DynamicObject = serde_json::from_value(json!({"spec": 1})).unwrap();
        assert_eq!(o.name(), None);
    }

    #[test]
    fn not_an_object_is_an_error() {
        assert!(serde_json::from_str::<DynamicObject>("[1,2]").is_err());
        assert!(serde_json::from_str::<DynamicObject>(r#"{"metadata": 3}"#).is_err());
    }
}
