//! [`ObjectReference`]: the object an Event is about (its `regarding`) or also involves (its
//! `related`), as `events.k8s.io/v1` writes it: the core `v1` `ObjectReference`.

use kcache_store::{DynamicObject, Object};
use serde::Serialize;

/// An object named by an Event: `apiVersion`, `kind`, `namespace`, `name`, `uid`,
/// `resourceVersion` and, to point inside it, `fieldPath` (what client-go's
/// `reference.GetReference` takes from an object).
///
/// The whole reference is part of what makes two events the same (the series key): events
/// about two resource versions of one object are two Events, as with client-go. Clear
/// [`resource_version`](Self::resource_version) to fold events about every version into one
/// series. The rate limit is per object (`apiVersion`, `kind`, `namespace`, `name`, `uid`),
/// whatever the version.
///
/// ```
/// use kcache_client_http::ObjectReference;
/// use kcache_store::DynamicObject;
///
/// let mut widget = DynamicObject::new(Some("shop"), "blue");
/// widget.metadata.uid = Some("1b0c".into());
/// // From any object, with its apiVersion and kind...
/// let r = ObjectReference::from_object(&widget, "example.com/v1", "Widget");
/// assert_eq!((r.namespace.as_deref(), r.name.as_str()), (Some("shop"), "blue"));
/// assert_eq!(r.uid.as_deref(), Some("1b0c"));
/// // ...or from a dynamic object that carries them.
/// assert!(ObjectReference::from_dynamic(&widget).is_none(), "no apiVersion and kind");
/// widget.api_version = Some("example.com/v1".into());
/// widget.kind = Some("Widget".into());
/// assert_eq!(ObjectReference::from_dynamic(&widget), Some(r));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ObjectReference {
    /// `apiVersion`: `v1`, `apps/v1`, `example.com/v1`.
    pub api_version: String,
    /// `kind`: `Pod`, `Widget`.
    pub kind: String,
    /// `namespace`; `None` for a cluster-scoped object (its Events go to `default`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `name`.
    pub name: String,
    /// `uid`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// `resourceVersion`: the version the event is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// `fieldPath`: a part of the object (`spec.containers{web}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_path: Option<String>,
}

impl ObjectReference {
    /// A reference to the object `name` of `kind` in `api_version`, in `namespace` (`None`, or
    /// empty, for a cluster-scoped object), without uid, version or field path.
    pub fn new(
        api_version: impl Into<String>,
        kind: impl Into<String>,
        namespace: Option<&str>,
        name: impl Into<String>,
    ) -> Self {
        Self {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: owned(namespace),
            name: name.into(),
            uid: None,
            resource_version: None,
            field_path: None,
        }
    }

    /// A reference to `object`, of `kind` in `api_version`: its namespace, name, uid and
    /// resource version. (Objects decoded from a list of a built-in kind carry no `apiVersion`
    /// and `kind` of their own, hence the arguments.)
    pub fn from_object<K: Object + ?Sized>(object: &K, api_version: &str, kind: &str) -> Self {
        Self {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            namespace: owned(object.namespace()),
            name: object.name().unwrap_or_default().to_owned(),
            uid: owned(object.uid()),
            resource_version: owned(object.resource_version()),
            field_path: None,
        }
    }

    /// A reference to `object` with its own `apiVersion` and `kind`; `None` when it lacks
    /// either (use [`from_object`](Self::from_object) then).
    pub fn from_dynamic(object: &DynamicObject) -> Option<Self> {
        let api_version = object.api_version.as_deref().filter(|v| !v.is_empty())?;
        let kind = object.kind.as_deref().filter(|k| !k.is_empty())?;
        Some(Self::from_object(object, api_version, kind))
    }

    /// The same reference with `fieldPath` set.
    #[must_use]
    pub fn with_field_path(mut self, field_path: impl Into<String>) -> Self {
        self.field_path = Some(field_path.into());
        self
    }

    /// The namespace an Event about this object is written to: the object's, or `default` for
    /// a cluster-scoped object (as client-go does).
    pub fn event_namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or("default")
    }
}

#[cfg(feature = "k8s-openapi")]
#[cfg_attr(docsrs, doc(cfg(feature = "k8s-openapi")))]
impl ObjectReference {
    /// A reference to the k8s-openapi object `object`, with its type's `apiVersion` and `kind`.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kcache_client_http::ObjectReference;
    ///
    /// let mut pod = Pod::default();
    /// pod.metadata.name = Some("web".into());
    /// pod.metadata.namespace = Some("shop".into());
    /// let r = ObjectReference::of(&pod);
    /// assert_eq!((r.api_version.as_str(), r.kind.as_str()), ("v1", "Pod"));
    /// ```
    pub fn of<K: k8s_openapi::Resource + Object>(object: &K) -> Self {
        Self::from_object(object, K::API_VERSION, K::KIND)
    }
}

/// An owned copy of `value`, `None` when it is empty.
fn owned(value: Option<&str>) -> Option<String> {
    value.filter(|v| !v.is_empty()).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_what_it_has_in_camel_case() {
        let mut r = ObjectReference::new("apps/v1", "Deployment", Some("shop"), "web");
        r.uid = Some("u".into());
        r.resource_version = Some("7".into());
        let r = r.with_field_path("spec");
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop",
                   "name": "web", "uid": "u", "resourceVersion": "7", "fieldPath": "spec"})
        );
        assert_eq!(r.event_namespace(), "shop");
        let node = ObjectReference::new("v1", "Node", Some(""), "n1");
        assert_eq!(
            serde_json::to_value(&node).unwrap(),
            json!({"apiVersion": "v1", "kind": "Node", "name": "n1"})
        );
        assert_eq!(node.event_namespace(), "default");
    }
}
