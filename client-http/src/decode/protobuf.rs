//! Lists and watches in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`),
//! for a lister-watcher built with [`protobuf`](crate::HttpListerWatcherBuilder::protobuf).
//!
//! The request names JSON as the fallback, as client-go does: a resource the server cannot
//! send in protobuf (a custom resource) answers JSON, and the response's `Content-Type` picks
//! the decoder. A protobuf list is read item by item as it arrives (`kcache_protobuf::list`),
//! a watch frame by frame; each object is deserialized by `kcache_protobuf`'s field table
//! straight into `T` (k8s-openapi's types, [`DynamicObject`](kcache_store::DynamicObject), any
//! serde type of the kind). The JSON path's rules hold: the list budget and item count, the
//! per-event limit, one undecodable object reported (with its identity when its metadata
//! reads) and left out, the expected type and namespace checked.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use kcache_protobuf::envelope::{self, Envelope};
use kcache_protobuf::frames::{FrameReader, parse_event};
use kcache_protobuf::list::{ListPart, ListReader};
use kcache_protobuf::table::{self, Message};
use kcache_protobuf::{TypeMeta, from_message};
use kcache_reflector::{
    Bookmark, DecodeError, Error, EventType, ObjectList, ObjectRef, Status, WatchEvent, WatchStream,
};
use kcache_store::Object;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::SkipManagedFields;
use crate::decode::expect::Expected;
use crate::transport::ResponseBody;

/// The `Accept` of a protobuf lister-watcher: protobuf, JSON when the server cannot.
pub(crate) const ACCEPT_PROTOBUF: &str = "application/vnd.kubernetes.protobuf, application/json";

/// Whether a response's `Content-Type` is protobuf.
pub(crate) fn is_protobuf(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|c| c.trim_start().starts_with(envelope::CONTENT_TYPE))
}

/// What can be read of an object's metadata, to name an undecodable one.
#[derive(Deserialize)]
struct Head {
    metadata: Option<HeadMeta>,
}

#[derive(Deserialize)]
struct HeadMeta {
    name: Option<String>,
    namespace: Option<String>,
    #[serde(rename = "resourceVersion")]
    resource_version: Option<String>,
    annotations: Option<BTreeMap<String, String>>,
}

/// Builds objects from protobuf instead of serde alone: a metadata-only lister-watcher's, which
/// names the resource's type on each (the JSON path's [`ObjectFn`](super::compact::ObjectFn)).
pub(crate) type ProtoObjectFn<T> = Arc<
    dyn Fn(&[u8], &'static Message, TypeMeta<'_>) -> Result<T, kcache_protobuf::Error>
        + Send
        + Sync,
>;

/// Decodes one object's message with `objects`, else with serde.
fn decode_with<T: DeserializeOwned>(
    objects: Option<&ProtoObjectFn<T>>,
    raw: &[u8],
    message: &'static Message,
    type_meta: TypeMeta<'_>,
    skip_managed_fields: bool,
) -> Result<T, kcache_protobuf::Error> {
    match objects {
        Some(objects) => objects(raw, message, type_meta),
        None => decode_object(raw, message, type_meta, skip_managed_fields),
    }
}

/// Decodes one object's message.
pub(crate) fn decode_object<T: DeserializeOwned>(
    raw: &[u8],
    message: &'static Message,
    type_meta: TypeMeta<'_>,
    skip_managed_fields: bool,
) -> Result<T, kcache_protobuf::Error> {
    if skip_managed_fields {
        from_message::<SkipManagedFields<T>>(raw, message, Some(type_meta)).map(|o| o.0)
    } else {
        from_message(raw, message, Some(type_meta))
    }
}

/// The identity of an object that did not decode, if its metadata reads.
fn identity(raw: &[u8], message: &'static Message) -> Option<ObjectRef> {
    let head: Head = from_message(raw, message, None).ok()?;
    let meta = head.metadata?;
    Some(ObjectRef::new(
        meta.namespace.as_deref().filter(|n| !n.is_empty()),
        meta.name.as_deref()?,
        meta.resource_version.as_deref().unwrap_or_default(),
    ))
}

/// The item kind of a list kind (`PodList` -> `Pod`).
fn item_kind(list_kind: &str) -> &str {
    list_kind.strip_suffix("List").unwrap_or(list_kind)
}

/// Reads a protobuf list body into an [`ObjectList`], item by item.
pub(crate) struct ProtoListDecoder<'a> {
    reader: ListReader,
    items: Items<'a>,
    received: usize,
}

/// How the items of one list are decoded: their message and type, known once the list's own
/// type has been read (before any item).
struct Items<'a> {
    expected: &'a Expected,
    skip_managed_fields: bool,
    max_objects: usize,
    /// The items' message, `apiVersion` and kind.
    of: Option<(&'static Message, String, String)>,
}

impl<'a> ProtoListDecoder<'a> {
    pub(crate) fn new(
        expected: &'a Expected,
        skip_managed_fields: bool,
        max_objects: usize,
        max_item: usize,
    ) -> Self {
        Self {
            reader: ListReader::new(max_item),
            items: Items {
                expected,
                skip_managed_fields,
                max_objects,
                of: None,
            },
            received: 0,
        }
    }

    /// Bytes received so far.
    pub(crate) fn len(&self) -> usize {
        self.received
    }

    /// Reads `chunk`, decoding every item it completes into `list` where it lies in the
    /// reader's buffer.
    pub(crate) fn feed<T: DeserializeOwned + Object>(
        &mut self,
        chunk: &[u8],
        list: &mut ObjectList<T>,
        objects: Option<&ProtoObjectFn<T>>,
    ) -> Result<(), Error> {
        self.received = self.received.saturating_add(chunk.len());
        self.reader.push(chunk);
        while let Some(part) = self.reader.next_part().map_err(|e| list_error(&e))? {
            match part {
                ListPart::TypeMeta { api_version, kind } => {
                    self.items.of_list(api_version, kind)?;
                }
                ListPart::Metadata(bytes) => read_list_meta(bytes, list)?,
                ListPart::Item(bytes) => self.items.decode(bytes, list, objects)?,
            }
        }
        Ok(())
    }

    /// The list, once the body has ended.
    pub(crate) fn finish<T>(self, list: ObjectList<T>) -> Result<ObjectList<T>, Error> {
        if !self.reader.at_end() {
            return Err(list_error(&kcache_protobuf::Error::Truncated {
                at: self.received,
            }));
        }
        Ok(list)
    }
}

impl Items<'_> {
    /// The list is of `kind` in `api_version`: its items' message, or an error when the table
    /// has none (the list cannot be read).
    fn of_list(&mut self, api_version: &str, kind: &str) -> Result<(), Error> {
        let kind = item_kind(kind);
        let message = table::message_for_kind(api_version, kind).ok_or_else(|| {
            Error::decode(DecodeError::new(
                "list response",
                format!("no protobuf table for the items of {api_version} {kind}List"),
            ))
        })?;
        self.of = Some((message, api_version.to_owned(), kind.to_owned()));
        Ok(())
    }

    fn decode<T: DeserializeOwned + Object>(
        &self,
        bytes: &[u8],
        list: &mut ObjectList<T>,
        objects: Option<&ProtoObjectFn<T>>,
    ) -> Result<(), Error> {
        let index = list.items.len() + list.skipped.len();
        if index >= self.max_objects {
            return Err(Error::Limit(format!(
                "the list response holds more than {} objects",
                self.max_objects
            )));
        }
        let Some((message, api_version, kind)) = &self.of else {
            return Err(Error::decode(DecodeError::new(
                "list response",
                "an item came before the list's type",
            )));
        };
        let type_meta = TypeMeta { api_version, kind };
        match decode_with(objects, bytes, message, type_meta, self.skip_managed_fields) {
            Ok(object) => match self.expected.refusal(&object) {
                None => list.items.push(object),
                Some(why) => list.skipped.push(Expected::refused(
                    format!("list item {index}"),
                    &object,
                    why,
                    None,
                )),
            },
            Err(e) => list.skipped.push(
                DecodeError::new(format!("list item {index}"), e.to_string())
                    .with_object(identity(bytes, message)),
            ),
        }
        Ok(())
    }
}

fn list_error(e: &kcache_protobuf::Error) -> Error {
    Error::decode(DecodeError::new("list response", e.to_string()))
}

/// `ListMeta`: resource version, continue token, remaining items.
fn read_list_meta<T>(bytes: &[u8], list: &mut ObjectList<T>) -> Result<(), Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct ListMeta {
        resource_version: Option<String>,
        #[serde(rename = "continue")]
        continue_token: Option<String>,
        remaining_item_count: Option<i64>,
    }
    let message = table::message_named("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")
        .ok_or_else(|| list_error(&kcache_protobuf::Error::Custom("no ListMeta".to_owned())))?;
    let meta: ListMeta = from_message(bytes, message, None).map_err(|e| list_error(&e))?;
    list.resource_version = meta.resource_version.unwrap_or_default();
    list.continue_token = meta.continue_token.filter(|c| !c.is_empty());
    list.remaining_item_count = meta.remaining_item_count;
    list.shard_info = shard_info(bytes).map_err(|e| list_error(&e))?;
    Ok(())
}

/// `ListMeta.shardInfo` (field 5, a `ShardInfo` whose field 1 is `selector`): the shard
/// selector the server applied. Read from the wire, as the field table is built from releases
/// before it.
fn shard_info(list_meta: &[u8]) -> Result<Option<String>, kcache_protobuf::Error> {
    use kcache_protobuf::wire::{Reader, Wire};
    let mut found = None;
    let mut fields = Reader::new(list_meta);
    while let Some((number, value)) = fields.field()? {
        let (5, Wire::Len(info)) = (number, value) else {
            continue;
        };
        let mut selector = String::new();
        let mut info = Reader::new(info);
        while let Some((number, value)) = info.field()? {
            if let (1, Wire::Len(text)) = (number, value) {
                selector = String::from_utf8(text.to_vec()).map_err(|_| {
                    kcache_protobuf::Error::Custom("shardInfo.selector is not UTF-8".to_owned())
                })?;
            }
        }
        found = Some(selector);
    }
    Ok(found)
}

/// Reads a whole protobuf list response as it arrives.
pub(crate) async fn read_list<T: DeserializeOwned + Object>(
    mut body: ResponseBody,
    objects: Option<&ProtoObjectFn<T>>,
    expected: &Expected,
    skip_managed_fields: bool,
    max_bytes: usize,
    max_objects: usize,
) -> Result<ObjectList<T>, Error> {
    use futures_util::StreamExt;
    let mut decoder = ProtoListDecoder::new(expected, skip_managed_fields, max_objects, max_bytes);
    let mut list = ObjectList::new(Vec::new(), "");
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(Error::Transport)?;
        if decoder.len().saturating_add(chunk.len()) > max_bytes {
            return Err(Error::Limit(format!(
                "the list response is larger than the limit of {max_bytes} bytes"
            )));
        }
        decoder.feed(&chunk, &mut list, objects)?;
    }
    decoder.finish(list)
}

/// Decodes the event of one watch frame.
fn decode_event<T: DeserializeOwned + Object>(
    payload: &[u8],
    objects: Option<&ProtoObjectFn<T>>,
    skip_managed_fields: bool,
    expected: &Expected,
) -> Result<WatchEvent<T>, Error> {
    let bad = |reason: String, event_type: Option<EventType>| {
        Error::decode(DecodeError::new("watch event", reason).with_event_type(event_type))
    };
    let event = parse_event(payload).map_err(|e| bad(e.to_string(), None))?;
    let event_type = match event.event_type {
        "ADDED" => Some(EventType::Added),
        "MODIFIED" => Some(EventType::Modified),
        "DELETED" => Some(EventType::Deleted),
        _ => None,
    };
    let env: Envelope<'_> =
        envelope::parse(event.object).map_err(|e| bad(e.to_string(), event_type))?;
    let message = env.message().map_err(|e| bad(e.to_string(), event_type))?;
    match event.event_type {
        "BOOKMARK" => {
            let head: Head =
                from_message(env.raw, message, None).map_err(|e| bad(e.to_string(), None))?;
            let meta = head.metadata.unwrap_or(HeadMeta {
                name: None,
                namespace: None,
                resource_version: None,
                annotations: None,
            });
            let annotations = meta.annotations.unwrap_or_default();
            Ok(WatchEvent::Bookmark(Bookmark {
                resource_version: meta.resource_version.unwrap_or_default(),
                initial_events_end: annotations
                    .get("k8s.io/initial-events-end")
                    .is_some_and(|v| v == "true"),
                annotations,
            }))
        }
        "ERROR" => {
            let status: Status = from_message(env.raw, message, Some(env.type_meta()))
                .map_err(|e| bad(e.to_string(), None))?;
            Ok(WatchEvent::Error(Box::new(status)))
        }
        _ => {
            let (event_type, make): (EventType, fn(T) -> WatchEvent<T>) = match event.event_type {
                "ADDED" => (EventType::Added, WatchEvent::Added),
                "MODIFIED" => (EventType::Modified, WatchEvent::Modified),
                "DELETED" => (EventType::Deleted, WatchEvent::Deleted),
                other => {
                    return Err(bad(format!("unknown watch event type `{other}`"), None));
                }
            };
            let object: T = decode_with(
                objects,
                env.raw,
                message,
                env.type_meta(),
                skip_managed_fields,
            )
            .map_err(|e| {
                Error::decode(
                    DecodeError::new("watch event", e.to_string())
                        .with_event_type(Some(event_type))
                        .with_object(identity(env.raw, message)),
                )
            })?;
            if let Some(why) = expected.refusal(&object) {
                return Err(Error::decode(Expected::refused(
                    "watch event",
                    &object,
                    why,
                    Some(event_type),
                )));
            }
            Ok(make(object))
        }
    }
}

/// A protobuf watch body as the reflector's stream of events.
struct ProtoWatch<T> {
    body: ResponseBody,
    objects: Option<ProtoObjectFn<T>>,
    frames: FrameReader,
    skip_managed_fields: bool,
    expected: Expected,
    guard: Option<Pin<Box<tokio::time::Sleep>>>,
    done: bool,
    _t: std::marker::PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned + Object> Stream for ProtoWatch<T> {
    type Item = Result<WatchEvent<T>, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            match this.frames.next_frame() {
                Ok(Some(payload)) => {
                    return Poll::Ready(Some(decode_event(
                        payload,
                        this.objects.as_ref(),
                        this.skip_managed_fields,
                        &this.expected,
                    )));
                }
                Ok(None) => {}
                Err(e) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(Error::Limit(e.to_string()))));
                }
            }
            if let Some(guard) = this.guard.as_mut()
                && guard.as_mut().poll(cx).is_ready()
            {
                this.done = true;
                return Poll::Ready(None);
            }
            match this.body.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => this.frames.push(&chunk),
                Poll::Ready(Some(Err(e))) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(Error::Transport(e))));
                }
                Poll::Ready(None) => {
                    this.done = true;
                    if this.frames.buffered() > 0 {
                        return Poll::Ready(Some(Err(Error::decode(DecodeError::new(
                            "watch event",
                            "the watch stream ended inside a frame",
                        )))));
                    }
                    return Poll::Ready(None);
                }
            }
        }
    }
}

/// The reflector's stream of a protobuf watch body.
pub(crate) fn watch_stream<T: DeserializeOwned + Object + Send + 'static>(
    body: ResponseBody,
    objects: Option<ProtoObjectFn<T>>,
    max_event_size: usize,
    skip_managed_fields: bool,
    expected: Expected,
    guard: Option<Duration>,
) -> WatchStream<T> {
    Box::pin(ProtoWatch::<T> {
        body,
        objects,
        frames: FrameReader::new(max_event_size),
        skip_managed_fields,
        expected,
        guard: guard.map(|d| Box::pin(tokio::time::sleep(d))),
        done: false,
        _t: std::marker::PhantomData,
    })
}

#[cfg(test)]
mod tests {
    use kcache_store::DynamicObject;
    use serde_json::json;

    use super::*;

    /// A `PodList` of `n` pods in protobuf, and the pods' JSON.
    fn pod_list(n: usize) -> (Vec<u8>, Vec<serde_json::Value>) {
        let pods: Vec<serde_json::Value> = (0..n)
            .map(|i| {
                json!({"metadata": {"name": format!("p{i}"), "namespace": "web",
                    "resourceVersion": format!("{}", i + 1), "labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "app", "image": format!("nginx:{i}")}]}})
            })
            .collect();
        let list = json!({"apiVersion": "v1", "kind": "PodList",
            "metadata": {"resourceVersion": "99", "continue": "next"}, "items": pods});
        (
            kcache_protobuf::envelope::encode_object(&list).unwrap(),
            pods,
        )
    }

    #[test]
    fn lists_decode_alike_in_any_chunking_and_limits_hold() {
        let (body, pods) = pod_list(25);
        let expected = Expected::default();
        let want: Vec<DynamicObject> = pods
            .iter()
            .map(|p| {
                let mut p = p.clone();
                p["apiVersion"] = json!("v1");
                p["kind"] = json!("Pod");
                serde_json::from_value(p).unwrap()
            })
            .collect();
        for chunk in [1, 2, 7, 100, body.len()] {
            let mut decoder = ProtoListDecoder::new(&expected, true, usize::MAX, 1 << 20);
            let mut list = ObjectList::new(Vec::new(), "");
            for piece in body.chunks(chunk) {
                decoder
                    .feed::<DynamicObject>(piece, &mut list, None)
                    .unwrap();
            }
            let list = decoder.finish(list).unwrap();
            assert_eq!(list.items, want, "chunk {chunk}");
            assert_eq!(list.resource_version, "99");
            assert_eq!(list.next_page_token(), Some("next"));
        }
        // The item count.
        let mut decoder = ProtoListDecoder::new(&expected, true, 10, 1 << 20);
        let mut list = ObjectList::<DynamicObject>::new(Vec::new(), "");
        let err = decoder.feed(&body, &mut list, None).unwrap_err();
        assert!(err.to_string().contains("more than 10 objects"), "{err}");
        // A cut body is not a whole list.
        let mut decoder = ProtoListDecoder::new(&expected, true, usize::MAX, 1 << 20);
        let mut list = ObjectList::<DynamicObject>::new(Vec::new(), "");
        decoder
            .feed(&body[..body.len() - 3], &mut list, None)
            .unwrap();
        assert!(decoder.finish(list).is_err());
    }
}
