//! The query parameters of writes (`CreateOptions`, `UpdateOptions`, `PatchOptions`,
//! `DeleteOptions`) that the fake server looks at, checked as kube-apiserver checks them.
//!
//! - `fieldValidation` must be `Strict`, `Warn` or `Ignore` (kubectl sends `Strict`); what each
//!   level does is [`field_validation`](super::field_validation)'s.
//! - `fieldManager` is required for an apply patch (422 without it, as on the real server) and
//!   otherwise ignored: no `managedFields` are kept.
//! - `dryRun` is refused (400): writes here always happen, and a test that asked for a dry run
//!   must not see one. A DELETE may also ask for it in its body, where kubectl and client-go put
//!   it ([`DeleteOptions`](super::delete_options::DeleteOptions) refuses it there).

use super::patch::PatchType;
use super::status::ApiError;

/// Checks a write's query parameters; `patch` is the patch type for a PATCH.
pub(crate) fn check(query: &[(String, String)], patch: Option<PatchType>) -> Result<(), ApiError> {
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    if let Some(v) = param("fieldValidation")
        && !matches!(v, "" | "Strict" | "Warn" | "Ignore")
    {
        return Err(ApiError::bad_request(&format!(
            "fieldValidation: Unsupported value: {v:?}: supported values: \"Ignore\", \"Strict\", \
             \"Warn\""
        )));
    }
    if param("dryRun").is_some_and(|v| !v.is_empty()) {
        return Err(dry_run_refused());
    }
    if patch == Some(PatchType::Apply) && param("fieldManager").is_none_or(str::is_empty) {
        return Err(ApiError::new(
            422,
            "Invalid",
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required \
             for apply patch",
        ));
    }
    Ok(())
}

/// The 400 for a write that asks for a dry run, in its query or in its `DeleteOptions` body.
pub(crate) fn dry_run_refused() -> ApiError {
    ApiError::bad_request(
        "dryRun is not supported by the fake API server: its writes always happen",
    )
}
