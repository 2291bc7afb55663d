//! [`ObjectMeta`]: typed Kubernetes object metadata that keeps every field it does not model.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Kubernetes `metadata`, with the fields the cache reads typed and the rest kept as JSON.
///
/// Decoding and encoding again loses nothing: fields without a typed slot (`ownerReferences`,
/// `managedFields`, `finalizers`, ...) are kept in [`other`](Self::other), and a typed field sent as
/// `null` is kept as `null` there too.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjectMeta {
    /// `name`.
    pub name: Option<String>,
    /// `namespace`.
    pub namespace: Option<String>,
    /// `uid`.
    pub uid: Option<String>,
    /// `resourceVersion`.
    pub resource_version: Option<String>,
    /// `generation`.
    pub generation: Option<i64>,
    /// `labels`.
    pub labels: Option<BTreeMap<String, String>>,
    /// `annotations`.
    pub annotations: Option<BTreeMap<String, String>>,
    /// `creationTimestamp`, as sent (RFC 3339).
    pub creation_timestamp: Option<String>,
    /// `deletionTimestamp`, as sent (RFC 3339).
    pub deletion_timestamp: Option<String>,
    /// Every other metadata field, unchanged.
    pub other: Map<String, Value>,
}

const FIELDS: [&str; 9] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "labels",
    "annotations",
    "creationTimestamp",
    "deletionTimestamp",
];

/// A map key: one of the typed fields (by index into a field list) or any other name.
pub(crate) enum FieldKey {
    Known(usize),
    Other(String),
}

/// Decodes a map key against a fixed list of field names without allocating for known ones.
pub(crate) struct FieldKeySeed(pub(crate) &'static [&'static str]);

impl<'de> de::DeserializeSeed<'de> for FieldKeySeed {
    type Value = FieldKey;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<FieldKey, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for FieldKeySeed {
    type Value = FieldKey;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<FieldKey, E> {
        Ok(match self.0.iter().position(|f| *f == v) {
            Some(i) => FieldKey::Known(i),
            None => FieldKey::Other(v.to_owned()),
        })
    }
}

/// Reads the next value as `Option<T>`; a JSON `null` is recorded in `other` under `name`.
pub(crate) fn next_typed<'de, A, T>(
    map: &mut A,
    name: &str,
    other: &mut Map<String, Value>,
) -> Result<Option<T>, A::Error>
where
    A: MapAccess<'de>,
    T: Deserialize<'de>,
{
    let v: Option<T> = map.next_value()?;
    if v.is_none() {
        other.insert(name.to_owned(), Value::Null);
    } else {
        other.remove(name);
    }
    Ok(v)
}

impl<'de> Deserialize<'de> for ObjectMeta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ObjectMeta;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("object metadata")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ObjectMeta, A::Error> {
                let mut m = ObjectMeta::default();
                while let Some(key) = map.next_key_seed(FieldKeySeed(&FIELDS))? {
                    let o = &mut m.other;
                    match key {
                        FieldKey::Known(i) => {
                            let n = FIELDS[i];
                            match i {
                                0 => m.name = next_typed(&mut map, n, o)?,
                                1 => m.namespace = next_typed(&mut map, n, o)?,
                                2 => m.uid = next_typed(&mut map, n, o)?,
                                3 => m.resource_version = next_typed(&mut map, n, o)?,
                                4 => m.generation = next_typed(&mut map, n, o)?,
                                5 => m.labels = next_typed(&mut map, n, o)?,
                                6 => m.annotations = next_typed(&mut map, n, o)?,
                                7 => m.creation_timestamp = next_typed(&mut map, n, o)?,
                                _ => m.deletion_timestamp = next_typed(&mut map, n, o)?,
                            }
                        }
                        FieldKey::Other(k) => {
                            let v: Value = map.next_value()?;
                            o.insert(k, v);
                        }
                    }
                }
                Ok(m)
            }
        }
        d.deserialize_map(V)
    }
}

impl Serialize for ObjectMeta {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        let set = [
            self.name.is_some(),
            self.namespace.is_some(),
            self.uid.is_some(),
            self.resource_version.is_some(),
            self.generation.is_some(),
            self.labels.is_some(),
            self.annotations.is_some(),
            self.creation_timestamp.is_some(),
            self.deletion_timestamp.is_some(),
        ];
        if let Some(v) = &self.name {
            map.serialize_entry("name", v)?;
        }
        if let Some(v) = &self.namespace {
            map.serialize_entry("namespace", v)?;
        }
        if let Some(v) = &self.uid {
            map.serialize_entry("uid", v)?;
        }
        if let Some(v) = &self.resource_version {
            map.serialize_entry("resourceVersion", v)?;
        }
        if let Some(v) = &self.generation {
            map.serialize_entry("generation", v)?;
        }
        if let Some(v) = &self.labels {
            map.serialize_entry("labels", v)?;
        }
        if let Some(v) = &self.annotations {
            map.serialize_entry("annotations", v)?;
        }
        if let Some(v) = &self.creation_timestamp {
            map.serialize_entry("creationTimestamp", v)?;
        }
        if let Some(v) = &self.deletion_timestamp {
            map.serialize_entry("deletionTimestamp", v)?;
        }
        for (k, v) in &self.other {
            // A typed field that is set wins over a stale entry of the same name.
            let shadowed = FIELDS.iter().position(|f| f == k).is_some_and(|i| set[i]);
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
    use serde_json::json;

    #[test]
    fn round_trip_keeps_unknown_fields_and_nulls() {
        let v = json!({
            "name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "5", "generation": 3,
            "labels": {"a": "b"}, "annotations": null, "creationTimestamp": "2024-01-01T00:00:00Z",
            "finalizers": ["f"], "managedFields": [{"manager": "kubectl"}],
            "ownerReferences": [{"kind": "ReplicaSet", "name": "rs"}]
        });
        let m: ObjectMeta = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(m.name.as_deref(), Some("p"));
        assert_eq!(m.generation, Some(3));
        assert!(m.annotations.is_none());
        assert_eq!(serde_json::to_value(&m).unwrap(), v);
    }

    #[test]
    fn set_typed_field_shadows_null_entry() {
        let mut m: ObjectMeta = serde_json::from_value(json!({"labels": null})).unwrap();
        m.labels = Some(BTreeMap::from([("x".to_owned(), "y".to_owned())]));
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            json!({"labels": {"x": "y"}})
        );
    }

    #[test]
    fn wrong_type_is_an_error() {
        let e = serde_json::from_value::<ObjectMeta>(json!({"name": 5})).unwrap_err();
        assert!(e.to_string().contains("invalid type"), "{e}");
    }
}
