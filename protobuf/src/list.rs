//! Reading an enveloped protobuf list as it arrives: the list's kind, then its `ListMeta`
//! (field 1 of the list message), then each item (field 2) as soon as its bytes are in, so a
//! list of any length is read holding one item at a time (never the whole body).

use crate::Error;
use crate::envelope::{MAGIC, read_type_meta};
use crate::wire::{LEN, Reader};

/// A part of a list, in the order the body holds them, borrowed from the reader's buffer
/// until the next [`push`](ListReader::push) (an item is decoded where it lies, not copied).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListPart<'a> {
    /// The list's `apiVersion` and kind (`v1`, `PodList`).
    TypeMeta {
        /// `apiVersion`.
        api_version: &'a str,
        /// The list's kind.
        kind: &'a str,
    },
    /// The list's `ListMeta` message.
    Metadata(&'a [u8]),
    /// One item's message.
    Item(&'a [u8]),
}

/// Where the reader is in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the magic.
    Magic,
    /// Among the envelope's fields.
    Envelope,
    /// Inside the envelope's `raw` (the list message), this many bytes of it left.
    List(usize),
}

/// The push reader of a list body.
#[derive(Debug)]
pub struct ListReader {
    buf: Vec<u8>,
    start: usize,
    state: State,
    limit: usize,
}

/// A tag and a length read from the front of `bytes`: (field, wire type, length, header size);
/// `None` if the header is not all there yet.
fn header(bytes: &[u8]) -> Result<Option<(u32, u8, usize, usize)>, Error> {
    let mut reader = Reader::new(bytes);
    let tag = match reader.varint() {
        Ok(t) => t,
        Err(Error::Truncated { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let number = u32::try_from(tag >> 3).map_err(|_| Error::BadVarint { at: 0 })?;
    #[allow(clippy::cast_possible_truncation, reason = "three bits")]
    let wire_type = (tag & 7) as u8;
    if wire_type != LEN {
        return Err(Error::WireType {
            field: number,
            wire_type,
        });
    }
    let len = match reader.varint() {
        Ok(l) => usize::try_from(l).map_err(|_| Error::BadVarint { at: 0 })?,
        Err(Error::Truncated { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(Some((number, wire_type, len, reader.position())))
}

impl ListReader {
    /// A reader refusing any one part (an item, the list's metadata) over `limit` bytes.
    #[must_use]
    pub fn new(limit: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            state: State::Magic,
            limit,
        }
    }

    /// Adds bytes of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.start > 0 && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// Bytes received but not yet returned.
    #[must_use]
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Whether the body so far ends where a whole list may end.
    #[must_use]
    pub fn at_end(&self) -> bool {
        self.state == State::Envelope && self.buffered() == 0
    }

    /// The next part whose bytes are all in.
    ///
    /// # Errors
    /// A body without the magic, malformed protobuf, or a part over the limit.
    pub fn next_part(&mut self) -> Result<Option<ListPart<'_>>, Error> {
        loop {
            let rest = &self.buf[self.start..];
            match self.state {
                State::Magic => {
                    if rest.len() < MAGIC.len() {
                        if !MAGIC.starts_with(rest) {
                            return Err(Error::NoMagic);
                        }
                        return Ok(None);
                    }
                    if rest[..MAGIC.len()] != MAGIC {
                        return Err(Error::NoMagic);
                    }
                    self.start += MAGIC.len();
                    self.state = State::Envelope;
                }
                State::Envelope => {
                    let Some((number, _, len, size)) = header(rest)? else {
                        return Ok(None);
                    };
                    if number == 2 {
                        self.start += size;
                        self.state = State::List(len);
                        continue;
                    }
                    if len > self.limit {
                        return Err(Error::FrameTooLarge {
                            len,
                            limit: self.limit,
                        });
                    }
                    if rest.len() < size + len {
                        return Ok(None);
                    }
                    self.start += size + len;
                    if number == 1 {
                        let (api_version, kind) = read_type_meta(&rest[size..size + len])?;
                        return Ok(Some(ListPart::TypeMeta { api_version, kind }));
                    }
                }
                State::List(0) => self.state = State::Envelope,
                State::List(left) => {
                    let Some((number, _, len, size)) = header(rest)? else {
                        return Ok(None);
                    };
                    if size + len > left {
                        return Err(Error::Truncated { at: self.start });
                    }
                    if len > self.limit {
                        return Err(Error::FrameTooLarge {
                            len,
                            limit: self.limit,
                        });
                    }
                    if rest.len() < size + len {
                        return Ok(None);
                    }
                    let body = &rest[size..size + len];
                    self.start += size + len;
                    self.state = State::List(left - size - len);
                    match number {
                        1 => return Ok(Some(ListPart::Metadata(body))),
                        2 => return Ok(Some(ListPart::Item(body))),
                        _ => {}
                    }
                }
            }
        }
    }
}
