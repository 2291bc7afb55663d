//! [`Preconditions`]: what a delete requires of the stored object (`DeleteOptions.preconditions`),
//! checked under the same lock as the delete itself.

use kcache_store::DynamicObject;

use super::status::ApiError;

/// The uid and resource version a delete requires the stored object to have; a mismatch is 409
/// Conflict and deletes nothing. Over HTTP, `preconditions` of the request's `DeleteOptions`
/// body (read with the rest of that body).
///
/// ```
/// use kcache_testing_server::fake_api_server::Preconditions;
///
/// let only_if_unchanged = Preconditions::resource_version("42");
/// assert_eq!(only_if_unchanged.resource_version.as_deref(), Some("42"));
/// assert!(only_if_unchanged.uid.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Preconditions {
    /// The uid the object must have.
    pub uid: Option<String>,
    /// The resource version the object must have.
    pub resource_version: Option<String>,
}

impl Preconditions {
    /// Requires resource version `rv`.
    pub fn resource_version(rv: &str) -> Self {
        Self {
            resource_version: Some(rv.to_owned()),
            ..Self::default()
        }
    }

    /// Requires uid `uid`.
    pub fn uid(uid: &str) -> Self {
        Self {
            uid: Some(uid.to_owned()),
            ..Self::default()
        }
    }

    /// Also requires resource version `rv`.
    #[must_use]
    pub fn and_resource_version(mut self, rv: &str) -> Self {
        self.resource_version = Some(rv.to_owned());
        self
    }

    /// 409 Conflict unless `obj` has the required uid and resource version.
    pub(crate) fn check(&self, obj: &DynamicObject, qualified: &str) -> Result<(), ApiError> {
        let name = obj.metadata.name.as_deref().unwrap_or_default();
        let checks = [
            ("UID", &self.uid, &obj.metadata.uid),
            (
                "ResourceVersion",
                &self.resource_version,
                &obj.metadata.resource_version,
            ),
        ];
        for (what, wanted, actual) in checks {
            if let Some(wanted) = wanted
                && Some(wanted) != actual.as_ref()
            {
                let actual = actual.as_deref().unwrap_or_default();
                return Err(ApiError::precondition_failed(
                    qualified,
                    name,
                    &format!("{what} in precondition: {wanted}, {what} in object meta: {actual}"),
                ));
            }
        }
        Ok(())
    }
}
