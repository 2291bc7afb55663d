//! The envelope of every protobuf body kube-apiserver sends: the magic `k8s\0`, then a
//! `runtime.Unknown` message whose `typeMeta` (field 1: `apiVersion` 1, `kind` 2) names the
//! kind, whose `raw` (field 2) is the object's message, and whose `contentEncoding` (3) and
//! `contentType` (4) are empty.

use serde::Deserialize;
use serde_json::Value;

use crate::de::{TypeMeta, from_message};
use crate::table::{Message, message_for_kind};
use crate::wire::{Reader, Wire, put_bytes, put_nested};
use crate::{Error, encode};

/// The four bytes every enveloped body starts with.
pub const MAGIC: [u8; 4] = *b"k8s\0";

/// The media type of Kubernetes' protobuf encoding.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream (length-prefixed frames, see [`crate::frames`]).
pub const WATCH_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// An envelope, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// The kind's `apiVersion`.
    pub api_version: &'a str,
    /// The kind.
    pub kind: &'a str,
    /// The object's message.
    pub raw: &'a [u8],
    /// How `raw` is encoded (compressed); empty when it is not.
    pub content_encoding: &'a str,
}

impl<'a> Envelope<'a> {
    /// The `apiVersion` and `kind` as a [`TypeMeta`].
    #[must_use]
    pub fn type_meta(&self) -> TypeMeta<'a> {
        TypeMeta {
            api_version: self.api_version,
            kind: self.kind,
        }
    }

    /// The table's message for this envelope's kind.
    ///
    /// # Errors
    /// [`Error::UnknownKind`].
    pub fn message(&self) -> Result<&'static Message, Error> {
        message_for_kind(self.api_version, self.kind).ok_or_else(|| Error::UnknownKind {
            api_version: self.api_version.to_owned(),
            kind: self.kind.to_owned(),
        })
    }
}

/// Whether `bytes` start with the magic.
#[must_use]
pub fn is_enveloped(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC)
}

/// Reads the type meta message (field 1 of `runtime.Unknown`).
pub(crate) fn read_type_meta(bytes: &[u8]) -> Result<(&str, &str), Error> {
    let mut reader = Reader::new(bytes);
    let (mut api_version, mut kind) = ("", "");
    while let Some((number, wire)) = reader.field()? {
        match (number, wire) {
            (1, Wire::Len(b)) => {
                api_version = std::str::from_utf8(b).map_err(|_| type_meta_utf8())?;
            }
            (2, Wire::Len(b)) => {
                kind = std::str::from_utf8(b).map_err(|_| type_meta_utf8())?;
            }
            _ => {}
        }
    }
    Ok((api_version, kind))
}

fn type_meta_utf8() -> Error {
    Error::Utf8 {
        message: "io.k8s.apimachinery.pkg.runtime.TypeMeta",
        field: "apiVersion",
    }
}

/// Reads an envelope.
///
/// # Errors
/// [`Error::NoMagic`], malformed protobuf, or a compressed `raw` ([`Error::ContentEncoding`]).
pub fn parse(bytes: &[u8]) -> Result<Envelope<'_>, Error> {
    let body = bytes.strip_prefix(&MAGIC[..]).ok_or(Error::NoMagic)?;
    let mut reader = Reader::new(body);
    let mut out = Envelope {
        api_version: "",
        kind: "",
        raw: &[],
        content_encoding: "",
    };
    while let Some((number, wire)) = reader.field()? {
        match (number, wire) {
            (1, Wire::Len(b)) => (out.api_version, out.kind) = read_type_meta(b)?,
            (2, Wire::Len(b)) => out.raw = b,
            (3, Wire::Len(b)) => {
                out.content_encoding = std::str::from_utf8(b).map_err(|_| type_meta_utf8())?;
            }
            _ => {}
        }
    }
    if !out.content_encoding.is_empty() {
        return Err(Error::ContentEncoding(out.content_encoding.to_owned()));
    }
    Ok(out)
}

/// Deserializes the object of an enveloped body (its kind must be in the table).
///
/// # Errors
/// As [`parse`], [`Error::UnknownKind`], and whatever `T` refuses.
pub fn decode<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, Error> {
    let envelope = parse(bytes)?;
    from_message(
        envelope.raw,
        envelope.message()?,
        Some(envelope.type_meta()),
    )
}

/// Appends an envelope holding `raw`, an object of `kind` in `api_version`.
pub fn write(api_version: &str, kind: &str, raw: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&MAGIC);
    // Infallible: the closure only appends.
    let _ = put_nested(out, 1, |o| {
        put_bytes(o, 1, api_version.as_bytes());
        put_bytes(o, 2, kind.as_bytes());
        Ok(())
    });
    put_bytes(out, 2, raw);
    put_bytes(out, 3, b"");
    put_bytes(out, 4, b"");
}

/// The enveloped protobuf form of a JSON object that names its `apiVersion` and `kind`.
///
/// # Errors
/// [`Error::UnknownKind`] for a kind the table does not have (a custom resource), or a value
/// the protobuf form cannot carry.
pub fn encode_object(object: &Value) -> Result<Vec<u8>, Error> {
    let text = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let message = message_for_kind(api_version, kind).ok_or_else(|| Error::UnknownKind {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
    })?;
    let raw = encode::to_vec(object, message)?;
    let mut out = Vec::with_capacity(raw.len() + 32);
    write(api_version, kind, &raw, &mut out);
    Ok(out)
}
