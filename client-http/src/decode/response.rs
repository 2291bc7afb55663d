//! [`Decoding`]: how a lister-watcher reads a list or watch response body, whichever HTTP
//! client brought it (client-http's own [`Client`](crate::Client), or kube-rs's behind the
//! `kube` feature).
//!
//! A list body is decoded as it arrives ([`ListDecoder`]) and never buffered past
//! `max_list_bytes`; a watch body goes through a [`WatchDecoder`] with its per-event limit. So
//! both backends decode at the same speed and enforce the same bounds on server input.

use std::fmt;
use std::time::Duration;

use futures_util::StreamExt;
use kcache_reflector::{DEFAULT_MAX_LIST_OBJECTS, Error, ObjectList, WatchEvent, WatchStream};
use kcache_store::Object;
use serde::de::DeserializeOwned;

use crate::decode::DecodeOptions;
use crate::decode::compact::ObjectFn;
use crate::decode::expect::Expected;
use crate::decode::list::ListDecoder;
use crate::decode::protobuf::ProtoObjectFn;
use crate::decode::watch::{Check, DEFAULT_MAX_EVENT_SIZE, WatchDecoder, watch_stream};
use crate::transport::ResponseBody;

/// The default limit on the size of one list response: 1 GiB (a page of 500 large objects is a
/// few MB; an unpaginated list of 100,000 pods about 1 GB). Past it the list fails with
/// [`Error::Limit`] and is retried after the reflector's backoff; give the reflector a page
/// size for very large collections.
pub const DEFAULT_MAX_LIST_BYTES: usize = 1 << 30;

/// The decoding options and bounds of one lister-watcher.
pub(crate) struct Decoding<T> {
    /// The largest watch event accepted, in bytes.
    pub(crate) max_event_size: usize,
    /// The largest list response accepted, in bytes.
    pub(crate) max_list_bytes: usize,
    /// The most objects one list response may hold.
    pub(crate) max_list_objects: usize,
    /// The type and namespace objects must have.
    pub(crate) expected: Expected,
    /// managedFields and vector capacities.
    pub(crate) options: DecodeOptions,
    /// Builds objects instead of serde: a compact lister-watcher's shared codec.
    pub(crate) objects: Option<ObjectFn<T>>,
    /// Builds objects from protobuf: a metadata-only or compact lister-watcher's.
    pub(crate) proto_objects: Option<ProtoObjectFn<T>>,
    /// Ask for protobuf (JSON as the fallback), as [`asks_protobuf`](Self::asks_protobuf)
    /// decides.
    pub(crate) protobuf: bool,
}

impl<T> Default for Decoding<T> {
    fn default() -> Self {
        Self {
            max_event_size: DEFAULT_MAX_EVENT_SIZE,
            max_list_bytes: DEFAULT_MAX_LIST_BYTES,
            max_list_objects: DEFAULT_MAX_LIST_OBJECTS,
            expected: Expected::default(),
            options: DecodeOptions::default(),
            objects: None,
            proto_objects: None,
            protobuf: false,
        }
    }
}

impl<T> Clone for Decoding<T> {
    fn clone(&self) -> Self {
        Self {
            max_event_size: self.max_event_size,
            max_list_bytes: self.max_list_bytes,
            max_list_objects: self.max_list_objects,
            expected: self.expected.clone(),
            options: self.options,
            objects: self.objects.clone(),
            proto_objects: self.proto_objects.clone(),
            protobuf: self.protobuf,
        }
    }
}

impl<T> fmt::Debug for Decoding<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decoding")
            .field("max_event_size", &self.max_event_size)
            .field("max_list_bytes", &self.max_list_bytes)
            .field("max_list_objects", &self.max_list_objects)
            .field("expected", &self.expected)
            .field("options", &self.options)
            .field("compact", &self.objects.is_some())
            .field("proto_objects", &self.proto_objects.is_some())
            .field("protobuf", &self.protobuf)
            .finish()
    }
}

impl<T> Decoding<T> {
    /// Whether requests ask for protobuf: when told to, for metadata (served in protobuf for
    /// every resource), and for whole objects of a kind the protobuf table has (not for a
    /// custom resource, a beta version or an aggregated API's kind, which a server may well
    /// send in a protobuf form the table cannot read), typed or compact.
    pub(crate) fn asks_protobuf(&self) -> bool {
        if !self.protobuf {
            return false;
        }
        let r#type = &self.expected.r#type;
        if self.proto_objects.is_some() && r#type.accepts_metadata() {
            return true;
        }
        (self.objects.is_none() || self.proto_objects.is_some())
            && r#type
                .api_version()
                .zip(r#type.kind())
                .is_some_and(|(v, k)| kcache_protobuf::table::message_for_kind(v, k).is_some())
    }
}

impl<T: DeserializeOwned + Object> Decoding<T> {
    /// Decodes a list response body as it arrives: each item as soon as its last byte is in.
    ///
    /// # Errors
    ///
    /// [`Error::Transport`] when the body breaks, [`Error::Limit`] past `max_list_bytes` or
    /// `max_list_objects`, [`Error::Decode`] when the body is not a list of the expected type,
    /// [`Error::Api`] when it is a `Status`.
    pub(crate) async fn list(&self, mut body: ResponseBody) -> Result<ObjectList<T>, Error> {
        let mut decoder = ListDecoder::new(
            self.options,
            self.objects.as_ref(),
            &self.expected,
            self.max_list_objects,
        );
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(Error::Transport)?;
            if decoder.len().saturating_add(chunk.len()) > self.max_list_bytes {
                return Err(Error::Limit(format!(
                    "the list response is larger than the limit of {} bytes",
                    self.max_list_bytes
                )));
            }
            decoder.feed(&chunk)?;
        }
        decoder.finish()
    }

    /// A list response of either encoding, by its `Content-Type`.
    pub(crate) async fn list_typed(
        &self,
        content_type: Option<String>,
        body: ResponseBody,
    ) -> Result<ObjectList<T>, Error>
    where
        T: Send + 'static,
    {
        if crate::decode::protobuf::is_protobuf(content_type.as_deref()) {
            crate::decode::protobuf::read_list(
                body,
                self.proto_objects.as_ref(),
                &self.expected,
                self.options.skip_managed_fields,
                self.max_list_bytes,
                self.max_list_objects,
            )
            .await
        } else {
            self.list(body).await
        }
    }

    /// A watch response of either encoding, by its `Content-Type`.
    pub(crate) fn watch_typed(
        &self,
        content_type: Option<&str>,
        body: ResponseBody,
        guard: Option<Duration>,
    ) -> WatchStream<T>
    where
        T: Send + 'static,
    {
        if crate::decode::protobuf::is_protobuf(content_type) {
            crate::decode::protobuf::watch_stream(
                body,
                self.proto_objects.clone(),
                self.max_event_size,
                self.options.skip_managed_fields,
                self.expected.clone(),
                guard,
            )
        } else {
            self.watch(body, guard)
        }
    }

    /// The reflector's stream of a watch response body; `guard` ends it (cleanly) if the server
    /// has not ended it by then. An object of another type or namespace than `expected` is an
    /// undecodable one ([`Error::Decode`] with its identity: the reflector leaves that key out
    /// and goes on).
    pub(crate) fn watch(&self, body: ResponseBody, guard: Option<Duration>) -> WatchStream<T> {
        let decoder = WatchDecoder::new()
            .max_event_size(self.max_event_size)
            .skip_managed_fields(self.options.skip_managed_fields)
            .exact_capacities(self.options.exact_capacities)
            .objects(self.objects.clone());
        let expected = self.expected.clone();
        let check: Option<Check<T>> = (expected.r#type != kcache_store::ExpectedType::any()
            || expected.namespace.is_some())
        .then(|| -> Check<T> {
            Box::new(move |event| {
                let (obj, event_type) = match &event {
                    WatchEvent::Added(o) => (o, kcache_reflector::EventType::Added),
                    WatchEvent::Modified(o) => (o, kcache_reflector::EventType::Modified),
                    WatchEvent::Deleted(o) => (o, kcache_reflector::EventType::Deleted),
                    WatchEvent::Bookmark(_) | WatchEvent::Error(_) => return Ok(event),
                };
                match expected.refusal(obj) {
                    None => Ok(event),
                    Some(why) => Err(Error::decode(Expected::refused(
                        "watch event",
                        obj,
                        why,
                        Some(event_type),
                    ))),
                }
            })
        });
        watch_stream(body, decoder, guard, check)
    }
}

/// A response's `Content-Type`, which picks the decoder of a lister-watcher that asked for
/// protobuf (whichever HTTP client brought the response).
pub(crate) fn content_type(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// How long a watch asked to last `timeout_seconds` may run before the client ends it:
/// that plus `slack`, or no bound when no positive timeout was asked for.
pub(crate) fn watch_guard(timeout_seconds: Option<i64>, slack: Duration) -> Option<Duration> {
    timeout_seconds
        .and_then(|s| u64::try_from(s).ok())
        .filter(|&s| s > 0)
        .map(|s| Duration::from_secs(s) + slack)
}
