//! [`PayloadFormat`]: how a [`Compact`](super::Compact) object kept in an encoding other than
//! JSON (Kubernetes' protobuf) is read back.

use super::JsonPointer;

/// Reads back the payload of a [`Compact`](super::Compact) object that a decoder of another
/// encoding built with [`CompactCodec::encode_parts`](super::CompactCodec::encode_parts): the
/// object's bytes as that encoding wrote them (without `managedFields` unless kept).
///
/// `kcache-store` knows JSON only; a crate that reads another encoding (client-http reads
/// Kubernetes' protobuf) implements this for the objects it builds, and shares one instance
/// (in an `Arc`) between the objects of a stream. Each object holds a reference to it, so it
/// can always be read back, whatever else the stream sends.
///
/// ```
/// use std::sync::Arc;
/// use kcache_store::{Compact, CompactCodec, CompactMetadata, DynamicObject, Object, PayloadFormat};
///
/// /// Objects kept as their JSON in reverse byte order: a format `kcache-store` does not know.
/// struct Reversed;
///
/// impl PayloadFormat<DynamicObject> for Reversed {
///     fn name(&self) -> &'static str {
///         "reversed JSON"
///     }
///     fn json(&self, payload: &[u8]) -> Result<String, serde_json::Error> {
///         let bytes: Vec<u8> = payload.iter().rev().copied().collect();
///         String::from_utf8(bytes).map_err(serde::de::Error::custom)
///     }
///     fn typed(&self, payload: &[u8]) -> Result<DynamicObject, serde_json::Error> {
///         serde_json::from_str(&self.json(payload)?)
///     }
/// }
///
/// let json = r#"{"metadata":{"name":"a","namespace":"ns"},"data":{"k":"v"}}"#;
/// let metadata: CompactMetadata = serde_json::from_str(r#"{"name":"a","namespace":"ns"}"#)?;
/// let payload: Vec<u8> = json.bytes().rev().collect();
/// let compact: Compact<DynamicObject> =
///     CompactCodec::new().encode_parts(metadata, &payload, Arc::new(Reversed));
/// assert_eq!(compact.namespace(), Some("ns"));
/// assert_eq!(compact.pointer("/data/k")?, Some("v".into()));
/// assert_eq!(compact.typed()?.data["data"]["k"], "v");
/// # Ok::<(), serde_json::Error>(())
/// ```
pub trait PayloadFormat<K>: Send + Sync {
    /// The encoding's name, for debugging output (`"protobuf"`).
    fn name(&self) -> &'static str;

    /// The whole object decoded from `payload`.
    ///
    /// # Errors
    ///
    /// `payload` does not decode as a `K`.
    fn typed(&self, payload: &[u8]) -> Result<K, serde_json::Error>;

    /// The object's JSON form, as a JSON decode of the same object would have kept it.
    ///
    /// # Errors
    ///
    /// `payload` does not decode.
    fn json(&self, payload: &[u8]) -> Result<String, serde_json::Error>;

    /// The value at `pointer` in the object's JSON form; `None` when there is no such value.
    /// By default read from [`json`](Self::json)'s text; a format whose decoder is a serde
    /// `Deserializer` presenting the object as JSON does can seek it in `payload` directly,
    /// with [`JsonPointer::seek`](super::JsonPointer::seek), building nothing else.
    ///
    /// # Errors
    ///
    /// `payload` does not decode.
    fn pointer(
        &self,
        payload: &[u8],
        pointer: &JsonPointer,
    ) -> Result<Option<serde_json::Value>, serde_json::Error> {
        pointer.read(&self.json(payload)?)
    }
}
