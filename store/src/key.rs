//! Object keys: `namespace/name` (or `name` for cluster-scoped objects), as client-go makes them.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::{KeyError, Object};

/// The key of an object in a store: `namespace/name`, or `name` for cluster-scoped objects.
///
/// Backed by an `Arc<str>`, so cloning a key never copies the text. A key can be looked up in a
/// map keyed by `ObjectKey` with a plain `&str` (it implements `Borrow<str>`).
///
/// ```
/// use kcache_store::ObjectKey;
///
/// let key = ObjectKey::new(Some("kube-system"), "coredns");
/// assert_eq!(key.as_str(), "kube-system/coredns");
/// assert_eq!(key.split()?, (Some("kube-system"), "coredns"));
/// assert_eq!(ObjectKey::new(None, "node-1").split()?, (None, "node-1"));
/// assert!("a/b/c".parse::<ObjectKey>().is_err());
/// # Ok::<(), kcache_store::KeyError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey(Arc<str>);

impl ObjectKey {
    /// The key of the object `name` in `namespace` (`None` or empty for cluster-scoped).
    #[must_use]
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        match namespace {
            Some(ns) if !ns.is_empty() => {
                let mut s = String::with_capacity(ns.len() + 1 + name.len());
                s.push_str(ns);
                s.push('/');
                s.push_str(name);
                Self(Arc::from(s))
            }
            _ => Self(Arc::from(name)),
        }
    }

    /// The key of `obj`: `namespace/name`, or `name` when it has no namespace.
    ///
    /// Infallible, for the objects kcache hands out: every object in a cache, in an event or
    /// in a handler call has a name, because the reflector leaves nameless objects out (and
    /// reports them). For an object of unknown origin, [`meta_namespace_key`] checks the name.
    /// [`Object::key`] is the same as a method, which works through `Arc`s and references.
    ///
    /// ```
    /// use kcache_store::{DynamicObject, ObjectKey};
    ///
    /// let web = DynamicObject::new(Some("shop"), "web");
    /// assert_eq!(ObjectKey::of(&web), "shop/web");
    /// ```
    #[must_use]
    pub fn of<T: Object + ?Sized>(obj: &T) -> Self {
        Self::new(obj.namespace(), obj.name().unwrap_or_default())
    }

    /// A key taken verbatim, like client-go's `ExplicitKey`: no format is checked, so custom key
    /// functions can use any text.
    #[must_use]
    pub fn explicit(key: impl Into<Arc<str>>) -> Self {
        Self(key.into())
    }

    /// The key as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Splits the key into namespace (if any) and name.
    ///
    /// # Errors
    ///
    /// [`KeyError::Malformed`] for keys with more than one `/` or an empty name.
    pub fn split(&self) -> Result<(Option<&str>, &str), KeyError> {
        split_meta_namespace_key(&self.0)
    }
}

/// Splits `namespace/name` or `name` into its parts, as client-go's `SplitMetaNamespaceKey`.
///
/// An empty namespace (`/name`) is returned as `None`.
///
/// # Errors
///
/// [`KeyError::Malformed`] for `a/b/c` and for keys whose name is empty (`""`, `ns/`).
pub fn split_meta_namespace_key(key: &str) -> Result<(Option<&str>, &str), KeyError> {
    let malformed = || KeyError::Malformed {
        key: key.to_owned(),
    };
    let (ns, name) = match key.split_once('/') {
        None => (None, key),
        Some((_, rest)) if rest.contains('/') => return Err(malformed()),
        Some((ns, name)) => ((!ns.is_empty()).then_some(ns), name),
    };
    if name.is_empty() {
        return Err(malformed());
    }
    Ok((ns, name))
}

/// client-go's `MetaNamespaceKeyFunc`: `namespace/name`, or `name` without a namespace.
///
/// # Errors
///
/// [`KeyError::MissingName`] when the object has no name or an empty one.
pub fn meta_namespace_key<T: Object + ?Sized>(obj: &T) -> Result<ObjectKey, KeyError> {
    match obj.name() {
        Some(name) if !name.is_empty() => Ok(ObjectKey::new(obj.namespace(), name)),
        _ => Err(KeyError::MissingName {
            namespace: obj.namespace().map(str::to_owned),
        }),
    }
}

/// A key function: computes an object's key. Must be deterministic.
pub type KeyFunc<T> = Arc<dyn Fn(&T) -> Result<ObjectKey, KeyError> + Send + Sync>;

/// The default key function, [`meta_namespace_key`], as a [`KeyFunc`].
#[must_use]
pub fn default_key_func<T: Object>() -> KeyFunc<T> {
    Arc::new(|obj: &T| meta_namespace_key(obj))
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl Borrow<str> for ObjectKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for ObjectKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl FromStr for ObjectKey {
    type Err = KeyError;
    /// Parses and checks a `namespace/name` or `name` key.
    fn from_str(s: &str) -> Result<Self, KeyError> {
        split_meta_namespace_key(s)?;
        Ok(Self(Arc::from(s)))
    }
}

impl PartialEq<str> for ObjectKey {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for ObjectKey {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DynamicObject;

    #[test]
    fn split_follows_client_go() {
        assert_eq!(split_meta_namespace_key("a"), Ok((None, "a")));
        assert_eq!(split_meta_namespace_key("a/b"), Ok((Some("a"), "b")));
        assert_eq!(split_meta_namespace_key("/b"), Ok((None, "b")));
        for bad in ["a/b/c", "", "a/", "/", "a//b"] {
            assert_eq!(
                split_meta_namespace_key(bad),
                Err(KeyError::Malformed { key: bad.into() }),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn meta_key_of_objects() {
        let o = DynamicObject::new(Some("ns"), "n");
        assert_eq!(meta_namespace_key(&o).unwrap(), "ns/n");
        let o = DynamicObject::new(Some(""), "n");
        assert_eq!(meta_namespace_key(&o).unwrap(), "n");
        let mut o = DynamicObject::new(Some("ns"), "");
        let err = meta_namespace_key(&o).unwrap_err();
        assert_eq!(err.to_string(), "object has no name (namespace \"ns\")");
        o.metadata.name = None;
        assert!(meta_namespace_key(&o).is_err());
    }

    #[test]
    fn explicit_keys_are_verbatim() {
        let k = ObjectKey::explicit("a/b/c");
        assert_eq!(k.as_str(), "a/b/c");
        assert!(k.split().is_err());
        assert_eq!(format!("{k:?}"), "\"a/b/c\"");
    }
}
