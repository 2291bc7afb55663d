//! Ready-made transforms: drop `metadata.managedFields` before objects enter the cache.

pub use kcache_store::ClearManagedFields;

/// A transform for [`InformerBuilder::transform`](crate::InformerBuilder::transform) that drops
/// `metadata.managedFields`. Idempotent, as transforms must be. Works for
/// [`DynamicObject`](kcache_store::DynamicObject) and, with `kcache-store`'s `k8s-openapi`
/// feature, for every k8s-openapi type.
///
/// To avoid building managedFields at all, `kcache-client-http` can skip them while parsing
/// (`skip_managed_fields(true)`); this transform is for other `ListerWatcher`s.
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
