//! The error responses the fake server sends: `kcache_reflector::Status` bodies (the same type
//! the reflector decodes), or plain text.

use kcache_reflector::{Status, StatusCause, StatusDetails};

/// An error response: a `metav1.Status` JSON body, or a plain-text body (APF 429, `404 page not
/// found`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApiError {
    pub(crate) code: u16,
    pub(crate) body: ErrorBody,
    /// `Retry-After` header, in seconds.
    pub(crate) retry_after: Option<u32>,
}

/// The body of an [`ApiError`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ErrorBody {
    Status(Box<Status>),
    Text(String),
}

/// A `metav1.Status` with `status: Failure` and optional details.
pub(crate) fn status(
    code: u16,
    reason: &str,
    message: &str,
    details: Option<StatusDetails>,
) -> Status {
    let mut s = Status::failure(code, reason, message);
    s.details = details;
    s
}

/// Details naming an object (`name`, `group`, `kind`).
fn object_details(qualified: &str, name: &str) -> StatusDetails {
    let (kind, group) = qualified.split_once('.').unwrap_or((qualified, ""));
    StatusDetails {
        name: Some(name.to_owned()),
        group: Some(group.to_owned()),
        kind: Some(kind.to_owned()),
        ..StatusDetails::default()
    }
}

impl ApiError {
    fn from_status(status: Status) -> Self {
        let retry_after = status
            .details
            .as_ref()
            .and_then(|d| d.retry_after_seconds)
            .and_then(|s| u32::try_from(s).ok())
            .filter(|s| *s > 0);
        Self {
            code: status.code.unwrap_or(500),
            body: ErrorBody::Status(Box::new(status)),
            retry_after,
        }
    }

    pub(crate) fn new(code: u16, reason: &str, message: &str) -> Self {
        Self::from_status(status(code, reason, message, None))
    }

    pub(crate) fn with_details(
        code: u16,
        reason: &str,
        message: &str,
        details: StatusDetails,
    ) -> Self {
        Self::from_status(status(code, reason, message, Some(details)))
    }

    pub(crate) fn text(code: u16, text: &str) -> Self {
        Self {
            code,
            body: ErrorBody::Text(text.to_owned()),
            retry_after: None,
        }
    }

    /// Go's `http.NotFound`: `404 page not found`, text/plain.
    pub(crate) fn page_not_found() -> Self {
        Self::text(404, "404 page not found\n")
    }

    pub(crate) fn bad_request(message: &str) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 413 Request Entity Too Large (a body, a JSON patch or a patched object over its limit).
    pub(crate) fn entity_too_large(message: &str) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            &format!("Request entity too large: {message}"),
        )
    }

    /// 422 Invalid on `ListOptions` (group `meta.k8s.io`).
    pub(crate) fn invalid_list_options(field: &str, message: &str) -> Self {
        Self::with_details(
            422,
            "Invalid",
            &format!("ListOptions.meta.k8s.io \"\" is invalid: {field}: {message}"),
            StatusDetails {
                group: Some("meta.k8s.io".to_owned()),
                kind: Some("ListOptions".to_owned()),
                causes: vec![StatusCause {
                    reason: Some("FieldValueForbidden".to_owned()),
                    message: Some(message.to_owned()),
                    field: Some(field.to_owned()),
                }],
                ..StatusDetails::default()
            },
        )
    }

    pub(crate) fn not_found(qualified: &str, name: &str) -> Self {
        Self::with_details(
            404,
            "NotFound",
            &format!("{qualified} \"{name}\" not found"),
            object_details(qualified, name),
        )
    }

    pub(crate) fn already_exists(qualified: &str, name: &str) -> Self {
        Self::with_details(
            409,
            "AlreadyExists",
            &format!("{qualified} \"{name}\" already exists"),
            object_details(qualified, name),
        )
    }

    pub(crate) fn conflict(qualified: &str, name: &str) -> Self {
        Self::with_details(
            409,
            "Conflict",
            &format!(
                "Operation cannot be fulfilled on {qualified} \"{name}\": the object has been \
                 modified; please apply your changes to the latest version and try again"
            ),
            object_details(qualified, name),
        )
    }

    /// 409 Conflict for a delete whose preconditions do not hold.
    pub(crate) fn precondition_failed(qualified: &str, name: &str, detail: &str) -> Self {
        Self::with_details(
            409,
            "Conflict",
            &format!(
                "Operation cannot be fulfilled on {qualified} \"{name}\": Precondition failed: \
                 {detail}"
            ),
            object_details(qualified, name),
        )
    }

    /// 410 Expired for an Exact list RV that was compacted.
    pub(crate) fn list_too_old() -> Self {
        Self::new(
            410,
            "Expired",
            "The resourceVersion for the provided list is too old.",
        )
    }

    /// 504 `Timeout: Too large resource version: N, current: M`, with `Retry-After: 1`.
    pub(crate) fn too_large(requested: u64, current: u64) -> Self {
        Self::from_status(Status::too_large_resource_version(requested, current))
    }

    /// The body as a Status, for ERROR events (a text body becomes an `InternalError`).
    pub(crate) fn status(&self) -> Status {
        match &self.body {
            ErrorBody::Status(s) => (**s).clone(),
            ErrorBody::Text(t) => status(self.code, "InternalError", t.trim(), None),
        }
    }
}

/// The 410 message for an expired continue token, with or without a fresh inconsistent token.
pub(crate) fn continue_expired(new_token: Option<String>) -> ApiError {
    let base = "The provided continue parameter is too old to display a consistent list result. \
                You can start a new list without the continue parameter";
    match new_token {
        Some(token) => {
            let message = format!(
                "{base}, or use the continue token in this response to retrieve the remainder of \
                 the results. Continuing with the provided token results in an inconsistent list \
                 - objects that were created, modified, or deleted between the time the first \
                 chunk was returned and now may show up in the list."
            );
            let mut s = status(410, "Expired", &message, None);
            s.metadata.continue_token = Some(token);
            ApiError::from_status(s)
        }
        None => ApiError::new(410, "Expired", &format!("{base}.")),
    }
}

/// A 500 `InternalError` naming `e`.
pub(crate) fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        500,
        "InternalError",
        &format!("Internal error occurred: {e}"),
    )
}
