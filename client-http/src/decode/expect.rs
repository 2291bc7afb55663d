//! [`Expected`]: what a lister-watcher's objects must be, beyond decoding: of its resource's
//! type ([`ExpectedType`]) and, for a lister-watcher of one namespace, in that namespace.
//!
//! An object that decodes but fails these checks is treated as one that does not decode: left
//! out of the cache and reported, with the identity it has (a server or proxy that sends a
//! `ConfigMap` on a pod watch, or another namespace's pods to a namespaced informer, never fills
//! the cache with them).

use kcache_reflector::{DecodeError, EventType, ObjectRef};
use kcache_store::{ExpectedType, Object};

/// The checks of one lister-watcher.
#[derive(Debug, Clone, Default)]
pub(crate) struct Expected {
    /// `apiVersion` and `kind` of the resource (of its lists, too).
    pub(crate) r#type: ExpectedType,
    /// The only namespace objects may be in; `None` for every namespace (or a cluster-scoped
    /// resource).
    pub(crate) namespace: Option<String>,
}

impl Expected {
    /// Why `obj` is not one of this lister-watcher's objects, or `None` when it is.
    pub(crate) fn refusal<T: Object>(&self, obj: &T) -> Option<String> {
        if let Err(why) = self.r#type.check_object(obj.api_version(), obj.kind()) {
            return Some(why);
        }
        match &self.namespace {
            Some(want) if obj.namespace() != Some(want.as_str()) => Some(match obj.namespace() {
                Some(got) => {
                    format!(
                        "the object is in namespace `{got}`, outside the lister-watcher's `{want}`"
                    )
                }
                None => format!(
                    "the object has no namespace; the lister-watcher lists namespace `{want}`"
                ),
            }),
            _ => None,
        }
    }

    /// The report of `obj`, refused for `why`: its identity, without any other value.
    pub(crate) fn refused<T: Object>(
        context: impl Into<String>,
        obj: &T,
        why: String,
        event_type: Option<EventType>,
    ) -> DecodeError {
        let mut object = ObjectRef::default();
        object.namespace = obj.namespace().map(str::to_owned);
        object.name = obj.name().map(str::to_owned);
        object.resource_version = obj.resource_version().map(str::to_owned);
        object.uid = obj.uid().map(str::to_owned);
        DecodeError::new(context, why)
            .with_event_type(event_type)
            .with_object(Some(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcache_store::DynamicObject;

    #[test]
    fn another_namespace_or_type_is_refused() {
        let expected = Expected {
            r#type: ExpectedType::new("v1", Some("Pod")),
            namespace: Some("prod".to_owned()),
        };
        let ok = DynamicObject::new(Some("prod"), "a");
        assert_eq!(expected.refusal(&ok), None);
        let elsewhere = DynamicObject::new(Some("dev"), "a");
        assert_eq!(
            expected.refusal(&elsewhere).as_deref(),
            Some("the object is in namespace `dev`, outside the lister-watcher's `prod`")
        );
        assert!(expected.refusal(&DynamicObject::new(None, "a")).is_some());
        let mut config_map = DynamicObject::new(Some("prod"), "a");
        config_map.kind = Some("ConfigMap".to_owned());
        assert_eq!(
            expected.refusal(&config_map).as_deref(),
            Some("kind is `ConfigMap`, expected `Pod`")
        );
        let report = Expected::refused("list item 3", &elsewhere, "x".to_owned(), None);
        assert_eq!(
            report.object.and_then(|o| o.key()).map(|k| k.to_string()),
            Some("dev/a".to_owned())
        );
    }
}
