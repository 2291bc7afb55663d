//! `authorization.k8s.io/v1`: `SelfSubjectAccessReview` and `SelfSubjectRulesReview`, which
//! `kubectl auth can-i` and controllers' permission checks create.
//!
//! The fake server authorizes every request (see the module docs of
//! [`fake_api_server`](super)), so every review answers allowed: an access review echoes its
//! `spec` with `status.allowed: true`, a rules review lists one rule allowing every verb on
//! every resource and URL. Both are created and never stored, as kube-apiserver does.
//!
//! kubectl (`auth can-i`) sends its review as protobuf and prefers a protobuf answer: the
//! review is decoded and answered as a JSON one is, in protobuf (see
//! [`protobuf`](super::protobuf)).

use serde_json::{Value, json};

use super::status::ApiError;

/// The group of the reviews.
pub(crate) const GROUP: &str = "authorization.k8s.io";
/// Its version.
pub(crate) const VERSION: &str = "v1";

/// Why every review is allowed.
const REASON: &str = "the fake API server authorizes every request";

/// The `APIResourceList` of `authorization.k8s.io/v1`.
pub(crate) fn resource_list() -> Value {
    let review = |name: &str, kind: &str| {
        json!({
            "name": name, "singularName": kind.to_lowercase(), "namespaced": false,
            "kind": kind, "verbs": ["create"],
        })
    };
    json!({
        "kind": "APIResourceList", "apiVersion": "v1",
        "groupVersion": format!("{GROUP}/{VERSION}"),
        "resources": [
            review("selfsubjectaccessreviews", "SelfSubjectAccessReview"),
            review("selfsubjectrulesreviews", "SelfSubjectRulesReview"),
        ],
    })
}

/// Whether `segs` (a path's segments) names a review collection, and which.
pub(crate) fn review_plural<'a>(segs: &[&'a str]) -> Option<&'a str> {
    match segs {
        [
            "apis",
            GROUP,
            VERSION,
            plural @ ("selfsubjectaccessreviews" | "selfsubjectrulesreviews"),
        ] => Some(*plural),
        _ => None,
    }
}

/// The review created from `body` (JSON) at collection `plural`: its `status` filled in.
///
/// # Errors
///
/// The body is not a JSON object, or its kind is not the collection's (400).
pub(crate) fn review(plural: &str, body: &[u8]) -> Result<Value, ApiError> {
    let mut review: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(&format!("the object provided is unrecognized: {e}")))?;
    let kind = if plural == "selfsubjectaccessreviews" {
        "SelfSubjectAccessReview"
    } else {
        "SelfSubjectRulesReview"
    };
    let Some(object) = review.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the object provided is not a JSON object",
        ));
    };
    if object
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k != kind)
    {
        return Err(ApiError::bad_request(&format!(
            "the kind of the object provided is not {kind}"
        )));
    }
    object.insert("kind".into(), json!(kind));
    object.insert("apiVersion".into(), json!(format!("{GROUP}/{VERSION}")));
    let status = if kind == "SelfSubjectAccessReview" {
        json!({"allowed": true, "reason": REASON})
    } else {
        json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        })
    };
    object.insert("status".into(), status);
    Ok(review)
}
