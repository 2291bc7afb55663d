//! [`ObjectMetadata`] and [`impl_object!`](crate::impl_object): [`Object`](crate::Object) for a
//! type of your own (a custom resource's struct, a kube-rs `#[derive(CustomResource)]` type)
//! from its `metadata` field, in one line.

use std::collections::BTreeMap;

use crate::OwnerReference;

/// The metadata types a type's `metadata` field may have for
/// [`impl_object!`](crate::impl_object): kcache's [`ObjectMeta`](crate::ObjectMeta), and
/// with the `k8s-openapi` feature k8s-openapi's `ObjectMeta` (what kube-rs's
/// `#[derive(CustomResource)]` types and hand-written types built on k8s-openapi hold).
pub trait ObjectMetadata {
    /// `name`.
    fn name(&self) -> Option<&str>;
    /// `namespace`.
    fn namespace(&self) -> Option<&str>;
    /// `resourceVersion`.
    fn resource_version(&self) -> Option<&str>;
    /// `uid`.
    fn uid(&self) -> Option<&str>;
    /// `labels`.
    fn labels(&self) -> Option<&BTreeMap<String, String>>;
    /// `annotations`.
    fn annotations(&self) -> Option<&BTreeMap<String, String>>;
    /// Whether `deletionTimestamp` is set.
    fn is_being_deleted(&self) -> bool;
    /// `generation`.
    fn generation(&self) -> Option<i64>;
    /// `ownerReferences` (the entries that read).
    fn owner_references(&self) -> Vec<OwnerReference>;
}

/// Implements [`ObjectMetadata`] for `$meta`, a metadata struct whose fields bear the names
/// and types both `ObjectMeta`s give them; `$owner_references` reads the owner references,
/// which the two keep differently.
macro_rules! object_metadata {
    ($meta:ty, $owner_references:path) => {
        impl ObjectMetadata for $meta {
            fn name(&self) -> Option<&str> {
                self.name.as_deref()
            }
            fn namespace(&self) -> Option<&str> {
                self.namespace.as_deref()
            }
            fn resource_version(&self) -> Option<&str> {
                self.resource_version.as_deref()
            }
            fn uid(&self) -> Option<&str> {
                self.uid.as_deref()
            }
            fn labels(&self) -> Option<&BTreeMap<String, String>> {
                self.labels.as_ref()
            }
            fn annotations(&self) -> Option<&BTreeMap<String, String>> {
                self.annotations.as_ref()
            }
            fn is_being_deleted(&self) -> bool {
                self.deletion_timestamp.is_some()
            }
            fn generation(&self) -> Option<i64> {
                self.generation
            }
            fn owner_references(&self) -> Vec<OwnerReference> {
                $owner_references(self)
            }
        }
    };
}

object_metadata!(crate::ObjectMeta, untyped_owner_references);

/// kcache's `ObjectMeta` keeps the owner references untyped, among its other fields: the
/// entries that parse.
fn untyped_owner_references(meta: &crate::ObjectMeta) -> Vec<OwnerReference> {
    match meta.other.get("ownerReferences") {
        Some(serde_json::Value::Array(refs)) => refs
            .iter()
            .filter_map(|r| serde::Deserialize::deserialize(r).ok())
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(feature = "k8s-openapi")]
object_metadata!(
    k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    k8s_openapi_owner_references
);

/// k8s-openapi's `ObjectMeta` keeps them typed.
#[cfg(feature = "k8s-openapi")]
fn k8s_openapi_owner_references(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Vec<OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .map(|r| OwnerReference {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            name: r.name.clone(),
            uid: r.uid.clone(),
            controller: r.controller,
        })
        .collect()
}

/// Implements [`Object`](crate::Object) for a type whose `metadata` field is an
/// [`ObjectMetadata`]: kcache's [`ObjectMeta`](crate::ObjectMeta), or (feature `k8s-openapi`)
/// k8s-openapi's, as kube-rs's `#[derive(CustomResource)]` types have. Then the type is
/// cached, indexed, queued and reconciled as any object.
///
/// ```
/// use kcache_store::{Object, ObjectMeta, impl_object};
///
/// /// A custom resource of your own, as plain serde.
/// #[derive(Debug, serde::Deserialize, serde::Serialize)]
/// struct Gadget {
///     metadata: ObjectMeta,
///     spec: GadgetSpec,
/// }
///
/// #[derive(Debug, serde::Deserialize, serde::Serialize)]
/// struct GadgetSpec {
///     size: u32,
/// }
///
/// impl_object!(Gadget);
///
/// let gadget: Gadget = serde_json::from_str(
///     r#"{"metadata":{"name":"g","namespace":"shop","generation":2},"spec":{"size":3}}"#,
/// )?;
/// assert_eq!(gadget.key(), "shop/g");
/// assert_eq!(gadget.generation(), Some(2));
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// `impl_object!(Type, type_meta)` also answers
/// [`Object::api_version`](crate::Object::api_version) and [`Object::kind`](crate::Object::kind)
/// from the type's `api_version` and `kind` fields (`Option`s of any string type: `String`,
/// `Arc<str>`), for a type that keeps them as data, as [`DynamicObject`](crate::DynamicObject)
/// and [`PartialObjectMetadata`](crate::PartialObjectMetadata) do:
///
/// ```
/// use kcache_store::{Object, ObjectMeta, impl_object};
///
/// struct Untyped {
///     api_version: Option<String>,
///     kind: Option<String>,
///     metadata: ObjectMeta,
/// }
///
/// impl_object!(Untyped, type_meta);
///
/// let object = Untyped {
///     api_version: Some("example.com/v1".into()),
///     kind: Some("Gadget".into()),
///     metadata: ObjectMeta::default(),
/// };
/// assert_eq!(object.kind(), Some("Gadget"));
/// ```
#[macro_export]
macro_rules! impl_object {
    (@object $type:ty; $($type_meta:tt)*) => {
        impl $crate::Object for $type {
            fn name(&self) -> Option<&str> {
                $crate::ObjectMetadata::name(&self.metadata)
            }
            fn namespace(&self) -> Option<&str> {
                $crate::ObjectMetadata::namespace(&self.metadata)
            }
            fn resource_version(&self) -> Option<&str> {
                $crate::ObjectMetadata::resource_version(&self.metadata)
            }
            fn uid(&self) -> Option<&str> {
                $crate::ObjectMetadata::uid(&self.metadata)
            }
            fn labels(&self) -> Option<&::std::collections::BTreeMap<String, String>> {
                $crate::ObjectMetadata::labels(&self.metadata)
            }
            fn annotations(&self) -> Option<&::std::collections::BTreeMap<String, String>> {
                $crate::ObjectMetadata::annotations(&self.metadata)
            }
            fn is_being_deleted(&self) -> bool {
                $crate::ObjectMetadata::is_being_deleted(&self.metadata)
            }
            fn generation(&self) -> Option<i64> {
                $crate::ObjectMetadata::generation(&self.metadata)
            }
            fn owner_references(&self) -> Vec<$crate::OwnerReference> {
                $crate::ObjectMetadata::owner_references(&self.metadata)
            }
            $($type_meta)*
        }
    };
    ($type:ty) => {
        $crate::impl_object!(@object $type;);
    };
    ($type:ty, type_meta) => {
        $crate::impl_object!(@object $type;
            fn api_version(&self) -> Option<&str> {
                self.api_version.as_deref()
            }
            fn kind(&self) -> Option<&str> {
                self.kind.as_deref()
            }
        );
    };
}
