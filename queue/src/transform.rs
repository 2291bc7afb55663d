//! How a queue applies a [`TransformFn`]: to objects that are already shared as `Arc`s.

use std::sync::Arc;

use kcache_store::TransformFn;

/// A [`TransformFn`] as a queue applies it to the `Arc`s it is given. The object is moved out of
/// its `Arc` when the queue holds the only reference (as it does for everything a reflector
/// decodes), and cloned only when the caller kept one; the result goes into a new `Arc`, one
/// allocation per transformed object. An informer's transform runs in its reflector instead,
/// before the object's first `Arc`, where it costs no allocation.
pub(crate) type ArcTransform<T> = Arc<dyn Fn(Arc<T>) -> Arc<T> + Send + Sync>;

/// Wraps `transform` for a queue.
pub(crate) fn on_arcs<T: Clone + Send + Sync + 'static>(
    transform: TransformFn<T>,
) -> ArcTransform<T> {
    Arc::new(move |obj| Arc::new(transform(Arc::unwrap_or_clone(obj))))
}
