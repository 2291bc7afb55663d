//! Ready-made transforms: drop `metadata.managedFields` before objects enter the cache.

use kcache_store::DynamicObject;

/// Objects whose `metadata.managedFields` can be cleared.
///
/// Server-side-apply bookkeeping is often half of an object's size and no controller reads it
/// from a cache. Implemented for [`DynamicObject`]; a typed object implements it in one line
/// (`self.metadata.managed_fields = None`).
pub trait ClearManagedFields {
    /// Removes `metadata.managedFields`.
    fn clear_managed_fields(&mut self);
}

impl ClearManagedFields for DynamicObject {
    fn clear_managed_fields(&mut self) {
        self.metadata.other.remove("managedFields");
    }
}

/// A transform for [`set_transform`](crate::SharedIndexInformer::set_transform) that drops
/// `metadata.managedFields`. Idempotent, as transforms must be.
///
/// ```
/// use kcache_informer::strip_managed_fields;
/// use kcache_store::DynamicObject;
///
/// let obj: DynamicObject = serde_json::from_str(
///     r#"{"metadata":{"name":"a","managedFields":[{"manager":"kubectl"}]}}"#,
/// )?;
/// let obj = strip_managed_fields(obj);
/// assert!(!obj.metadata.other.contains_key("managedFields"));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn strip_managed_fields<T: ClearManagedFields>(mut obj: T) -> T {
    obj.clear_managed_fields();
    obj
}
