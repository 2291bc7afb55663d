//! [`ShardSelector`]: the `shardSelector` list option of server-side sharded list and watch
//! (`shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')`): the server
//! hashes one field of each object with 64-bit FNV-1a and sends only the objects whose hash lies
//! in one of the selector's half-open ranges.

use std::fmt;

use kcache_store::Object;

/// The field a [`ShardSelector`] hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShardField {
    /// `object.metadata.uid`: spreads a flat collection evenly.
    Uid,
    /// `object.metadata.namespace`: keeps a namespace's objects (an owner and its dependents)
    /// together.
    Namespace,
}

impl ShardField {
    /// The field path as the selector writes it (`object.metadata.uid`).
    #[must_use]
    pub fn path(self) -> &'static str {
        match self {
            Self::Uid => "object.metadata.uid",
            Self::Namespace => "object.metadata.namespace",
        }
    }

    /// The field's value in `object` (`""` when it has none, as the server reads it).
    pub fn value_of<T: Object + ?Sized>(self, object: &T) -> &str {
        match self {
            Self::Uid => object.uid(),
            Self::Namespace => object.namespace(),
        }
        .unwrap_or("")
    }
}

/// 64-bit FNV-1a of `value`'s bytes: the hash every sharded list and watch is computed with.
///
/// ```
/// use kcache_reflector::shard_hash;
/// assert_eq!(shard_hash(""), 0xcbf2_9ce4_8422_2325);
/// assert_eq!(shard_hash("a"), 0xaf63_dc4c_8601_ec8c);
/// ```
#[must_use]
pub fn shard_hash(value: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in value.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The end of the hash space, `2^64`: the exclusive end of the last range.
pub const HASH_SPACE_END: u128 = 1 << 64;

/// Which of `shards` equal ranges (see [`ShardSelector::shard`]) the hash `hash` falls in.
///
/// ```
/// use kcache_reflector::shard_index;
/// assert_eq!(shard_index(0, 4), 0);
/// assert_eq!(shard_index(0x4000_0000_0000_0000, 4), 1);
/// assert_eq!(shard_index(u64::MAX, 4), 3);
/// ```
#[must_use]
pub fn shard_index(hash: u64, shards: u32) -> u32 {
    let n = u128::from(shards.max(1));
    u32::try_from((u128::from(hash) * n) >> 64).unwrap_or(0)
}

/// A half-open range `[start, end)` of the hash space; `end` is at most `2^64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShardRange {
    /// The first hash in the range.
    pub start: u64,
    /// The first hash past the range (`2^64` for a range that runs to the end).
    pub end: u128,
}

impl ShardRange {
    /// Range `index` of `shards` (at least 1) equal ranges: `[ceil(i·2^64/n), ceil((i+1)·2^64/n))`,
    /// the hashes `h` with `floor(h·n / 2^64) == i`.
    fn of(index: u32, shards: u32) -> Self {
        let bound = |i: u32| (u128::from(i) * HASH_SPACE_END).div_ceil(u128::from(shards));
        Self {
            start: u64::try_from(bound(index)).unwrap_or(u64::MAX),
            end: bound(index + 1),
        }
    }

    /// Whether `hash` lies in the range.
    #[must_use]
    pub fn contains(&self, hash: u64) -> bool {
        hash >= self.start && u128::from(hash) < self.end
    }
}

/// Why a shard selector was refused: the same rules, and the same words, as the API server's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ShardSelectorError(String);

/// A `shardSelector`: one field and one or more hash ranges, any of which selects an object.
///
/// [`shard`](Self::shard) splits the hash space into equal ranges (powers of two split it
/// exactly); [`Display`](fmt::Display) writes the wire form the server parses, and
/// [`parse`](Self::parse) reads it with the server's rules.
///
/// ```
/// use kcache_reflector::{ShardField, ShardSelector};
///
/// let first = ShardSelector::shard(ShardField::Uid, 0, 2);
/// assert_eq!(
///     first.to_string(),
///     "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
/// );
/// let last = ShardSelector::shard(ShardField::Uid, 1, 2);
/// assert_eq!(ShardSelector::parse(&last.to_string()).as_ref(), Ok(&last));
/// assert!(first.contains_hash(0x7fff_ffff_ffff_ffff) && last.contains_hash(u64::MAX));
/// assert!(ShardSelector::parse("shardRange(object.metadata.name, '0x0', '0x1')").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShardSelector {
    field: ShardField,
    ranges: Vec<ShardRange>,
}

impl ShardSelector {
    /// The selector of `ranges` over `field`.
    ///
    /// # Errors
    ///
    /// No range, a range whose start is not below its end, or an end past `2^64`.
    pub fn new(field: ShardField, ranges: Vec<ShardRange>) -> Result<Self, ShardSelectorError> {
        if ranges.is_empty() {
            return Err(ShardSelectorError(
                "empty shard selector is not allowed; omit the parameter for unfiltered lists"
                    .to_owned(),
            ));
        }
        for r in &ranges {
            if u128::from(r.start) >= r.end || r.end > HASH_SPACE_END {
                return Err(ShardSelectorError(format!(
                    "shard range start {} must be less than end {}",
                    hex(u128::from(r.start)),
                    hex(r.end)
                )));
            }
        }
        Ok(Self { field, ranges })
    }

    /// Shard `index` of `shards` equal ranges (`index` taken modulo `shards`): hashes `h` with
    /// `floor(h * shards / 2^64) == index`, the same split as [`shard_index`].
    #[must_use]
    pub fn shard(field: ShardField, index: u32, shards: u32) -> Self {
        let n = shards.max(1);
        Self {
            field,
            ranges: vec![ShardRange::of(index % n, n)],
        }
    }

    /// The union of the shards `indexes` of `shards` equal ranges (adjacent ones merged);
    /// `None` when `indexes` is empty (a selector selects something).
    #[must_use]
    pub fn shards(field: ShardField, indexes: &[u32], shards: u32) -> Option<Self> {
        let n = shards.max(1);
        let mut held: Vec<u32> = indexes.iter().map(|i| i % n).collect();
        held.sort_unstable();
        held.dedup();
        if held.is_empty() {
            return None;
        }
        let mut ranges: Vec<ShardRange> = Vec::with_capacity(held.len());
        for i in held {
            let next = ShardRange::of(i, n);
            match ranges.last_mut() {
                Some(last) if last.end == u128::from(next.start) => last.end = next.end,
                _ => ranges.push(next),
            }
        }
        Some(Self { field, ranges })
    }

    /// The field hashed.
    #[must_use]
    pub fn field(&self) -> ShardField {
        self.field
    }

    /// The ranges, any of which selects.
    #[must_use]
    pub fn ranges(&self) -> &[ShardRange] {
        &self.ranges
    }

    /// Whether an object whose field hashes to `hash` is selected.
    #[must_use]
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.ranges.iter().any(|r| r.contains(hash))
    }

    /// Whether an object whose field is `value` is selected.
    #[must_use]
    pub fn matches_value(&self, value: &str) -> bool {
        self.contains_hash(shard_hash(value))
    }

    /// Whether `object` is selected.
    pub fn matches<T: Object + ?Sized>(&self, object: &T) -> bool {
        self.matches_value(self.field.value_of(object))
    }

    /// Reads a selector as the API server does: `shardRange(field, 'start', 'end')` calls joined
    /// by `||` (parentheses allowed), every call over the same field (`object.metadata.uid` or
    /// `object.metadata.namespace`), bounds `0x`-prefixed lowercase hex of exactly 16 digits
    /// (or `0x10000000000000000`, 2^64), each start below its end.
    ///
    /// # Errors
    ///
    /// Anything else, with the server's reason.
    pub fn parse(text: &str) -> Result<Self, ShardSelectorError> {
        let text = text.trim();
        if text.is_empty() {
            return Self::new(ShardField::Uid, Vec::new());
        }
        let tokens = tokenize(text)?;
        let mut parser = Parser {
            tokens: &tokens,
            at: 0,
        };
        let calls = parser.expr()?;
        if parser.at != tokens.len() {
            return Err(ShardSelectorError(format!(
                "unexpected {} after the selector",
                tokens[parser.at]
            )));
        }
        let field = calls[0].0;
        if let Some((other, _)) = calls.iter().find(|(f, _)| *f != field) {
            return Err(ShardSelectorError(format!(
                "all shard ranges must use the same field, got {:?} and {:?}",
                field.path(),
                other.path()
            )));
        }
        Self::new(field, calls.into_iter().map(|(_, r)| r).collect())
    }
}

fn hex(v: u128) -> String {
    if v >= HASH_SPACE_END {
        "0x10000000000000000".to_owned()
    } else {
        format!("0x{v:016x}")
    }
}

impl fmt::Display for ShardSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(" || ")?;
            }
            write!(
                f,
                "shardRange({}, '{}', '{}')",
                self.field.path(),
                hex(u128::from(r.start)),
                hex(r.end)
            )?;
        }
        Ok(())
    }
}

impl std::str::FromStr for ShardSelector {
    type Err = ShardSelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    Num(String),
    Str(String),
    Dot,
    Comma,
    Open,
    Close,
    Or,
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ident(s) => write!(f, "identifier {s:?}"),
            Self::Num(s) => write!(f, "number {s:?}"),
            Self::Str(s) => write!(f, "string {s:?}"),
            Self::Dot => f.write_str("'.'"),
            Self::Comma => f.write_str("','"),
            Self::Open => f.write_str("'('"),
            Self::Close => f.write_str("')'"),
            Self::Or => f.write_str("'||'"),
        }
    }
}

fn tokenize(text: &str) -> Result<Vec<Token>, ShardSelectorError> {
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '.' => tokens.push(Token::Dot),
            ',' => tokens.push(Token::Comma),
            '(' => tokens.push(Token::Open),
            ')' => tokens.push(Token::Close),
            '|' if chars.next_if(|(_, c)| *c == '|').is_some() => tokens.push(Token::Or),
            '\'' | '"' => {
                let mut s = String::new();
                loop {
                    match chars.next() {
                        Some((_, q)) if q == c => break,
                        Some((_, '\\')) => {
                            return Err(ShardSelectorError(
                                "CEL parse error: escapes are not supported in shard bounds"
                                    .to_owned(),
                            ));
                        }
                        Some((_, ch)) => s.push(ch),
                        None => {
                            return Err(ShardSelectorError(
                                "CEL parse error: unterminated string literal".to_owned(),
                            ));
                        }
                    }
                }
                tokens.push(Token::Str(s));
            }
            c if c.is_ascii_alphanumeric() || c == '_' => {
                let mut s = String::from(c);
                while let Some((_, ch)) =
                    chars.next_if(|(_, ch)| ch.is_ascii_alphanumeric() || *ch == '_')
                {
                    s.push(ch);
                }
                tokens.push(if c.is_ascii_digit() {
                    Token::Num(s)
                } else {
                    Token::Ident(s)
                });
            }
            other => {
                return Err(ShardSelectorError(format!(
                    "CEL parse error: unexpected character {other:?} at offset {at}"
                )));
            }
        }
    }
    Ok(tokens)
}

struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
}

impl Parser<'_> {
    fn next(&mut self) -> Option<&Token> {
        let t = self.tokens.get(self.at);
        self.at += 1;
        t
    }

    fn expect(&mut self, want: &Token, what: &str) -> Result<(), ShardSelectorError> {
        match self.next() {
            Some(t) if t == want => Ok(()),
            Some(t) => Err(ShardSelectorError(format!(
                "CEL parse error: expected {what}, got {t}"
            ))),
            None => Err(ShardSelectorError(format!(
                "CEL parse error: expected {what}, got the end"
            ))),
        }
    }

    /// `term ('||' term)*`.
    fn expr(&mut self) -> Result<Vec<(ShardField, ShardRange)>, ShardSelectorError> {
        let mut calls = self.term()?;
        while self.tokens.get(self.at) == Some(&Token::Or) {
            self.at += 1;
            calls.extend(self.term()?);
        }
        Ok(calls)
    }

    /// `'(' expr ')' | shardRange(path, 'start', 'end')`.
    fn term(&mut self) -> Result<Vec<(ShardField, ShardRange)>, ShardSelectorError> {
        match self.next().cloned() {
            Some(Token::Open) => {
                let calls = self.expr()?;
                self.expect(&Token::Close, "')'")?;
                Ok(calls)
            }
            Some(Token::Ident(name)) if self.tokens.get(self.at) == Some(&Token::Open) => {
                if name != "shardRange" {
                    return Err(ShardSelectorError(format!(
                        "unsupported function {name:?}; only shardRange() and || are allowed"
                    )));
                }
                self.at += 1;
                Ok(vec![self.shard_range()?])
            }
            Some(t) => Err(ShardSelectorError(format!(
                "unexpected {t}; expected shardRange() call or || operator"
            ))),
            None => Err(ShardSelectorError(
                "CEL parse error: the selector ends too early".to_owned(),
            )),
        }
    }

    fn shard_range(&mut self) -> Result<(ShardField, ShardRange), ShardSelectorError> {
        let mut path = String::new();
        loop {
            match self.next() {
                Some(Token::Ident(part)) => path.push_str(part),
                _ => {
                    return Err(ShardSelectorError(
                        "shardRange() first argument: expected field path (e.g. object.metadata.uid)"
                            .to_owned(),
                    ));
                }
            }
            if self.tokens.get(self.at) == Some(&Token::Dot) {
                self.at += 1;
                path.push('.');
            } else {
                break;
            }
        }
        let field = match path.as_str() {
            "object.metadata.uid" => ShardField::Uid,
            "object.metadata.namespace" => ShardField::Namespace,
            _ => {
                return Err(ShardSelectorError(format!(
                    "unsupported field path {path:?}; supported: object.metadata.uid, object.metadata.namespace"
                )));
            }
        };
        self.expect(&Token::Comma, "','")?;
        let start = self.bound("hexStart")?;
        self.expect(&Token::Comma, "','")?;
        let end = self.bound("hexEnd")?;
        self.expect(&Token::Close, "')'")?;
        if start >= end {
            return Err(ShardSelectorError(format!(
                "shard range start {} must be less than end {}",
                hex(start),
                hex(end)
            )));
        }
        let start = u64::try_from(start)
            .map_err(|_| ShardSelectorError("hexStart: 2^64 cannot start a range".to_owned()))?;
        Ok((field, ShardRange { start, end }))
    }

    fn bound(&mut self, name: &str) -> Result<u128, ShardSelectorError> {
        let Some(Token::Str(s)) = self.next().cloned() else {
            return Err(ShardSelectorError(format!(
                "{name} must be a string literal (e.g. '0xff')"
            )));
        };
        let Some(digits) = s.strip_prefix("0x") else {
            return Err(ShardSelectorError(format!(
                "{name} must have '0x' prefix, got {s:?}"
            )));
        };
        if digits.is_empty() {
            return Err(ShardSelectorError(format!(
                "{name}: hex value is required after '0x'"
            )));
        }
        if digits.len() > 17 {
            return Err(ShardSelectorError(format!(
                "{name}: hex value too long ({} chars, max 17): {digits:?}",
                digits.len()
            )));
        }
        if let Some(c) = digits
            .chars()
            .find(|c| !c.is_ascii_digit() && !('a'..='f').contains(c))
        {
            return Err(ShardSelectorError(format!(
                "{name}: invalid hex character {c:?} in {s:?}"
            )));
        }
        if digits.len() == 17 && s != "0x10000000000000000" {
            return Err(ShardSelectorError(format!(
                "{name}: 17-digit hex value must be '0x10000000000000000' (2^64), got {s:?}"
            )));
        }
        if digits.len() < 16 {
            return Err(ShardSelectorError(format!(
                "{name} must be a 0x-prefixed 16-digit hex value, got {s:?} (did you mean \"0x{digits:0>16}\"?)"
            )));
        }
        u128::from_str_radix(digits, 16).map_err(|e| ShardSelectorError(format!("{name}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_1a_fixed_vectors() {
        // The published FNV-1a 64 test vectors.
        assert_eq!(shard_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(shard_hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(shard_hash("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn equal_shards_cover_the_space_once() {
        for n in [1_u32, 2, 3, 4, 7, 8, 16] {
            let sels: Vec<_> = (0..n)
                .map(|i| ShardSelector::shard(ShardField::Uid, i, n))
                .collect();
            assert_eq!(sels[0].ranges()[0].start, 0);
            assert_eq!(sels[n as usize - 1].ranges()[0].end, HASH_SPACE_END);
            for w in sels.windows(2) {
                assert_eq!(u128::from(w[1].ranges()[0].start), w[0].ranges()[0].end);
            }
            for h in [
                0,
                1,
                u64::MAX / 3,
                u64::MAX / 2,
                u64::MAX / 2 + 1,
                u64::MAX - 1,
                u64::MAX,
            ] {
                let owners: Vec<u32> = (0..n)
                    .filter(|&i| sels[i as usize].contains_hash(h))
                    .collect();
                assert_eq!(owners, [shard_index(h, n)], "hash {h:#x} of {n} shards");
            }
        }
    }

    #[test]
    fn wire_form_round_trips_and_merges_adjacent_shards() {
        assert_eq!(ShardSelector::shards(ShardField::Uid, &[], 4), None);
        let s = ShardSelector::shards(ShardField::Namespace, &[3, 0, 1], 4).unwrap();
        assert_eq!(
            s.to_string(),
            "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000') \
             || shardRange(object.metadata.namespace, '0xc000000000000000', '0x10000000000000000')"
        );
        assert_eq!(ShardSelector::parse(&s.to_string()), Ok(s));
        let spaced = ShardSelector::parse(
            " ( shardRange( object . metadata . uid ,\"0x0000000000000000\",'0x10000000000000000' ) ) ",
        )
        .unwrap();
        assert_eq!(
            spaced.ranges(),
            [ShardRange {
                start: 0,
                end: HASH_SPACE_END
            }]
        );
    }

    #[test]
    fn the_servers_refusals() {
        for (bad, why) in [
            ("", "empty shard selector"),
            (
                "shardRange(object.metadata.name, '0x0000000000000000', '0x1000000000000000')",
                "unsupported field path",
            ),
            (
                "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
                "did you mean \"0x0000000000000000\"",
            ),
            (
                "shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')",
                "must be less than",
            ),
            (
                "shardRange(object.metadata.uid, '0x000000000000000G', '0x8000000000000000')",
                "invalid hex character",
            ),
            (
                "shardRange(object.metadata.uid, '0x11000000000000000', '0x8000000000000000')",
                "17-digit",
            ),
            (
                "shardRange(object.metadata.uid, '0000000000000000', '0x8000000000000000')",
                "'0x' prefix",
            ),
            (
                "shardRange(object.metadata.uid, '0x0000000000000000')",
                "expected ','",
            ),
            (
                "hashRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
                "unsupported function",
            ),
            (
                "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') && shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
                "unexpected character",
            ),
            (
                "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
                "same field",
            ),
            (
                "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'",
                "expected ')'",
            ),
            (
                "shardRange(object.metadata.uid, 0x0000000000000000, '0x8000000000000000')",
                "string literal",
            ),
        ] {
            let err = ShardSelector::parse(bad).expect_err(bad).to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
