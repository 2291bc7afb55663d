//! [`TransformFunc`]: the hook that rewrites objects as they enter a queue.

use std::sync::Arc;

/// Rewrites an object as it enters a queue (client-go's `TransformFunc`), e.g. to drop
/// `metadata.managedFields` before it is cached.
///
/// Applied to the objects of `add`, `update`, `delete` (when the delete is queued) and `replace`;
/// never to tombstones or to the objects of a resync, which come from the cache and were
/// transformed already. It must keep the object's key and be idempotent: the same object may be
/// transformed more than once.
pub type TransformFunc<T> = Arc<dyn Fn(Arc<T>) -> Arc<T> + Send + Sync>;
