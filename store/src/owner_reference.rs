//! [`OwnerReference`]: one entry of `metadata.ownerReferences`, what a controller follows from
//! an owned object to its owner.

use serde::Deserialize;

/// One entry of an object's `metadata.ownerReferences` (metav1.OwnerReference), as
/// [`Object::owner_references`](crate::Object::owner_references) returns it.
///
/// ```
/// use kcache_store::OwnerReference;
///
/// let r: OwnerReference = serde_json::from_str(
///     r#"{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-5d4","uid":"u1","controller":true}"#,
/// )?;
/// assert_eq!(r.group(), "apps");
/// assert!(r.is_controller());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct OwnerReference {
    /// The owner's `apiVersion` (`apps/v1`, or `v1` for the core group).
    #[serde(default)]
    pub api_version: String,
    /// The owner's kind.
    #[serde(default)]
    pub kind: String,
    /// The owner's name; it lives in the owned object's namespace, or is cluster-scoped.
    #[serde(default)]
    pub name: String,
    /// The owner's uid.
    #[serde(default)]
    pub uid: String,
    /// Whether this owner is the managing controller.
    #[serde(default)]
    pub controller: Option<bool>,
}

impl OwnerReference {
    /// A reference to `kind` `name` of `api_version`.
    #[must_use]
    pub fn new(api_version: &str, kind: &str, name: &str) -> Self {
        Self {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            name: name.to_owned(),
            ..Self::default()
        }
    }

    /// The same reference, marked as the managing controller.
    #[must_use]
    pub fn controlled(mut self) -> Self {
        self.controller = Some(true);
        self
    }

    /// The API group of `api_version` (empty for the core group).
    #[must_use]
    pub fn group(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map_or("", |(group, _)| group)
    }

    /// Whether this owner is the managing controller (`controller: true`).
    #[must_use]
    pub fn is_controller(&self) -> bool {
        self.controller == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Compact, DynamicObject, Object};

    const POD: &str = r#"{"metadata":{"name":"web-5d4-x","namespace":"shop","ownerReferences":[
        {"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-5d4","uid":"u1","controller":true},
        {"apiVersion":"v1","kind":"ConfigMap","name":"cfg","uid":"u2"},
        "not a reference"]}}"#;

    /// Both the plain and the compact form read the references; an entry that is not one is
    /// left out.
    #[test]
    fn dynamic_and_compact_objects_read_their_owner_references() {
        let want = vec![
            OwnerReference {
                uid: "u1".into(),
                ..OwnerReference::new("apps/v1", "ReplicaSet", "web-5d4").controlled()
            },
            OwnerReference {
                uid: "u2".into(),
                ..OwnerReference::new("v1", "ConfigMap", "cfg")
            },
        ];
        let plain: DynamicObject = serde_json::from_str(POD).unwrap();
        assert_eq!(plain.owner_references(), want);
        let compact: Compact<DynamicObject> = serde_json::from_str(POD).unwrap();
        assert_eq!(compact.owner_references(), want);
        assert_eq!(want[0].group(), "apps");
        assert_eq!(want[1].group(), "");
        assert!(want[0].is_controller() && !want[1].is_controller());
        assert!(DynamicObject::new(None, "x").owner_references().is_empty());
    }
}
