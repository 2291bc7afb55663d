//! The printer columns of a custom resource (its definition's `additionalPrinterColumns`), as
//! kube-apiserver makes them the columns of the resource's `meta.k8s.io/v1` Tables: `Name`
//! first, then each column in order with its `type`, `format`, `description` (by default
//! `Custom resource definition column (in JSONPath format): <jsonPath>`) and `priority` (above 0:
//! shown by kubectl with `-o wide` only). A definition without printer columns gets `Name` and
//! `Age`, as a built-in kind without a printer does.
//!
//! Each cell is the value at the column's `jsonPath` (`.spec.size`, `.status.items[0].name`,
//! `.status.conditions[?(@.type=="Ready")].status`; other `JSONPath` forms give empty cells):
//! for `string` columns its text (objects and lists as JSON), for `integer`, `number` and
//! `boolean` the value if it is one, for `date` the age of the timestamp (`<invalid>` if it is
//! not one); empty (`null`) when there is nothing there.

use serde_json::{Value, json};

use super::util::{human_age, parse_rfc3339};

/// One of a definition's `additionalPrinterColumns`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PrinterColumn {
    /// The column's header (`Size`).
    pub(crate) name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub(crate) kind: String,
    /// An `OpenAPI` format hint (`name`, `byte`, ...), usually empty.
    pub(crate) format: String,
    /// The column's description.
    pub(crate) description: String,
    /// 0: always shown; above 0: with `-o wide` only.
    pub(crate) priority: i64,
    /// Where the cell's value is, in `JSONPath` (`.spec.size`).
    pub(crate) json_path: String,
}

impl PrinterColumn {
    /// The printer columns of `version` (one entry of a definition's `spec.versions`).
    pub(crate) fn all_of(version: &Value) -> Vec<Self> {
        let text = |c: &Value, key: &str| {
            c.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        version
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|columns| {
                columns
                    .iter()
                    .map(|c| {
                        let json_path = text(c, "jsonPath");
                        let description = match text(c, "description") {
                            d if d.is_empty() => format!(
                                "Custom resource definition column (in JSONPath format): {json_path}"
                            ),
                            d => d,
                        };
                        Self {
                            name: text(c, "name"),
                            kind: text(c, "type"),
                            format: text(c, "format"),
                            description,
                            priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                            json_path,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The `TableColumnDefinition` JSON.
    pub(crate) fn definition(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.kind,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }

    /// The cell of object `obj` (its JSON), given the current time in Unix seconds.
    pub(crate) fn cell(&self, obj: &Value, now: u64) -> Value {
        let Some(value) = find(obj, &self.json_path) else {
            return Value::Null;
        };
        match (self.kind.as_str(), value) {
            ("string", Value::String(s)) => json!(s),
            ("string", other) => json!(other.to_string()),
            ("integer", Value::Number(n)) => n.as_i64().map_or_else(
                // A whole float is printed as the integer it is.
                #[allow(
                    clippy::cast_possible_truncation,
                    reason = "kube-apiserver truncates a float cell of an integer column"
                )]
                || n.as_f64().map_or(Value::Null, |f| json!(f as i64)),
                |i| json!(i),
            ),
            ("number", Value::Number(n)) => json!(n.as_f64()),
            ("boolean", Value::Bool(b)) => json!(b),
            ("date", Value::String(s)) => json!(parse_rfc3339(s).map_or_else(
                || "<invalid>".to_owned(),
                |t| human_age(now.saturating_sub(t))
            )),
            _ => Value::Null,
        }
    }
}

/// The value at simple `JSONPath` `path` in `obj`: `.a.b`, `['a']`, `[0]`, and the first item a
/// filter `[?(@.field=="value")]` matches; `None` where there is nothing, or for other forms.
fn find<'v>(obj: &'v Value, path: &str) -> Option<&'v Value> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let mut rest = path.strip_prefix('$').unwrap_or(path);
    let mut at = obj;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let (field, next) = after.split_at(end);
            if !field.is_empty() {
                at = at.get(field)?;
            }
            rest = next;
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = bracket_end(after)?;
            let (inside, next) = after.split_at(end);
            rest = &next[1..];
            at = step(at, inside.trim())?;
        } else {
            return None;
        }
    }
    Some(at)
}

/// Where the `]` closing a bracket whose contents start `s` is (quotes and a filter's
/// parentheses skipped).
fn bracket_end(s: &str) -> Option<usize> {
    let mut quote = None;
    let mut depth = 0u32;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => depth = depth.saturating_sub(1),
            (None, ']') if depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

/// One bracket step: an index, a quoted member, or a filter on a list's items.
fn step<'v>(at: &'v Value, inside: &str) -> Option<&'v Value> {
    if let Ok(i) = inside.parse::<usize>() {
        return at.get(i);
    }
    if let Some(name) = unquote(inside) {
        return at.get(name);
    }
    let filter = inside.strip_prefix("?(")?.strip_suffix(')')?.trim();
    let (left, right) = filter.split_once("==")?;
    let field = left.trim().strip_prefix("@.")?;
    let right = right.trim();
    let wanted: Value = match unquote(right) {
        Some(text) => json!(text),
        None => serde_json::from_str(right).ok()?,
    };
    at.as_array()?
        .iter()
        .find(|item| find(item, &format!(".{field}")) == Some(&wanted))
}

/// `text` without its single or double quotes, if quoted.
fn unquote(text: &str) -> Option<&str> {
    text.strip_prefix('\'')
        .and_then(|t| t.strip_suffix('\''))
        .or_else(|| text.strip_prefix('"').and_then(|t| t.strip_suffix('"')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(kind: &str, json_path: &str) -> PrinterColumn {
        PrinterColumn::all_of(&json!({"additionalPrinterColumns": [
            {"name": "C", "type": kind, "jsonPath": json_path}]}))
        .remove(0)
    }

    #[test]
    fn cells_follow_the_json_path_and_type() {
        let obj = json!({"spec": {"size": 3, "ratio": 1.5, "on": true, "tags": ["a", "b"]},
            "status": {"conditions": [{"type": "Synced", "status": "False"},
                {"type": "Ready", "status": "True"}]},
            "metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"}});
        assert_eq!(column("integer", ".spec.size").cell(&obj, 0), json!(3));
        assert_eq!(column("number", ".spec.ratio").cell(&obj, 0), json!(1.5));
        assert_eq!(column("boolean", ".spec.on").cell(&obj, 0), json!(true));
        assert_eq!(column("string", ".spec.tags[1]").cell(&obj, 0), json!("b"));
        assert_eq!(
            column("string", ".spec.tags").cell(&obj, 0),
            json!("[\"a\",\"b\"]")
        );
        assert_eq!(column("string", ".spec.missing").cell(&obj, 0), Value::Null);
        assert_eq!(
            column("string", ".status.conditions[?(@.type==\"Ready\")].status").cell(&obj, 0),
            json!("True")
        );
        let created = parse_rfc3339("2024-01-01T00:00:00Z").unwrap();
        assert_eq!(
            column("date", ".metadata.creationTimestamp").cell(&obj, created + 90),
            json!("90s")
        );
        assert_eq!(
            column("string", ".spec.size").description,
            "Custom resource definition column (in JSONPath format): .spec.size"
        );
    }
}
