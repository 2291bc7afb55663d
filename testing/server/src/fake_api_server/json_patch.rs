//! JSON patch (RFC 6902, `application/json-patch+json`): a list of `add`, `remove`, `replace`,
//! `move`, `copy` and `test` operations on JSON pointers (RFC 6901), applied in order, within
//! kube-apiserver's limits (see [`limits`](super::limits)): at most
//! [`MAX_JSON_PATCH_OPERATIONS`] operations, and at most [`MAX_JSON_PATCH_COPY`] bytes copied by
//! the `copy` operations together.

use serde_json::{Map, Number, Value};

use super::limits::{MAX_JSON_PATCH_COPY, MAX_JSON_PATCH_OPERATIONS};
use super::util::json_len_within;

/// Why a JSON patch was not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JsonPatchError {
    /// The patch is not a list of well-formed operations (400 Bad Request).
    Malformed(String),
    /// The patch has more operations than allowed (413 Request Entity Too Large).
    TooLarge(String),
    /// An operation could not be applied: a missing path, a failed `test`, copies over their
    /// limit (422).
    Failed(String),
}

/// `doc` patched with `patch`. On an error the document is gone: the caller patches its own
/// copy and keeps the stored object, so a patch is all or nothing without a copy here.
pub(crate) fn apply(mut doc: Value, patch: &Value) -> Result<Value, JsonPatchError> {
    let ops = patch.as_array().ok_or_else(|| {
        JsonPatchError::Malformed("a JSON patch is a list of operations".to_owned())
    })?;
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(JsonPatchError::TooLarge(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            ops.len()
        )));
    }
    // Bytes of JSON the `copy` operations have copied so far.
    let mut copied = 0;
    for op in ops {
        apply_op(&mut doc, op, &mut copied)?;
    }
    Ok(doc)
}

fn malformed(message: &str) -> JsonPatchError {
    JsonPatchError::Malformed(message.to_owned())
}

fn failed(message: String) -> JsonPatchError {
    JsonPatchError::Failed(message)
}

/// Applies one operation; `copied` counts the bytes that `copy` operations have copied.
fn apply_op(doc: &mut Value, op: &Value, copied: &mut usize) -> Result<(), JsonPatchError> {
    let op = op
        .as_object()
        .ok_or_else(|| malformed("an operation is an object"))?;
    let name = op
        .get("op")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed("an operation has no \"op\""))?;
    let path = pointer(op, "path")?;
    let value = || {
        op.get("value")
            .ok_or_else(|| JsonPatchError::Malformed(format!("{name} operation has no \"value\"")))
    };
    match name {
        "add" => add(doc, &path, value()?.clone()),
        "remove" => remove(doc, &path).map(drop),
        "replace" => {
            let target = get_mut(doc, &path)?;
            value()?.clone_into(target);
            Ok(())
        }
        "move" => {
            let from = pointer(op, "from")?;
            if path.len() > from.len() && path.starts_with(&from) {
                return Err(failed(format!(
                    "cannot move {} into its own child {}",
                    show(&from),
                    show(&path)
                )));
            }
            let moved = remove(doc, &from)?;
            add(doc, &path, moved)
        }
        "copy" => {
            let from = pointer(op, "from")?;
            let source = get_mut(doc, &from)?;
            // Measured before it is copied, and only up to what the limit leaves.
            let size = json_len_within(source, MAX_JSON_PATCH_COPY - *copied).ok_or_else(|| {
                failed(format!(
                    "Unable to complete the copy, the accumulated size increase of copy is over \
                     the limit {MAX_JSON_PATCH_COPY}"
                ))
            })?;
            *copied += size;
            let value = source.clone();
            add(doc, &path, value)
        }
        "test" => {
            let want = value()?;
            // A missing member of an existing object tests equal to `null`, as kube-apiserver's
            // JSON patch has it (clients test `/metadata/finalizers` against `null` before
            // adding the first finalizer).
            if want.is_null()
                && let Some((last, parent)) = path.split_last()
                && let Value::Object(members) = get_mut(doc, parent)?
                && !members.contains_key(last)
            {
                return Ok(());
            }
            let found = get_mut(doc, &path)?;
            if json_eq(found, want) {
                Ok(())
            } else {
                Err(failed(format!("testing value {} failed", show(&path))))
            }
        }
        other => Err(JsonPatchError::Malformed(format!(
            "unexpected kind of operation: {other:?}"
        ))),
    }
}

/// The reference tokens of the JSON pointer in member `field` of `op`.
fn pointer(op: &Map<String, Value>, field: &str) -> Result<Vec<String>, JsonPatchError> {
    let text = op
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| JsonPatchError::Malformed(format!("an operation has no \"{field}\"")))?;
    parse_pointer(text)
}

/// Splits an RFC 6901 pointer (`""` is the whole document) into unescaped tokens.
fn parse_pointer(text: &str) -> Result<Vec<String>, JsonPatchError> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = text.strip_prefix('/') else {
        return Err(JsonPatchError::Malformed(format!(
            "JSON pointer {text:?} does not start with '/'"
        )));
    };
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

/// A pointer written back, for messages.
fn show(tokens: &[String]) -> String {
    tokens.iter().fold(String::new(), |mut out, t| {
        out.push('/');
        out.push_str(&t.replace('~', "~0").replace('/', "~1"));
        out
    })
}

/// An array index token: digits without a leading zero, below `len` (`len` itself when
/// `insert`).
fn index(token: &str, len: usize, insert: bool) -> Option<usize> {
    let digits = !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit());
    if !digits || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    token
        .parse()
        .ok()
        .filter(|i| *i < len || (insert && *i == len))
}

fn get_mut<'d>(doc: &'d mut Value, path: &[String]) -> Result<&'d mut Value, JsonPatchError> {
    let mut at = doc;
    for (depth, token) in path.iter().enumerate() {
        let missing = || failed(format!("path {} does not exist", show(&path[..=depth])));
        at = match at {
            Value::Object(members) => members.get_mut(token).ok_or_else(missing)?,
            Value::Array(items) => {
                let i = index(token, items.len(), false).ok_or_else(missing)?;
                &mut items[i]
            }
            _ => return Err(missing()),
        };
    }
    Ok(at)
}

fn add(doc: &mut Value, path: &[String], value: Value) -> Result<(), JsonPatchError> {
    let Some((last, parent)) = path.split_last() else {
        *doc = value;
        return Ok(());
    };
    match get_mut(doc, parent)? {
        Value::Object(members) => {
            members.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(items) => {
            let i = if last == "-" {
                items.len()
            } else {
                index(last, items.len(), true)
                    .ok_or_else(|| failed(format!("index {} is out of bounds", show(path))))?
            };
            items.insert(i, value);
            Ok(())
        }
        _ => Err(failed(format!(
            "cannot add {}: its parent is not an object or a list",
            show(path)
        ))),
    }
}

fn remove(doc: &mut Value, path: &[String]) -> Result<Value, JsonPatchError> {
    let Some((last, parent)) = path.split_last() else {
        return Err(failed("cannot remove the whole document".to_owned()));
    };
    let missing = || failed(format!("path {} does not exist", show(path)));
    match get_mut(doc, parent)? {
        Value::Object(members) => members.remove(last).ok_or_else(missing),
        Value::Array(items) => {
            let i = index(last, items.len(), false).ok_or_else(missing)?;
            Ok(items.remove(i))
        }
        _ => Err(missing()),
    }
}

/// JSON equality, numbers compared by value (`1` equals `1.0`).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => numbers_eq(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Two numbers compared by value: integers exactly (`2^53 + 1` is not `2^53`, which it would
/// be as `f64`s), as floats only when one of them is a float.
fn numbers_eq(x: &Number, y: &Number) -> bool {
    if x.is_f64() || y.is_f64() {
        return x.as_f64() == y.as_f64();
    }
    match (x.as_i64(), y.as_i64()) {
        (Some(x), Some(y)) => x == y,
        // At least one is above `i64::MAX`: equal only if both are that same `u64`.
        _ => x.as_u64().is_some() && x.as_u64() == y.as_u64(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_missing_member_tests_equal_to_null() {
        let doc = json!({"metadata": {"name": "a"}});
        let add_first = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["f"]},
        ]);
        let doc = match apply(doc, &add_first) {
            Ok(doc) => doc,
            Err(e) => panic!("{e:?}"),
        };
        assert_eq!(doc["metadata"]["finalizers"], json!(["f"]));
        // Now present: testing it against null fails; a missing parent fails too.
        assert!(apply(doc.clone(), &add_first).is_err());
        let deeper = json!([{"op": "test", "path": "/spec/x", "value": null}]);
        assert!(apply(doc, &deeper).is_err());
    }

    use serde_json::json;

    use super::*;

    fn patched(doc: Value, patch: &Value) -> Result<Value, JsonPatchError> {
        apply(doc, patch)
    }

    /// Examples of RFC 6902, appendix A.
    #[test]
    fn rfc_6902_examples() {
        let ok = [
            (
                json!({"foo": "bar"}),
                json!([{"op": "add", "path": "/baz", "value": "qux"}]),
                json!({"baz": "qux", "foo": "bar"}),
            ),
            (
                json!({"foo": ["bar", "baz"]}),
                json!([{"op": "add", "path": "/foo/1", "value": "qux"}]),
                json!({"foo": ["bar", "qux", "baz"]}),
            ),
            (
                json!({"baz": "qux", "foo": "bar"}),
                json!([{"op": "remove", "path": "/baz"}]),
                json!({"foo": "bar"}),
            ),
            (
                json!({"foo": ["bar", "qux", "baz"]}),
                json!([{"op": "remove", "path": "/foo/1"}]),
                json!({"foo": ["bar", "baz"]}),
            ),
            (
                json!({"baz": "qux", "foo": "bar"}),
                json!([{"op": "replace", "path": "/baz", "value": "boo"}]),
                json!({"baz": "boo", "foo": "bar"}),
            ),
            (
                json!({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}),
                json!([{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}]),
                json!({"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}),
            ),
            (
                json!({"foo": ["all", "grass", "cows", "eat"]}),
                json!([{"op": "move", "from": "/foo/1", "path": "/foo/3"}]),
                json!({"foo": ["all", "cows", "eat", "grass"]}),
            ),
            (
                json!({"baz": "qux", "foo": ["a", 2, "c"]}),
                json!([{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}]),
                json!({"baz": "qux", "foo": ["a", 2, "c"]}),
            ),
            (
                json!({"foo": "bar"}),
                json!([{"op": "add", "path": "/child", "value": {"grandchild": {}}}]),
                json!({"foo": "bar", "child": {"grandchild": {}}}),
            ),
            (
                json!({"foo": ["bar"]}),
                json!([{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}]),
                json!({"foo": ["bar", ["abc", "def"]]}),
            ),
            (
                json!({"/": 9, "~1": 10}),
                json!([{"op": "test", "path": "/~01", "value": 10}, {"op": "copy", "from": "/~1", "path": "/c"}]),
                json!({"/": 9, "~1": 10, "c": 9}),
            ),
            (
                json!({"a": 1}),
                json!([{"op": "test", "path": "/a", "value": 1.0}]),
                json!({"a": 1}),
            ),
            (
                json!({"a": 1}),
                json!([{"op": "replace", "path": "", "value": [1]}]),
                json!([1]),
            ),
        ];
        for (doc, patch, expected) in ok {
            assert_eq!(patched(doc, &patch), Ok(expected), "{patch}");
        }
    }

    #[test]
    fn failing_operations_fail() {
        let failing = [
            (
                json!({"baz": "qux"}),
                json!([{"op": "test", "path": "/baz", "value": "bar"}]),
            ),
            (
                json!({"foo": "bar"}),
                json!([{"op": "add", "path": "/baz/bat", "value": "qux"}]),
            ),
            (
                json!({"foo": ["a"]}),
                json!([{"op": "add", "path": "/foo/2", "value": "x"}]),
            ),
            (
                json!({"foo": ["a"]}),
                json!([{"op": "remove", "path": "/foo/01"}]),
            ),
            (
                json!({"foo": {}}),
                json!([{"op": "move", "from": "/foo", "path": "/foo/bar"}]),
            ),
            (
                json!({"foo": "bar"}),
                json!([{"op": "replace", "path": "/nope", "value": 1}]),
            ),
        ];
        for (doc, patch) in failing {
            assert!(
                matches!(apply(doc, &patch), Err(JsonPatchError::Failed(_))),
                "{patch}"
            );
        }
    }

    #[test]
    fn malformed_patches() {
        for patch in [
            json!({"op": "add"}),
            json!([{"path": "/a"}]),
            json!([{"op": "frob", "path": "/a"}]),
            json!([{"op": "add", "path": "a", "value": 1}]),
            json!([{"op": "add", "path": "/a"}]),
        ] {
            assert!(
                matches!(
                    patched(json!({}), &patch),
                    Err(JsonPatchError::Malformed(_))
                ),
                "{patch}"
            );
        }
    }

    #[test]
    fn numbers_compare_exactly_unless_one_is_a_float() {
        let big = 1_u64 << 53;
        let cases = [
            (json!(big + 1), json!(big), false),
            (json!(big), json!(big), true),
            (json!(u64::MAX), json!(u64::MAX), true),
            (json!(u64::MAX), json!(-1), false),
            (json!(-1), json!(-1), true),
            (json!(1), json!(1.0), true),
            (json!(1.5), json!(1), false),
            (json!(0.1), json!(0.1), true),
        ];
        for (a, b, equal) in cases {
            assert_eq!(json_eq(&a, &b), equal, "{a} == {b}");
            assert_eq!(json_eq(&b, &a), equal, "{b} == {a}");
        }
    }

    #[test]
    fn the_number_of_operations_is_limited() {
        let op = json!({"op": "test", "path": "/a", "value": 1});
        let at_limit = Value::Array(vec![op.clone(); MAX_JSON_PATCH_OPERATIONS]);
        assert_eq!(patched(json!({"a": 1}), &at_limit), Ok(json!({"a": 1})));
        let over = Value::Array(vec![op; MAX_JSON_PATCH_OPERATIONS + 1]);
        assert_eq!(
            patched(json!({"a": 1}), &over),
            Err(JsonPatchError::TooLarge(
                "The allowed maximum operations in a JSON patch is 10000, got 10001".to_owned()
            ))
        );
    }

    #[test]
    fn copies_are_limited_in_all_not_one_by_one() {
        // Each copy of the document into its own child doubles it: 40 of them would make
        // 2^40 copies of the first; the limit stops them at a few megabytes.
        let doubling: Vec<Value> = (0..40)
            .map(|i| json!({"op": "copy", "from": "", "path": format!("/c{i}")}))
            .collect();
        let err = patched(json!({"c": "x"}), &Value::Array(doubling)).unwrap_err();
        assert!(
            matches!(&err, JsonPatchError::Failed(m) if m.contains("accumulated size")),
            "{err:?}"
        );
        // Small copies, many times, count together: 1 KiB copied 4,000 times is over 3 MiB.
        let kib = "x".repeat(1024);
        let copies: Vec<Value> = (0..4_000)
            .map(|i| json!({"op": "copy", "from": "/a", "path": format!("/c{i}")}))
            .collect();
        assert!(patched(json!({"a": kib}), &Value::Array(copies[..2_000].to_vec())).is_ok());
        assert!(matches!(
            patched(json!({"a": kib}), &Value::Array(copies)),
            Err(JsonPatchError::Failed(_))
        ));
    }
}
