//! [`Preconditions`]: what a delete checks on the server before it deletes, so that it removes
//! the object the caller read and not one that replaced it.

use kcache_store::Object;
use serde_json::{Map, Value};

/// The preconditions of a [`delete`](crate::ObjectClient::delete) (`DeleteOptions.preconditions`):
/// the server deletes only if the object still has this resource version and this uid, and
/// answers 409 `Conflict` otherwise ([`Error::is_conflict`](kcache_reflector::Error::is_conflict)).
///
/// ```
/// use kcache_client_http::Preconditions;
/// use kcache_store::DynamicObject;
///
/// let p = Preconditions::new().with_resource_version("42");
/// assert_eq!(p.resource_version.as_deref(), Some("42"));
/// assert_eq!(p.uid, None);
///
/// // Exactly the object that was read: its resource version and uid.
/// let mut read = DynamicObject::new(Some("shop"), "web");
/// read.metadata.resource_version = Some("7".into());
/// read.metadata.uid = Some("5b1c".into());
/// let p = Preconditions::of(&read);
/// assert_eq!((p.resource_version.as_deref(), p.uid.as_deref()), (Some("7"), Some("5b1c")));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Preconditions {
    /// `resourceVersion`: the object must not have changed since.
    pub resource_version: Option<String>,
    /// `uid`: the object must be this one, not another of the same name created since.
    pub uid: Option<String>,
}

impl Preconditions {
    /// No preconditions.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The resource version and uid of `object` (each when it has one).
    #[must_use]
    pub fn of<O: Object + ?Sized>(object: &O) -> Self {
        Self {
            resource_version: object.resource_version().map(str::to_owned),
            uid: object.uid().map(str::to_owned),
        }
    }

    /// Sets the resource version.
    #[must_use]
    pub fn with_resource_version(mut self, resource_version: impl Into<String>) -> Self {
        self.resource_version = Some(resource_version.into());
        self
    }

    /// Sets the uid.
    #[must_use]
    pub fn with_uid(mut self, uid: impl Into<String>) -> Self {
        self.uid = Some(uid.into());
        self
    }

    /// The `DeleteOptions` body carrying them.
    pub(crate) fn delete_options(&self) -> Value {
        let mut preconditions = Map::new();
        if let Some(rv) = &self.resource_version {
            preconditions.insert("resourceVersion".to_owned(), Value::from(rv.as_str()));
        }
        if let Some(uid) = &self.uid {
            preconditions.insert("uid".to_owned(), Value::from(uid.as_str()));
        }
        serde_json::json!({
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "preconditions": preconditions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn delete_options_carry_what_is_set() {
        assert_eq!(
            Preconditions::new()
                .with_uid("u")
                .with_resource_version("3")
                .delete_options(),
            json!({"kind": "DeleteOptions", "apiVersion": "v1",
                   "preconditions": {"resourceVersion": "3", "uid": "u"}})
        );
        assert_eq!(
            Preconditions::new().with_uid("u").delete_options()["preconditions"],
            json!({"uid": "u"})
        );
    }
}
