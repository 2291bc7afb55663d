//! The [`Object`] trait: what the cache needs to know about a Kubernetes object.

use std::collections::BTreeMap;

/// Read access to the metadata of a Kubernetes object.
///
/// This is all kcache needs from a type to cache it, index it and key it. It mirrors client-go's
/// `metav1.Object` accessors, returning borrowed data so no call allocates. Objects are shared as
/// `Arc<T>` once decoded, so the trait only reads.
///
/// With the `k8s-openapi` feature every k8s-openapi type with `ObjectMeta` implements it;
/// [`DynamicObject`](crate::DynamicObject) covers custom and untyped resources.
///
/// # Example
///
/// ```
/// use kcache_store::Object;
///
/// #[derive(Debug)]
/// struct Widget { name: String, rv: String }
///
/// impl Object for Widget {
///     fn name(&self) -> Option<&str> { Some(&self.name) }
///     fn namespace(&self) -> Option<&str> { None }
///     fn resource_version(&self) -> Option<&str> { Some(&self.rv) }
/// }
///
/// let w = Widget { name: "a".into(), rv: "7".into() };
/// assert_eq!(w.name(), Some("a"));
/// assert!(w.labels().is_none());
/// assert_eq!(std::sync::Arc::new(w).key(), "a");
/// ```
pub trait Object: Send + Sync + 'static {
    /// `metadata.name`.
    fn name(&self) -> Option<&str>;
    /// `metadata.namespace`; `None` (or empty) for cluster-scoped objects.
    fn namespace(&self) -> Option<&str>;
    /// `metadata.resourceVersion`: an opaque string, compared only for equality.
    fn resource_version(&self) -> Option<&str>;
    /// `metadata.uid`.
    fn uid(&self) -> Option<&str> {
        None
    }
    /// `metadata.labels`.
    fn labels(&self) -> Option<&BTreeMap<String, String>> {
        None
    }
    /// `metadata.annotations`.
    fn annotations(&self) -> Option<&BTreeMap<String, String>> {
        None
    }
    /// Whether `metadata.deletionTimestamp` is set (the object is being deleted).
    fn is_being_deleted(&self) -> bool {
        false
    }
    /// `metadata.generation`.
    fn generation(&self) -> Option<i64> {
        None
    }
    /// `metadata.ownerReferences`: the objects that own this one. Read on demand (a
    /// controller maps an owned object's events to its owners with it), so it returns owned
    /// values; empty by default.
    fn owner_references(&self) -> Vec<crate::OwnerReference> {
        Vec::new()
    }
    /// `apiVersion`, for types that keep it as data ([`DynamicObject`](crate::DynamicObject)):
    /// a lister-watcher checks it against the resource's. `None` by default: a typed object
    /// checks its own while it is decoded.
    fn api_version(&self) -> Option<&str> {
        None
    }
    /// `kind`, for types that keep it as data; see [`api_version`](Self::api_version).
    fn kind(&self) -> Option<&str> {
        None
    }
    /// The object's key, `namespace/name` ([`ObjectKey::of`](crate::ObjectKey::of)). As a
    /// method it reaches through `Arc`s and references: `obj.key()` in a handler.
    fn key(&self) -> crate::ObjectKey {
        crate::ObjectKey::of(self)
    }
}
