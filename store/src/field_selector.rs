//! Field selectors: `field=value`, `field==value` and `field!=value`, joined by commas.

use std::fmt;
use std::str::FromStr;

use crate::{Object, SelectorError};

/// One term of a [`FieldSelector`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    /// The field path, such as `metadata.name`.
    pub field: String,
    /// `true` for `!=`.
    pub negated: bool,
    /// The value, unescaped.
    pub value: String,
}

/// A parsed field selector, as the API server takes in `fieldSelector`.
///
/// Values may escape `\`, `,` and `=` with a backslash. Every object kind supports
/// `metadata.name` and `metadata.namespace`; [`matches_object`](Self::matches_object) checks
/// those and treats other fields as not matching.
///
/// ```
/// use kcache_store::{DynamicObject, FieldSelector};
///
/// let sel: FieldSelector = "metadata.namespace=prod,metadata.name!=web".parse()?;
/// assert!(sel.matches_object(&DynamicObject::new(Some("prod"), "api")));
/// assert!(!sel.matches_object(&DynamicObject::new(Some("prod"), "web")));
/// # Ok::<(), kcache_store::SelectorError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses a field selector.
    ///
    /// # Errors
    ///
    /// A [`SelectorError`] pointing at the term without an operator or field.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let err = |position: usize, message: &str| SelectorError {
            input: input.to_owned(),
            position,
            message: message.to_owned(),
        };
        let mut requirements = Vec::new();
        if input.trim().is_empty() {
            return Ok(Self::default());
        }
        for (start, term) in split_unescaped(input, b',') {
            let Some((op_at, op_len, negated)) = find_operator(term) else {
                return Err(err(
                    start,
                    "expected an operator ('=', '==' or '!=') in this term",
                ));
            };
            let field = term[..op_at].trim();
            if field.is_empty() {
                return Err(err(start, "expected a field name"));
            }
            let raw = &term[op_at + op_len..];
            let value = unescape(raw).map_err(|i| {
                err(
                    start + op_at + op_len + i,
                    "invalid escape: only '\\\\', '\\,' and '\\=' are allowed",
                )
            })?;
            requirements.push(FieldRequirement {
                field: field.to_owned(),
                negated,
                value,
            });
        }
        Ok(Self { requirements })
    }

    /// The terms, in the order given.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Whether the selector has no term.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether every term holds, reading fields with `get` (`None`: the field is unknown, which
    /// fails the term).
    pub fn matches<'a>(&self, mut get: impl FnMut(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| match get(&r.field) {
            Some(v) => (v == r.value) != r.negated,
            None => false,
        })
    }

    /// Matches `metadata.name` and `metadata.namespace` of `obj`.
    pub fn matches_object<T: Object + ?Sized>(&self, obj: &T) -> bool {
        self.matches(|field| match field {
            "metadata.name" => Some(obj.name().unwrap_or_default()),
            "metadata.namespace" => Some(obj.namespace().unwrap_or_default()),
            _ => None,
        })
    }
}

fn find_operator(term: &str) -> Option<(usize, usize, bool)> {
    let b = term.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'!' if b.get(i + 1) == Some(&b'=') => return Some((i, 2, true)),
            b'=' if b.get(i + 1) == Some(&b'=') => return Some((i, 2, false)),
            b'=' => return Some((i, 1, false)),
            _ => {}
        }
        i += 1;
    }
    None
}

fn split_unescaped(s: &str, sep: u8) -> Vec<(usize, &str)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == sep {
            out.push((start, &s[start..i]));
            start = i + 1;
        }
        i += 1;
    }
    out.push((start, &s[start..]));
    out
}

fn unescape(s: &str) -> Result<String, usize> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some((_, e @ ('\\' | ',' | '='))) => out.push(e),
                _ => return Err(i),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = if r.negated { "!=" } else { "=" };
            write!(f, "{}{op}{}", r.field, escape(&r.value))?;
        }
        Ok(())
    }
}

impl FromStr for FieldSelector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, SelectorError> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_match_and_print() {
        let sel = FieldSelector::parse("spec.nodeName==n1,status.phase!=Running").unwrap();
        assert!(sel.matches(|f| match f {
            "spec.nodeName" => Some("n1"),
            "status.phase" => Some("Pending"),
            _ => None,
        }));
        assert!(!sel.matches(|_| None));
        assert_eq!(sel.to_string(), "spec.nodeName=n1,status.phase!=Running");
        let esc = FieldSelector::parse(r"a=x\,y\=z").unwrap();
        assert_eq!(esc.requirements()[0].value, "x,y=z");
        assert_eq!(FieldSelector::parse(&esc.to_string()).unwrap(), esc);
        assert!(FieldSelector::parse("").unwrap().is_empty());
    }

    #[test]
    fn errors() {
        let e = FieldSelector::parse("a=b,c").unwrap_err();
        assert_eq!(e.position, 4);
        assert!(FieldSelector::parse("=b").is_err());
        let e = FieldSelector::parse(r"a=b\q").unwrap_err();
        assert_eq!(e.position, 3);
    }
}
