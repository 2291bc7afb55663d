//! [`ClearManagedFields`]: dropping `metadata.managedFields`, for transforms.

use crate::DynamicObject;

/// Objects whose `metadata.managedFields` can be cleared.
///
/// Server-side-apply bookkeeping is often half of an object's size and no controller reads it
/// from a cache. Implemented for [`DynamicObject`] and, with the `k8s-openapi` feature, for every
/// k8s-openapi type with `ObjectMeta`; `kcache-informer`'s `strip_managed_fields` transform uses
/// it.
///
/// ```
/// use kcache_store::{ClearManagedFields, DynamicObject};
///
/// let mut obj: DynamicObject = serde_json::from_str(
///     r#"{"metadata":{"name":"a","managedFields":[{"manager":"kubectl"}]}}"#,
/// )?;
/// obj.clear_managed_fields();
/// assert!(!obj.metadata.other.contains_key("managedFields"));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub trait ClearManagedFields {
    /// Removes `metadata.managedFields`.
    fn clear_managed_fields(&mut self);
}

impl ClearManagedFields for DynamicObject {
    fn clear_managed_fields(&mut self) {
        self.metadata.other.remove("managedFields");
    }
}

#[cfg(feature = "k8s-openapi")]
impl<K> ClearManagedFields for K
where
    K: k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
{
    fn clear_managed_fields(&mut self) {
        self.metadata_mut().managed_fields = None;
    }
}
