//! A serde `Deserializer` that reads a protobuf message by the field table, so that any type
//! that deserializes from Kubernetes' JSON (k8s-openapi's `Pod`, a hand-written serde type,
//! `serde_json::Value`) deserializes from the protobuf form of the same object, unchanged.
//!
//! Each message is presented as a map of its fields under their JSON names; repeated fields as
//! sequences, `map<string, V>` fields as maps, and the types whose JSON form is not an object
//! of their fields ([`Special`]) as JSON writes them: `Time` as RFC 3339, `Quantity` as its
//! string, `IntOrString` as a number or a string, `RawExtension` and `FieldsV1` as the JSON they
//! hold, `bytes` as base64. Fields the table does not know (a newer server) are skipped, as
//! protobuf readers do.
//!
//! Messages are read in one pass, in the order their fields arrive. A repeated field split by
//! other fields, or a field sent twice, which Kubernetes' encoder never writes but protobuf
//! allows, makes the pass give up; [`from_message`] then reads the object again, gathering each
//! message's fields first.

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, forward_to_deserialize_any};

use crate::table::{Field, Kind, MapValue, Message, Special, message};
use crate::wire::{Reader, Wire};
use crate::{Error, MAX_DEPTH, base64, time};

/// What the three deserializers share: a newtype is its content, an ignored value is already
/// delimited (nothing to read), and every other hint is `deserialize_any`, the table telling
/// what each value is.
macro_rules! shared_methods {
    () => {
        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Error> {
            visitor.visit_newtype_struct(self)
        }

        fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.visit_unit()
        }

        /// A string is a unit variant and a one-entry map a variant with its value, as in
        /// JSON (`restartPolicy: Always` into a Rust enum).
        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _variants: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Error> {
            self.deserialize_any(EnumVisitor(visitor))
        }

        forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            unit unit_struct seq tuple tuple_struct map struct identifier
        }
    };
}

/// Presents the value a protobuf field holds to an enum's visitor as `serde_json` would: a
/// string as the unit variant it names, a map of one entry as a variant and its value.
struct EnumVisitor<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for EnumVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.expecting(f)
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        self.0
            .visit_enum(serde::de::value::BorrowedStrDeserializer::new(v))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<V::Value, E> {
        self.0
            .visit_enum(serde::de::value::StringDeserializer::new(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<V::Value, E> {
        self.0
            .visit_enum(serde::de::value::StringDeserializer::new(v))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0
            .visit_enum(serde::de::value::MapAccessDeserializer::new(map))
    }
}

/// An object's `apiVersion` and `kind`, which the protobuf form keeps outside the message
/// (in the envelope, or implied by the list): presented as the message's first two fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeMeta<'a> {
    /// `apiVersion`.
    pub api_version: &'a str,
    /// `kind`.
    pub kind: &'a str,
}

/// How a decode runs.
#[derive(Debug, Clone, Copy)]
struct Ctx {
    /// Gather each message's fields before presenting them (the second, tolerant pass).
    grouped: bool,
    /// How deep the current message is nested.
    depth: usize,
}

impl Ctx {
    fn deeper(self) -> Result<Self, Error> {
        if self.depth >= MAX_DEPTH {
            return Err(Error::TooDeep(MAX_DEPTH));
        }
        Ok(Self {
            depth: self.depth + 1,
            ..self
        })
    }
}

/// Deserializes a `T` from the protobuf `bytes` of `message`, with `type_meta` presented as
/// its `apiVersion` and `kind`.
///
/// # Errors
/// Malformed protobuf, a field whose wire type does not fit the table, or whatever `T`
/// refuses.
pub fn from_message<'de, T: Deserialize<'de>>(
    bytes: &'de [u8],
    message: &'static Message,
    type_meta: Option<TypeMeta<'de>>,
) -> Result<T, Error> {
    from_message_seed(bytes, message, type_meta, std::marker::PhantomData::<T>)
}

/// Deserializes the protobuf `bytes` of `message` with `seed` (a serde `DeserializeSeed`: a
/// JSON pointer's seek, say, that reads one value and scans past the rest), with `type_meta`
/// presented as its `apiVersion` and `kind`. The seed is cloned when the first pass gives up
/// on a message whose fields arrive out of order, for the second.
///
/// ```
/// use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
/// use serde_json::json;
///
/// /// Counts an object's top-level fields, reading none of them.
/// #[derive(Clone, Copy)]
/// struct CountFields;
///
/// impl<'de> DeserializeSeed<'de> for CountFields {
///     type Value = usize;
///     fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
///         d.deserialize_map(self)
///     }
/// }
///
/// impl<'de> Visitor<'de> for CountFields {
///     type Value = usize;
///     fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("an object")
///     }
///     fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
///         let mut count = 0;
///         while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
///             count += 1;
///         }
///         Ok(count)
///     }
/// }
///
/// let message = kcache_protobuf::table::message_for_kind("v1", "ConfigMap").unwrap();
/// let config_map = json!({"metadata": {"name": "a"}, "data": {"k": "v"}});
/// let bytes = kcache_protobuf::encode::to_vec(&config_map, message)?;
/// let fields = kcache_protobuf::de::from_message_seed(&bytes, message, None, CountFields)?;
/// assert_eq!(fields, 2);
/// # Ok::<(), kcache_protobuf::Error>(())
/// ```
///
/// # Errors
/// Malformed protobuf, a field whose wire type does not fit the table, or whatever `seed`
/// refuses.
pub fn from_message_seed<'de, S: DeserializeSeed<'de> + Clone>(
    bytes: &'de [u8],
    message: &'static Message,
    type_meta: Option<TypeMeta<'de>>,
    seed: S,
) -> Result<S::Value, Error> {
    let first = MessageDe {
        bytes,
        message,
        type_meta,
        ctx: Ctx {
            grouped: false,
            depth: 0,
        },
    };
    match seed.clone().deserialize(first) {
        Err(Error::Unordered(_)) => seed.deserialize(MessageDe {
            bytes,
            message,
            type_meta,
            ctx: Ctx {
                grouped: true,
                depth: 0,
            },
        }),
        other => other,
    }
}

/// The deserializer of one message.
struct MessageDe<'de> {
    bytes: &'de [u8],
    message: &'static Message,
    type_meta: Option<TypeMeta<'de>>,
    ctx: Ctx,
}

/// The fields numbered `1` (as a varint) and `2`, of a small special message.
fn two_varints(message: &'static Message, bytes: &[u8]) -> Result<(u64, u64), Error> {
    let mut reader = Reader::new(bytes);
    let (mut one, mut two) = (0, 0);
    while let Some((number, wire)) = reader.field()? {
        match (number, wire) {
            (1, Wire::Varint(v)) => one = v,
            (2, Wire::Varint(v)) => two = v,
            (1 | 2, other) => return Err(mismatch(message, "", other)),
            _ => {}
        }
    }
    Ok((one, two))
}

/// The length-delimited field numbered `number` of a small special message (last one wins).
fn len_field<'de>(
    message: &'static Message,
    bytes: &'de [u8],
    number: u32,
) -> Result<Option<&'de [u8]>, Error> {
    let mut reader = Reader::new(bytes);
    let mut found = None;
    while let Some((n, wire)) = reader.field()? {
        if n == number {
            match wire {
                Wire::Len(b) => found = Some(b),
                other => return Err(mismatch(message, "", other)),
            }
        }
    }
    Ok(found)
}

/// Whether `wire` is the empty value of its type (`""`, `0`, `false`).
fn is_zero(wire: Wire<'_>) -> bool {
    matches!(wire, Wire::Len([]) | Wire::Varint(0))
}

fn mismatch(message: &'static Message, field: &'static str, wire: Wire<'_>) -> Error {
    Error::Mismatch {
        message: message.name,
        field,
        wire_type: wire.wire_type(),
    }
}

fn utf8<'de>(
    message: &'static Message,
    field: &'static str,
    bytes: &'de [u8],
) -> Result<&'de str, Error> {
    std::str::from_utf8(bytes).map_err(|_| Error::Utf8 {
        message: message.name,
        field,
    })
}

#[allow(
    clippy::cast_possible_wrap,
    clippy::cast_possible_truncation,
    reason = "protobuf's int64/int32"
)]
fn int64(v: u64) -> i64 {
    v as i64
}

#[allow(
    clippy::cast_possible_truncation,
    reason = "protobuf's int32: the low 32 bits"
)]
fn int32(v: u64) -> i64 {
    i64::from(int64(v) as i32)
}

impl MessageDe<'_> {
    /// Whether the JSON form of this message is `null` (an empty `Time`, `RawExtension`).
    fn is_null(&self) -> Result<bool, Error> {
        Ok(match self.message.special {
            Special::Time | Special::MicroTime => self.bytes.is_empty(),
            Special::RawJson => {
                len_field(self.message, self.bytes, 1)?.is_none_or(<[u8]>::is_empty)
            }
            _ => false,
        })
    }
}

impl<'de> MessageDe<'de> {
    /// A [`Special::StringList`]: its field 1 strings as a sequence.
    fn string_list<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let message = self.message;
        let mut reader = Reader::new(self.bytes);
        let mut items = Vec::new();
        while let Some((number, wire)) = reader.field()? {
            if number == 1 {
                items.push(wire);
            }
        }
        visitor.visit_seq(SeqOf {
            left: items.len(),
            items: items.into_iter(),
            reader: None,
            owner: message,
            field: &STRING_ITEM,
            kind: Kind::String,
            ctx: self.ctx,
            packed: None,
        })
    }
}

impl<'de> Deserializer<'de> for MessageDe<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let message = self.message;
        match message.special {
            Special::None => {
                if self.ctx.grouped {
                    visitor.visit_map(GroupedAccess::new(
                        self.bytes,
                        message,
                        self.type_meta,
                        self.ctx,
                    )?)
                } else {
                    visitor.visit_map(StreamAccess {
                        outer: Level::new(message, self.bytes),
                        inline: None,
                        type_meta: self.type_meta,
                        prefix: 0,
                        pending: None,
                        ctx: self.ctx,
                    })
                }
            }
            Special::Time => {
                if self.bytes.is_empty() {
                    return visitor.visit_unit();
                }
                let (seconds, _) = two_varints(message, self.bytes)?;
                let mut buf = [0u8; time::RFC3339_MAX];
                match time::write_rfc3339(&mut buf, int64(seconds), None) {
                    Some(text) => visitor.visit_str(text),
                    None => visitor.visit_string(time::format_rfc3339(int64(seconds), None)),
                }
            }
            Special::MicroTime => {
                if self.bytes.is_empty() {
                    return visitor.visit_unit();
                }
                let (seconds, nanos) = two_varints(message, self.bytes)?;
                let micros = u32::try_from(int32(nanos).clamp(0, 999_999_999)).unwrap_or(0) / 1000;
                let mut buf = [0u8; time::RFC3339_MAX];
                match time::write_rfc3339(&mut buf, int64(seconds), Some(micros)) {
                    Some(text) => visitor.visit_str(text),
                    None => {
                        visitor.visit_string(time::format_rfc3339(int64(seconds), Some(micros)))
                    }
                }
            }
            Special::Duration => {
                let (nanos, _) = two_varints(message, self.bytes)?;
                visitor.visit_string(time::format_duration(int64(nanos)))
            }
            Special::Quantity => {
                let text = len_field(message, self.bytes, 1)?.unwrap_or_default();
                visitor.visit_borrowed_str(utf8(message, "string", text)?)
            }
            Special::IntOrString => {
                let mut reader = Reader::new(self.bytes);
                let (mut kind, mut int, mut text) = (0, 0, &b""[..]);
                while let Some((number, wire)) = reader.field()? {
                    match (number, wire) {
                        (1, Wire::Varint(v)) => kind = v,
                        (2, Wire::Varint(v)) => int = v,
                        (3, Wire::Len(b)) => text = b,
                        (1..=3, other) => return Err(mismatch(message, "", other)),
                        _ => {}
                    }
                }
                if kind == 1 {
                    visitor.visit_borrowed_str(utf8(message, "strVal", text)?)
                } else {
                    visitor.visit_i64(int32(int))
                }
            }
            Special::RawJson => match len_field(message, self.bytes, 1)? {
                None | Some([]) => visitor.visit_unit(),
                Some(raw) => serde_json::Deserializer::from_slice(raw)
                    .deserialize_any(visitor)
                    .map_err(|source| Error::RawJson {
                        message: message.name,
                        source,
                    }),
            },
            Special::StringList => self.string_list(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.is_null()? {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    shared_methods!();
}

/// The field an element of a [`Special::StringList`] stands for.
static STRING_ITEM: Field = Field {
    number: 1,
    json: "items",
    kind: Kind::String,
    repeated: true,
    required: false,
    inline: false,
    omit_zero: false,
};

/// A field's value, as the message access found it.
enum Pending<'de> {
    /// One value.
    Single(Wire<'de>),
    /// A run of consecutive tag-prefixed values of one repeated or map field, and how many.
    Run(&'de [u8], usize),
    /// The gathered values of a repeated or map field (the tolerant pass).
    Items(Vec<Wire<'de>>),
    /// A string presented by the access itself (`apiVersion`, `kind`).
    Str(&'de str),
}

/// One message being read in one pass.
struct Level<'de> {
    message: &'static Message,
    reader: Reader<'de>,
    hint: usize,
    /// Field numbers below 128 already presented.
    seen: u128,
}

impl<'de> Level<'de> {
    fn new(message: &'static Message, bytes: &'de [u8]) -> Self {
        Self {
            message,
            reader: Reader::new(bytes),
            hint: 0,
            seen: 0,
        }
    }

    /// The next known field: (field, value), skipping unknown ones; `None` at the end.
    /// A field seen before (split or sent twice) is [`Error::Unordered`].
    fn next(&mut self) -> Result<Option<(&'static Field, Pending<'de>)>, Error> {
        loop {
            let start = self.reader.position();
            let Some((number, wire)) = self.reader.field()? else {
                return Ok(None);
            };
            let Some((i, field)) = self.message.field(number, self.hint) else {
                continue;
            };
            self.hint = i + 1;
            if number < 128 {
                let bit = 1u128 << number;
                if self.seen & bit != 0 {
                    return Err(Error::Unordered(number));
                }
                self.seen |= bit;
            }
            let value = if field.repeated || matches!(field.kind, Kind::Map(_)) {
                let mut count = 1;
                loop {
                    let at = self.reader.position();
                    match self.reader.field()? {
                        Some((n, _)) if n == number => count += 1,
                        Some(_) => {
                            self.reader.rewind(at);
                            break;
                        }
                        None => break,
                    }
                }
                Pending::Run(self.reader.since(start), count)
            } else {
                if field.omit_zero && is_zero(wire) {
                    continue;
                }
                Pending::Single(wire)
            };
            return Ok(Some((field, value)));
        }
    }
}

/// A field ready to be presented: the message it belongs to, the field, its value.
type Entry<'de> = (&'static Message, &'static Field, Pending<'de>);

/// Presents `entry`'s name as the next key, keeping the entry for its value.
fn present_key<'de, K: DeserializeSeed<'de>>(
    pending: &mut Option<Entry<'de>>,
    entry: Entry<'de>,
    seed: K,
) -> Result<Option<K::Value>, Error> {
    let name = entry.1.json;
    *pending = Some(entry);
    seed.deserialize(BorrowedStrDeserializer::new(name))
        .map(Some)
}

/// Presents the value of the key presented last.
fn present_value<'de, V: DeserializeSeed<'de>>(
    pending: &mut Option<Entry<'de>>,
    ctx: Ctx,
    seed: V,
) -> Result<V::Value, Error> {
    let (owner, field, value) = pending
        .take()
        .ok_or_else(|| Error::Custom("value asked for before its key".to_owned()))?;
    seed.deserialize(ValueDe {
        owner,
        field,
        value,
        ctx,
    })
}

/// The one-pass access to a message's fields, an inlined message's fields among them.
struct StreamAccess<'de> {
    outer: Level<'de>,
    /// The inlined message being read, if any (one level: inlined messages inline nothing).
    inline: Option<Level<'de>>,
    type_meta: Option<TypeMeta<'de>>,
    /// How many of `apiVersion`, `kind` were presented.
    prefix: u8,
    pending: Option<Entry<'de>>,
    ctx: Ctx,
}

/// The pseudo-fields for `apiVersion` and `kind`.
static API_VERSION: Field = Field {
    number: 0,
    json: "apiVersion",
    kind: Kind::String,
    repeated: false,
    required: false,
    inline: false,
    omit_zero: false,
};
static KIND: Field = Field {
    number: 0,
    json: "kind",
    kind: Kind::String,
    repeated: false,
    required: false,
    inline: false,
    omit_zero: false,
};

/// Presents `apiVersion`, then `kind`, from `type_meta`; `None` once both were.
fn next_prefix<'de>(
    type_meta: Option<TypeMeta<'de>>,
    prefix: &mut u8,
) -> Option<(&'static Field, Pending<'de>)> {
    let tm = type_meta?;
    loop {
        match *prefix {
            0 => {
                *prefix = 1;
                if !tm.api_version.is_empty() {
                    return Some((&API_VERSION, Pending::Str(tm.api_version)));
                }
            }
            1 => {
                *prefix = 2;
                if !tm.kind.is_empty() {
                    return Some((&KIND, Pending::Str(tm.kind)));
                }
            }
            _ => return None,
        }
    }
}

impl<'de> MapAccess<'de> for StreamAccess<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if let Some((field, value)) = next_prefix(self.type_meta, &mut self.prefix) {
            return present_key(&mut self.pending, (self.outer.message, field, value), seed);
        }
        loop {
            let (owner, next) = match self.inline.as_mut() {
                Some(level) => (level.message, level.next()?),
                None => (self.outer.message, self.outer.next()?),
            };
            let Some((field, value)) = next else {
                if self.inline.take().is_some() {
                    continue;
                }
                return Ok(None);
            };
            if field.inline {
                let (Kind::Message(inner), Pending::Single(Wire::Len(bytes))) =
                    (field.kind, &value)
                else {
                    return Err(Error::Mismatch {
                        message: owner.name,
                        field: field.json,
                        wire_type: 0,
                    });
                };
                if self.inline.is_some() {
                    // An inlined message inlining another: the tolerant pass reads it.
                    return Err(Error::Unordered(field.number));
                }
                self.inline = Some(Level::new(message(inner), bytes));
                continue;
            }
            return present_key(&mut self.pending, (owner, field, value), seed);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        present_value(&mut self.pending, self.ctx, seed)
    }
}

/// The tolerant access: every field gathered first (repeated values joined, a single field
/// sent twice read as its last value, inlined messages' fields lifted into this one).
struct GroupedAccess<'de> {
    message: &'static Message,
    entries: std::vec::IntoIter<Entry<'de>>,
    type_meta: Option<TypeMeta<'de>>,
    prefix: u8,
    pending: Option<Entry<'de>>,
    ctx: Ctx,
}

impl<'de> GroupedAccess<'de> {
    fn new(
        bytes: &'de [u8],
        message: &'static Message,
        type_meta: Option<TypeMeta<'de>>,
        ctx: Ctx,
    ) -> Result<Self, Error> {
        let mut entries = Vec::new();
        gather(bytes, message, &mut entries, ctx)?;
        Ok(Self {
            message,
            entries: entries.into_iter(),
            type_meta,
            prefix: 0,
            pending: None,
            ctx,
        })
    }
}

/// Gathers the fields of `bytes` (a `message`) into `entries`, in first-seen order.
fn gather<'de>(
    bytes: &'de [u8],
    message: &'static Message,
    entries: &mut Vec<Entry<'de>>,
    ctx: Ctx,
) -> Result<(), Error> {
    let ctx = ctx.deeper()?;
    let mut reader = Reader::new(bytes);
    let mut hint = 0;
    while let Some((number, wire)) = reader.field()? {
        let Some((i, field)) = message.field(number, hint) else {
            continue;
        };
        hint = i + 1;
        if field.omit_zero && is_zero(wire) {
            continue;
        }
        if field.inline {
            let (Kind::Message(inner), Wire::Len(b)) = (field.kind, wire) else {
                return Err(mismatch(message, field.json, wire));
            };
            gather(b, crate::table::message(inner), entries, ctx)?;
            continue;
        }
        let existing = entries
            .iter_mut()
            .find(|(m, f, _)| std::ptr::eq(*m, message) && f.number == number);
        let many = field.repeated || matches!(field.kind, Kind::Map(_));
        match (existing, many) {
            (Some((_, _, Pending::Items(items))), true) => items.push(wire),
            (Some((_, _, slot)), false) => *slot = Pending::Single(wire),
            (_, true) => entries.push((message, field, Pending::Items(vec![wire]))),
            (_, false) => entries.push((message, field, Pending::Single(wire))),
        }
    }
    Ok(())
}

impl<'de> MapAccess<'de> for GroupedAccess<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if let Some((field, value)) = next_prefix(self.type_meta, &mut self.prefix) {
            return present_key(&mut self.pending, (self.message, field, value), seed);
        }
        match self.entries.next() {
            None => Ok(None),
            Some(entry) => present_key(&mut self.pending, entry, seed),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        present_value(&mut self.pending, self.ctx, seed)
    }
}

/// The deserializer of one field's whole value (a sequence for a repeated field).
struct ValueDe<'de> {
    owner: &'static Message,
    field: &'static Field,
    value: Pending<'de>,
    ctx: Ctx,
}

impl<'de> ValueDe<'de> {
    fn items(self) -> SeqOf<'de> {
        let (items, reader, count) = match self.value {
            Pending::Items(items) => {
                let n = items.len();
                (items, None, n)
            }
            Pending::Run(run, n) => (Vec::new(), Some(Reader::new(run)), n),
            Pending::Single(w) => (vec![w], None, 1),
            Pending::Str(_) => (Vec::new(), None, 0),
        };
        SeqOf {
            items: items.into_iter(),
            reader,
            left: count,
            owner: self.owner,
            field: self.field,
            kind: self.field.kind,
            ctx: self.ctx,
            packed: None,
        }
    }

    fn single(&self) -> Option<ElemDe<'de>> {
        match self.value {
            Pending::Single(wire) => Some(ElemDe {
                owner: self.owner,
                field: self.field,
                kind: self.field.kind,
                wire,
                ctx: self.ctx,
            }),
            _ => None,
        }
    }
}

impl<'de> Deserializer<'de> for ValueDe<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if let Pending::Str(s) = self.value {
            return visitor.visit_borrowed_str(s);
        }
        if let Kind::Map(value) = self.field.kind {
            let items = self.items();
            return visitor.visit_map(MapOf {
                items,
                value,
                pending: None,
            });
        }
        if self.field.repeated {
            return visitor.visit_seq(self.items());
        }
        match self.single() {
            Some(elem) => elem.deserialize_any(visitor),
            None => Err(Error::Custom(format!(
                "field `{}` has no value",
                self.field.json
            ))),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.single() {
            Some(elem) => elem.deserialize_option(visitor),
            None => visitor.visit_some(self),
        }
    }

    shared_methods!();
}

/// The elements of a repeated field (or the entries of a map field).
struct SeqOf<'de> {
    items: std::vec::IntoIter<Wire<'de>>,
    /// Values (entries) still to come, as counted when the field was found (packed numbers
    /// count as one).
    left: usize,
    /// A run of tag-prefixed values still to read.
    reader: Option<Reader<'de>>,
    owner: &'static Message,
    field: &'static Field,
    kind: Kind,
    ctx: Ctx,
    /// Packed numbers being read.
    packed: Option<Reader<'de>>,
}

impl<'de> SeqOf<'de> {
    fn next_wire(&mut self) -> Result<Option<Wire<'de>>, Error> {
        self.left = self.left.saturating_sub(1);
        if let Some(w) = self.items.next() {
            return Ok(Some(w));
        }
        match self.reader.as_mut() {
            Some(r) => Ok(r.field()?.map(|(_, w)| w)),
            None => Ok(None),
        }
    }
}

impl<'de> SeqAccess<'de> for SeqOf<'de> {
    type Error = Error;

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        // Packed numbers: one length-delimited value holding many varints, read in place.
        if let Some(packed) = self.packed.as_mut() {
            if !packed.is_empty() {
                let wire = Wire::Varint(packed.varint()?);
                return self.element(seed, wire).map(Some);
            }
            self.packed = None;
        }
        let Some(wire) = self.next_wire()? else {
            return Ok(None);
        };
        if let (Wire::Len(bytes), Kind::Int32 | Kind::Int64 | Kind::Bool) = (wire, self.kind) {
            self.packed = Some(Reader::new(bytes));
            return self.next_element_seed(seed);
        }
        self.element(seed, wire).map(Some)
    }
}

impl<'de> SeqOf<'de> {
    fn element<T: DeserializeSeed<'de>>(
        &self,
        seed: T,
        wire: Wire<'de>,
    ) -> Result<T::Value, Error> {
        seed.deserialize(ElemDe {
            owner: self.owner,
            field: self.field,
            kind: self.kind,
            wire,
            ctx: self.ctx,
        })
    }
}

/// The entries of a `map<string, V>` field.
struct MapOf<'de> {
    items: SeqOf<'de>,
    value: MapValue,
    pending: Option<Wire<'de>>,
}

impl<'de> MapAccess<'de> for MapOf<'de> {
    type Error = Error;

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.left)
    }

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some(entry) = self.items.next_wire()? else {
            return Ok(None);
        };
        let Wire::Len(bytes) = entry else {
            return Err(mismatch(self.items.owner, self.items.field.json, entry));
        };
        let mut reader = Reader::new(bytes);
        let (mut key, mut value) = (&b""[..], None);
        while let Some((number, wire)) = reader.field()? {
            match (number, wire) {
                (1, Wire::Len(k)) => key = k,
                (2, w) => value = Some(w),
                (1, other) => return Err(mismatch(self.items.owner, self.items.field.json, other)),
                _ => {}
            }
        }
        self.pending = Some(value.unwrap_or(Wire::Len(&[])));
        let key = utf8(self.items.owner, self.items.field.json, key)?;
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let wire = self.pending.take().unwrap_or(Wire::Len(&[]));
        let kind = match self.value {
            MapValue::String => Kind::String,
            MapValue::Bytes => Kind::Bytes,
            MapValue::Message(m) => Kind::Message(m),
        };
        seed.deserialize(ElemDe {
            owner: self.items.owner,
            field: self.items.field,
            kind,
            wire,
            ctx: self.items.ctx,
        })
    }
}

/// The deserializer of one wire value of a known kind.
struct ElemDe<'de> {
    owner: &'static Message,
    field: &'static Field,
    kind: Kind,
    wire: Wire<'de>,
    ctx: Ctx,
}

impl<'de> ElemDe<'de> {
    fn message(&self) -> Result<Option<MessageDe<'de>>, Error> {
        match (self.kind, self.wire) {
            (Kind::Message(m), Wire::Len(bytes)) => Ok(Some(MessageDe {
                bytes,
                message: message(m),
                type_meta: None,
                ctx: self.ctx.deeper()?,
            })),
            (Kind::Message(_), w) => Err(mismatch(self.owner, self.field.json, w)),
            _ => Ok(None),
        }
    }
}

impl<'de> Deserializer<'de> for ElemDe<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let bad = || mismatch(self.owner, self.field.json, self.wire);
        match (self.kind, self.wire) {
            (Kind::String, Wire::Len(b)) => {
                visitor.visit_borrowed_str(utf8(self.owner, self.field.json, b)?)
            }
            (Kind::Bytes, Wire::Len(b)) => visitor.visit_string(base64::encode(b)),
            (Kind::Int32, Wire::Varint(v)) => visitor.visit_i64(int32(v)),
            (Kind::Int64, Wire::Varint(v)) => visitor.visit_i64(int64(v)),
            (Kind::Bool, Wire::Varint(v)) => visitor.visit_bool(v != 0),
            (Kind::Double, Wire::Fixed64(v)) => visitor.visit_f64(f64::from_bits(v)),
            (Kind::Message(_), _) => match self.message()? {
                Some(m) => m.deserialize_any(visitor),
                None => Err(bad()),
            },
            _ => Err(bad()),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if let Some(m) = self.message()?
            && m.is_null()?
        {
            return visitor.visit_none();
        }
        visitor.visit_some(self)
    }

    shared_methods!();
}
