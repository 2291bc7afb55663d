//! [`CompactCodec`]: turns the JSON of objects into [`Compact`] objects: metadata decoded,
//! `managedFields` cut out, the rest LZ4-compressed against a dictionary shared by the objects
//! of one stream.

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use serde::Serialize;

use super::meta::{read_meta, without_managed_fields_slow, without_member_into};
use super::summary::CompactMetadata;
use super::{Compact, PayloadFormat};
use crate::{ExpectedType, MAX_NESTING, nesting_exceeds};

/// The most of a dictionary LZ4 can refer back to (its window): 64 KiB.
const MAX_DICTIONARY: usize = 64 * 1024;

/// The JSON a stream's objects are compressed against, shared by every object that used it.
#[derive(Clone)]
pub(crate) struct Dictionary(pub(crate) Arc<[u8]>);

impl Dictionary {
    fn of(sample: &[u8]) -> Self {
        Self(Arc::from(&sample[..sample.len().min(MAX_DICTIONARY)]))
    }
}

/// An object's JSON, as a [`Compact`] holds it.
#[derive(Clone)]
pub(crate) struct Packed {
    /// LZ4 block (against `dictionary` when set), or the JSON itself when `compressed` is false.
    pub(crate) bytes: Box<[u8]>,
    /// The JSON's length.
    pub(crate) len: usize,
    pub(crate) compressed: bool,
    pub(crate) dictionary: Option<Dictionary>,
}

/// The largest compression buffer a thread keeps between objects; a bigger object's buffer is
/// freed after it.
const MAX_KEPT_SCRATCH: usize = 256 * 1024;

thread_local! {
    /// Where this thread compresses: one buffer reused by every object it encodes.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// Where this thread writes an object's JSON without its managedFields, before packing it.
    static STRIPPED: RefCell<String> = const { RefCell::new(String::new()) };
}

/// `input` LZ4-compressed (against `dictionary` when it has more than 3 bytes, as LZ4 needs),
/// in a block of exactly its size, or `None` when that is not smaller than `input`.
///
/// Compressing straight into a fresh vector and shrinking it leaves, right after every
/// long-lived block, the freed tail of a transient allocation about as large as the object:
/// under churn the allocator's pages fill with such holes, and resident memory grows while
/// the live heap does not. So the block is compressed in the thread's scratch buffer and
/// copied out at its size: the only allocation an encode keeps is the block.
fn compress(input: &[u8], dictionary: Option<&Dictionary>) -> Option<Box<[u8]>> {
    let dict = dictionary.map(|d| &d.0[..]).filter(|d| d.len() > 3);
    let run = |out: &mut Vec<u8>| {
        let max = lz4_flex::block::get_maximum_output_size(input.len());
        if out.len() < max {
            out.resize(max, 0);
        }
        let n = match dict {
            Some(d) => lz4_flex::block::compress_into_with_dict(input, out, d),
            None => lz4_flex::block::compress_into(input, out),
        }
        .ok()?;
        (n < input.len()).then(|| Box::from(&out[..n]))
    };
    SCRATCH
        .try_with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut out) => {
                let packed = run(&mut out);
                if out.capacity() > MAX_KEPT_SCRATCH {
                    *out = Vec::new();
                }
                packed
            }
            // Not reentrant in practice; a fresh buffer if it ever is.
            Err(_) => run(&mut Vec::new()),
        })
        .unwrap_or_else(|_| run(&mut Vec::new()))
}

impl Packed {
    fn pack(input: &[u8], dictionary: Option<Dictionary>) -> Self {
        if let Some(bytes) = compress(input, dictionary.as_ref()) {
            Self {
                bytes,
                len: input.len(),
                compressed: true,
                dictionary,
            }
        } else {
            Self {
                bytes: input.into(),
                len: input.len(),
                compressed: false,
                dictionary: None,
            }
        }
    }

    /// The bytes back.
    pub(crate) fn unpack_bytes(&self) -> Result<Vec<u8>, serde_json::Error> {
        if self.compressed {
            let out = match &self.dictionary {
                Some(d) => lz4_flex::block::decompress_with_dict(&self.bytes, self.len, &d.0),
                None => lz4_flex::block::decompress(&self.bytes, self.len),
            };
            out.map_err(|e| corrupt(&e))
        } else {
            Ok(self.bytes.to_vec())
        }
    }

    /// The JSON text back (of an object kept as JSON).
    pub(crate) fn unpack(&self) -> Result<String, serde_json::Error> {
        String::from_utf8(self.unpack_bytes()?).map_err(|e| corrupt(&e))
    }
}

fn corrupt(e: &dyn fmt::Display) -> serde_json::Error {
    serde::de::Error::custom(format!("a compact object's bytes are corrupt: {e}"))
}

/// Builds [`Compact`] objects from JSON, for one stream of objects (one lister-watcher).
///
/// For each object it decodes only the metadata (name, namespace, resourceVersion, uid,
/// labels, annotations, generation, deletionTimestamp, ownerReferences), cuts
/// `metadata.managedFields` out of the text (unless told to
/// [keep them](Self::keep_managed_fields)), and compresses the rest with LZ4. With
/// [`learn_dictionary`](Self::learn_dictionary) (the default) the first object encoded becomes
/// the dictionary every later object is compressed against: objects of one resource share most
/// of their text (keys, images, volumes, tolerations), so a sibling compresses to a small
/// fraction of its size. Every object keeps a reference to the dictionary it used, so it can
/// always be read back.
///
/// Share one codec (in an `Arc`) between a stream's list and watch decoders.
///
/// ```
/// use kcache_store::{Compact, CompactCodec, DynamicObject, Object};
///
/// let codec = CompactCodec::new();
/// let pod: Compact<DynamicObject> = codec.encode(
///     r#"{"metadata":{"name":"a","namespace":"ns","resourceVersion":"7",
///        "managedFields":[{"manager":"kubectl"}]},"spec":{"nodeName":"n1"}}"#,
/// )?;
/// assert_eq!(pod.name(), Some("a"));
/// assert_eq!(pod.pointer("/spec/nodeName")?, Some("n1".into()));
/// assert_eq!(pod.pointer("/metadata/managedFields")?, None);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub struct CompactCodec {
    expected: ExpectedType,
    keep_managed_fields: bool,
    learn: bool,
    dictionary: OnceLock<Dictionary>,
}

impl Default for CompactCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for CompactCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompactCodec")
            .field("expected", &self.expected)
            .field("keep_managed_fields", &self.keep_managed_fields)
            .field("learn_dictionary", &self.learn)
            .field("dictionary_len", &self.dictionary_len())
            .finish_non_exhaustive()
    }
}

impl CompactCodec {
    /// A codec that drops `managedFields` and learns its dictionary from the first object.
    #[must_use]
    pub fn new() -> Self {
        Self {
            expected: ExpectedType::any(),
            keep_managed_fields: false,
            learn: true,
            dictionary: OnceLock::new(),
        }
    }

    /// A codec without a dictionary (each object compressed on its own), dropping
    /// `managedFields`: what [`Compact`]'s `Deserialize` uses, having no stream to learn from.
    #[must_use]
    pub fn standalone() -> Self {
        Self {
            learn: false,
            ..Self::new()
        }
    }

    /// Keep `metadata.managedFields` in the compact objects (dropped by default: server-side
    /// apply's bookkeeping, which no controller reads from a cache).
    #[must_use]
    pub fn keep_managed_fields(mut self, keep: bool) -> Self {
        self.keep_managed_fields = keep;
        self
    }

    /// Refuse objects whose `apiVersion` or `kind` is not `expected` (as a typed decode does;
    /// one without them is accepted). Anything goes by default; a lister-watcher sets its
    /// resource's type.
    ///
    /// ```
    /// use kcache_store::{CompactCodec, DynamicObject, ExpectedType};
    ///
    /// let pods = CompactCodec::new().expect_type(ExpectedType::new("v1", Some("Pod")));
    /// let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#;
    /// let refused = pods.encode::<DynamicObject>(cm).unwrap_err();
    /// assert_eq!(refused.to_string(), "kind is `ConfigMap`, expected `Pod`");
    /// assert!(pods.encode::<DynamicObject>(r#"{"metadata":{"name":"a"}}"#).is_ok());
    /// ```
    #[must_use]
    pub fn expect_type(mut self, expected: ExpectedType) -> Self {
        self.expected = expected;
        self
    }

    /// The type objects must have.
    pub fn expected_type(&self) -> &ExpectedType {
        &self.expected
    }

    /// Learn the dictionary from the first object encoded (on by default). Off: objects are
    /// compressed on their own, unless a dictionary was [given](Self::dictionary).
    #[must_use]
    pub fn learn_dictionary(mut self, learn: bool) -> Self {
        self.learn = learn;
        self
    }

    /// Compress against `sample` (a typical object's JSON; the first 64 KiB are used) instead
    /// of learning a dictionary.
    #[must_use]
    pub fn dictionary(self, sample: &[u8]) -> Self {
        let codec = Self {
            learn: false,
            ..self
        };
        // A fresh `OnceLock`: cannot be set already.
        let _ = codec.dictionary.set(Dictionary::of(sample));
        codec
    }

    /// The dictionary's size in bytes (0 before one is learned or without one).
    pub fn dictionary_len(&self) -> usize {
        self.dictionary.get().map_or(0, |d| d.0.len())
    }

    /// Whether `managedFields` are kept.
    pub fn keeps_managed_fields(&self) -> bool {
        self.keep_managed_fields
    }

    /// The compact form of the object in `json`.
    ///
    /// # Errors
    ///
    /// `json` is not valid JSON, is not an object, its metadata does not have the types
    /// Kubernetes gives them (a name that is not a string, say), its `apiVersion` or `kind`
    /// is not the [expected](Self::expect_type) one, or it nests deeper than
    /// [`MAX_NESTING`](crate::MAX_NESTING) levels (which a typed decode refuses too).
    pub fn encode<K>(&self, json: &str) -> Result<Compact<K>, serde_json::Error> {
        let (meta, managed_fields) = read_meta(json, &self.expected)?;
        let packed = match managed_fields {
            Some(span) if !self.keep_managed_fields => {
                // The text without managedFields is built in the thread's reused buffer (see
                // `compress` for why an encode allocates only what it keeps).
                let fast = STRIPPED.try_with(|buffer| {
                    let mut buffer = buffer.try_borrow_mut().ok()?;
                    without_member_into(json, span.clone(), &mut buffer)?;
                    let packed = self.pack(&buffer);
                    if buffer.capacity() > MAX_KEPT_SCRATCH {
                        *buffer = String::new();
                    }
                    Some(packed)
                });
                match fast.ok().flatten() {
                    Some(packed) => packed?,
                    None => self.pack(&without_managed_fields_slow(json)?)?,
                }
            }
            _ => self.pack(json)?,
        };
        Ok(Compact {
            meta,
            packed,
            format: None,
            _k: PhantomData,
        })
    }

    /// The compact form of an object decoded from another encoding: `metadata` read from the
    /// object's metadata (see [`CompactMetadata`]), `payload` the object's bytes as `format`
    /// reads them back (without `managedFields` unless the caller keeps them), compressed
    /// against the stream's dictionary as JSON objects are.
    ///
    /// The caller has checked the object's type against the [expected](Self::expected_type)
    /// one. `format` is shared (an `Arc`) by the objects of one stream. See
    /// [`PayloadFormat`] for an example.
    pub fn encode_parts<K>(
        &self,
        metadata: CompactMetadata,
        payload: &[u8],
        format: Arc<dyn PayloadFormat<K>>,
    ) -> Compact<K> {
        Compact {
            meta: metadata.0,
            packed: Packed::pack(payload, self.dictionary_for(payload)),
            format: Some(format),
            _k: PhantomData,
        }
    }

    /// `text` (what is kept of an object) checked for nesting and packed.
    fn pack(&self, text: &str) -> Result<Packed, serde_json::Error> {
        // The rest was skipped without a depth limit; `typed` would stop at serde_json's. Only
        // what is kept is scanned (dropped managedFields cannot trouble a later decode).
        if nesting_exceeds(text.as_bytes(), MAX_NESTING) {
            return Err(serde::de::Error::custom(format_args!(
                "the object nests deeper than {MAX_NESTING} levels"
            )));
        }
        Ok(Packed::pack(
            text.as_bytes(),
            self.dictionary_for(text.as_bytes()),
        ))
    }

    /// The dictionary to compress `kept` against: learned from it if this is the first object.
    fn dictionary_for(&self, kept: &[u8]) -> Option<Dictionary> {
        if self.learn {
            Some(self.dictionary.get_or_init(|| Dictionary::of(kept)).clone())
        } else {
            self.dictionary.get().cloned()
        }
    }

    /// The compact form of `object`, through its JSON.
    ///
    /// # Errors
    ///
    /// `object` cannot be serialized to JSON, or its metadata is not what Kubernetes writes.
    pub fn encode_typed<K: Serialize>(&self, object: &K) -> Result<Compact<K>, serde_json::Error> {
        self.encode(&serde_json::to_string(object)?)
    }
}
