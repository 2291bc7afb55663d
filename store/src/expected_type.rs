//! [`ExpectedType`]: the `apiVersion` and `kind` a lister-watcher's objects must have, checked
//! the way a typed decode checks them.
//!
//! A typed k8s-openapi object refuses, while it is decoded, an `apiVersion` or `kind` that is
//! not its own (a missing one is accepted: the API server leaves them out of list items). The
//! forms that do not decode into a type of their own (the compact form, [`DynamicObject`]) are
//! held to the same rule with this check, so that a `ConfigMap` sent on a pod watch is refused
//! whichever form the cache keeps. Lists are checked too: a `PodList` is the list of `Pod`.
//!
//! [`DynamicObject`]: crate::DynamicObject

use std::fmt;
use std::sync::Arc;

/// The `apiVersion` (`v1`, `apps/v1`) and `kind` (`Pod`) objects must have; either may be
/// unknown (`None`: anything goes).
///
/// ```
/// use kcache_store::ExpectedType;
///
/// let pods = ExpectedType::new("v1", Some("Pod"));
/// assert!(pods.check_object(Some("v1"), Some("Pod")).is_ok());
/// assert!(pods.check_object(None, None).is_ok()); // list items carry neither
/// assert_eq!(
///     pods.check_object(Some("v1"), Some("ConfigMap")).unwrap_err(),
///     "kind is `ConfigMap`, expected `Pod`",
/// );
/// assert!(pods.check_list(Some("v1"), Some("PodList")).is_ok());
/// assert!(pods.check_list(Some("apps/v1"), Some("PodList")).is_err());
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ExpectedType {
    api_version: Option<Arc<str>>,
    kind: Option<Arc<str>>,
    /// Whether the metadata-only forms (`meta.k8s.io/v1` `PartialObjectMetadata` and its list)
    /// are accepted too.
    metadata: bool,
}

impl fmt::Debug for ExpectedType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExpectedType")
            .field("api_version", &self.api_version.as_deref())
            .field("kind", &self.kind.as_deref())
            .field("metadata", &self.metadata)
            .finish()
    }
}

impl ExpectedType {
    /// Objects of `api_version` and, when known, `kind`.
    pub fn new(api_version: &str, kind: Option<&str>) -> Self {
        Self {
            api_version: Some(api_version.into()),
            kind: kind.map(Into::into),
            metadata: false,
        }
    }

    /// The same, also accepting the metadata-only forms a metadata-only list or watch answers
    /// (`meta.k8s.io/v1` `PartialObjectMetadata`, `PartialObjectMetadataList`).
    ///
    /// ```
    /// use kcache_store::ExpectedType;
    ///
    /// let secrets = ExpectedType::new("v1", Some("Secret")).or_metadata();
    /// assert!(secrets.check_list(Some("meta.k8s.io/v1"), Some("PartialObjectMetadataList")).is_ok());
    /// assert!(secrets.check_object(Some("meta.k8s.io/v1"), Some("PartialObjectMetadata")).is_ok());
    /// assert!(secrets.check_list(Some("v1"), Some("SecretList")).is_ok());
    /// assert!(secrets.check_list(Some("v1"), Some("ConfigMapList")).is_err());
    /// ```
    #[must_use]
    pub fn or_metadata(mut self) -> Self {
        self.metadata = true;
        self
    }

    /// Whether the metadata-only forms are accepted ([`or_metadata`](Self::or_metadata)).
    pub fn accepts_metadata(&self) -> bool {
        self.metadata
    }

    /// Anything goes (the default).
    pub fn any() -> Self {
        Self::default()
    }

    /// The same, with `kind` known.
    #[must_use]
    pub fn with_kind(mut self, kind: &str) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// The expected `apiVersion`, when known.
    pub fn api_version(&self) -> Option<&str> {
        self.api_version.as_deref()
    }

    /// The expected `kind`, when known.
    pub fn kind(&self) -> Option<&str> {
        self.kind.as_deref()
    }

    /// Checks an object's `apiVersion` and `kind` (each `None` when the object has none, which
    /// is accepted).
    ///
    /// # Errors
    ///
    /// Which one differs and what was expected, without any other value of the object.
    pub fn check_object(
        &self,
        api_version: Option<&str>,
        kind: Option<&str>,
    ) -> Result<(), String> {
        if self.metadata && crate::PartialObjectMetadata::is_metadata_form(api_version, kind) {
            return Ok(());
        }
        check("apiVersion", api_version, self.api_version.as_deref())?;
        check("kind", kind, self.kind.as_deref())
    }

    /// Checks a list's `apiVersion` and `kind`: the list of `Pod` is a `PodList` (or the
    /// generic `List`, the API's own list of anything); with the object's kind unknown, any
    /// kind ending in `List`.
    ///
    /// # Errors
    ///
    /// Which one differs and what was expected.
    pub fn check_list(&self, api_version: Option<&str>, kind: Option<&str>) -> Result<(), String> {
        if self.metadata
            && api_version == Some(crate::META_V1)
            && kind.is_none_or(|k| k == "PartialObjectMetadataList")
        {
            return Ok(());
        }
        check("apiVersion", api_version, self.api_version.as_deref())?;
        match (kind, self.kind.as_deref()) {
            (Some("List"), _) => Ok(()),
            (Some(got), Some(want)) if got.strip_suffix("List") != Some(want) => {
                Err(format!("kind is `{got}`, expected `{want}List`"))
            }
            (Some(got), None) if !got.ends_with("List") => {
                Err(format!("kind is `{got}`, expected a list kind"))
            }
            _ => Ok(()),
        }
    }
}

fn check(field: &str, got: Option<&str>, want: Option<&str>) -> Result<(), String> {
    match (got, want) {
        (Some(got), Some(want)) if got != want => {
            Err(format!("{field} is `{got}`, expected `{want}`"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_parts_accept_anything() {
        let any = ExpectedType::any();
        assert!(any.check_object(Some("x/v9"), Some("Thing")).is_ok());
        assert!(any.check_list(Some("x/v9"), Some("ThingList")).is_ok());
        assert_eq!(
            any.check_list(Some("v1"), Some("Status")).unwrap_err(),
            "kind is `Status`, expected a list kind"
        );
        let apps = ExpectedType::new("apps/v1", None);
        assert!(apps.check_object(Some("apps/v1"), Some("Anything")).is_ok());
        assert_eq!(
            apps.check_object(Some("v1"), None).unwrap_err(),
            "apiVersion is `v1`, expected `apps/v1`"
        );
    }

    #[test]
    fn a_list_of_another_kind_is_refused() {
        let pods = ExpectedType::new("v1", None).with_kind("Pod");
        assert_eq!(
            pods.check_list(Some("v1"), Some("ConfigMapList"))
                .unwrap_err(),
            "kind is `ConfigMapList`, expected `PodList`"
        );
        assert_eq!(
            pods.check_list(Some("v1"), Some("Pod")).unwrap_err(),
            "kind is `Pod`, expected `PodList`"
        );
        assert!(pods.check_list(None, None).is_ok());
        assert!(pods.check_list(Some("v1"), Some("List")).is_ok());
    }
}
