//! [`PatchType`]: the four kinds of PATCH the fake server applies, and how each one turns the
//! stored object and a patch body into the object to write.
//!
//! - [`Json`](PatchType::Json): RFC 6902 ([`json_patch`](super::json_patch)); a failed
//!   operation (a `test`, a missing path) is 422 Invalid, a malformed patch 400.
//! - [`Merge`](PatchType::Merge): RFC 7386 ([`merge_patch`](super::merge_patch)).
//! - [`StrategicMerge`](PatchType::StrategicMerge): lists merged as the kind's schema says,
//!   with the directives kubectl writes ([`strategic_merge`](super::strategic_merge)); only for
//!   kinds with a vendored schema: for others (custom resources) it is 415, as kube-apiserver
//!   answers ([`unsupported_for_custom_resources`]).
//! - [`Apply`](PatchType::Apply): server-side apply of the applied object (YAML or JSON),
//!   created when there is none. Over HTTP the `fieldManager` parameter is required, as on the
//!   real server, and the apply follows field ownership ([`apply`](super::apply)): conflicts,
//!   `force`, removal of fields no longer applied, `managedFields`. Through the Rust handle,
//!   which names no manager, it is a merge of the applied object as a merge patch.
//!
//! In every kind a `metadata.resourceVersion` the patch sets is a precondition: the write fails
//! with 409 Conflict unless it is the stored version's. A patch that changes nothing writes
//! nothing: the object keeps its resource version and no watch event is sent. A patch that
//! makes an object over [`MAX_OBJECT`] bytes of JSON is 413 and writes nothing.

use kcache_store::DynamicObject;
use serde_json::Value;

use super::json_patch::{self, JsonPatchError};
use super::limits::MAX_OBJECT;
use super::schema::KindSchema;
use super::status::ApiError;
use super::util::json_len_within;
use super::{merge_patch, strategic_merge};

/// How a PATCH body is applied, from its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PatchType {
    /// `application/json-patch+json`: a list of RFC 6902 operations.
    Json,
    /// `application/merge-patch+json`: an RFC 7386 merge patch.
    Merge,
    /// `application/strategic-merge-patch+json`: a merge patch with kubectl's list directives.
    StrategicMerge,
    /// `application/apply-patch+yaml`: server-side apply of a whole object.
    Apply,
}

impl PatchType {
    /// Every patch type, in the order the server lists them in its `OpenAPI` documents.
    pub const ALL: [PatchType; 4] = [
        PatchType::Json,
        PatchType::Merge,
        PatchType::StrategicMerge,
        PatchType::Apply,
    ];

    /// The media type a PATCH of this type carries.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }

    /// The patch type of a `Content-Type` header value (parameters such as `charset` ignored),
    /// `None` for any other media type.
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let media = content_type.split(';').next().unwrap_or("").trim();
        Self::ALL
            .into_iter()
            .find(|t| t.content_type().eq_ignore_ascii_case(media))
    }
}

/// The 415 for a PATCH whose `Content-Type` is none of the [`PatchType`]s.
pub(crate) fn unsupported_media_type(content_type: &str) -> ApiError {
    let accepted: Vec<&str> = PatchType::ALL.iter().map(|t| t.content_type()).collect();
    ApiError::new(
        415,
        "UnsupportedMediaType",
        &format!(
            "the body of the request was in an unknown format ({content_type:?}) - accepted media \
             types include: {}",
            accepted.join(", ")
        ),
    )
}

/// The 415 for a strategic merge patch of a kind without a vendored schema: kube-apiserver
/// serves custom resources without it, and names the patch types they take.
pub(crate) fn unsupported_for_custom_resources() -> ApiError {
    ApiError::new(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: \
         application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    )
}

/// Decodes a patch body: JSON, or for [`PatchType::Apply`] also YAML (of which JSON is a part).
pub(crate) fn decode(patch_type: PatchType, body: &[u8]) -> Result<Value, ApiError> {
    let json = serde_json::from_slice::<Value>(body);
    match (json, patch_type) {
        (Ok(v), _) => Ok(v),
        (Err(_), PatchType::Apply) => {
            let text = std::str::from_utf8(body)
                .map_err(|_| ApiError::bad_request("the apply patch is not UTF-8 text"))?;
            let mut options = serde_saphyr::Options::default();
            options.with_snippet = false;
            serde_saphyr::from_str_with_options::<Value>(text, options)
                .map_err(|e| ApiError::bad_request(&format!("error decoding YAML: {e}")))
        }
        (Err(e), _) => Err(ApiError::bad_request(&format!("error decoding patch: {e}"))),
    }
}

/// The object `current` becomes under `patch`, before the write's own checks (name, uid,
/// resource version). The patch works on a copy of `current`: on an error nothing changed.
/// `schema` is the kind's ([`schema::for_resource`](super::schema::for_resource)); a strategic
/// merge patch needs one.
pub(crate) fn patched(
    schema: Option<KindSchema>,
    current: &DynamicObject,
    patch_type: PatchType,
    patch: &Value,
) -> Result<DynamicObject, ApiError> {
    let mut doc = serde_json::to_value(current).map_err(super::status::internal)?;
    match patch_type {
        PatchType::Json => {
            doc = json_patch::apply(doc, patch).map_err(|e| match e {
                JsonPatchError::Malformed(m) => ApiError::bad_request(&m),
                JsonPatchError::TooLarge(m) => ApiError::entity_too_large(&m),
                JsonPatchError::Failed(m) => ApiError::new(422, "Invalid", &m),
            })?;
        }
        PatchType::Merge | PatchType::Apply => {
            require_object(patch)?;
            merge_patch::merge(&mut doc, patch);
        }
        PatchType::StrategicMerge => {
            require_object(patch)?;
            let schema = schema.ok_or_else(unsupported_for_custom_resources)?;
            strategic_merge::merge(&mut doc, patch, Some(schema.root));
        }
    }
    if json_len_within(&doc, MAX_OBJECT).is_none() {
        return Err(ApiError::entity_too_large(&format!(
            "the patched object is over the limit of {MAX_OBJECT} bytes"
        )));
    }
    serde_json::from_value(doc).map_err(|e| {
        ApiError::new(
            422,
            "Invalid",
            &format!("the patched object is not a valid object: {e}"),
        )
    })
}

fn require_object(patch: &Value) -> Result<(), ApiError> {
    if patch.is_object() {
        Ok(())
    } else {
        Err(ApiError::bad_request("the patch is not a JSON object"))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_patched_object_over_the_limit_is_refused() {
        let mut current = DynamicObject::new(Some("ns"), "c");
        current
            .data
            .insert("data".to_owned(), json!({"a": "x".repeat(MAX_OBJECT / 3)}));
        // Two copies of a third of the limit: within the copy limit, but the object is over.
        let copies = json!([
            {"op": "copy", "from": "/data/a", "path": "/data/b"},
            {"op": "copy", "from": "/data/a", "path": "/data/c"},
        ]);
        let err = patched(None, &current, PatchType::Json, &copies).unwrap_err();
        assert_eq!(err.code, 413, "{err:?}");
        let one = json!([{"op": "copy", "from": "/data/a", "path": "/data/b"}]);
        let ok = patched(None, &current, PatchType::Json, &one).unwrap();
        assert_eq!(ok.data["data"]["b"], current.data["data"]["a"]);
        // Too many operations is 413 too; a malformed patch 400, a failed one 422.
        let many = Value::Array(vec![
            json!({"op": "test", "path": "/data", "value": {}});
            10_001
        ]);
        assert_eq!(
            patched(None, &current, PatchType::Json, &many)
                .unwrap_err()
                .code,
            413
        );
        let malformed = json!([{"op": "add"}]);
        assert_eq!(
            patched(None, &current, PatchType::Json, &malformed)
                .unwrap_err()
                .code,
            400
        );
        let missing = json!([{"op": "remove", "path": "/nope"}]);
        assert_eq!(
            patched(None, &current, PatchType::Json, &missing)
                .unwrap_err()
                .code,
            422
        );
    }
}
