//! Decoding a list body as it arrives: each element of the top-level `items` array is decoded
//! as soon as its last byte is in, and its text dropped, so a list never holds its whole body
//! beside the objects built from it.
//!
//! This matters most for the first list of a reflector: at `resourceVersion=0` the API server
//! answers from its watch cache and ignores `limit`, so the "page" is every object of the
//! resource at once (113 MB of JSON for 20,000 pods in `cargo xtask bench`).
//!
//! [`ListDecoder`] scans the bytes once, tracking strings and the nesting of brackets, and hands
//! out each item's text; everything outside `items` (kind, apiVersion, metadata) is kept and
//! parsed at the end. Each item is then decoded on its own, as before: one the type cannot hold
//! goes to the list's [`skipped`](ObjectList::skipped). A body whose brackets do not match, or
//! that is not a JSON object, is an error, as a whole-body parse would have found.
//!
//! The body must be the list asked for, or the cache would be replaced from something else:
//! - a `Status` (which a proxy or an aggregated API server may send with a `200`) is the API
//!   error it describes ([`Error::Api`]: a `410` in it relists as a `410` does);
//! - a list of another `apiVersion` or kind, or one without an `items` array, is an
//!   [`Error::Decode`] (`"items": null`, which Go servers write for an empty list, is empty);
//! - an item of another `apiVersion` or kind, or (for a lister-watcher of one namespace) of
//!   another namespace, is left out and reported as an undecodable one is.
//!
//! Bounds: at most `max_objects` items (undecodable ones included) are decoded, past which the
//! list fails with [`Error::Limit`]; an item may nest as deeply as it likes without failing
//! the list (it is one bad item past [`MAX_NESTING`] levels, as its decode fails), and the
//! scan's own stack stops growing past that depth.

use kcache_reflector::{DecodeError, Error, ListMeta, ObjectList, Status, reason_of};
use kcache_store::{MAX_NESTING, Object, nesting_exceeds};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::compact::ObjectFn;
use super::exact_capacity::ArrayCounts;
use super::expect::Expected;
use super::{DecodeOptions, decode_object};

/// A list body's members other than its items (read one by one while scanning), and the items
/// of a key the scan did not recognize (`items` written with escapes).
#[derive(Deserialize)]
struct RawList<'a> {
    #[serde(default)]
    metadata: Option<ListMeta>,
    /// `Some` whenever the member is there, `null` included.
    #[serde(default, borrow, deserialize_with = "present")]
    items: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "apiVersion")]
    api_version: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
}

/// A member's text whenever the member is there (`Option`'s own impl reads `null` as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// The deepest nesting the scan keeps a stack for: the body, `items`, and an item nested as
/// deeply as it can be and still decode. Deeper inside an item only a count is kept (the item
/// will not decode); deeper outside the items, the body is not a list kcache can read.
const MAX_DEPTH: usize = 2 + MAX_NESTING;

/// Where the scan stands inside the top-level `items` array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Items {
    /// Not in it (before, after, or no such member).
    Outside,
    /// In it, between elements.
    Between,
    /// In an element.
    InElement,
}

/// Whether the scan is in a string, and just after its backslash.
#[derive(Debug, Default)]
struct StringState {
    inside: bool,
    escaped: bool,
}

/// The top-level key last read (its first bytes: enough to tell whether it is `items`), and
/// where the scan stands around top-level keys.
#[derive(Debug, Default)]
struct TopKey {
    key: Vec<u8>,
    /// In a top-level key.
    in_key: bool,
    /// The next top-level string is a key.
    expect_key: bool,
}

/// Builds an [`ObjectList`] from a list body fed in chunks.
pub(crate) struct ListDecoder<'a, T> {
    options: DecodeOptions,
    objects: Option<&'a ObjectFn<T>>,
    expected: &'a Expected,
    /// The most items decoded; past it `feed` fails.
    max_objects: usize,
    /// Levels of brackets past [`MAX_DEPTH`] inside the current element.
    overflow: usize,
    /// The current element went past [`MAX_DEPTH`]: it nests deeper than [`MAX_NESTING`].
    too_deep: bool,
    counts: Option<ArrayCounts>,
    /// The body outside `items`, with `"items":[]` where the array was.
    rest: Vec<u8>,
    /// The text of the element being read.
    element: Vec<u8>,
    /// Open brackets, `{` or `[`, outermost first.
    stack: Vec<u8>,
    string: StringState,
    top: TopKey,
    items: Items,
    seen_items: bool,
    index: usize,
    decoded: Vec<T>,
    skipped: Vec<DecodeError>,
    bytes: usize,
}

impl<'a, T: DeserializeOwned + Object> ListDecoder<'a, T> {
    /// A decoder building items with `objects` when given (a compact lister-watcher), else
    /// with serde and `options`, keeping those that are `expected`, at most `max_objects`.
    pub(crate) fn new(
        options: DecodeOptions,
        objects: Option<&'a ObjectFn<T>>,
        expected: &'a Expected,
        max_objects: usize,
    ) -> Self {
        Self {
            options,
            objects,
            expected,
            max_objects,
            overflow: 0,
            too_deep: false,
            counts: options.exact_capacities.then(ArrayCounts::default),
            rest: Vec::new(),
            element: Vec::new(),
            stack: Vec::new(),
            string: StringState::default(),
            top: TopKey::default(),
            items: Items::Outside,
            seen_items: false,
            index: 0,
            decoded: Vec::new(),
            skipped: Vec::new(),
            bytes: 0,
        }
    }

    /// The bytes fed so far.
    pub(crate) fn len(&self) -> usize {
        self.bytes
    }

    /// Takes in the next bytes of the body, decoding every item they complete.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] when the brackets do not match or `items` appears twice;
    /// [`Error::Limit`] past `max_objects` items.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<(), Error> {
        self.scan(chunk)?;
        if self.index > self.max_objects {
            return Err(Error::Limit(format!(
                "the list response holds more than {} objects (the lister-watcher's \
                 max_list_objects)",
                self.max_objects
            )));
        }
        Ok(())
    }

    /// [`feed`](Self::feed) without the item budget.
    fn scan(&mut self, chunk: &[u8]) -> Result<(), Error> {
        self.bytes = self.bytes.saturating_add(chunk.len());
        // The start of the run of `chunk` that goes to the same place (rest or element).
        let mut run = 0;
        let mut i = 0;
        while i < chunk.len() {
            if self.string.inside {
                i = self.skip_string(chunk, i);
                continue;
            }
            if self.items == Items::InElement && self.stack.len() > 3 {
                // Deep inside an element: only strings and brackets matter.
                i = self.skip_nested(chunk, i)?;
                continue;
            }
            let b = chunk[i];
            match b {
                b'"' => {
                    self.string.inside = true;
                    if self.stack.len() == 1 && self.top.expect_key {
                        self.top.in_key = true;
                        self.top.expect_key = false;
                        self.top.key.clear();
                    } else if self.items == Items::Between && self.stack.len() == 2 {
                        // A string element: not an object, it will not decode, but it is
                        // reported as one item, as a whole-body parse would.
                        self.start_element();
                        run = i;
                    }
                }
                b',' if self.stack.len() == 1 => self.top.expect_key = self.stack[0] == b'{',
                b',' if self.items == Items::InElement && self.stack.len() == 2 => {
                    // The end of a scalar element (an object element ends at its bracket).
                    self.end_element(&chunk[run..i]);
                    run = i + 1;
                }
                b'{' | b'[' => {
                    // At the top level a bracket opens a value, so the last key is its key.
                    let items_start =
                        b == b'[' && self.stack.len() == 1 && self.top.key == b"items";
                    if self.stack.len() >= MAX_DEPTH {
                        return Err(malformed("it nests too deeply outside its items"));
                    }
                    self.stack.push(b);
                    if items_start {
                        if self.seen_items {
                            return Err(malformed("`items` appears twice"));
                        }
                        self.seen_items = true;
                        // `[` goes to the rest; what follows goes to the elements.
                        self.rest.extend_from_slice(&chunk[run..=i]);
                        run = i + 1;
                        self.items = Items::Between;
                    } else if self.stack.len() == 1 {
                        self.top.expect_key = b == b'{';
                    } else if self.items == Items::Between && self.stack.len() == 3 {
                        self.start_element();
                        run = i;
                    }
                }
                b'}' | b']' => {
                    let open = if b == b'}' { b'{' } else { b'[' };
                    if self.stack.pop() != Some(open) {
                        return Err(malformed("its brackets do not match"));
                    }
                    match (self.items, self.stack.len()) {
                        // An object or array element closes.
                        (Items::InElement, 2) => {
                            self.end_element(&chunk[run..=i]);
                            run = i + 1;
                        }
                        // The items array closes (after a scalar element, perhaps).
                        (Items::InElement | Items::Between, 1) => {
                            if self.items == Items::InElement {
                                self.end_element(&chunk[run..i]);
                            }
                            run = i;
                            self.items = Items::Outside;
                        }
                        _ => {}
                    }
                }
                b',' | b':' => {}
                _ if b.is_ascii_whitespace() => {}
                _ => {
                    if self.items == Items::Between && self.stack.len() == 2 {
                        // A number, `true`, `false` or `null` element: reported as one item.
                        self.start_element();
                        run = i;
                    }
                }
            }
            i += 1;
        }
        // What is left of the chunk belongs where the scan stands.
        let tail = &chunk[run..];
        match self.items {
            Items::Outside => self.rest.extend_from_slice(tail),
            Items::InElement => self.element.extend_from_slice(tail),
            Items::Between => {}
        }
        Ok(())
    }

    /// Scans a string's text from `chunk[i]` up to its closing quote (included), or to the end
    /// of the chunk; returns where the scan goes on. Most of a body is string text: this jumps
    /// from quote or backslash to the next with `memchr`.
    fn skip_string(&mut self, chunk: &[u8], i: usize) -> usize {
        if self.string.escaped {
            self.string.escaped = false;
            self.key_text(&chunk[i..=i]);
            return i + 1;
        }
        let Some(at) = memchr::memchr2(b'"', b'\\', &chunk[i..]).map(|n| i + n) else {
            self.key_text(&chunk[i..]);
            return chunk.len();
        };
        self.key_text(&chunk[i..at]);
        if chunk[at] == b'\\' {
            self.string.escaped = true;
            self.key_text(&chunk[at..=at]);
        } else {
            self.string.inside = false;
            self.top.in_key = false;
        }
        at + 1
    }

    /// Scans a value nested in an element (an element's `metadata`, say) from `chunk[i]` (not
    /// in a string) through the bracket that closes it, or to the end of the chunk; returns
    /// where the scan stopped. Only strings and brackets matter there, so this loop is lighter
    /// than [`feed`](Self::feed)'s; `feed` still cuts the element's text out.
    fn skip_nested(&mut self, chunk: &[u8], mut i: usize) -> Result<usize, Error> {
        while i < chunk.len() {
            if self.string.inside {
                i = self.skip_string(chunk, i);
                continue;
            }
            match chunk[i] {
                b'"' => self.string.inside = true,
                b @ (b'{' | b'[') => {
                    if self.stack.len() >= MAX_DEPTH {
                        // Too deep: the item will be reported; only count.
                        self.overflow += 1;
                        self.too_deep = true;
                    } else {
                        self.stack.push(b);
                    }
                }
                b'}' | b']' if self.overflow > 0 => self.overflow -= 1,
                b @ (b'}' | b']') => {
                    let open = if b == b'}' { b'{' } else { b'[' };
                    if self.stack.pop() != Some(open) {
                        return Err(malformed("its brackets do not match"));
                    }
                    if self.stack.len() <= 3 {
                        // Back at the element's own members: `feed` takes over.
                        return Ok(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Ok(i)
    }

    /// Keeps `text` of a top-level key, up to one byte more than `items` has (enough to tell
    /// whether the key is `items`).
    fn key_text(&mut self, text: &[u8]) {
        if self.top.in_key {
            let room = (b"items".len() + 1).saturating_sub(self.top.key.len());
            self.top
                .key
                .extend_from_slice(&text[..text.len().min(room)]);
        }
    }

    /// An element begins (the whitespace and comma before it are dropped).
    fn start_element(&mut self) {
        self.element.clear();
        self.too_deep = false;
        self.items = Items::InElement;
    }

    /// An element ends with `last` (its text in this chunk); it is decoded, and its text
    /// dropped.
    fn end_element(&mut self, last: &[u8]) {
        self.items = Items::Between;
        if self.element.is_empty() {
            // The element began in this chunk: decoded where it lies, without a copy.
            self.decode_item(last);
            return;
        }
        self.element.extend_from_slice(last);
        let text = std::mem::take(&mut self.element);
        self.decode_item(&text);
        // Keep the buffer's memory for the next element.
        self.element = text;
        self.element.clear();
    }

    fn decode_item(&mut self, text: &[u8]) {
        let i = self.index;
        self.index += 1;
        if i >= self.max_objects {
            // Over budget: `feed` fails the list; nothing more is built.
            return;
        }
        let text = text.trim_ascii();
        // Known from the scan: refused before any decode, whatever the type would make of it.
        if std::mem::take(&mut self.too_deep) {
            self.skipped.push(too_deep(DecodeError::of_object::<T>(
                format!("list item {i}"),
                &String::from_utf8_lossy(text),
            )));
            return;
        }
        let decoded = std::str::from_utf8(text).ok().and_then(|json| {
            match self.objects {
                Some(objects) => objects(json),
                None => {
                    decode_object::<T>(json, self.options.skip_managed_fields, self.counts.as_mut())
                }
            }
            .ok()
        });
        match decoded {
            Some(obj) => match self.expected.refusal(&obj) {
                None => self.decoded.push(obj),
                Some(why) => {
                    self.skipped
                        .push(Expected::refused(format!("list item {i}"), &obj, why, None));
                }
            },
            None => self.skipped.push(DecodeError::of_object::<T>(
                format!("list item {i}"),
                &String::from_utf8_lossy(text),
            )),
        }
    }

    /// The list, once the whole body is in.
    ///
    /// # Errors
    ///
    /// [`Error::Api`] when the body is a `Status`; [`Error::Decode`] when it is not a complete
    /// JSON object, not a list of the expected type, or has no `items` array;
    /// [`Error::Limit`] past `max_objects` items.
    pub(crate) fn finish(mut self) -> Result<ObjectList<T>, Error> {
        if self.string.inside || !self.stack.is_empty() || self.overflow > 0 {
            return Err(malformed("it ends early"));
        }
        let rest = std::mem::take(&mut self.rest);
        let raw: RawList<'_> = serde_json::from_slice(&rest).map_err(|e| {
            Error::decode(DecodeError::new(DecodeError::LIST_RESPONSE, reason_of(&e)))
        })?;
        if !rest.trim_ascii_start().starts_with(b"{") {
            return Err(malformed("it is not a JSON object"));
        }
        if raw.kind.as_deref() == Some("Status") {
            // An error answered as a success: the error it describes.
            let status: Status = serde_json::from_slice(&rest).map_err(|e| {
                Error::decode(DecodeError::new(
                    format!("{} (a Status)", DecodeError::LIST_RESPONSE),
                    reason_of(&e),
                ))
            })?;
            return Err(Error::api(status));
        }
        self.expected
            .r#type
            .check_list(raw.api_version.as_deref(), raw.kind.as_deref())
            .map_err(|why| malformed(&why))?;
        let Some(items) = raw.items else {
            return Err(malformed("it has no `items`"));
        };
        // `items` under a key written with escapes was not recognized while scanning: its
        // elements are here (and `null` is an empty list).
        let items: Option<Vec<&RawValue>> = serde_json::from_str(items.get())
            .map_err(|_| malformed("its `items` is not an array"))?;
        for item in items.unwrap_or_default() {
            // Not scanned on the way: measured here.
            self.too_deep = nesting_exceeds(item.get().as_bytes(), MAX_NESTING);
            self.decode_item(item.get().as_bytes());
        }
        if self.index > self.max_objects {
            return Err(Error::Limit(format!(
                "the list response holds more than {} objects (the lister-watcher's \
                 max_list_objects)",
                self.max_objects
            )));
        }
        Ok(ObjectList::from_meta(self.decoded, raw.metadata).with_skipped(self.skipped))
    }
}

/// `report` of an object nested deeper than [`MAX_NESTING`], with that as its reason.
pub(crate) fn too_deep(mut report: DecodeError) -> DecodeError {
    report.reason = format!("the object nests deeper than {MAX_NESTING} levels");
    report.path = None;
    report
}

fn malformed(why: &str) -> Error {
    Error::decode(DecodeError::new(
        DecodeError::LIST_RESPONSE,
        format!("not a JSON list: {why}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcache_store::{DynamicObject, Object};

    /// The list from `body` fed in chunks of `size` bytes.
    fn chunked(body: &str, size: usize) -> Result<ObjectList<DynamicObject>, Error> {
        chunked_as(body, size, &Expected::default(), usize::MAX)
    }

    /// The same with what the lister-watcher expects and its item budget.
    fn chunked_as(
        body: &str,
        size: usize,
        expected: &Expected,
        max_objects: usize,
    ) -> Result<ObjectList<DynamicObject>, Error> {
        let mut decoder = ListDecoder::new(DecodeOptions::default(), None, expected, max_objects);
        for chunk in body.as_bytes().chunks(size) {
            decoder.feed(chunk)?;
        }
        assert_eq!(decoder.len(), body.len());
        decoder.finish()
    }

    /// What a whole-body parse finds: the items' names, how many items do not decode, the
    /// resource version and the continue token.
    type Found = (Vec<String>, usize, String, Option<String>);

    fn found(list: &ObjectList<DynamicObject>) -> Found {
        (
            list.items
                .iter()
                .map(|o| o.name().unwrap_or("?").to_owned())
                .collect(),
            list.skipped.len(),
            list.resource_version.clone(),
            list.continue_token.clone(),
        )
    }

    /// The same, from a `serde_json::Value` of the whole body.
    fn reference(body: &str) -> Found {
        let value: serde_json::Value = serde_json::from_str(body).unwrap();
        let mut names = Vec::new();
        let mut skipped = 0;
        for item in value["items"].as_array().cloned().unwrap_or_default() {
            match serde_json::from_value::<DynamicObject>(item) {
                Ok(o) => names.push(o.name().unwrap_or("?").to_owned()),
                Err(_) => skipped += 1,
            }
        }
        let meta = &value["metadata"];
        (
            names,
            skipped,
            meta["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            meta["continue"]
                .as_str()
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
        )
    }

    #[test]
    fn any_chunking_finds_what_a_whole_body_parse_finds() {
        let bodies = [
            r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"c"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#,
            // Metadata after the items, whitespace everywhere, brackets and quotes in strings.
            " {\n \"items\" : [ {\"metadata\":{\"name\":\"x]}\\\"{[\"}} ,\n{\"metadata\":{\"name\":\"y\"},\"spec\":{\"a\":[1,[2,{}]]}} ] ,\n \"metadata\" : {\"resourceVersion\":\"3\"} } ",
            // Items that do not decode: a bad name, scalars, an array.
            r#"{"metadata":{"resourceVersion":"4"},"items":[{"metadata":{"name":5}},7,"s",null,[1],{"metadata":{"name":"ok"}}]}"#,
            r#"{"metadata":{"resourceVersion":"5"},"items":[]}"#,
            r#"{"metadata":{"resourceVersion":"6"},"items":null}"#,
            // A key written with an escape is found by the final parse.
            r#"{"metadata":{"resourceVersion":"8"},"it\u0065ms":[{"metadata":{"name":"e"}}]}"#,
            // Keys that look like items but are not.
            r#"{"itemsx":[{"metadata":{"name":"no"}}],"x":{"items":[1]},"metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"yes"}}]}"#,
        ];
        for body in bodies {
            let want = reference(body);
            for size in [1, 2, 3, 5, 8, 13, body.len()] {
                let got = chunked(body, size).unwrap_or_else(|e| panic!("{body} by {size}: {e}"));
                assert_eq!(found(&got), want, "{body} in chunks of {size}");
            }
        }
    }

    #[test]
    fn items_are_decoded_as_they_complete_and_their_text_is_not_kept() {
        let item = format!(
            r#"{{"metadata":{{"name":"p","annotations":{{"big":"{}"}}}}}}"#,
            "x".repeat(10_000)
        );
        let body = format!(
            r#"{{"metadata":{{"resourceVersion":"1"}},"items":[{}]}}"#,
            vec![item.as_str(); 50].join(",")
        );
        let expected = Expected::default();
        let mut decoder =
            ListDecoder::<DynamicObject>::new(DecodeOptions::default(), None, &expected, 1000);
        let mut most_held = 0;
        for chunk in body.as_bytes().chunks(4096) {
            decoder.feed(chunk).unwrap();
            most_held = most_held.max(decoder.rest.len() + decoder.element.len());
            // Every complete item is decoded already.
            let complete = body[..decoder.len()].matches("}}}").count();
            assert_eq!(decoder.decoded.len(), complete.min(50));
        }
        assert!(most_held < 2 * item.len(), "held {most_held} bytes");
        assert_eq!(decoder.finish().unwrap().items.len(), 50);
    }

    #[test]
    fn a_body_that_is_not_a_list_is_an_error() {
        let deep = format!(
            "{{\"metadata\":{}{},\"items\":[]}}",
            "[".repeat(600),
            "]".repeat(600)
        );
        for body in [
            r#"{"metadata":{"resourceVersion":"7"}}"#,
            r#"{"metadata":{"resourceVersion":"7"},"items":{}}"#,
            r#"{"metadata":{"resourceVersion":"7"},"items":5}"#,
            r#"{"items":[{"metadata":{"name":"a"}]}"#,
            r#"{"items":[{"metadata":{"name":"a"}}"#,
            r#"{"items":[{"metadata":{"name":"a}}]}"#,
            r#"{"items":[],"items":[]}"#,
            r#"[{"metadata":{"name":"a"}}]"#,
            r#"{"metadata":{"resourceVersion":5},"items":[]}"#,
            "{} x",
            "",
            deep.as_str(),
        ] {
            for size in [1, 4, body.len().max(1)] {
                assert!(
                    matches!(chunked(body, size), Err(Error::Decode(_))),
                    "{body:.60} by {size}"
                );
            }
        }
    }

    /// An item with `arrays` nested arrays under `spec` (`1 + arrays` levels) and a name.
    fn nested_item(name: &str, arrays: usize) -> String {
        format!(
            r#"{{"metadata":{{"name":"{name}","resourceVersion":"2"}},"spec":{}1{}}}"#,
            "[".repeat(arrays),
            "]".repeat(arrays)
        )
    }

    #[test]
    fn an_item_nested_past_the_limit_is_one_bad_item_not_a_failed_list() {
        for arrays in [MAX_NESTING, 600, 100_000] {
            let body = format!(
                r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"5"}},"items":[{},{},{}]}}"#,
                nested_item("a", 3),
                nested_item("deep", arrays),
                nested_item("c", MAX_NESTING - 1),
            );
            for size in [7, 4096, body.len()] {
                let list =
                    chunked(&body, size).unwrap_or_else(|e| panic!("{arrays} by {size}: {e}"));
                let names: Vec<_> = list.items.iter().map(|o| o.name().unwrap_or("?")).collect();
                assert_eq!(names, ["a", "c"], "{arrays} by {size}");
                assert_eq!(list.skipped.len(), 1);
                assert_eq!(
                    list.skipped[0].to_string(),
                    "could not decode list item 1 (deep at resourceVersion 2): the object nests deeper than 126 levels",
                );
                assert_eq!(list.resource_version, "5");
            }
        }
    }

    #[test]
    fn a_status_is_the_error_it_describes() {
        for body in [
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old","reason":"Expired","code":410}"#,
            r#"{"kind":"Status","status":"Failure","code":410,"items":[{"metadata":{"name":"a"}}]}"#,
        ] {
            for size in [3, body.len()] {
                match chunked(body, size) {
                    Err(Error::Api(s)) => assert_eq!(s.code, Some(410), "{body}"),
                    other => panic!("{body}: {other:?}"),
                }
            }
        }
        let e = chunked(r#"{"kind":"Status","code":"x"}"#, 100).unwrap_err();
        assert!(matches!(e, Error::Decode(_)), "{e:?}");
    }

    #[test]
    fn a_list_of_another_type_is_an_error_and_so_are_its_items() {
        let pods = Expected {
            r#type: kcache_store::ExpectedType::new("v1", Some("Pod")),
            namespace: None,
        };
        for body in [
            r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}"#,
            r#"{"kind":"PodList","apiVersion":"apps/v1","metadata":{},"items":[]}"#,
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}"#,
        ] {
            let e = chunked_as(body, 5, &pods, usize::MAX).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("could not decode list response: not a JSON list: "),
                "{body}: {e}"
            );
        }
        // Items of another kind or apiVersion are left out and reported by name.
        let body = r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"3"},"items":[
            {"metadata":{"name":"p"}},
            {"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm","namespace":"ns","resourceVersion":"2"}},
            {"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"d","namespace":"ns"}},
            {"kind":"Pod","apiVersion":"v1","metadata":{"name":"q"}}]}"#;
        let list = chunked_as(body, 11, &pods, usize::MAX).unwrap();
        let names: Vec<_> = list.items.iter().map(|o| o.name().unwrap_or("?")).collect();
        assert_eq!(names, ["p", "q"]);
        let skipped: Vec<String> = list.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            skipped,
            [
                "could not decode list item 1 (ns/cm at resourceVersion 2): kind is `ConfigMap`, expected `Pod`",
                "could not decode list item 2 (ns/d): apiVersion is `apps/v1`, expected `v1`",
            ]
        );
    }

    #[test]
    fn objects_of_another_namespace_are_left_out() {
        let prod = Expected {
            r#type: kcache_store::ExpectedType::any(),
            namespace: Some("prod".to_owned()),
        };
        let body = r#"{"metadata":{},"items":[{"metadata":{"name":"a","namespace":"prod"}},
            {"metadata":{"name":"b","namespace":"dev","resourceVersion":"4"}},{"metadata":{"name":"c"}}]}"#;
        let list = chunked_as(body, 9, &prod, usize::MAX).unwrap();
        assert_eq!(list.items.len(), 1);
        let skipped: Vec<String> = list.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            skipped,
            [
                "could not decode list item 1 (dev/b at resourceVersion 4): the object is in namespace `dev`, outside the lister-watcher's `prod`",
                "could not decode list item 2 (c): the object has no namespace; the lister-watcher lists namespace `prod`",
            ]
        );
    }

    #[test]
    fn no_more_than_max_objects_items_are_built() {
        let item = r#"{"metadata":{"name":"a"}}"#;
        let body = format!(r#"{{"metadata":{{}},"items":[{}]}}"#, [item; 10].join(","));
        let expected = Expected::default();
        assert_eq!(chunked_as(&body, 8, &expected, 10).unwrap().items.len(), 10);
        // Fed in one piece or in many, the list fails once an item past the budget is seen,
        // and nothing past the budget is built.
        for size in [8, body.len()] {
            let mut decoder =
                ListDecoder::<DynamicObject>::new(DecodeOptions::default(), None, &expected, 4);
            let mut failed = None;
            for chunk in body.as_bytes().chunks(size) {
                if let Err(e) = decoder.feed(chunk) {
                    failed = Some(e);
                    break;
                }
            }
            let e = failed.expect("the budget is enforced while feeding");
            assert_eq!(
                e.to_string(),
                "the list response holds more than 4 objects (the lister-watcher's max_list_objects)"
            );
            assert!(decoder.decoded.len() + decoder.skipped.len() <= 4);
        }
    }
}
