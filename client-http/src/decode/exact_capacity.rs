//! Decoding with exact `Vec` capacities: a first pass counts the elements of every JSON array,
//! and a thin deserializer wrapper hands each count to the `Vec` being built as its size hint.
//!
//! `serde_json` gives no size hint, so a `Vec<T>` starts empty and grows by doubling: a pod with
//! one container status keeps room for four (752 bytes each), three volumes keep room for four
//! (3 KB each). About a sixth of a decoded k8s-openapi `Pod` is such slack. With the counts every
//! `Vec` is allocated once at its final size, as a clone of the object would be, without the
//! clone.
//!
//! The counts are in document order of the arrays' `[`, which is the order in which the wrapped
//! deserializer starts sequences: every value, ignored ones included, goes through the wrapper
//! (an ignored value is walked rather than skipped, so the arrays inside it take their counts).
//! If anything breaks that order (`serde_json`'s private raw-value types), hints stop for the rest
//! of the document; a wrong hint can only cost capacity, never correctness.
//!
//! Types that ignore size hints (`serde_json::Value`, so `DynamicObject`) gain nothing.

use std::cell::Cell;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

/// Element counts of a JSON text's arrays, in document order; reusable across texts.
#[derive(Debug, Default)]
pub(crate) struct ArrayCounts {
    counts: Vec<u32>,
    /// Open containers while scanning: an index into `counts` for an array, `OBJECT` for an
    /// object.
    stack: Vec<u32>,
    /// The deepest nesting the last scan saw.
    deepest: usize,
}

/// A `stack` entry for an object.
const OBJECT: u32 = u32::MAX;
/// A `stack` entry for the object's `metadata` (see [`ArrayCounts::scan_skipping`]).
const METADATA: u32 = u32::MAX - 1;

/// The name of the newtype through which [`SkipManagedFields`](crate::SkipManagedFields) asks
/// to skip a value: [`Exact`] hands it to the parser's own skip, unvisited, where it walks other
/// ignored values (whose arrays the scan counted).
pub(crate) const SKIPPED_VALUE: &str = "$kcache::skipped";

/// Where the value after the key whose closing quote is just before `at` starts; `None` if
/// that string is not a key (no `:` after it).
fn value_after_key(json: &[u8], at: usize) -> Option<usize> {
    let ws = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r');
    let colon = at + json.get(at..)?.iter().position(|c| !ws(c))?;
    if json[colon] != b':' {
        return None;
    }
    let value = colon + 1;
    Some(value + json.get(value..)?.iter().position(|c| !ws(c))?)
}

/// The index after the array or object that starts at `at`, and its depth (1 for one without
/// containers inside); `None` if it is not closed.
fn skip_container(json: &[u8], at: usize) -> Option<(usize, usize)> {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut i = at;
    while i < json.len() {
        let b = json[i];
        i += 1;
        match b {
            b'"' => i = skip_string(json, i)?,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some((i, deepest));
                }
            }
            _ => {}
        }
    }
    None
}

impl ArrayCounts {
    /// Counts the arrays of `json`. `false` when it is not well nested (the decode will fail and
    /// say why): the counts are then unusable.
    #[cfg(test)]
    pub(crate) fn scan(&mut self, json: &[u8]) -> bool {
        self.scan_skipping(json, None)
    }

    /// [`scan`](Self::scan), leaving out the arrays of `metadata.managedFields` where the
    /// object's `metadata` is an object at depth `metadata_depth` (2 for an object, 3 for the
    /// object of a watch event): [`SkipManagedFields`](crate::SkipManagedFields) decoding skips
    /// that value in the parser ([`skipped_value`]) without visiting it, so its arrays take no
    /// counts. Its depth still counts toward [`deepest`](Self::deepest).
    pub(crate) fn scan_skipping(&mut self, json: &[u8], metadata_depth: Option<usize>) -> bool {
        self.counts.clear();
        self.stack.clear();
        self.deepest = 0;
        let n = json.len();
        let mut i = 0;
        while i < n {
            let b = json[i];
            i += 1;
            match b {
                b'"' => {
                    let Some(end) = skip_string(json, i) else {
                        return false;
                    };
                    let key = &json[i..end - 1];
                    i = end;
                    // Only keys of the lengths of `metadata` and `managedFields` are looked at.
                    if let Some(depth) = metadata_depth
                        && (key.len() == 8 || key.len() == 13)
                        && let Some(value) = value_after_key(json, i)
                    {
                        let top = self.stack.last().copied();
                        if key == b"metadata"
                            && top == Some(OBJECT)
                            && self.stack.len() + 1 == depth
                            && json.get(value) == Some(&b'{')
                        {
                            self.stack.push(METADATA);
                            self.deepest = self.deepest.max(self.stack.len());
                            i = value + 1;
                        } else if key == b"managedFields"
                            && top == Some(METADATA)
                            && matches!(json.get(value), Some(b'[' | b'{'))
                        {
                            let Some((end, depth)) = skip_container(json, value) else {
                                return false;
                            };
                            self.deepest = self.deepest.max(self.stack.len() + depth);
                            i = end;
                        }
                    }
                }
                b'[' => {
                    let Ok(index) = u32::try_from(self.counts.len()) else {
                        return false;
                    };
                    // One element unless the array is empty; each comma at its level adds one.
                    let first = json[i..]
                        .iter()
                        .find(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'));
                    self.counts
                        .push(u32::from(first.is_some_and(|c| *c != b']')));
                    self.stack.push(index);
                    self.deepest = self.deepest.max(self.stack.len());
                }
                b'{' => {
                    self.stack.push(OBJECT);
                    self.deepest = self.deepest.max(self.stack.len());
                }
                b']' | b'}' if self.stack.pop().is_none() => return false,
                b',' => {
                    if let Some(&top) = self.stack.last()
                        && top < METADATA
                        && let Some(count) = self.counts.get_mut(top as usize)
                    {
                        *count += 1;
                    }
                }
                _ => {}
            }
        }
        self.stack.is_empty()
    }

    /// The deepest nesting of arrays and objects the last [`scan`](Self::scan) saw (of a text
    /// it accepted: the whole text's).
    pub(crate) fn deepest(&self) -> usize {
        self.deepest
    }

    /// Decodes a `T` from `json` (the text [`scan`](Self::scan) counted) with its vectors sized
    /// exactly.
    pub(crate) fn decode<'de, T: de::Deserialize<'de>>(
        &self,
        json: &'de str,
    ) -> serde_json::Result<T> {
        let ctx = Ctx {
            counts: &self.counts,
            next: Cell::new(0),
            lost: Cell::new(false),
        };
        let mut de = serde_json::Deserializer::from_str(json);
        let value = T::deserialize(Exact {
            inner: &mut de,
            ctx: &ctx,
        })?;
        de.end()?;
        Ok(value)
    }
}

/// The index after the string whose opening quote is just before `at`; `None` if unterminated.
/// Eight bytes at a time for the first sixteen (most keys and values are short), then with
/// `memchr2`'s vector search (long values: images, IDs, annotations).
fn skip_string(json: &[u8], mut at: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    loop {
        let mut words = 0;
        let found = loop {
            let Some(word) = json.get(at..at + 8) else {
                break true;
            };
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(word);
            let w = u64::from_le_bytes(bytes);
            let quote = w ^ (ONES * u64::from(b'"'));
            let backslash = w ^ (ONES * u64::from(b'\\'));
            let found = (quote.wrapping_sub(ONES) & !quote
                | backslash.wrapping_sub(ONES) & !backslash)
                & HIGHS;
            if found != 0 {
                break true;
            }
            at += 8;
            words += 1;
            if words == 2 {
                break false;
            }
        };
        if !found {
            at += memchr::memchr2(b'"', b'\\', json.get(at..)?)?;
        }
        match *json.get(at)? {
            b'"' => return Some(at + 1),
            b'\\' => at += 2,
            _ => at += 1,
        }
    }
}

/// The counts being handed out.
struct Ctx<'c> {
    counts: &'c [u32],
    next: Cell<usize>,
    /// The order was lost: no more hints.
    lost: Cell<bool>,
}

impl Ctx<'_> {
    /// The count of the next array to start.
    fn claim(&self) -> Option<usize> {
        let index = self.next.get();
        self.next.set(index + 1);
        if self.lost.get() {
            return None;
        }
        self.counts.get(index).map(|c| *c as usize)
    }
}

/// The deserializer wrapper: every call goes to `inner` with the visitor wrapped.
struct Exact<'c, D> {
    inner: D,
    ctx: &'c Ctx<'c>,
}

/// The visitor wrapper: sequences get their count, maps and nested values stay wrapped.
struct ExactVisitor<'c, V> {
    inner: V,
    ctx: &'c Ctx<'c>,
}

/// A seed whose value is decoded through an [`Exact`].
struct ExactSeed<'c, S> {
    inner: S,
    ctx: &'c Ctx<'c>,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for ExactSeed<'_, S> {
    type Value = S::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(Exact {
            inner: d,
            ctx: self.ctx,
        })
    }
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Exact<'_, D> {
    type Error = D::Error;

    crate::decode::forward::forward_deserialize!(ExactVisitor { ctx }; common);

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        if name == SKIPPED_VALUE {
            // Skipped by the parser, unvisited: the scan left its arrays out.
            return self.inner.deserialize_ignored_any(visitor);
        }
        if name.starts_with("$serde_json::private::") {
            // A raw value (or a private number) takes its text whole: the arrays in it never
            // reach a visitor, so the counts after it would be out of order.
            self.ctx.lost.set(true);
        }
        self.inner.deserialize_newtype_struct(
            name,
            ExactVisitor {
                inner: visitor,
                ctx: self.ctx,
            },
        )
    }

    /// Walked, not skipped, so that the arrays inside take their counts.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_any(ExactVisitor {
            inner: IgnoredAny,
            ctx: self.ctx,
        })?;
        visitor.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

impl<'de, V: Visitor<'de>> Visitor<'de> for ExactVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    crate::decode::forward::forward_primitive_visits!();

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Exact {
            inner: d,
            ctx: self.ctx,
        })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_newtype_struct(Exact {
            inner: d,
            ctx: self.ctx,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        let count = self.ctx.claim();
        self.inner.visit_seq(ExactSeq {
            inner: seq,
            ctx: self.ctx,
            count,
            taken: 0,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(ExactMap {
            inner: map,
            ctx: self.ctx,
        })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(ExactEnum {
            inner: data,
            ctx: self.ctx,
        })
    }
}

/// A sequence that knows how many elements it holds.
struct ExactSeq<'c, A> {
    inner: A,
    ctx: &'c Ctx<'c>,
    /// The scanned count (`None` once the order is lost).
    count: Option<usize>,
    taken: usize,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for ExactSeq<'_, A> {
    type Error = A::Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        let next = self.inner.next_element_seed(ExactSeed {
            inner: seed,
            ctx: self.ctx,
        })?;
        match next {
            Some(_) => self.taken += 1,
            // A count that does not match the elements means the order is lost.
            None if self.count.is_some_and(|c| c != self.taken) => self.ctx.lost.set(true),
            None => {}
        }
        Ok(next)
    }

    fn size_hint(&self) -> Option<usize> {
        if self.ctx.lost.get() {
            return None;
        }
        self.count.map(|c| c.saturating_sub(self.taken))
    }
}

/// A map whose keys and values are decoded through [`Exact`].
struct ExactMap<'c, A> {
    inner: A,
    ctx: &'c Ctx<'c>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for ExactMap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.inner.next_key_seed(ExactSeed {
            inner: seed,
            ctx: self.ctx,
        })
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        self.inner.next_value_seed(ExactSeed {
            inner: seed,
            ctx: self.ctx,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// An enum whose variant content is decoded through [`Exact`].
struct ExactEnum<'c, A> {
    inner: A,
    ctx: &'c Ctx<'c>,
}

impl<'de, 'c, A: EnumAccess<'de>> EnumAccess<'de> for ExactEnum<'c, A> {
    type Error = A::Error;
    type Variant = ExactVariant<'c, A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Self::Variant), A::Error> {
        let (value, variant) = self.inner.variant_seed(ExactSeed {
            inner: seed,
            ctx: self.ctx,
        })?;
        Ok((
            value,
            ExactVariant {
                inner: variant,
                ctx: self.ctx,
            },
        ))
    }
}

/// The content of an enum variant, decoded through [`Exact`].
struct ExactVariant<'c, A> {
    inner: A,
    ctx: &'c Ctx<'c>,
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for ExactVariant<'_, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.inner.unit_variant()
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
        self.inner.newtype_variant_seed(ExactSeed {
            inner: seed,
            ctx: self.ctx,
        })
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.inner.tuple_variant(
            len,
            ExactVisitor {
                inner: visitor,
                ctx: self.ctx,
            },
        )
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.inner.struct_variant(
            fields,
            ExactVisitor {
                inner: visitor,
                ctx: self.ctx,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::Value;

    use super::*;

    fn exact<T: for<'de> Deserialize<'de>>(json: &str) -> T {
        let mut counts = ArrayCounts::default();
        assert!(counts.scan(json.as_bytes()), "{json}");
        counts.decode(json).expect("decodes")
    }

    #[test]
    fn counts_follow_document_order_and_skip_strings() {
        let mut c = ArrayCounts::default();
        let json = r#"{"a":[1,[2,3,[]],"x,[y]\"z]"],"b":[ ],"c":[{"d":[4,5,6]},7]}"#;
        assert!(c.scan(json.as_bytes()));
        assert_eq!(c.counts, [3, 3, 0, 0, 2, 3]);
        assert!(!c.scan(br#"{"a":[1,2}"#), "left open");
        assert!(!c.scan(br#"{"a":"unterminated"#));
        assert!(!c.scan(br"]"));
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Shape {
        items: Vec<Vec<u8>>,
        #[serde(default)]
        names: Option<Vec<String>>,
        tags: BTreeMap<String, Vec<u32>>,
        after: Vec<u16>,
    }

    #[test]
    fn vectors_get_exact_capacities_even_after_ignored_fields() {
        let json = r#"{"unknown":[[1,2],{"x":[3]}],"items":[[1],[2,3,4,5,6],[]],
            "names":["a","b","c","d","e"],"tags":{"k":[1,2,3]},"ignored":[9,9],"after":[1,2,3]}"#;
        let shape: Shape = exact(json);
        assert_eq!(shape, serde_json::from_str::<Shape>(json).expect("decodes"));
        assert_eq!(shape.items.capacity(), 3);
        assert_eq!(
            shape.items.iter().map(Vec::capacity).collect::<Vec<_>>(),
            [1, 5, 0]
        );
        assert_eq!(shape.names.as_ref().map(Vec::capacity), Some(5));
        assert_eq!(shape.tags["k"].capacity(), 3);
        assert_eq!(shape.after.capacity(), 3, "ignored arrays kept the order");
    }

    #[test]
    fn a_raw_value_stops_the_hints_but_not_the_decoding() {
        #[derive(Deserialize)]
        struct WithRaw {
            raw: Box<serde_json::value::RawValue>,
            after: Vec<u8>,
        }
        let json = r#"{"raw":[[1,2],[3]],"after":[1,2,3,4,5]}"#;
        let v: WithRaw = exact(json);
        assert_eq!(v.raw.get(), "[[1,2],[3]]");
        assert_eq!(v.after, [1, 2, 3, 4, 5]);
        assert_eq!(
            v.after.capacity(),
            8,
            "default growth once the order is lost"
        );
    }

    #[test]
    fn enums_and_values_decode_as_without_the_wrapper() {
        #[derive(Debug, Deserialize, PartialEq)]
        enum E {
            Unit,
            New(Vec<u8>),
            Tuple(u8, Vec<u8>),
            Struct { v: Vec<u8> },
        }
        let json = r#"[{"New":[1,2]},"Unit",{"Tuple":[1,[2,3]]},{"Struct":{"v":[4]}}]"#;
        let got: Vec<E> = exact(json);
        assert_eq!(got, serde_json::from_str::<Vec<E>>(json).expect("decodes"));
        let value: Value = exact(r#"{"a":[1,{"b":[true,null,"s"]}],"n":-1.5e3}"#);
        assert_eq!(
            value,
            serde_json::from_str::<Value>(r#"{"a":[1,{"b":[true,null,"s"]}],"n":-1.5e3}"#)
                .expect("decodes")
        );
    }

    #[test]
    fn errors_are_serde_json_errors() {
        let mut c = ArrayCounts::default();
        let json = r#"{"items":[[1]],"tags":{},"after":["x"]}"#;
        assert!(c.scan(json.as_bytes()));
        let e = c.decode::<Shape>(json).expect_err("a string is no u16");
        assert!(e.to_string().contains("invalid type"), "{e}");
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Meta {
        name: String,
        #[serde(default)]
        finalizers: Vec<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Obj {
        metadata: Meta,
        containers: Vec<Vec<u8>>,
    }

    #[test]
    fn strings_of_any_length_with_escapes_anywhere_are_skipped() {
        // Brackets and commas inside the strings must not count; escaped quotes must not end
        // them, at every offset around the eight-byte words and the switch to memchr2.
        for len in 0..70 {
            for at in 0..=len {
                let mut text: String = "a,[b]".chars().cycle().take(len).collect();
                text.insert_str(at, "\"q\\");
                let json = serde_json::json!({"s": [text.clone(), text], "n": [1, 2, 3]});
                let bytes = serde_json::to_vec(&json).expect("encodes");
                let mut c = ArrayCounts::default();
                assert!(c.scan(&bytes), "{len} {at}");
                assert_eq!(c.counts, [3, 2], "{}", String::from_utf8_lossy(&bytes));
            }
        }
        let mut c = ArrayCounts::default();
        assert!(!c.scan(br#"{"s":"a long string without its closing quote, [1,2]"#));
    }

    #[test]
    fn skipped_managed_fields_take_no_counts_and_keep_the_order() {
        let json = r#"{"kind":"X","metadata":{"name":"a","managedFields" : [{"m":"k","f":{"a":[1,[2]]}},
            {"m":"j"}],"finalizers":["x","y","z"]},"containers":[[1,2,3],[4]],"status":{"metadata":
            {"managedFields":[7,8]}}}"#;
        let mut c = ArrayCounts::default();
        assert!(c.scan_skipping(json.as_bytes(), Some(2)));
        // finalizers, containers and its two, then the status's nested managedFields (not at
        // the object's metadata, so counted).
        assert_eq!(c.counts, [3, 2, 3, 1, 2]);
        assert_eq!(c.deepest(), 7, "the skipped value's depth still counts");
        let SkipManaged(o) = c.decode::<SkipManaged<Obj>>(json).expect("decodes");
        assert_eq!(o.metadata.finalizers.capacity(), 3);
        assert_eq!(o.containers.capacity(), 2);
        assert_eq!(
            o.containers.iter().map(Vec::capacity).collect::<Vec<_>>(),
            [3, 1]
        );
        // Without the skip, every array is counted.
        assert!(c.scan_skipping(json.as_bytes(), None));
        assert_eq!(c.counts.len(), 8);
        // A watch event's object has its metadata one level deeper.
        let event = format!(r#"{{"type":"ADDED","object":{json}}}"#);
        assert!(c.scan_skipping(event.as_bytes(), Some(3)));
        assert_eq!(c.counts, [3, 2, 3, 1, 2]);
        // An unclosed managedFields is not well nested.
        assert!(!c.scan_skipping(br#"{"metadata":{"managedFields":[{"a":1}"#, Some(2)));
    }

    /// `SkipManagedFields` as the decoders use it.
    struct SkipManaged<T>(T);

    impl<'de, T: Deserialize<'de>> Deserialize<'de> for SkipManaged<T> {
        fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            crate::SkipManagedFields::<T>::deserialize(d).map(|s| SkipManaged(s.0))
        }
    }
}
