//! [`DeleteOptions`]: the body of a DELETE (`meta.k8s.io/v1` `DeleteOptions`), parsed in one
//! step, as kube-apiserver reads it.
//!
//! - `preconditions` (`uid`, `resourceVersion`) become the delete's [`Preconditions`].
//! - `dryRun` (`["All"]`) makes the delete a dry run, as in the query
//!   ([`write_options`](super::write_options)): kubectl's `delete --dry-run=server` and
//!   client-go send it here, in the body.
//! - `propagationPolicy` (`Orphan`, `Background` or `Foreground`, else 422 as on the real
//!   server) says what happens to the object's dependents; `orphanDependents: true` (its older
//!   form) is `Orphan`. Without either, dependents are deleted in the background.
//! - `kind`, `apiVersion` and `gracePeriodSeconds` are accepted and ignored (deletion is never
//!   graceful here); an unknown member is ignored, as by the real decoder.

use serde::Deserialize;

use super::preconditions::Preconditions;
use super::state::Propagation;
use super::status::ApiError;
use super::write_options;

/// The `propagationPolicy` values kube-apiserver accepts.
const PROPAGATION_POLICIES: [&str; 3] = ["Foreground", "Background", "Orphan"];

/// What the fake server takes from a DELETE's `DeleteOptions`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DeleteOptions {
    /// What the stored object must be for the delete to happen.
    pub(crate) preconditions: Preconditions,
    /// What happens to the object's dependents.
    pub(crate) propagation: Propagation,
    /// Whether the body asked for a dry run.
    pub(crate) dry_run: bool,
}

/// The members of a `DeleteOptions` body the server reads, as they are on the wire.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    #[serde(default)]
    preconditions: Option<WirePreconditions>,
    #[serde(default)]
    dry_run: Option<Vec<String>>,
    #[serde(default)]
    propagation_policy: Option<String>,
    #[serde(default)]
    orphan_dependents: Option<bool>,
}

/// `DeleteOptions.preconditions` on the wire.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePreconditions {
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    resource_version: Option<String>,
}

impl DeleteOptions {
    /// Parses a DELETE body: none (only whitespace) is the default options; anything else must
    /// be a `DeleteOptions` object (400 otherwise), without a dry run (400) and with a known
    /// propagation policy, if any (422).
    pub(crate) fn parse(body: &[u8]) -> Result<Self, ApiError> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self::default());
        }
        let wire: Wire = serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(&format!("the DeleteOptions provided are unrecognized: {e}"))
        })?;
        let dry_run = write_options::dry_run(
            wire.dry_run.iter().flatten().map(String::as_str),
            "DeleteOptions",
        )?;
        if let Some(policy) = wire.propagation_policy.as_deref()
            && !PROPAGATION_POLICIES.contains(&policy)
        {
            return Err(ApiError::new(
                422,
                "Invalid",
                &format!(
                    "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported \
                     value: {policy:?}: supported values: \"Foreground\", \"Background\", \
                     \"Orphan\""
                ),
            ));
        }
        let propagation = match wire.propagation_policy.as_deref() {
            Some(policy) => Propagation::parse(policy).unwrap_or_default(),
            None if wire.orphan_dependents == Some(true) => Propagation::Orphan,
            None => Propagation::default(),
        };
        let pre = wire.preconditions.unwrap_or_default();
        Ok(Self {
            preconditions: Preconditions {
                uid: pre.uid,
                resource_version: pre.resource_version,
            },
            propagation,
            dry_run,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<DeleteOptions, u16> {
        DeleteOptions::parse(body.as_bytes()).map_err(|e| e.code)
    }

    #[test]
    fn preconditions_dry_run_and_policy_in_one_body() {
        assert_eq!(parse(" \n"), Ok(DeleteOptions::default()));
        let options = parse(
            r#"{"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background",
                "gracePeriodSeconds": 0, "preconditions": {"uid": "u", "resourceVersion": "7"}}"#,
        )
        .unwrap();
        assert_eq!(
            options.preconditions,
            Preconditions::uid("u").and_resource_version("7")
        );
        assert_eq!(options.propagation, Propagation::Background);
        // What `kubectl delete --dry-run=server` sends.
        assert!(parse(r#"{"dryRun": ["All"]}"#).unwrap().dry_run);
        assert_eq!(parse(r#"{"dryRun": ["Some"]}"#), Err(422));
        assert_eq!(
            parse(r#"{"orphanDependents": true}"#).map(|o| o.propagation),
            Ok(Propagation::Orphan)
        );
        assert_eq!(
            parse(r#"{"propagationPolicy": "Foreground"}"#).map(|o| o.propagation),
            Ok(Propagation::Foreground)
        );
        assert_eq!(
            parse(r#"{"dryRun": [], "preconditions": null}"#),
            Ok(DeleteOptions::default())
        );
        assert_eq!(parse(r#"{"propagationPolicy": "Sideways"}"#), Err(422));
        assert_eq!(parse(r#"{"preconditions": {"uid": 7}}"#), Err(400));
        assert_eq!(parse("not json"), Err(400));
    }
}
