//! Tombstones: deletions the cache learned of by relisting, with the last state it knew.

use std::fmt;
use std::sync::Arc;

use crate::{KeyError, Object, ObjectKey, meta_namespace_key};

/// An object that was deleted while the watch was not looking, found missing by a relist.
///
/// client-go's `DeletedFinalStateUnknown`: `obj` is the last state the cache held, which may be
/// stale, or `None` when the cache never had it.
pub struct DeletedFinalStateUnknown<T> {
    /// The deleted object's key.
    pub key: ObjectKey,
    /// The last known state, if any.
    pub obj: Option<Arc<T>>,
}

impl<T> Clone for DeletedFinalStateUnknown<T> {
    fn clone(&self) -> Self {
        Self {
            key: self.key.clone(),
            obj: self.obj.clone(),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for DeletedFinalStateUnknown<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeletedFinalStateUnknown")
            .field("key", &self.key)
            .field("obj", &self.obj)
            .finish()
    }
}

/// Either a live object or a tombstone: what a delete notification carries.
///
/// ```
/// use std::sync::Arc;
/// use kcache_store::{
///     deletion_handling_key, DeletedFinalStateUnknown, DynamicObject, ObjectKey, ObjectOrTombstone,
/// };
///
/// let live = ObjectOrTombstone::Object(Arc::new(DynamicObject::new(Some("ns"), "a")));
/// assert_eq!(deletion_handling_key(&live)?, "ns/a");
///
/// let gone: ObjectOrTombstone<DynamicObject> = ObjectOrTombstone::Tombstone(
///     DeletedFinalStateUnknown { key: ObjectKey::explicit("ns/b"), obj: None },
/// );
/// assert_eq!(deletion_handling_key(&gone)?, "ns/b");
/// # Ok::<(), kcache_store::KeyError>(())
/// ```
pub enum ObjectOrTombstone<T> {
    /// The object itself.
    Object(Arc<T>),
    /// A tombstone for an object deleted while unobserved.
    Tombstone(DeletedFinalStateUnknown<T>),
}

impl<T> ObjectOrTombstone<T> {
    /// The object, or the tombstone's last known state.
    #[must_use]
    pub fn object(&self) -> Option<&Arc<T>> {
        match self {
            Self::Object(o) => Some(o),
            Self::Tombstone(t) => t.obj.as_ref(),
        }
    }

    /// Whether this is a tombstone.
    #[must_use]
    pub fn is_tombstone(&self) -> bool {
        matches!(self, Self::Tombstone(_))
    }
}

impl<T: Object> ObjectOrTombstone<T> {
    /// The key: the object's `namespace/name`, or the tombstone's own key. Infallible for what
    /// an informer delivers (see [`ObjectKey::of`]); [`deletion_handling_key`] checks the name.
    #[must_use]
    pub fn key(&self) -> ObjectKey {
        match self {
            Self::Object(o) => ObjectKey::of(&**o),
            Self::Tombstone(t) => t.key.clone(),
        }
    }
}

impl<T> Clone for ObjectOrTombstone<T> {
    fn clone(&self) -> Self {
        match self {
            Self::Object(o) => Self::Object(Arc::clone(o)),
            Self::Tombstone(t) => Self::Tombstone(t.clone()),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for ObjectOrTombstone<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Object(o) => f.debug_tuple("Object").field(o).finish(),
            Self::Tombstone(t) => f.debug_tuple("Tombstone").field(t).finish(),
        }
    }
}

impl<T> From<Arc<T>> for ObjectOrTombstone<T> {
    fn from(obj: Arc<T>) -> Self {
        Self::Object(obj)
    }
}

/// client-go's `DeletionHandlingMetaNamespaceKeyFunc`: a tombstone's own key, otherwise the
/// object's `namespace/name`.
///
/// # Errors
///
/// [`KeyError::MissingName`] for a live object without a name.
pub fn deletion_handling_key<T: Object>(obj: &ObjectOrTombstone<T>) -> Result<ObjectKey, KeyError> {
    match obj {
        ObjectOrTombstone::Object(o) => meta_namespace_key(&**o),
        ObjectOrTombstone::Tombstone(t) => Ok(t.key.clone()),
    }
}
