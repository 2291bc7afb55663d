//! Object names as URL path segments: the names client-go's `IsValidPathSegmentName` refuses
//! (`.`, `..`, a `/` or a `%`) and the empty name are refused before a request is built, since
//! the URL would name another resource than the object (`…/configmaps/` is the collection: a
//! DELETE there may delete every object of it).

/// An object name that cannot be one path segment of a URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid object name {name:?}: {reason}")]
pub(crate) struct InvalidName {
    name: String,
    reason: &'static str,
}

/// `Ok` when `name` can be the last segment of an object's URL: not empty, not `.` or `..`,
/// without `/` or `%` (client-go's `IsValidPathSegmentName`, and its refusal of an empty
/// name).
///
/// # Errors
///
/// [`InvalidName`], saying why.
pub(crate) fn check_name(name: &str) -> Result<(), InvalidName> {
    let reason = match name {
        "" => "may not be empty",
        "." => "may not be '.'",
        ".." => "may not be '..'",
        _ if name.contains('/') => "may not contain '/'",
        _ if name.contains('%') => "may not contain '%'",
        _ => return Ok(()),
    };
    Err(InvalidName {
        name: name.to_owned(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_are_not_one_segment_are_refused() {
        for ok in ["web-0", "a.b", "...", "a b", "ünïcode", ".hidden"] {
            assert_eq!(check_name(ok), Ok(()), "{ok}");
        }
        let reason = |name| check_name(name).unwrap_err().to_string();
        assert_eq!(reason(""), r#"invalid object name "": may not be empty"#);
        assert_eq!(reason("."), r#"invalid object name ".": may not be '.'"#);
        assert_eq!(reason(".."), r#"invalid object name "..": may not be '..'"#);
        assert_eq!(
            reason("a/b"),
            r#"invalid object name "a/b": may not contain '/'"#
        );
        assert_eq!(
            reason("a%2F"),
            r#"invalid object name "a%2F": may not contain '%'"#
        );
    }
}
