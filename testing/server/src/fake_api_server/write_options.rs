//! The query parameters of writes (`CreateOptions`, `UpdateOptions`, `PatchOptions`,
//! `DeleteOptions`) that the fake server looks at, checked as kube-apiserver checks them.
//!
//! - `fieldValidation` must be `Strict`, `Warn` or `Ignore` (kubectl sends `Strict`); what each
//!   level does is [`field_validation`](super::field_validation)'s.
//! - `fieldManager` is required for an apply patch (422 without it, as on the real server); its
//!   length, its characters and `force` are checked by
//!   [`FieldManager`](super::field_manager::FieldManager), which names the write's manager.
//! - `dryRun=All` makes the write a dry run: checked, defaulted and answered as it would be,
//!   with nothing stored and no watch event (any other value is 422, as on the real server). A
//!   DELETE may also ask for it in its body, where kubectl and client-go put it
//!   ([`DeleteOptions`](super::delete_options::DeleteOptions) reads it there).

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

/// Whether a write asks for a dry run: every `dryRun` value in `values` must be `All` (422
/// otherwise, naming `options`: `CreateOptions`, `UpdateOptions`, `PatchOptions`,
/// `DeleteOptions`).
pub(crate) fn dry_run<'a>(
    values: impl IntoIterator<Item = &'a str>,
    options: &str,
) -> Result<bool, ApiError> {
    let mut dry = false;
    for value in values {
        if value == "All" {
            dry = true;
        } else {
            return Err(ApiError::new(
                422,
                "Invalid",
                &format!(
                    "{options}.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: \
                     {value:?}: supported values: \"All\""
                ),
            ));
        }
    }
    Ok(dry)
}

/// The `dryRun` values of a query.
pub(crate) fn dry_run_values(query: &[(String, String)]) -> impl Iterator<Item = &str> {
    query
        .iter()
        .filter(|(k, v)| k == "dryRun" && !v.is_empty())
        .map(|(_, v)| v.as_str())
}
