//! Adapting any `Arc<K: KnownObjects>`, including `Arc<dyn Indexer<T>>`, to one trait object.

use std::sync::Arc;

use kcache_store::{KnownObjects, ObjectKey};

/// The known objects a queue consults, as one trait object.
pub(crate) type SharedKnown<T> = Arc<dyn Lookup<T>>;

/// [`KnownObjects`], implementable for the wrapper below without clashing with the store's
/// blanket implementation.
pub(crate) trait Lookup<T>: Send + Sync {
    fn known_keys(&self) -> Vec<ObjectKey>;
    fn known_object(&self, key: &str) -> Option<Arc<T>>;
}

/// Wraps an `Arc<K>` whose `K` may itself be unsized (`dyn Indexer<T>`).
struct ArcKnown<K: ?Sized>(Arc<K>);

impl<T, K: KnownObjects<T> + ?Sized> Lookup<T> for ArcKnown<K> {
    fn known_keys(&self) -> Vec<ObjectKey> {
        self.0.known_keys()
    }
    fn known_object(&self, key: &str) -> Option<Arc<T>> {
        self.0.known_object(key)
    }
}

/// `known` as a [`SharedKnown`].
pub(crate) fn share<T: 'static, K: KnownObjects<T> + ?Sized + 'static>(
    known: Arc<K>,
) -> SharedKnown<T> {
    Arc::new(ArcKnown(known))
}
