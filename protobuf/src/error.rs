//! Why protobuf input could not be read or written.

use std::fmt;

/// Everything that can go wrong reading or writing Kubernetes' protobuf encoding.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input ended inside a value.
    #[error("protobuf input ends inside a value (at byte {at})")]
    Truncated {
        /// Where the value started.
        at: usize,
    },
    /// A varint longer than ten bytes.
    #[error("protobuf varint longer than ten bytes (at byte {at})")]
    BadVarint {
        /// Where it started.
        at: usize,
    },
    /// A wire type this encoding never uses (groups) or an unknown one.
    #[error("protobuf wire type {wire_type} is not supported (field {field})")]
    WireType {
        /// The field number.
        field: u32,
        /// The wire type found.
        wire_type: u8,
    },
    /// A field's wire type does not fit the field's declared kind.
    #[error("field `{field}` of {message}: wire type {wire_type} does not fit its declared kind")]
    Mismatch {
        /// The message's definition name.
        message: &'static str,
        /// The field's JSON name (empty for an inlined field).
        field: &'static str,
        /// The wire type found.
        wire_type: u8,
    },
    /// A string field that is not UTF-8.
    #[error("field `{field}` of {message} is not UTF-8")]
    Utf8 {
        /// The message's definition name.
        message: &'static str,
        /// The field's JSON name.
        field: &'static str,
    },
    /// Nesting deeper than [`crate::MAX_DEPTH`].
    #[error("protobuf messages nested deeper than {0}")]
    TooDeep(usize),
    /// The bytes do not start with Kubernetes' `k8s\0` magic.
    #[error("not Kubernetes protobuf: the body does not start with the `k8s\\0` magic")]
    NoMagic,
    /// The envelope names a kind the table does not have.
    #[error("no protobuf table for {api_version} {kind}")]
    UnknownKind {
        /// The envelope's apiVersion.
        api_version: String,
        /// The envelope's kind.
        kind: String,
    },
    /// The envelope's content is encoded (compressed) in a way this crate does not read.
    #[error("protobuf envelope content encoding `{0}` is not supported")]
    ContentEncoding(String),
    /// A raw JSON field (`RawExtension`, `FieldsV1`) holds bytes that are not JSON.
    #[error("raw field of {message} is not JSON: {source}")]
    RawJson {
        /// The message's definition name.
        message: &'static str,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// A JSON value that the protobuf form cannot carry (encoding).
    #[error("`{field}` of {message}: {reason}")]
    Unencodable {
        /// The message's definition name.
        message: &'static str,
        /// The field's JSON name.
        field: String,
        /// Why.
        reason: String,
    },
    /// A length-delimited frame longer than the reader allows.
    #[error("protobuf frame of {len} bytes is over the limit of {limit}")]
    FrameTooLarge {
        /// The frame's declared length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The type being decoded refused a value (its own message).
    #[error("{0}")]
    Custom(String),
    /// A repeated field split by other fields: decoded again, more slowly (never returned by
    /// the public functions).
    #[error("repeated or duplicate field {0} out of order")]
    Unordered(u32),
}

impl serde::de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self::Custom(msg.to_string())
    }
}
