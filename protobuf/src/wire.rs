//! The protobuf wire format: varints, tags, and length-delimited values.

use crate::Error;

/// Wire type 0: a varint.
pub const VARINT: u8 = 0;
/// Wire type 1: eight bytes.
pub const FIXED64: u8 = 1;
/// Wire type 2: a length-delimited value.
pub const LEN: u8 = 2;
/// Wire type 5: four bytes.
pub const FIXED32: u8 = 5;

/// One value as it is on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire<'a> {
    /// A varint.
    Varint(u64),
    /// Eight little-endian bytes.
    Fixed64(u64),
    /// Four little-endian bytes.
    Fixed32(u32),
    /// Length-delimited bytes.
    Len(&'a [u8]),
}

impl Wire<'_> {
    /// The wire type of this value.
    #[must_use]
    pub fn wire_type(&self) -> u8 {
        match self {
            Self::Varint(_) => VARINT,
            Self::Fixed64(_) => FIXED64,
            Self::Fixed32(_) => FIXED32,
            Self::Len(_) => LEN,
        }
    }
}

/// A cursor over a message's bytes.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    #[must_use]
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// Whether every byte was read.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    /// The read position.
    #[must_use]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Moves the read position back to `at` (a position this reader returned).
    pub fn rewind(&mut self, at: usize) {
        self.pos = at.min(self.pos);
    }

    /// The bytes from `start` to the read position.
    #[must_use]
    pub fn since(&self, start: usize) -> &'a [u8] {
        &self.bytes[start.min(self.pos)..self.pos]
    }

    /// Reads a varint.
    ///
    /// # Errors
    /// [`Error::Truncated`] or [`Error::BadVarint`].
    pub fn varint(&mut self) -> Result<u64, Error> {
        let start = self.pos;
        let mut value = 0u64;
        for shift in 0..10 {
            let Some(&byte) = self.bytes.get(self.pos) else {
                return Err(Error::Truncated { at: start });
            };
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << (shift * 7);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Error::BadVarint { at: start })
    }

    /// Reads `n` bytes.
    fn take(&mut self, n: usize, start: usize) -> Result<&'a [u8], Error> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or(Error::Truncated { at: start })?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    /// Reads a tag and its value: `None` at the end of the bytes.
    ///
    /// # Errors
    /// Truncated input, a bad varint, or a group wire type.
    pub fn field(&mut self) -> Result<Option<(u32, Wire<'a>)>, Error> {
        if self.is_empty() {
            return Ok(None);
        }
        let start = self.pos;
        let tag = self.varint()?;
        let number = u32::try_from(tag >> 3).map_err(|_| Error::BadVarint { at: start })?;
        #[allow(clippy::cast_possible_truncation, reason = "three bits")]
        let wire_type = (tag & 7) as u8;
        let value = match wire_type {
            VARINT => Wire::Varint(self.varint()?),
            FIXED64 => {
                let b = self.take(8, start)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Wire::Fixed64(u64::from_le_bytes(a))
            }
            LEN => {
                let len =
                    usize::try_from(self.varint()?).map_err(|_| Error::Truncated { at: start })?;
                Wire::Len(self.take(len, start)?)
            }
            FIXED32 => {
                let b = self.take(4, start)?;
                let mut a = [0u8; 4];
                a.copy_from_slice(b);
                Wire::Fixed32(u32::from_le_bytes(a))
            }
            _ => {
                return Err(Error::WireType {
                    field: number,
                    wire_type,
                });
            }
        };
        Ok(Some((number, value)))
    }
}

/// `value` as a varint: the bytes, in a buffer large enough for any, and how many there are.
fn varint_bytes(mut value: u64) -> ([u8; 10], usize) {
    let mut bytes = [0u8; 10];
    let mut n = 0;
    while value >= 0x80 {
        #[allow(clippy::cast_possible_truncation, reason = "seven bits")]
        {
            bytes[n] = (value as u8 & 0x7f) | 0x80;
        }
        value >>= 7;
        n += 1;
    }
    #[allow(clippy::cast_possible_truncation, reason = "below 0x80")]
    {
        bytes[n] = value as u8;
    }
    (bytes, n + 1)
}

/// How many bytes `value` takes as a varint.
#[must_use]
pub fn varint_len(value: u64) -> usize {
    varint_bytes(value).1
}

/// How many bytes a length-delimited field numbered `number` holding `len` bytes takes.
#[must_use]
pub fn len_field_len(number: u32, len: usize) -> usize {
    varint_len(u64::from(number) << 3) + varint_len(len as u64) + len
}

/// Appends `value` as a varint.
pub fn put_varint(out: &mut Vec<u8>, value: u64) {
    let (bytes, n) = varint_bytes(value);
    out.extend_from_slice(&bytes[..n]);
}

/// Appends a tag.
pub fn put_tag(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

/// Appends a length-delimited field.
pub fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_tag(out, number, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends a varint field.
pub fn put_varint_field(out: &mut Vec<u8>, number: u32, value: u64) {
    put_tag(out, number, VARINT);
    put_varint(out, value);
}

/// Appends a length-delimited field whose content `write` appends; the length is patched in
/// afterwards (content of up to 127 bytes needs no move).
pub fn put_nested(
    out: &mut Vec<u8>,
    number: u32,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), Error>,
) -> Result<(), Error> {
    put_tag(out, number, LEN);
    let at = out.len();
    out.push(0);
    write(out)?;
    let len = out.len() - at - 1;
    if len < 0x80 {
        #[allow(clippy::cast_possible_truncation, reason = "below 0x80")]
        {
            out[at] = len as u8;
        }
    } else {
        let (prefix, n) = varint_bytes(len as u64);
        out.splice(at..=at, prefix[..n].iter().copied());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for v in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(Reader::new(&out).varint().unwrap(), v);
        }
        assert!(matches!(
            Reader::new(&[0x80]).varint(),
            Err(Error::Truncated { .. })
        ));
        assert!(matches!(
            Reader::new(&[0xff; 11]).varint(),
            Err(Error::BadVarint { .. })
        ));
    }

    #[test]
    fn lengths_are_what_is_written() {
        for v in [0u64, 1, 127, 128, 16_383, 16_384, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(varint_len(v), out.len(), "{v}");
        }
        for len in [0, 127, 128, 70_000] {
            let mut out = Vec::new();
            put_bytes(&mut out, 17, &vec![1; len]);
            assert_eq!(len_field_len(17, len), out.len(), "{len}");
        }
    }

    #[test]
    fn nested_lengths_are_patched() {
        let mut out = Vec::new();
        put_nested(&mut out, 2, |o| {
            o.extend_from_slice(&[7u8; 200]);
            Ok(())
        })
        .unwrap();
        let mut r = Reader::new(&out);
        assert_eq!(r.field().unwrap(), Some((2, Wire::Len(&[7u8; 200][..]))));
        assert!(r.is_empty());
    }

    #[test]
    fn truncated_lengths_are_errors() {
        assert!(matches!(
            Reader::new(&[0x12, 5, 1]).field(),
            Err(Error::Truncated { .. })
        ));
        assert!(matches!(
            Reader::new(&[0x0b]).field(),
            Err(Error::WireType { .. })
        ));
    }
}
