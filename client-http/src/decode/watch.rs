//! [`WatchDecoder`]: newline-delimited JSON watch events across arbitrary chunk boundaries.
//!
//! The API server writes one JSON event per line, but HTTP chunks (and h2 DATA frames) are not
//! aligned to lines. The decoder keeps the current chunk and decodes every complete line straight
//! from it; only a line split across chunks is copied, into one reused buffer, and only its
//! pieces. So a stream whose events fit in a chunk is decoded without any copy.
//!
//! Failures are per event, never per stream:
//! - a line that does not decode yields `Err(Error::Decode)` carrying what could be read of it
//!   (event type, namespace, name, resource version: [`DecodeError::of_watch_event`]) and
//!   decoding goes on with the next line; the reflector removes that key, or relists when the
//!   identity could not be read;
//! - a line longer than the size limit yields one `Err(Error::Decode)` without an identity (the
//!   reflector relists) and the rest of that line is dropped without being buffered;
//! - at the end of the body, bytes after the last newline are decoded if they form a whole
//!   event; an event cut short is a broken stream (`Err(Error::Transport)`: the reflector
//!   watches again from the last resource version, which sends the event again).

use std::marker::PhantomData;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use kcache_reflector::{DecodeError, Error, WatchEvent, WatchStream};
use serde::de::DeserializeOwned;

use crate::SkipManagedFields;
use crate::decode::compact::{ObjectFn, compact_objects, decode_event};
use crate::decode::exact_capacity::ArrayCounts;
use crate::decode::list::too_deep;
use crate::transport::ResponseBody;
use kcache_store::{MAX_NESTING, nesting_exceeds};

/// The default limit on the size of one watch event: 16 MiB (etcd's default request limit is
/// 1.5 MiB per object, so this leaves room for large custom resources).
pub const DEFAULT_MAX_EVENT_SIZE: usize = 16 << 20;

/// An incremental decoder of a JSON watch body into [`WatchEvent`]s.
///
/// Complete lines are decoded straight from the chunk they arrived in; only a line split across
/// chunks is copied aside. Failures are per event, never per stream: an undecodable line gives
/// `Err(Error::Decode)` with what could be read of its identity
/// ([`DecodeError::of_watch_event`]) and decoding goes on; an oversize one gives an
/// `Err(Error::Decode)` without one (the reflector relists) and the rest of it is dropped
/// unbuffered; a body that ends in the middle of an event gives an `Err(Error::Transport)` (the
/// reflector watches again from the last resource version).
///
/// Feed it chunks with [`push`](Self::push), take events with
/// [`next_event`](Self::next_event) until it returns `None`, and call
/// [`finish`](Self::finish) at the end of the body.
///
/// ```
/// use bytes::Bytes;
/// use kcache_client_http::WatchDecoder;
/// use kcache_reflector::WatchEvent;
/// use kcache_store::DynamicObject;
///
/// let mut d = WatchDecoder::<DynamicObject>::new();
/// d.push(Bytes::from_static(br#"{"type":"ADDED","object":{"metadata":{"na"#));
/// assert!(d.next_event().is_none()); // half an event so far
/// d.push(Bytes::from_static(b"me\":\"a\"}}}\n{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}\n"));
/// assert!(matches!(d.next_event(), Some(Ok(WatchEvent::Added(_)))));
/// assert!(matches!(d.next_event(), Some(Ok(WatchEvent::Bookmark(b))) if b.resource_version == "7"));
/// assert!(d.next_event().is_none());
/// assert!(d.finish().is_none());
/// ```
pub struct WatchDecoder<T> {
    /// The pieces of a line that started in an earlier chunk.
    carry: Vec<u8>,
    /// The current chunk.
    chunk: Bytes,
    /// How far into `chunk` lines have been taken.
    pos: usize,
    /// Dropping the rest of an oversize line.
    skipping: bool,
    /// An oversize error found by [`push`](Self::push), given out by the next `next_event`.
    pending: Option<Error>,
    max_event_size: usize,
    skip_managed_fields: bool,
    /// Counts arrays first so that vectors are allocated at their final size; `None` when off.
    exact: Option<ArrayCounts>,
    /// Builds the objects instead of serde (a compact decoder); `None`: serde.
    objects: Option<ObjectFn<T>>,
    _t: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for WatchDecoder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchDecoder")
            .field(
                "buffered",
                &(self.carry.len() + self.chunk.len() - self.pos),
            )
            .field("skipping", &self.skipping)
            .field("max_event_size", &self.max_event_size)
            .field("skip_managed_fields", &self.skip_managed_fields)
            .field("exact_capacities", &self.exact.is_some())
            .field("custom_objects", &self.objects.is_some())
            .finish_non_exhaustive()
    }
}

impl<T: DeserializeOwned> Default for WatchDecoder<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether a line holds only whitespace (blank lines are allowed between events).
fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

fn oversize(limit: usize) -> Error {
    Error::decode(DecodeError::new(
        "watch event",
        format!("event larger than the limit of {limit} bytes (max_event_size)"),
    ))
}

impl<T: DeserializeOwned> WatchDecoder<T> {
    /// A decoder with the [default size limit](DEFAULT_MAX_EVENT_SIZE), keeping managedFields.
    pub fn new() -> Self {
        Self {
            carry: Vec::new(),
            chunk: Bytes::new(),
            pos: 0,
            skipping: false,
            pending: None,
            max_event_size: DEFAULT_MAX_EVENT_SIZE,
            skip_managed_fields: false,
            exact: None,
            objects: None,
            _t: PhantomData,
        }
    }

    /// Sets the largest event accepted, in bytes (at least 1).
    #[must_use]
    pub fn max_event_size(mut self, bytes: usize) -> Self {
        self.max_event_size = bytes.max(1);
        self
    }

    /// Drops `metadata.managedFields` of every object while parsing (see [`SkipManagedFields`]).
    #[must_use]
    pub fn skip_managed_fields(mut self, skip: bool) -> Self {
        self.skip_managed_fields = skip;
        self
    }

    /// Sizes every vector of the decoded objects exactly (see
    /// [`HttpListerWatcherBuilder::exact_capacities`](crate::HttpListerWatcherBuilder::exact_capacities)).
    #[must_use]
    pub fn exact_capacities(mut self, on: bool) -> Self {
        self.exact = on.then(ArrayCounts::default);
        self
    }

    /// Builds objects with `objects` (a compact lister-watcher's shared codec).
    #[must_use]
    pub(crate) fn objects(mut self, objects: Option<ObjectFn<T>>) -> Self {
        self.objects = objects;
        self
    }

    /// Adds the next chunk of the body. Take the pending events first: whatever is left of the
    /// previous chunk is copied aside.
    pub fn push(&mut self, chunk: Bytes) {
        if self.pos < self.chunk.len() {
            let rest = self.chunk.slice(self.pos..);
            self.chunk = Bytes::new();
            self.pos = 0;
            if let Some(e) = self.keep_partial(&rest) {
                self.pending = Some(e);
            }
        }
        self.chunk = chunk;
        self.pos = 0;
    }

    /// Keeps `piece` (a line without its end) for later; `Some` when that makes the line too long.
    fn keep_partial(&mut self, piece: &[u8]) -> Option<Error> {
        if self.skipping {
            return None;
        }
        if self.carry.len() + piece.len() > self.max_event_size {
            self.carry = Vec::new();
            self.skipping = true;
            return Some(oversize(self.max_event_size));
        }
        self.carry.extend_from_slice(piece);
        None
    }

    /// Decodes one line (a method without `self`, so that the line may borrow the chunk).
    fn decode(
        skip_managed_fields: bool,
        exact: Option<&mut ArrayCounts>,
        objects: Option<&ObjectFn<T>>,
        line: &[u8],
    ) -> Result<WatchEvent<T>, Error> {
        if let Some(objects) = objects {
            return decode_event(objects, line);
        }
        // The object is one level inside the event. A type that ignores the deep part would
        // decode it; every object deeper than the limit is refused alike. The capacity scan,
        // when on, measures the depth on its way; otherwise a counting scan does.
        // The event's object's `metadata` is at depth 3.
        let scanned = exact.map(|counts| {
            let metadata_depth = skip_managed_fields.then_some(3);
            (counts.scan_skipping(line, metadata_depth), counts)
        });
        let too_deep_line = match &scanned {
            Some((true, counts)) => counts.deepest() > MAX_NESTING + 1,
            _ => nesting_exceeds(line, MAX_NESTING + 1),
        };
        if too_deep_line {
            return Err(Error::decode(too_deep(DecodeError::of_watch_event::<T>(
                line,
            ))));
        }
        if let Some((true, counts)) = scanned
            && let Some(event) = Self::decode_exact(skip_managed_fields, counts, line)
        {
            return Ok(event);
        }
        if skip_managed_fields {
            WatchEvent::<SkipManagedFields<T>>::from_json(line).map(unwrap_skipped)
        } else {
            WatchEvent::<T>::from_json(line)
        }
    }

    /// The exact-capacity decode of `line`, whose arrays `counts` has just counted; `None`
    /// when it fails (the plain decode then gives the error, with `serde_json`'s position).
    fn decode_exact(
        skip_managed_fields: bool,
        counts: &mut ArrayCounts,
        line: &[u8],
    ) -> Option<WatchEvent<T>> {
        let text = std::str::from_utf8(line).ok()?;
        if skip_managed_fields {
            counts
                .decode::<WatchEvent<SkipManagedFields<T>>>(text)
                .ok()
                .map(unwrap_skipped)
        } else {
            counts.decode::<WatchEvent<T>>(text).ok()
        }
    }

    /// The next complete event, or `None` when more bytes are needed.
    pub fn next_event(&mut self) -> Option<Result<WatchEvent<T>, Error>> {
        if let Some(e) = self.pending.take() {
            return Some(Err(e));
        }
        loop {
            let rest = &self.chunk[self.pos..];
            if rest.is_empty() {
                return None;
            }
            let Some(end) = memchr::memchr(b'\n', rest) else {
                let rest = self.chunk.slice(self.pos..);
                self.pos = self.chunk.len();
                return self.keep_partial(&rest).map(Err);
            };
            let (start, stop) = (self.pos, self.pos + end);
            self.pos = stop + 1;
            if std::mem::take(&mut self.skipping) {
                continue;
            }
            let line = &self.chunk[start..stop];
            if self.carry.is_empty() {
                if is_blank(line) {
                    continue;
                }
                if line.len() > self.max_event_size {
                    return Some(Err(oversize(self.max_event_size)));
                }
                return Some(Self::decode(
                    self.skip_managed_fields,
                    self.exact.as_mut(),
                    self.objects.as_ref(),
                    line,
                ));
            }
            if self.carry.len() + line.len() > self.max_event_size {
                self.carry.clear();
                return Some(Err(oversize(self.max_event_size)));
            }
            let mut whole = std::mem::take(&mut self.carry);
            whole.extend_from_slice(&self.chunk[start..stop]);
            let result = (!is_blank(&whole)).then(|| {
                Self::decode(
                    self.skip_managed_fields,
                    self.exact.as_mut(),
                    self.objects.as_ref(),
                    &whole,
                )
            });
            whole.clear();
            self.carry = whole;
            if let Some(result) = result {
                return Some(result);
            }
        }
    }

    /// The end of the body: the bytes after the last newline, decoded if they form a whole event,
    /// a decode error if they do not (a truncated stream), `None` if there are none.
    pub fn finish(&mut self) -> Option<Result<WatchEvent<T>, Error>> {
        let rest = self.chunk.slice(self.pos..);
        self.chunk = Bytes::new();
        self.pos = 0;
        if let Some(e) = self.keep_partial(&rest) {
            return Some(Err(e));
        }
        if std::mem::take(&mut self.skipping) {
            return None;
        }
        let tail = std::mem::take(&mut self.carry);
        if is_blank(&tail) {
            return None;
        }
        let cut_short = serde_json::from_slice::<serde::de::IgnoredAny>(&tail)
            .is_err_and(|e| e.classify() == serde_json::error::Category::Eof);
        if cut_short {
            return Some(Err(Error::transport(format!(
                "the watch stream ended in the middle of an event, after {} bytes of it",
                tail.len()
            ))));
        }
        Some(Self::decode(
            self.skip_managed_fields,
            self.exact.as_mut(),
            self.objects.as_ref(),
            &tail,
        ))
    }
}

impl<K: 'static> WatchDecoder<kcache_store::Compact<K>> {
    /// A decoder of compact objects: metadata decoded, the rest compressed by `codec` (see
    /// [`kcache_store::CompactCodec`]). The serde options (`skip_managed_fields`,
    /// `exact_capacities`) do not apply; the codec's do.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use kcache_client_http::WatchDecoder;
    /// use kcache_reflector::WatchEvent;
    /// use kcache_store::{Compact, CompactCodec, DynamicObject, Object};
    ///
    /// let mut d = WatchDecoder::<Compact<DynamicObject>>::compact(CompactCodec::new());
    /// d.push(Bytes::from_static(b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"));
    /// let Some(Ok(WatchEvent::Added(pod))) = d.next_event() else { panic!() };
    /// assert_eq!(pod.name(), Some("a"));
    /// ```
    pub fn compact(codec: kcache_store::CompactCodec) -> Self {
        Self::new().objects(Some(compact_objects(std::sync::Arc::new(codec))))
    }
}

fn unwrap_skipped<T>(e: WatchEvent<SkipManagedFields<T>>) -> WatchEvent<T> {
    match e {
        WatchEvent::Added(o) => WatchEvent::Added(o.0),
        WatchEvent::Modified(o) => WatchEvent::Modified(o.0),
        WatchEvent::Deleted(o) => WatchEvent::Deleted(o.0),
        WatchEvent::Bookmark(b) => WatchEvent::Bookmark(b),
        WatchEvent::Error(s) => WatchEvent::Error(s),
    }
}

/// A watch response body decoded into the reflector's stream, with each object checked by
/// `check` (its type and namespace). One hand-written stream rather than combinators: an event
/// holds its object by value (a typed pod is about 2.5 KB), and each layer a stream item
/// passes through moves it.
struct WatchBody<T> {
    body: ResponseBody,
    decoder: WatchDecoder<T>,
    /// Ends the stream, cleanly, once it fires.
    guard: Option<Pin<Box<tokio::time::Sleep>>>,
    check: Option<Check<T>>,
    done: bool,
}

/// Turns a decoded event whose object is not one of the lister-watcher's into an error.
pub(crate) type Check<T> = Box<dyn Fn(WatchEvent<T>) -> Result<WatchEvent<T>, Error> + Send>;

impl<T> WatchBody<T> {
    fn checked(&self, item: Result<WatchEvent<T>, Error>) -> Result<WatchEvent<T>, Error> {
        match &self.check {
            Some(check) => item.and_then(check),
            None => item,
        }
    }
}

impl<T: DeserializeOwned> futures_util::Stream for WatchBody<T> {
    type Item = Result<WatchEvent<T>, Error>;

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let this = self.get_mut();
        loop {
            if let Some(item) = this.decoder.next_event() {
                return Poll::Ready(Some(this.checked(item)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(guard) = &mut this.guard
                && guard.as_mut().poll(cx).is_ready()
            {
                tracing::debug!("watch outlived its timeoutSeconds; ending it");
                this.done = true;
                return Poll::Ready(None);
            }
            match this.body.poll_next_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => this.decoder.push(chunk),
                Poll::Ready(Some(Err(e))) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(Error::transport(e))));
                }
                Poll::Ready(None) => {
                    this.done = true;
                    let item = this.decoder.finish();
                    return Poll::Ready(item.map(|item| this.checked(item)));
                }
            }
        }
    }
}

/// Turns a watch response body into the reflector's stream. `guard` ends the stream (cleanly)
/// if the server has not ended it by then; `check` refuses objects that are not the
/// lister-watcher's.
pub(crate) fn watch_stream<T: DeserializeOwned + Send + 'static>(
    body: ResponseBody,
    decoder: WatchDecoder<T>,
    guard: Option<Duration>,
    check: Option<Check<T>>,
) -> WatchStream<T> {
    Box::pin(WatchBody {
        body,
        decoder,
        guard: guard.map(|d| Box::pin(tokio::time::sleep(d))),
        check,
        done: false,
    })
}

/// Runs the decoder over `data` split into chunks, for the fuzzer: the first byte picks the
/// chunk size, the second whether managedFields are skipped (bit 0), whether capacities are
/// exact (bit 7) and the event size limit (bits 1-6). Never panics on any input.
#[doc(hidden)]
pub fn fuzz_watch_decoder(data: &[u8]) -> usize {
    let (Some(&size), Some(&flags)) = (data.first(), data.get(1)) else {
        return 0;
    };
    let body = Bytes::copy_from_slice(&data[2..]);
    let mut d = WatchDecoder::<kcache_store::DynamicObject>::new()
        .max_event_size(usize::from((flags >> 1) & 0x3F).max(1) * 64)
        .skip_managed_fields(flags & 1 == 1)
        .exact_capacities(flags & 0x80 != 0);
    let step = usize::from(size).max(1);
    let mut events = 0;
    let mut at = 0;
    while at < body.len() {
        let end = (at + step).min(body.len());
        d.push(body.slice(at..end));
        at = end;
        while let Some(e) = d.next_event() {
            events += usize::from(e.is_ok());
        }
    }
    if let Some(Ok(_)) = d.finish() {
        events += 1;
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcache_store::DynamicObject;

    fn added(name: &str) -> String {
        format!(
            r#"{{"type":"ADDED","object":{{"metadata":{{"name":"{name}","managedFields":[1]}}}}}}"#
        )
    }

    fn run(chunks: &[&[u8]], limit: usize) -> Vec<Result<String, String>> {
        let mut d = WatchDecoder::<DynamicObject>::new().max_event_size(limit);
        let mut out = Vec::new();
        let mut take = |r: Result<WatchEvent<DynamicObject>, Error>| {
            out.push(match r {
                Ok(WatchEvent::Added(o)) => Ok(o.metadata.name.unwrap_or_default()),
                Ok(other) => Ok(format!("{:?}", other.event_type())),
                Err(e) => Err(kcache_reflector::ErrorChain(&e).to_string()),
            });
        };
        for c in chunks {
            d.push(Bytes::copy_from_slice(c));
            while let Some(r) = d.next_event() {
                take(r);
            }
        }
        if let Some(r) = d.finish() {
            take(r);
        }
        out
    }

    #[test]
    fn every_split_of_a_stream_gives_the_same_events() {
        let text = format!("{}\n\n{}\r\n{}\n", added("a"), added("b"), added("c"));
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            for j in i..bytes.len() {
                let got = run(&[&bytes[..i], &bytes[i..j], &bytes[j..]], 1 << 20);
                assert_eq!(
                    got,
                    [Ok("a".into()), Ok("b".into()), Ok("c".into())],
                    "{i} {j}"
                );
            }
        }
    }

    /// A watch line whose object's `spec` is `arrays` nested arrays (`1 + arrays` levels).
    fn nested_event(name: &str, arrays: usize) -> String {
        format!(
            "{{\"type\":\"ADDED\",\"object\":{{\"metadata\":{{\"name\":\"{name}\",\"namespace\":\"ns\",\"resourceVersion\":\"3\"}},\"spec\":{{\"x\":{}1{}}}}}}}\n",
            "[".repeat(arrays),
            "]".repeat(arrays)
        )
    }

    /// Past `MAX_NESTING` an object is refused whatever its type would do with it (a typed
    /// `Pod` ignores the unknown deep field, `DynamicObject` keeps it), with its identity, so
    /// the reflector leaves just that key out; at the limit it decodes.
    #[test]
    fn an_object_nested_past_the_limit_is_refused_alike_by_every_type() {
        use k8s_openapi::api::core::v1::Pod;
        /// The events of `line`, decoded with exact capacities (whose scan measures the depth)
        /// and without (a scan of its own does); both must agree.
        fn events<T: DeserializeOwned>(line: &str) -> Vec<Result<WatchEvent<T>, Error>> {
            let mut all = Vec::new();
            for exact in [true, false] {
                let mut d = WatchDecoder::<T>::new().exact_capacities(exact);
                d.push(Bytes::from(line.to_owned()));
                all.push(std::iter::from_fn(|| d.next_event()).collect::<Vec<_>>());
            }
            let kinds: Vec<Vec<bool>> = all
                .iter()
                .map(|events| events.iter().map(Result::is_ok).collect())
                .collect();
            assert_eq!(kinds[0], kinds[1], "exact and plain decodes agree");
            all.swap_remove(0)
        }
        // `spec` and `x` are two levels: the object nests `2 + arrays`.
        let at = nested_event("ok", MAX_NESTING - 2);
        assert!(matches!(events::<Pod>(&at)[..], [Ok(WatchEvent::Added(_))]));
        assert!(matches!(
            events::<DynamicObject>(&at)[..],
            [Ok(WatchEvent::Added(_))]
        ));
        for arrays in [MAX_NESTING - 1, 600, 100_000] {
            let line = nested_event("deep", arrays);
            let pods = events::<Pod>(&line).into_iter().map(|e| e.map(|_| ()));
            let dynamic = events::<DynamicObject>(&line)
                .into_iter()
                .map(|e| e.map(|_| ()));
            let got: Vec<_> = pods.chain(dynamic).collect();
            assert_eq!(got.len(), 2, "{arrays}: {got:?}");
            for got in &got {
                let Err(Error::Decode(d)) = got else {
                    panic!("{arrays}: {got:?}");
                };
                assert_eq!(d.reason, "the object nests deeper than 126 levels");
                let (key, rv, _) = d.identity().expect("the identity is read");
                assert_eq!((key.as_str(), rv), ("ns/deep", "3"));
            }
        }
    }

    #[test]
    fn corrupt_line_is_an_error_and_the_stream_goes_on() {
        let text = format!(
            "{}\n{{\"type\":\"ADDED\",\"obj\n{}\n",
            added("a"),
            added("b")
        );
        let got = run(&[text.as_bytes()], 1 << 20);
        assert_eq!(got.len(), 3);
        assert_eq!(
            got[1].as_ref().unwrap_err(),
            "could not decode watch event: EOF while parsing a string"
        );
        assert_eq!(got[2], Ok("b".into()));
    }

    #[test]
    fn oversize_event_is_skipped_in_one_chunk_or_many() {
        let big = added(&"x".repeat(300));
        let text = format!("{}\n{big}\n{}\n", added("a"), added("b"));
        for step in [1, 7, 64, text.len()] {
            let chunks: Vec<&[u8]> = text.as_bytes().chunks(step).collect();
            let got = run(&chunks, 200);
            assert_eq!(got.len(), 3, "step {step}: {got:?}");
            assert_eq!(got[0], Ok("a".into()));
            assert!(
                got[1]
                    .as_ref()
                    .unwrap_err()
                    .contains("larger than the limit of 200 bytes")
            );
            assert_eq!(got[2], Ok("b".into()));
        }
    }

    #[test]
    fn truncated_tail_is_an_error_and_a_whole_tail_an_event() {
        let text = format!("{}\n{}", added("a"), &added("b")[..20]);
        let got = run(&[text.as_bytes()], 1 << 20);
        assert_eq!(got[0], Ok("a".into()));
        let e = got[1].as_ref().unwrap_err();
        assert_eq!(
            e,
            "transport error: the watch stream ended in the middle of an event, after 20 bytes of it"
        );
        assert_eq!(run(&[added("z").as_bytes()], 1 << 20), [Ok("z".into())]);
    }

    #[test]
    fn skip_managed_fields_applies_to_events() {
        let mut d = WatchDecoder::<DynamicObject>::new().skip_managed_fields(true);
        d.push(Bytes::from(format!("{}\n", added("a"))));
        let Some(Ok(WatchEvent::Added(o))) = d.next_event() else {
            panic!()
        };
        assert!(!o.metadata.other.contains_key("managedFields"));
    }

    #[test]
    fn fuzz_entry_point_survives_odd_input() {
        assert_eq!(fuzz_watch_decoder(b""), 0);
        let mut data = vec![3u8, 0xFF];
        data.extend_from_slice(added("a").as_bytes());
        data.extend_from_slice(b"\n\xff\xfe\n");
        data.extend_from_slice(added("b").as_bytes());
        assert_eq!(fuzz_watch_decoder(&data), 2);
    }
}
