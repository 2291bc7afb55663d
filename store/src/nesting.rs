//! [`MAX_NESTING`]: how deeply an object's JSON may nest, and [`nesting_exceeds`], the scan that
//! tells without building anything.
//!
//! Every decoder in kcache reads objects with `serde_json`, whose recursion limit (128) stops a
//! decode at the 128th level of arrays and objects, counted from the top of what is parsed (a
//! watch event wraps its object in one more level). That limit is what keeps a deeply nested
//! object from overflowing the decoding thread's stack, so it is kcache's limit too, the same
//! on every path: an object nested deeper is one bad object (reported and
//! left out of the cache), never a failed list. Decoders that do not build the whole object
//! (the compact form reads only the metadata) check it with [`nesting_exceeds`], which keeps a
//! counter rather than a stack, so it cannot overflow at any depth.

/// The most levels of arrays and objects an object may nest, itself included (`{"a":[[1]]}`
/// nests 3 levels): 126, so that what `serde_json`'s recursion limit of 128 lets through is the
/// same for an object alone (a list item) and inside a watch event (one level deeper).
pub const MAX_NESTING: usize = 126;

/// Whether the JSON text `json` nests arrays and objects deeper than `limit` levels. Brackets
/// inside strings do not count. Only the nesting is looked at: text that is not valid JSON
/// may answer either way (a parser rejects it anyway).
///
/// ```
/// use kcache_store::{MAX_NESTING, nesting_exceeds};
///
/// assert!(!nesting_exceeds(br#"{"a":[[1]],"b":"[[[[["}"#, 3));
/// assert!(nesting_exceeds(br#"{"a":[[[1]]]}"#, 3));
/// let deep = format!("{}{}", "[".repeat(MAX_NESTING + 1), "]".repeat(MAX_NESTING + 1));
/// assert!(nesting_exceeds(deep.as_bytes(), MAX_NESTING));
/// ```
pub fn nesting_exceeds(json: &[u8], limit: usize) -> bool {
    let mut depth = 0usize;
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            b'"' => {
                // Skip the string: jump from quote or backslash to the next.
                i += 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', &json[i.min(json.len())..]) {
                        None => return false,
                        Some(n) if json[i + n] == b'\\' => i += n + 2,
                        Some(n) => {
                            i += n;
                            break;
                        }
                    }
                }
            }
            b'{' | b'[' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An object whose `spec` is `arrays` nested arrays: `1 + arrays` levels.
    fn nested(arrays: usize) -> String {
        format!(
            r#"{{"metadata":{{"name":"a"}},"spec":{}1{}}}"#,
            "[".repeat(arrays),
            "]".repeat(arrays)
        )
    }

    #[test]
    fn the_limit_is_what_serde_json_decodes_alone_and_in_a_watch_event() {
        let event = |object: &str| format!(r#"{{"type":"ADDED","object":{object}}}"#);
        // At the limit the object decodes alone and inside an event.
        let at = nested(MAX_NESTING - 1);
        assert!(!nesting_exceeds(at.as_bytes(), MAX_NESTING));
        assert!(serde_json::from_str::<serde_json::Value>(&at).is_ok());
        assert!(serde_json::from_str::<serde_json::Value>(&event(&at)).is_ok());
        // One level more: refused (inside an event serde_json would refuse it too).
        let beyond = nested(MAX_NESTING);
        assert!(nesting_exceeds(beyond.as_bytes(), MAX_NESTING));
        assert!(serde_json::from_str::<serde_json::Value>(&event(&beyond)).is_err());
    }

    #[test]
    fn strings_and_escapes_do_not_count() {
        let json = r#"{"a":"[[[[\"[[[[\\","b":["\\\""]}"#;
        assert!(!nesting_exceeds(json.as_bytes(), 2));
        assert!(nesting_exceeds(json.as_bytes(), 1));
        // An unterminated string or escape at the end is not a panic.
        assert!(!nesting_exceeds(br#"{"a":"\"#, 5));
        assert!(!nesting_exceeds(br#"{"a":""#, 5));
    }

    #[test]
    fn any_depth_is_scanned_without_recursion() {
        let deep = nested(1_000_000);
        assert!(nesting_exceeds(deep.as_bytes(), MAX_NESTING));
    }
}
