//! [`FieldManager`]: who makes an HTTP write, for `metadata.managedFields`: the `fieldManager`
//! query parameter, else the User-Agent up to its first `/` (`kubectl`, `python-requests`), else
//! `unknown`, as kube-apiserver names managers; with the write's operation (`Apply` for an
//! apply patch, else `Update`) and the apply's `force`.
//!
//! The options are checked as kube-apiserver checks them, 422 `Invalid` otherwise: a
//! `fieldManager` of at most 128 bytes of printable characters, and no `force` on a patch other
//! than an apply (a missing `fieldManager` on an apply is [`write_options`](super::write_options)'
//! 422). kubectl names its own managers (`kubectl-create`, `kubectl-edit`, `kubectl-patch`,
//! `kubectl-client-side-apply`, `kubectl` for `apply --server-side`); client-go and the Python
//! client send none, and are named from their User-Agent.

use kcache_reflector::{StatusCause, StatusDetails};

use super::list_semantics::SchemaLists;
use super::params::truthy;
use super::patch::PatchType;
use super::schema;
use super::served_resource::ServedResource;
use super::status::ApiError;

/// The longest `fieldManager`, in bytes.
pub(crate) const MAX_LENGTH: usize = 128;

/// The operation a `managedFields` entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    /// A server-side apply: the entry owns exactly the applied configuration's fields.
    Apply,
    /// A create, update or non-apply patch: the entry owns the fields it changed.
    Update,
}

impl Operation {
    /// As `managedFields[].operation` writes it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// The manager of an HTTP write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldManager {
    /// The manager's name.
    pub(crate) name: String,
    /// Apply or Update.
    pub(crate) operation: Operation,
    /// `force=true` on an apply: take conflicting fields from their managers.
    pub(crate) force: bool,
    /// Whether the kind has a status subresource: writes to the object then own nothing under
    /// `status` (see [`status_subresource`]).
    pub(crate) status_subresource: bool,
    /// How the kind's lists merge and are owned (from its vendored schema, if any).
    pub(crate) lists: SchemaLists,
}

/// Whether `resource` has a `status` subresource, through which its status is owned: writes
/// to the object itself then own nothing under `status` (a write to `/status` sets the flag
/// off, owning what it changed there).
pub(crate) fn status_subresource(resource: &ServedResource) -> bool {
    resource.status_subresource
}

impl FieldManager {
    /// The manager of a write with `query` and `user_agent`; `patch` is the patch type of a
    /// PATCH (else a POST when `create`, a PUT otherwise).
    ///
    /// # Errors
    ///
    /// 422 for a `fieldManager` over [`MAX_LENGTH`] bytes or with an unprintable character, and
    /// for `force` on a patch that is not an apply.
    pub(crate) fn from_request(
        query: &[(String, String)],
        user_agent: Option<&str>,
        patch: Option<PatchType>,
        create: bool,
        resource: &ServedResource,
    ) -> Result<Self, ApiError> {
        let param = |name: &str| {
            query
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let options = match (patch, create) {
            (Some(_), _) => "PatchOptions",
            (None, true) => "CreateOptions",
            (None, false) => "UpdateOptions",
        };
        let apply = patch == Some(PatchType::Apply);
        if patch.is_some() && !apply && param("force").is_some() {
            return Err(invalid(
                options,
                "force",
                "FieldValueForbidden",
                "Forbidden: may not be specified for non-apply patch",
            ));
        }
        let given = param("fieldManager").unwrap_or_default();
        if given.len() > MAX_LENGTH {
            return Err(invalid(
                options,
                "fieldManager",
                "FieldValueTooLong",
                &format!("Too long: may not be more than {MAX_LENGTH} bytes"),
            ));
        }
        if let Some((at, c)) = given.char_indices().find(|(_, c)| !printable(*c)) {
            return Err(invalid(
                options,
                "fieldManager",
                "FieldValueInvalid",
                &format!(
                    "Invalid value: {given:?}: invalid character U+{:04X} (at position {at})",
                    u32::from(c)
                ),
            ));
        }
        let name = if given.is_empty() {
            from_user_agent(user_agent.unwrap_or_default())
        } else {
            given.to_owned()
        };
        Ok(Self {
            name: if name.is_empty() {
                "unknown".to_owned()
            } else {
                name
            },
            operation: if apply {
                Operation::Apply
            } else {
                Operation::Update
            },
            force: apply && param("force").is_some_and(truthy),
            status_subresource: status_subresource(resource),
            lists: SchemaLists(schema::for_resource(resource)),
        })
    }
}

/// Whether a character may appear in a manager's name (Go's `unicode.IsPrint`, near enough:
/// no control characters, and no space other than U+0020).
fn printable(c: char) -> bool {
    !c.is_control() && (c == ' ' || !c.is_whitespace())
}

/// The manager named by a User-Agent: what comes before its first `/`, printable characters
/// only, up to [`MAX_LENGTH`] bytes.
fn from_user_agent(user_agent: &str) -> String {
    let mut name = String::new();
    for c in user_agent.split('/').next().unwrap_or_default().chars() {
        if !printable(c) {
            continue;
        }
        if name.len() + c.len_utf8() > MAX_LENGTH {
            break;
        }
        name.push(c);
    }
    name
}

/// 422 Invalid on the write's options (`PatchOptions`, ...), as kube-apiserver words it.
fn invalid(options: &str, field: &str, reason: &str, message: &str) -> ApiError {
    ApiError::with_details(
        422,
        "Invalid",
        &format!("{options}.meta.k8s.io \"\" is invalid: {field}: {message}"),
        StatusDetails {
            group: Some("meta.k8s.io".to_owned()),
            kind: Some(options.to_owned()),
            causes: vec![StatusCause {
                reason: Some(reason.to_owned()),
                message: Some(message.to_owned()),
                field: Some(field.to_owned()),
            }],
            ..StatusDetails::default()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_manager_is_the_parameter_else_the_user_agent_prefix() {
        let cm = ServedResource::configmaps();
        let named = |q: &[(&str, &str)], ua: Option<&str>, patch| {
            FieldManager::from_request(&query(q), ua, patch, false, &cm).map(|m| m.name)
        };
        let kubectl = Some("kubectl/v1.32.0 (linux/amd64) kubernetes/abc");
        assert_eq!(
            named(&[("fieldManager", "kubectl-edit")], kubectl, None).unwrap(),
            "kubectl-edit"
        );
        assert_eq!(named(&[], kubectl, None).unwrap(), "kubectl");
        assert_eq!(
            named(&[], Some("OpenAPI-Generator/31.0.0/python"), None).unwrap(),
            "OpenAPI-Generator"
        );
        assert_eq!(named(&[], None, None).unwrap(), "unknown");
        let long = "m".repeat(MAX_LENGTH + 1);
        assert_eq!(named(&[], Some(&long), None).unwrap().len(), MAX_LENGTH);
        let err = named(&[("fieldManager", &long)], None, None).unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(
            FakeError::from(err).0,
            "UpdateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more \
             than 128 bytes"
        );
        let err = named(&[("force", "true")], None, Some(PatchType::Merge)).unwrap_err();
        assert_eq!(
            FakeError::from(err).0,
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for \
             non-apply patch"
        );
        let apply = FieldManager::from_request(
            &query(&[("fieldManager", "a"), ("force", "true")]),
            None,
            Some(PatchType::Apply),
            false,
            &cm,
        )
        .unwrap();
        assert_eq!((apply.operation, apply.force), (Operation::Apply, true));
        assert!(named(&[("fieldManager", "a\u{7}")], None, None).is_err());
    }

    /// An error's message.
    struct FakeError(String);

    impl From<ApiError> for FakeError {
        fn from(e: ApiError) -> Self {
            Self(super::super::FakeApiError::from(e).message)
        }
    }
}
