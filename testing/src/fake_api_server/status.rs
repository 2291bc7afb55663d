//! `metav1.Status` bodies and the error responses the fake server sends.

use serde_json::{Value, json};

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
    Status(Value),
    Text(String),
}

/// A `metav1.Status` with `status: Failure`.
pub(crate) fn status(code: u16, reason: &str, message: &str, details: Option<Value>) -> Value {
    let mut v = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if let (Some(details), Some(map)) = (details, v.as_object_mut()) {
        map.insert("details".into(), details);
    }
    v
}

impl ApiError {
    pub(crate) fn new(code: u16, reason: &str, message: &str) -> Self {
        Self {
            code,
            body: ErrorBody::Status(status(code, reason, message, None)),
            retry_after: None,
        }
    }

    pub(crate) fn with_details(code: u16, reason: &str, message: &str, details: Value) -> Self {
        let retry_after = details
            .get("retryAfterSeconds")
            .and_then(Value::as_u64)
            .and_then(|s| u32::try_from(s).ok())
            .filter(|s| *s > 0);
        Self {
            code,
            body: ErrorBody::Status(status(code, reason, message, Some(details))),
            retry_after,
        }
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

    /// 422 Invalid on `ListOptions` (group `meta.k8s.io`).
    pub(crate) fn invalid_list_options(field: &str, message: &str) -> Self {
        Self::with_details(
            422,
            "Invalid",
            &format!("ListOptions.meta.k8s.io \"\" is invalid: {field}: {message}"),
            json!({
                "group": "meta.k8s.io",
                "kind": "ListOptions",
                "causes": [{"reason": "FieldValueForbidden", "message": message, "field": field}],
            }),
        )
    }

    pub(crate) fn not_found(qualified: &str, name: &str) -> Self {
        let (kind, group) = split_qualified(qualified);
        Self::with_details(
            404,
            "NotFound",
            &format!("{qualified} \"{name}\" not found"),
            json!({"name": name, "group": group, "kind": kind}),
        )
    }

    pub(crate) fn already_exists(qualified: &str, name: &str) -> Self {
        let (kind, group) = split_qualified(qualified);
        Self::with_details(
            409,
            "AlreadyExists",
            &format!("{qualified} \"{name}\" already exists"),
            json!({"name": name, "group": group, "kind": kind}),
        )
    }

    pub(crate) fn conflict(qualified: &str, name: &str) -> Self {
        let (kind, group) = split_qualified(qualified);
        Self::with_details(
            409,
            "Conflict",
            &format!(
                "Operation cannot be fulfilled on {qualified} \"{name}\": the object has been \
                 modified; please apply your changes to the latest version and try again"
            ),
            json!({"name": name, "group": group, "kind": kind}),
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
        Self::with_details(
            504,
            "Timeout",
            &format!("Timeout: Too large resource version: {requested}, current: {current}"),
            too_large_details(),
        )
    }

    /// The body as JSON, for ERROR events.
    pub(crate) fn status_value(&self) -> Value {
        match &self.body {
            ErrorBody::Status(v) => v.clone(),
            ErrorBody::Text(t) => status(self.code, "InternalError", t.trim(), None),
        }
    }
}

pub(crate) fn too_large_details() -> Value {
    json!({
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    })
}

fn split_qualified(qualified: &str) -> (&str, &str) {
    qualified.split_once('.').unwrap_or((qualified, ""))
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
            let mut v = status(410, "Expired", &message, None);
            v["metadata"] = json!({"continue": token});
            ApiError {
                code: 410,
                body: ErrorBody::Status(v),
                retry_after: None,
            }
        }
        None => ApiError::new(410, "Expired", &format!("{base}.")),
    }
}
