//! [`Status`]: the API server's `metav1.Status`, the body of every error it returns.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::reason::{
    ALREADY_EXISTS, BAD_REQUEST, CAUSE_RESOURCE_VERSION_TOO_LARGE, CONFLICT, EXPIRED, GONE,
    INTERNAL_ERROR, INVALID, NOT_FOUND, TIMEOUT, TOO_LARGE_RESOURCE_VERSION_MESSAGE,
    TOO_MANY_REQUESTS,
};

/// The reasons client-go's `apierrors` knows (its `knownReasons`): a status with one of these
/// is judged by its reason alone, one with another (or none) by its code too.
const KNOWN_REASONS: &[&str] = &[
    "Unauthorized",
    "Forbidden",
    NOT_FOUND,
    ALREADY_EXISTS,
    CONFLICT,
    GONE,
    INVALID,
    "ServerTimeout",
    "StorageReadError",
    TIMEOUT,
    TOO_MANY_REQUESTS,
    BAD_REQUEST,
    "MethodNotAllowed",
    "NotAcceptable",
    "RequestEntityTooLarge",
    "UnsupportedMediaType",
    INTERNAL_ERROR,
    EXPIRED,
    "ServiceUnavailable",
];

/// `metav1.Status`: what the API server answers on an error, and the object of a watch `ERROR` event.
///
/// Every field is optional on the wire; the helpers read them the way client-go's `apierrors`
/// does, so a 410 leads to a relist based on typed data, never on string matching by callers.
///
/// ```
/// use kcache_reflector::Status;
///
/// let s: Status = serde_json::from_str(
///     r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
///         "message":"too old resource version: 1000 (2345)","reason":"Expired","code":410}"#,
/// )?;
/// assert!(s.is_gone());
/// assert!(!s.is_too_large_rv());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// `apiVersion`, normally `v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `kind`, normally `Status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `metadata` (a `ListMeta`): an expired continue answer may carry a fresh token here.
    #[serde(default)]
    pub metadata: StatusMetadata,
    /// `status`: `Success` or `Failure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The machine-readable reason (`Expired`, `TooManyRequests`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Extended data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP status code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

/// The `metadata` of a [`Status`]: a `ListMeta`, `{}` when empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusMetadata {
    /// `resourceVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// `continue`: an inconsistent continue token offered with an expired one.
    #[serde(default, rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
}

/// `details` of a [`Status`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// The name of the object concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its API group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Its kind (or resource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The individual causes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// Seconds the client should wait before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<i32>,
}

/// One cause of a [`Status`]. Its type is serialised as `reason`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCause {
    /// The cause type (`ResourceVersionTooLarge`, `FieldValueInvalid`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The field concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl Status {
    /// A `Failure` status with `code`, `reason` and `message`.
    #[must_use]
    pub fn failure(code: u16, reason: &str, message: &str) -> Self {
        Self {
            api_version: Some("v1".to_owned()),
            kind: Some("Status".to_owned()),
            status: Some("Failure".to_owned()),
            message: Some(message.to_owned()),
            reason: Some(reason.to_owned()),
            code: Some(code),
            ..Self::default()
        }
    }

    /// 410 `Expired`, as sent for a compacted resource version or an expired continue token.
    #[must_use]
    pub fn expired(message: &str) -> Self {
        Self::failure(410, EXPIRED, message)
    }

    /// 429 `TooManyRequests`, with `retryAfterSeconds` when given.
    #[must_use]
    pub fn too_many_requests(retry_after_seconds: Option<i32>) -> Self {
        let mut s = Self::failure(
            429,
            TOO_MANY_REQUESTS,
            "Too many requests, please try again later.",
        );
        if let Some(secs) = retry_after_seconds {
            s.details = Some(StatusDetails {
                retry_after_seconds: Some(secs),
                ..StatusDetails::default()
            });
        }
        s
    }

    /// 500 `InternalError` with `message`.
    #[must_use]
    pub fn internal_error(message: &str) -> Self {
        Self::failure(500, INTERNAL_ERROR, message)
    }

    /// 504 `Timeout` for a resource version newer than the server has seen, exactly as the watch
    /// cache sends it.
    #[must_use]
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        let mut s = Self::failure(
            504,
            TIMEOUT,
            &format!("Timeout: Too large resource version: {requested}, current: {current}"),
        );
        s.details = Some(StatusDetails {
            causes: vec![StatusCause {
                reason: Some(CAUSE_RESOURCE_VERSION_TOO_LARGE.to_owned()),
                message: Some(TOO_LARGE_RESOURCE_VERSION_MESSAGE.to_owned()),
                field: None,
            }],
            retry_after_seconds: Some(1),
            ..StatusDetails::default()
        });
        s
    }

    /// Whether the reason is `reason`.
    fn has_reason(&self, reason: &str) -> bool {
        self.reason.as_deref() == Some(reason)
    }

    /// Whether the reason is one client-go knows ([`KNOWN_REASONS`]).
    fn has_known_reason(&self) -> bool {
        self.reason
            .as_deref()
            .is_some_and(|r| KNOWN_REASONS.contains(&r))
    }

    /// A lost write: reason `Conflict` (the resource version given as a precondition is stale,
    /// or another precondition failed), or code 409 without a reason client-go knows (client-go's
    /// `IsConflict`). Not a create whose name is taken: that 409 is
    /// [`is_already_exists`](Self::is_already_exists).
    pub fn is_conflict(&self) -> bool {
        self.has_reason(CONFLICT) || (self.code == Some(409) && !self.has_known_reason())
    }

    /// Reason `AlreadyExists`: a create whose name is taken (client-go's `IsAlreadyExists`).
    pub fn is_already_exists(&self) -> bool {
        self.has_reason(ALREADY_EXISTS)
    }

    /// Invalid request options or object: reason `Invalid`, or code 422 without a reason
    /// client-go knows (client-go's `IsInvalid`).
    pub fn is_invalid(&self) -> bool {
        self.has_reason(INVALID) || (self.code == Some(422) && !self.has_known_reason())
    }

    /// A bad request: reason `BadRequest`, or code 400 without a reason client-go knows
    /// (client-go's `IsBadRequest`).
    pub fn is_bad_request(&self) -> bool {
        self.has_reason(BAD_REQUEST) || (self.code == Some(400) && !self.has_known_reason())
    }

    /// A 404: code 404 or reason `NotFound` (client-go's `IsNotFound`).
    pub fn is_not_found(&self) -> bool {
        self.code == Some(404) || self.has_reason(NOT_FOUND)
    }

    /// Reason `Expired` (client-go's `IsResourceExpired`): what the pager's full-list fallback keys on.
    pub fn is_expired(&self) -> bool {
        self.has_reason(EXPIRED)
    }

    /// A 410: code 410, or reason `Expired` or `Gone` (client-go's `isExpiredError`).
    pub fn is_gone(&self) -> bool {
        self.code == Some(410) || self.is_expired() || self.has_reason(GONE)
    }

    /// A resource version newer than the server knows: a `ResourceVersionTooLarge` cause, or a
    /// `Timeout` whose message or cause says "Too large resource version".
    pub fn is_too_large_rv(&self) -> bool {
        let causes = self.details.as_ref().map_or(&[][..], |d| &d.causes[..]);
        if causes
            .iter()
            .any(|c| c.reason.as_deref() == Some(CAUSE_RESOURCE_VERSION_TOO_LARGE))
        {
            return true;
        }
        if !(self.has_reason(TIMEOUT) || self.code == Some(504)) {
            return false;
        }
        let says =
            |m: Option<&str>| m.is_some_and(|m| m.contains(TOO_LARGE_RESOURCE_VERSION_MESSAGE));
        says(self.message.as_deref()) || causes.iter().any(|c| says(c.message.as_deref()))
    }

    /// A 429: code 429 or reason `TooManyRequests`.
    pub fn is_too_many_requests(&self) -> bool {
        self.code == Some(429) || self.has_reason(TOO_MANY_REQUESTS)
    }

    /// A 500: reason `InternalError`.
    pub fn is_internal_error(&self) -> bool {
        self.has_reason(INTERNAL_ERROR)
    }

    /// `details.retryAfterSeconds` when positive.
    pub fn retry_after(&self) -> Option<Duration> {
        let secs = self.details.as_ref()?.retry_after_seconds?;
        u64::try_from(secs)
            .ok()
            .filter(|&s| s > 0)
            .map(Duration::from_secs)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message.as_deref().unwrap_or("no message"))?;
        match (self.reason.as_deref(), self.code) {
            (Some(r), Some(c)) => write!(f, " (reason {r}, code {c})"),
            (Some(r), None) => write!(f, " (reason {r})"),
            (None, Some(c)) => write!(f, " (code {c})"),
            (None, None) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_form_round_trips() {
        let text = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"m","reason":"TooManyRequests","details":{"causes":[{"reason":"X","message":"y","field":"z"}],"retryAfterSeconds":3},"code":429}"#;
        let s: Status = serde_json::from_str(text).unwrap();
        assert!(s.is_too_many_requests());
        assert_eq!(s.retry_after(), Some(Duration::from_secs(3)));
        let back: Status = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        assert_eq!(
            serde_json::to_value(&s).unwrap()["metadata"],
            serde_json::json!({})
        );
    }

    #[test]
    fn gone_forms() {
        assert!(Status::expired("x").is_gone());
        assert!(Status::failure(410, "Other", "x").is_gone());
        assert!(Status::failure(0, GONE, "x").is_gone());
        assert!(!Status::internal_error("x").is_gone());
        assert!(Status::expired("x").is_expired());
        assert!(!Status::failure(410, GONE, "x").is_expired());
    }

    #[test]
    fn too_large_forms() {
        assert!(Status::too_large_resource_version(9, 5).is_too_large_rv());
        let by_message = Status::failure(
            504,
            TIMEOUT,
            "Timeout: Too large resource version: 9, current: 5",
        );
        assert!(by_message.is_too_large_rv());
        assert!(!Status::failure(504, TIMEOUT, "slow").is_too_large_rv());
        assert!(!Status::failure(500, "X", "Too large resource version").is_too_large_rv());
    }

    /// client-go's `IsInvalid` and `IsBadRequest`: the reason, or the code without a reason
    /// client-go knows.
    #[test]
    fn invalid_and_bad_request_by_reason_or_code() {
        assert!(Status::failure(422, INVALID, "x").is_invalid());
        assert!(Status::failure(422, "", "x").is_invalid());
        assert!(!Status::failure(422, CONFLICT, "x").is_invalid());
        assert!(Status::failure(400, BAD_REQUEST, "x").is_bad_request());
        assert!(Status::failure(400, "Whatever", "x").is_bad_request());
        assert!(!Status::failure(400, INVALID, "x").is_bad_request());
        assert!(Status::failure(400, INVALID, "x").is_invalid());
    }

    #[test]
    fn conflicts_and_taken_names_are_told_apart() {
        let conflict = Status::failure(409, CONFLICT, "the object has been modified");
        assert!(conflict.is_conflict() && !conflict.is_already_exists());
        let taken = Status::failure(409, ALREADY_EXISTS, "already exists");
        assert!(taken.is_already_exists() && !taken.is_conflict());
        // A 409 without a reason client-go knows is a conflict; a reason alone decides too.
        assert!(Status::failure(409, "SomethingNew", "x").is_conflict());
        let mut bare = Status::failure(409, "", "x");
        bare.reason = None;
        assert!(bare.is_conflict() && !bare.is_already_exists());
        assert!(Status::failure(0, CONFLICT, "x").is_conflict());
        assert!(!Status::failure(409, "Invalid", "x").is_conflict());
        assert!(!Status::internal_error("x").is_conflict());
    }

    #[test]
    fn retry_after_ignores_non_positive() {
        assert_eq!(Status::too_many_requests(Some(0)).retry_after(), None);
        assert_eq!(Status::too_many_requests(None).retry_after(), None);
        assert_eq!(
            Status::too_many_requests(Some(2)).retry_after(),
            Some(Duration::from_secs(2))
        );
    }

    #[test]
    fn display_is_lowercase_friendly() {
        assert_eq!(
            Status::expired("too old").to_string(),
            "too old (reason Expired, code 410)"
        );
    }
}
