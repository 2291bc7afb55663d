//! [`TransformFn`]: the one transform type of kcache, shared by queues, reflectors and
//! informers.

use std::sync::Arc;

/// Rewrites an object before it is cached (client-go's `TransformFunc`), for example to drop
/// `metadata.managedFields` or fields a controller never reads.
///
/// It must keep the object's key and be idempotent: the same object may be transformed more
/// than once. The same type is taken by queue builders, `ReflectorBuilder::transform` and the
/// informer builder.
///
/// ```
/// use std::sync::Arc;
/// use kcache_store::{ClearManagedFields, DynamicObject, TransformFn};
///
/// let strip: TransformFn<DynamicObject> = Arc::new(|mut o: DynamicObject| {
///     o.clear_managed_fields();
///     o
/// });
/// let o = strip(DynamicObject::new(None, "a"));
/// assert_eq!(o.metadata.name.as_deref(), Some("a"));
/// ```
pub type TransformFn<T> = Arc<dyn Fn(T) -> T + Send + Sync>;
