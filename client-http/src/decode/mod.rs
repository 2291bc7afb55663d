//! Decoding: list bodies (here and `list`), watch streams (`watch`), both as a lister-watcher
//! reads them from a response (`response`), single objects read and written by
//! [`ObjectClient`](crate::ObjectClient) (`object`), and the two deserializer wrappers
//! every decode can use, `managed_fields` (skip `metadata.managedFields` unbuilt) and
//! `exact_capacity` (size every vector exactly), over the shared forwarding of `forward`.
//!
//! Objects and list bodies are decoded one item at a time.
//! A list body is scanned as it arrives (`list`): each item's text is cut out and decoded into
//! `T` on its own as soon as it is complete, then dropped: one item the type cannot
//! hold (a corrupt object, a field of the wrong type) goes to the page's
//! [`skipped`](ObjectList::skipped) (the reflector reports it and leaves it out of the cache)
//! instead of failing the whole list, so it cannot stall the cache.

pub(crate) mod compact;
pub(crate) mod compact_protobuf;
pub(crate) mod exact_capacity;
pub(crate) mod expect;
pub(crate) mod forward;
pub(crate) mod list;
pub(crate) mod managed_fields;
pub(crate) mod metadata;
pub(crate) mod object;
pub(crate) mod protobuf;
pub(crate) mod response;
pub(crate) mod setters;
pub(crate) mod watch;

use kcache_reflector::{Error, ObjectList};
use kcache_store::Object;
use serde::de::DeserializeOwned;

use crate::SkipManagedFields;
use crate::decode::exact_capacity::ArrayCounts;

/// How objects are decoded: the options of an [`HttpListerWatcher`](crate::HttpListerWatcher)
/// that the decoders share. (Undecodable objects are not reported here: the list's
/// `skipped` and the watch stream's errors reach the reflector, which reports each once.)
#[derive(Debug, Clone, Copy)]
pub(crate) struct DecodeOptions {
    /// Drop `metadata.managedFields` while parsing.
    pub(crate) skip_managed_fields: bool,
    /// Size vectors exactly (an array-counting pass first).
    pub(crate) exact_capacities: bool,
}

/// A lister-watcher's defaults: both on, the configuration that wins on time and memory (the
/// README's bench section has the figures).
impl Default for DecodeOptions {
    fn default() -> Self {
        Self {
            skip_managed_fields: true,
            exact_capacities: true,
        }
    }
}

/// Decodes one object from JSON text, with exact vector capacities when `counts` is given
/// (falling back to the plain decode, and its error, if that fails).
pub(crate) fn decode_object<T: DeserializeOwned>(
    json: &str,
    skip_managed_fields: bool,
    counts: Option<&mut ArrayCounts>,
) -> Result<T, serde_json::Error> {
    // The object's `metadata` is at depth 2.
    if let Some(counts) = counts
        && counts.scan_skipping(json.as_bytes(), skip_managed_fields.then_some(2))
    {
        let exact = if skip_managed_fields {
            counts.decode::<SkipManagedFields<T>>(json).map(|o| o.0)
        } else {
            counts.decode(json)
        };
        if let Ok(object) = exact {
            return Ok(object);
        }
    }
    if skip_managed_fields {
        serde_json::from_str::<SkipManagedFields<T>>(json).map(|o| o.0)
    } else {
        serde_json::from_str(json)
    }
}

/// Decodes a list body into an [`ObjectList`]; items that do not decode go to its
/// [`skipped`](ObjectList::skipped).
///
/// # Errors
///
/// [`Error::Decode`] when the body is not a list at all.
pub fn decode_list<T: DeserializeOwned + Object>(
    body: &[u8],
    skip_managed_fields: bool,
) -> Result<ObjectList<T>, Error> {
    let options = DecodeOptions {
        skip_managed_fields,
        exact_capacities: false,
    };
    let expected = expect::Expected::default();
    let mut decoder = list::ListDecoder::new(options, None, &expected, usize::MAX);
    decoder.feed(body)?;
    decoder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcache_store::DynamicObject;

    #[test]
    fn one_bad_item_is_skipped_and_reported() {
        let body = br#"{"kind":"PodList","metadata":{"resourceVersion":"9","continue":"c","remainingItemCount":2},
            "items":[{"metadata":{"name":"a"}},{"metadata":{"name":5,"namespace":"ns"}},{"metadata":{"name":"c"}}]}"#;
        let list: ObjectList<DynamicObject> = decode_list(body, false).unwrap();
        assert_eq!(list.items.len(), 2);
        assert_eq!(list.resource_version, "9");
        assert_eq!(list.next_page_token(), Some("c"));
        assert_eq!(list.remaining_item_count, Some(2));
        let skipped: Vec<String> = list.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            skipped,
            [
                "could not decode list item 1: invalid type: integer `…`, expected a string at metadata.name"
            ]
        );
    }

    #[test]
    fn bad_item_is_named_when_possible() {
        let body = br#"{"items":[{"metadata":{"name":"x","namespace":"ns"},"apiVersion":7}]}"#;
        let list: ObjectList<DynamicObject> = decode_list(body, true).unwrap();
        assert!(list.items.is_empty());
        let skipped: Vec<String> = list.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            skipped,
            [
                "could not decode list item 0 (ns/x): invalid type: integer `…`, expected a string at apiVersion"
            ]
        );
    }

    #[test]
    fn null_items_and_garbage() {
        let list: ObjectList<DynamicObject> =
            decode_list(br#"{"metadata":{"continue":""},"items":null}"#, false).unwrap();
        assert!(list.items.is_empty() && list.continue_token.is_none());
        let e = decode_list::<DynamicObject>(b"<html>", false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "could not decode list response: expected value"
        );
    }
}
