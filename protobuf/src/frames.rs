//! Watch streams in protobuf: each event is a frame of a 4-byte big-endian length and a
//! `meta/v1` `WatchEvent` message (`type`, field 1; `object`, field 2, a `RawExtension` whose
//! `raw` is the enveloped object). The frames themselves carry no envelope.

use crate::Error;
use crate::wire::{LEN, Reader, Wire, len_field_len, put_bytes, put_tag, put_varint};

/// One watch event, read from its frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchEvent<'a> {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub event_type: &'a str,
    /// The enveloped object (see [`crate::envelope`]).
    pub object: &'a [u8],
}

/// Reads the event of one frame's payload.
///
/// # Errors
/// Malformed protobuf or a type that is not UTF-8.
pub fn parse_event(payload: &[u8]) -> Result<WatchEvent<'_>, Error> {
    let mut reader = Reader::new(payload);
    let mut out = WatchEvent {
        event_type: "",
        object: &[],
    };
    while let Some((number, wire)) = reader.field()? {
        match (number, wire) {
            (1, Wire::Len(b)) => {
                out.event_type = std::str::from_utf8(b).map_err(|_| Error::Utf8 {
                    message: "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
                    field: "type",
                })?;
            }
            (2, Wire::Len(b)) => {
                let mut inner = Reader::new(b);
                while let Some((n, w)) = inner.field()? {
                    if let (1, Wire::Len(raw)) = (n, w) {
                        out.object = raw;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Appends one frame: the length, then the event of `event_type` holding the enveloped
/// `object`, written straight into `out` (the sizes are known beforehand).
pub fn write_event(event_type: &str, object: &[u8], out: &mut Vec<u8>) {
    let raw_extension = len_field_len(1, object.len());
    let payload = len_field_len(1, event_type.len()) + len_field_len(2, raw_extension);
    out.reserve(4 + payload);
    let len = u32::try_from(payload).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    put_bytes(out, 1, event_type.as_bytes());
    put_tag(out, 2, LEN);
    put_varint(out, raw_extension as u64);
    put_bytes(out, 1, object);
}

/// Splits a byte stream into frames as it arrives, holding at most one frame (and never more
/// than `limit` bytes of one).
#[derive(Debug)]
pub struct FrameReader {
    buf: Vec<u8>,
    start: usize,
    limit: usize,
}

impl FrameReader {
    /// A reader refusing frames over `limit` bytes.
    #[must_use]
    pub fn new(limit: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            limit,
        }
    }

    /// Adds bytes from the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next whole frame's payload, if one has arrived.
    ///
    /// # Errors
    /// [`Error::FrameTooLarge`] as soon as a frame's length is over the limit: the stream
    /// cannot be read further.
    pub fn next_frame(&mut self) -> Result<Option<&[u8]>, Error> {
        if self.start > 0 && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        let rest = &self.buf[self.start..];
        let Some(header) = rest.get(..4) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        if len > self.limit {
            return Err(Error::FrameTooLarge {
                len,
                limit: self.limit,
            });
        }
        if rest.len() < 4 + len {
            return Ok(None);
        }
        let from = self.start + 4;
        self.start = from + len;
        Ok(Some(&self.buf[from..from + len]))
    }

    /// Bytes received but not yet returned as a frame.
    #[must_use]
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }
}
