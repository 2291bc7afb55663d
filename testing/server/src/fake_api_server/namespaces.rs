//! Namespaces as the fake server makes them: the four of a new cluster, the defaults
//! kube-apiserver gives a Namespace, the objects of the namespaces that come to exist with what
//! is created in them, and the check that such a name is one a namespace can have.
//!
//! A namespace made that way stays: deleting the objects in it does not delete it, as on a real
//! cluster (where it would have had to be created first). A DELETE of the Namespace marks it
//! `Terminating`, deletes what is in it and then the namespace (see the state's `lifecycle`).

use std::sync::Arc;

use kcache_reflector::{StatusCause, StatusDetails};
use kcache_store::DynamicObject;
use kcache_testing::generated::{rfc3339, uuid};
use serde_json::Value;

use super::served_resource::ServedResource;
use super::status::{ApiError, internal};
use super::stored::Stored;
use super::util::{fnv1a, now_secs};

/// The namespaces that exist when a server starts, as in a new cluster (at the initial resource
/// version, 1).
pub(crate) const INITIAL_NAMESPACES: [&str; 4] =
    ["default", "kube-node-lease", "kube-public", "kube-system"];

/// The label kube-apiserver puts on every namespace, naming it.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Longest namespace name: an RFC 1123 label.
const MAX_NAME: usize = 63;

/// Defaults a new Namespace as kube-apiserver does: phase `Active`, and the label naming it.
pub(crate) fn default_namespace(obj: &mut DynamicObject) {
    let name = obj.metadata.name.clone().unwrap_or_default();
    obj.metadata
        .labels
        .get_or_insert_default()
        .insert(NAMESPACE_NAME_LABEL.to_owned(), name);
    let status = obj
        .data
        .entry("status")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Value::Object(status) = status {
        status
            .entry("phase")
            .or_insert_with(|| Value::from("Active"));
    }
}

/// 400 unless `name` can name a namespace: a lowercase RFC 1123 label (lower case letters,
/// digits and `-`, starting and ending with a letter or digit, at most 63 characters). The
/// namespace of a created object comes from its URL or its body, and would otherwise become a
/// Namespace no real server could have.
pub(crate) fn check_name(name: &str) -> Result<(), ApiError> {
    let bytes = name.as_bytes();
    let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let valid = (1..=MAX_NAME).contains(&bytes.len())
        && bytes.first().is_some_and(alphanumeric)
        && bytes.last().is_some_and(alphanumeric)
        && bytes.iter().all(|b| alphanumeric(b) || *b == b'-');
    if valid {
        Ok(())
    } else {
        Err(ApiError::bad_request(&format!(
            "the namespace {name:?} is not a valid namespace name: a lowercase RFC 1123 label \
             must consist of lower case alphanumeric characters or '-', start and end with an \
             alphanumeric character, and be at most {MAX_NAME} characters"
        )))
    }
}

/// The 403 for a create in namespace `ns` while it is being deleted, as kube-apiserver's
/// admission answers it.
pub(crate) fn terminating(resource: &ServedResource, name: Option<&str>, ns: &str) -> ApiError {
    let name = name.unwrap_or_default();
    let message = format!(
        "{} {name:?} is forbidden: unable to create new content in namespace {ns} because it is \
         being terminated",
        resource.qualified()
    );
    ApiError::with_details(
        403,
        "Forbidden",
        &message,
        StatusDetails {
            name: Some(name.to_owned()),
            kind: Some(resource.api.plural.clone()),
            causes: vec![StatusCause {
                reason: Some("NamespaceTerminating".to_owned()),
                message: Some(format!("namespace {ns} is being terminated")),
                field: Some("metadata.namespace".to_owned()),
            }],
            ..StatusDetails::default()
        },
    )
}

/// Namespace `name` of `resource` (the namespaces resource) as it comes to exist at resource
/// version `rv`: its uid from a generator of its own (seeded by name and RV, so that the
/// server's other generated values are the same as without it), the `kubernetes` finalizer,
/// the defaults.
///
/// # Errors
///
/// 500 if the object cannot be encoded (it always can).
pub(crate) fn namespace_object(
    resource: &ServedResource,
    name: &str,
    rv: u64,
) -> Result<Arc<Stored>, ApiError> {
    let uid = uuid(&mut fastrand::Rng::with_seed(fnv1a(name.as_bytes(), rv)));
    let mut obj = DynamicObject::new(None, name);
    obj.api_version = Some(resource.api.api_version());
    obj.kind = Some(resource.kind.clone());
    obj.metadata.uid = Some(uid);
    obj.metadata.resource_version = Some(rv.to_string());
    obj.metadata.creation_timestamp = Some(rfc3339(now_secs()));
    obj.data.insert(
        "spec".to_owned(),
        serde_json::json!({"finalizers": ["kubernetes"]}),
    );
    default_namespace(&mut obj);
    Stored::new(obj).map_err(internal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_names_are_rfc_1123_labels() {
        let longest = "a".repeat(MAX_NAME);
        for ok in ["default", "a", "team-1", "0", longest.as_str()] {
            assert!(check_name(ok).is_ok(), "{ok:?}");
        }
        let too_long = "a".repeat(MAX_NAME + 1);
        for bad in [
            "",
            "Team",
            "-a",
            "a-",
            "a.b",
            "a_b",
            "a/b",
            "ns x",
            too_long.as_str(),
        ] {
            assert_eq!(check_name(bad).map_err(|e| e.code), Err(400), "{bad:?}");
        }
    }
}
