//! [`Patch`]: the change a PATCH request carries, and how the server is told to read it (its
//! content type and, for server-side apply, the field manager).

use serde_json::Value;

/// A patch for [`ObjectClient::patch`](crate::ObjectClient::patch): its kind decides the request's
/// `Content-Type`, and server-side apply adds the `fieldManager` and `force` parameters.
///
/// ```
/// use kcache_client_http::Patch;
/// use serde_json::json;
///
/// let scale = Patch::Merge(json!({"spec": {"replicas": 3}}));
/// assert_eq!(scale.content_type(), "application/merge-patch+json");
///
/// let unlabel = Patch::Json(vec![json!({"op": "remove", "path": "/metadata/labels/stale"})]);
/// assert_eq!(unlabel.content_type(), "application/json-patch+json");
///
/// let apply = Patch::Apply {
///     object: json!({
///         "apiVersion": "v1", "kind": "ConfigMap",
///         "metadata": {"name": "settings", "namespace": "shop"},
///         "data": {"mode": "fast"},
///     }),
///     field_manager: "my-controller".into(),
///     force: true,
/// };
/// assert_eq!(apply.content_type(), "application/apply-patch+yaml");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Patch {
    /// A JSON merge patch (RFC 7386, `application/merge-patch+json`): the fields given replace
    /// the object's, maps are merged key by key, a `null` removes a field, and lists are
    /// replaced whole.
    Merge(Value),
    /// A JSON patch (RFC 6902, `application/json-patch+json`): operations applied in order
    /// (`{"op": "replace", "path": "/spec/replicas", "value": 3}`); a `test` operation makes
    /// the patch conditional.
    Json(Vec<Value>),
    /// Server-side apply (`application/apply-patch+yaml`): `object` is the whole intent of
    /// `field_manager` for this object (with `apiVersion`, `kind` and `metadata.name`); the
    /// server merges it with the other managers' fields, creating the object if it does not
    /// exist. It is sent as JSON, which is valid YAML. With `force`, fields another manager owns
    /// are taken over instead of failing with a 409 conflict.
    Apply {
        /// The fields this manager wants set.
        object: Value,
        /// The `fieldManager` parameter: who owns the fields applied (required).
        field_manager: String,
        /// The `force` parameter: take over conflicting fields.
        force: bool,
    },
}

impl Patch {
    /// The request's `Content-Type`.
    pub fn content_type(&self) -> &'static str {
        match self {
            Self::Merge(_) => "application/merge-patch+json",
            Self::Json(_) => "application/json-patch+json",
            Self::Apply { .. } => "application/apply-patch+yaml",
        }
    }

    /// The query parameters the patch needs: `fieldManager` and, when forcing, `force=true`
    /// for server-side apply; none for the others.
    pub(crate) fn params(&self) -> Vec<(&'static str, &str)> {
        match self {
            Self::Apply {
                field_manager,
                force,
                ..
            } => {
                let mut params = vec![("fieldManager", field_manager.as_str())];
                if *force {
                    params.push(("force", "true"));
                }
                params
            }
            Self::Merge(_) | Self::Json(_) => Vec::new(),
        }
    }

    /// The request's body: the JSON of the patch.
    pub(crate) fn body(&self) -> Result<Vec<u8>, serde_json::Error> {
        match self {
            Self::Merge(value) | Self::Apply { object: value, .. } => serde_json::to_vec(value),
            Self::Json(operations) => serde_json::to_vec(operations),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn apply_names_its_manager_and_forces_only_when_asked() {
        let apply = |force| Patch::Apply {
            object: json!({"kind": "ConfigMap"}),
            field_manager: "ctl".into(),
            force,
        };
        assert_eq!(apply(false).params(), [("fieldManager", "ctl")]);
        assert_eq!(
            apply(true).params(),
            [("fieldManager", "ctl"), ("force", "true")]
        );
        assert_eq!(apply(true).body().unwrap(), br#"{"kind":"ConfigMap"}"#);
        assert!(Patch::Merge(json!({})).params().is_empty());
    }

    #[test]
    fn json_patches_are_arrays() {
        let p = Patch::Json(vec![json!({"op": "test", "path": "/a", "value": 1})]);
        assert_eq!(
            p.body().unwrap(),
            br#"[{"op":"test","path":"/a","value":1}]"#
        );
    }
}
