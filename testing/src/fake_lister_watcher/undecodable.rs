//! [`Undecodable`]: how an object the fake holds reaches clients that cannot decode it.

use kcache_reflector::{DecodeError, EventType, ObjectRef};
use kcache_store::Object;

/// How an object the fake holds reaches clients that cannot decode it (see
/// [`FakeHandle::update_undecodable`](super::FakeHandle::update_undecodable)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undecodable {
    /// The body does not fit the type, but the event's type and the object's namespace, name and
    /// resource version can be read: a client can remove just that key.
    Readable,
    /// Nothing can be read of it: a client must relist.
    Unreadable,
}

impl Undecodable {
    /// The decode error a client would report for `obj` in a watch event of type `ty` (or in a
    /// list when `ty` is `None`).
    pub(super) fn error<T: Object>(self, obj: &T, ty: Option<EventType>) -> DecodeError {
        // A watch event's object sits under `object`; a list item is the object itself.
        let (context, path) = if ty.is_some() {
            ("watch event", "object.spec.replicas")
        } else {
            ("list item", "spec.replicas")
        };
        match self {
            Self::Readable => DecodeError::new(context, "invalid type: string \"…\", expected u32")
                .with_event_type(ty)
                .with_path(Some(path.to_owned()))
                .with_object(Some(ObjectRef::new(
                    obj.namespace(),
                    obj.name().unwrap_or_default(),
                    obj.resource_version().unwrap_or_default(),
                ))),
            Self::Unreadable => DecodeError::new(context, "expected value"),
        }
    }
}
