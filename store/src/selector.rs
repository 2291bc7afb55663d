//! Label selectors with the full Kubernetes syntax: `=`, `==`, `!=`, `in`, `notin`, `<`, `>`,
//! existence (`key`) and absence (`!key`), joined by commas.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::{Object, SelectorError};

/// How a [`Requirement`] compares a label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operator {
    /// `key=value` or `key==value`: the label is present and equal.
    Equals,
    /// `key!=value`: the label is absent or different.
    NotEquals,
    /// `key in (a,b)`: the label is present and one of the values.
    In,
    /// `key notin (a,b)`: the label is absent or none of the values.
    NotIn,
    /// `key`: the label is present.
    Exists,
    /// `!key`: the label is absent.
    DoesNotExist,
    /// `key>n`: the label is an integer greater than `n`.
    GreaterThan,
    /// `key<n`: the label is an integer less than `n`.
    LessThan,
}

/// One comma-separated term of a selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and deduplicated.
    values: Vec<String>,
}

impl Requirement {
    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }
    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }
    /// The values (sorted), empty for `Exists`/`DoesNotExist`.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether `labels` satisfy this requirement.
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let value = labels.and_then(|l| l.get(&self.key)).map(String::as_str);
        let contains = |v: &str| self.values.binary_search_by(|x| x.as_str().cmp(v)).is_ok();
        match self.operator {
            Operator::Equals | Operator::In => value.is_some_and(contains),
            Operator::NotEquals | Operator::NotIn => !value.is_some_and(contains),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(Ok(have)), Some(Ok(want))) = (
                    value.map(str::parse::<i64>),
                    self.values.first().map(|v| v.parse::<i64>()),
                ) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one = self.values.first().map_or("", String::as_str);
        match self.operator {
            Operator::Equals => write!(f, "{}={one}", self.key),
            Operator::NotEquals => write!(f, "{}!={one}", self.key),
            Operator::In => write!(f, "{} in ({})", self.key, self.values.join(",")),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, self.values.join(",")),
            Operator::Exists => f.write_str(&self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::GreaterThan => write!(f, "{}>{one}", self.key),
            Operator::LessThan => write!(f, "{}<{one}", self.key),
        }
    }
}

/// A parsed label selector: all requirements must hold. The empty selector matches everything.
///
/// ```
/// use std::collections::BTreeMap;
/// use kcache_store::Selector;
///
/// let sel: Selector = "app in (web, api), tier!=cache, !canary".parse()?;
/// let labels = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
/// assert!(sel.matches(Some(&labels)));
/// assert_eq!(sel.to_string(), "app in (api,web),!canary,tier!=cache");
///
/// let err = "app in (web".parse::<Selector>().unwrap_err();
/// assert_eq!(err.position, 11);
/// # Ok::<(), kcache_store::SelectorError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Selector {
    /// Sorted by key, as Kubernetes prints them.
    requirements: Vec<Requirement>,
}

impl Selector {
    /// The selector that matches everything.
    #[must_use]
    pub fn everything() -> Self {
        Self::default()
    }

    /// `key=value` for each pair: what a `matchLabels` map means.
    #[must_use]
    pub fn from_labels<'a>(labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut requirements: Vec<Requirement> = labels
            .into_iter()
            .map(|(k, v)| Requirement {
                key: k.to_owned(),
                operator: Operator::Equals,
                values: vec![v.to_owned()],
            })
            .collect();
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self { requirements }
    }

    /// Parses the Kubernetes selector syntax.
    ///
    /// # Errors
    ///
    /// A [`SelectorError`] with the byte offset where the text went wrong.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        Parser::new(input).selector()
    }

    /// Whether the selector has no requirement (and so matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether the object's labels satisfy every requirement.
    pub fn matches_object<T: Object + ?Sized>(&self, obj: &T) -> bool {
        self.is_empty() || self.matches(obj.labels())
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            fmt::Display::fmt(r, f)?;
        }
        Ok(())
    }
}

impl FromStr for Selector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, SelectorError> {
        Self::parse(s)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    Ident(&'a str),
    Bang,
    Eq,
    DoubleEq,
    NotEq,
    LParen,
    RParen,
    Comma,
    In,
    NotIn,
    Gt,
    Lt,
    End,
}

impl Tok<'_> {
    fn describe(self) -> String {
        match self {
            Tok::Ident(s) => format!("{s:?}"),
            Tok::Bang => "'!'".into(),
            Tok::Eq => "'='".into(),
            Tok::DoubleEq => "'=='".into(),
            Tok::NotEq => "'!='".into(),
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::Comma => "','".into(),
            Tok::In => "'in'".into(),
            Tok::NotIn => "'notin'".into(),
            Tok::Gt => "'>'".into(),
            Tok::Lt => "'<'".into(),
            Tok::End => "end of input".into(),
        }
    }
}

struct Parser<'a> {
    input: &'a str,
    pos: usize,
    peeked: Option<(usize, Tok<'a>)>,
}

impl<'a> Parser<'a> {
    fn new(input: &'a str) -> Self {
        Self {
            input,
            pos: 0,
            peeked: None,
        }
    }

    fn err(&self, position: usize, message: impl Into<String>) -> SelectorError {
        SelectorError {
            input: self.input.to_owned(),
            position,
            message: message.into(),
        }
    }

    fn lex(&mut self) -> (usize, Tok<'a>) {
        let bytes = self.input.as_bytes();
        while self.pos < bytes.len() && bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        let start = self.pos;
        let Some(&b) = bytes.get(start) else {
            return (start, Tok::End);
        };
        let next = bytes.get(start + 1).copied();
        let (len, tok) = match (b, next) {
            (b'=', Some(b'=')) => (2, Tok::DoubleEq),
            (b'=', _) => (1, Tok::Eq),
            (b'!', Some(b'=')) => (2, Tok::NotEq),
            (b'!', _) => (1, Tok::Bang),
            (b'(', _) => (1, Tok::LParen),
            (b')', _) => (1, Tok::RParen),
            (b',', _) => (1, Tok::Comma),
            (b'>', _) => (1, Tok::Gt),
            (b'<', _) => (1, Tok::Lt),
            _ => {
                let end = bytes[start..]
                    .iter()
                    .position(|c| c.is_ascii_whitespace() || b"=!(),<>".contains(c))
                    .map_or(bytes.len(), |n| start + n);
                let word = &self.input[start..end];
                let tok = match word {
                    "in" => Tok::In,
                    "notin" => Tok::NotIn,
                    w => Tok::Ident(w),
                };
                (end - start, tok)
            }
        };
        self.pos = start + len;
        (start, tok)
    }

    fn next(&mut self) -> (usize, Tok<'a>) {
        self.peeked.take().unwrap_or_else(|| self.lex())
    }

    fn peek(&mut self) -> (usize, Tok<'a>) {
        if let Some(p) = self.peeked {
            return p;
        }
        let p = self.lex();
        self.peeked = Some(p);
        p
    }

    fn selector(mut self) -> Result<Selector, SelectorError> {
        let mut requirements = Vec::new();
        if self.peek().1 == Tok::End {
            return Ok(Selector::default());
        }
        loop {
            requirements.push(self.requirement()?);
            match self.next() {
                (_, Tok::End) => break,
                (_, Tok::Comma) => {}
                (at, t) => {
                    return Err(self.err(
                        at,
                        format!("expected ',' or end of input, found {}", t.describe()),
                    ));
                }
            }
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Selector { requirements })
    }

    fn key(&mut self) -> Result<String, SelectorError> {
        match self.next() {
            (at, Tok::Ident(k)) => {
                validate_key(k).map_err(|m| self.err(at, m))?;
                Ok(k.to_owned())
            }
            (at, t) => Err(self.err(at, format!("expected a label key, found {}", t.describe()))),
        }
    }

    fn value(&mut self) -> Result<String, SelectorError> {
        match self.peek() {
            (at, Tok::Ident(v)) => {
                self.next();
                validate_value(v).map_err(|m| self.err(at, m))?;
                Ok(v.to_owned())
            }
            // `key=` and `key in (a,)` mean the empty value.
            (_, Tok::End | Tok::Comma | Tok::RParen) => Ok(String::new()),
            (at, t) => Err(self.err(
                at,
                format!("expected a label value, found {}", t.describe()),
            )),
        }
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        if self.peek().1 == Tok::Bang {
            self.next();
            let key = self.key()?;
            return Ok(Requirement {
                key,
                operator: Operator::DoesNotExist,
                values: Vec::new(),
            });
        }
        let key = self.key()?;
        let (at, op) = self.peek();
        let operator = match op {
            Tok::End | Tok::Comma => {
                return Ok(Requirement {
                    key,
                    operator: Operator::Exists,
                    values: Vec::new(),
                });
            }
            Tok::Eq | Tok::DoubleEq => Operator::Equals,
            Tok::NotEq => Operator::NotEquals,
            Tok::In => Operator::In,
            Tok::NotIn => Operator::NotIn,
            Tok::Gt => Operator::GreaterThan,
            Tok::Lt => Operator::LessThan,
            t => {
                return Err(self.err(
                    at,
                    format!(
                        "expected an operator ('=', '==', '!=', 'in', 'notin', '<', '>'), ',' or \
                         end of input after key {key:?}, found {}",
                        t.describe()
                    ),
                ));
            }
        };
        self.next();
        let values = match operator {
            Operator::In | Operator::NotIn => self.set()?,
            Operator::GreaterThan | Operator::LessThan => {
                let (at, _) = self.peek();
                let v = self.value()?;
                if v.parse::<i64>().is_err() {
                    return Err(self.err(at, format!("expected an integer, found {v:?}")));
                }
                vec![v]
            }
            _ => vec![self.value()?],
        };
        Ok(Requirement {
            key,
            operator,
            values,
        })
    }

    fn set(&mut self) -> Result<Vec<String>, SelectorError> {
        match self.next() {
            (_, Tok::LParen) => {}
            (at, t) => return Err(self.err(at, format!("expected '(', found {}", t.describe()))),
        }
        if let (at, Tok::RParen) = self.peek() {
            return Err(self.err(at, "the set of values for 'in' and 'notin' can't be empty"));
        }
        let mut values = Vec::new();
        loop {
            values.push(self.value()?);
            match self.next() {
                (_, Tok::Comma) => {}
                (_, Tok::RParen) => break,
                (at, t) => {
                    return Err(
                        self.err(at, format!("expected ',' or ')', found {}", t.describe()))
                    );
                }
            }
        }
        values.sort();
        values.dedup();
        Ok(values)
    }
}

/// A label name: at most 63 characters, alphanumerics with `-`, `_`, `.` inside.
fn valid_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A DNS-1123 subdomain: lowercase alphanumerics, `-` and `.`, at most 253 characters.
fn valid_prefix(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

fn validate_key(k: &str) -> Result<(), String> {
    let (prefix, name) = match k.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    if let Some(p) = prefix
        && !valid_prefix(p)
    {
        return Err(format!(
            "invalid label key {k:?}: prefix must be a DNS subdomain (lowercase alphanumerics, \
             '-' and '.')"
        ));
    }
    if !valid_name(name) {
        return Err(format!(
            "invalid label key {k:?}: name must be 1-63 alphanumerics, '-', '_' or '.', starting \
             and ending with an alphanumeric"
        ));
    }
    Ok(())
}

fn validate_value(v: &str) -> Result<(), String> {
    if v.is_empty() || valid_name(v) {
        Ok(())
    } else {
        Err(format!(
            "invalid label value {v:?}: must be at most 63 alphanumerics, '-', '_' or '.', \
             starting and ending with an alphanumeric"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn m(sel: &str, l: &[(&str, &str)]) -> bool {
        Selector::parse(sel).unwrap().matches(Some(&labels(l)))
    }

    #[test]
    fn every_operator() {
        assert!(m("", &[]));
        assert!(m("a=b", &[("a", "b")]));
        assert!(m("a==b", &[("a", "b")]));
        assert!(!m("a=b", &[("a", "c")]));
        assert!(!m("a=b", &[]));
        assert!(m("a!=b", &[]));
        assert!(m("a!=b", &[("a", "c")]));
        assert!(!m("a!=b", &[("a", "b")]));
        assert!(m("a in (x, y)", &[("a", "y")]));
        assert!(!m("a in (x,y)", &[]));
        assert!(m("a notin (x,y)", &[]));
        assert!(!m("a notin (x,y)", &[("a", "x")]));
        assert!(m("a", &[("a", "")]));
        assert!(!m("a", &[]));
        assert!(m("!a", &[("b", "")]));
        assert!(!m("!a", &[("a", "1")]));
        assert!(m("a>5", &[("a", "6")]));
        assert!(!m("a>5", &[("a", "x")]));
        assert!(m("a<5", &[("a", "-1")]));
        assert!(m("a=", &[("a", "")]));
        assert!(m("a in (x,)", &[("a", "")]));
        assert!(m(
            "example.com/tier=web,env in (prod),!debug",
            &[("example.com/tier", "web"), ("env", "prod")]
        ));
        assert!(
            Selector::parse("a=b")
                .unwrap()
                .matches(Some(&labels(&[("a", "b")])))
        );
        assert!(!Selector::parse("a=b").unwrap().matches(None));
        assert!(Selector::parse("a!=b").unwrap().matches(None));
    }

    #[test]
    fn canonical_string_round_trips() {
        for s in [
            "a=b",
            "!a",
            "a",
            "a in (x,y)",
            "a notin (x)",
            "a>3",
            "a!=",
            "a=b,c=d",
        ] {
            let sel = Selector::parse(s).unwrap();
            assert_eq!(sel.to_string(), s);
            assert_eq!(Selector::parse(&sel.to_string()).unwrap(), sel);
        }
        assert_eq!(
            Selector::parse(" z == 1 , a in ( q , p , q ) ")
                .unwrap()
                .to_string(),
            "a in (p,q),z=1"
        );
    }

    #[test]
    fn errors_say_where() {
        let cases = [
            ("a=b,", 4, "expected a label key, found end of input"),
            ("a b", 2, "expected an operator"),
            ("a in x", 5, "expected '('"),
            ("a in ()", 6, "can't be empty"),
            ("a in (x y)", 8, "expected ',' or ')'"),
            ("a in (x", 7, "expected ',' or ')', found end of input"),
            ("=b", 0, "expected a label key"),
            ("a>b", 2, "expected an integer"),
            ("-a=b", 0, "invalid label key"),
            ("Bad.Prefix/a=b", 0, "prefix must be a DNS subdomain"),
            ("a=b c", 4, "expected ',' or end of input"),
            ("!a=b", 2, "expected ',' or end of input, found '='"),
            ("a=-x", 2, "invalid label value"),
            ("a,,b", 2, "expected a label key, found ','"),
        ];
        for (input, position, message) in cases {
            let err = Selector::parse(input).unwrap_err();
            assert_eq!(err.position, position, "{input:?}: {err}");
            assert!(err.message.contains(message), "{input:?}: {err}");
        }
        let long = format!("a={}", "x".repeat(64));
        assert!(Selector::parse(&long).is_err());
        let err = Selector::parse("a in (x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "expected ',' or ')', found end of input at position 7 of \"a in (x\" (at end of input)"
        );
    }

    #[test]
    fn from_labels_is_equality() {
        let sel = Selector::from_labels([("b", "2"), ("a", "1")]);
        assert_eq!(sel.to_string(), "a=1,b=2");
        assert!(sel.matches(Some(&labels(&[("a", "1"), ("b", "2"), ("c", "3")]))));
    }
}
