//! One object read from a response: the body of a get or a write of
//! [`ObjectClient`](crate::ObjectClient), read up to a size limit, then decoded, with a failure
//! described as the list and watch decoders describe theirs (the serde path and a reason without
//! the server's values, [`DecodeError::of_object`]).

use bytes::Bytes;
use kcache_reflector::{DecodeError, Error};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::transport::ResponseBody;
use crate::transport::response::collect;

/// Reads a whole response body of at most `limit` bytes.
///
/// # Errors
///
/// [`Error::Transport`] when the body breaks, [`Error::Limit`] past `limit` (the rest is not
/// read).
pub(crate) async fn read_body(body: ResponseBody, limit: usize) -> Result<Bytes, Error> {
    let bytes = collect(body, Some(limit.saturating_add(1)))
        .await
        .map_err(Error::Transport)?;
    if bytes.len() > limit {
        return Err(Error::Limit(format!(
            "the response is larger than the limit of {limit} bytes"
        )));
    }
    Ok(bytes)
}

/// Decodes `body` as one `T`; `context` names it in an error (`create response`).
///
/// # Errors
///
/// [`Error::Decode`] when it is not UTF-8 or not a `T`.
pub(crate) fn decode<T: DeserializeOwned>(body: &[u8], context: &str) -> Result<T, Error> {
    let json = std::str::from_utf8(body)
        .map_err(|_| Error::decode(DecodeError::new(context, "the body is not UTF-8")))?;
    super::decode_object(json, false, None)
        .map_err(|_| Error::decode(DecodeError::of_object::<T>(context, json)))
}

/// Whether `body` is a `metav1.Status` (`"kind": "Status"`) rather than an object: what a
/// DELETE answers when the object is gone at once and the resource does not return it.
pub(crate) fn is_status(body: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(borrow, default)]
        kind: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Head<'_>>(body).is_ok_and(|h| h.kind.as_deref() == Some("Status"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use kcache_store::DynamicObject;

    fn body(chunks: &[&'static [u8]]) -> ResponseBody {
        let chunks: Vec<Result<Bytes, crate::BoxError>> =
            chunks.iter().map(|c| Ok(Bytes::from_static(c))).collect();
        futures_util::stream::iter(chunks).boxed()
    }

    #[tokio::test]
    async fn bodies_are_read_up_to_the_limit() {
        let whole = read_body(body(&[b"{\"a\":", b"1}"]), 7).await.unwrap();
        assert_eq!(&whole[..], b"{\"a\":1}");
        let e = read_body(body(&[b"{\"a\":", b"12}"]), 7).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "the response is larger than the limit of 7 bytes"
        );
    }

    #[test]
    fn objects_decode_and_failures_name_the_path_not_the_value() {
        let o: DynamicObject = decode(
            br#"{"metadata":{"name":"a","namespace":"ns"}}"#,
            "get response",
        )
        .unwrap();
        assert_eq!(o.metadata.name.as_deref(), Some("a"));
        let e = decode::<DynamicObject>(
            br#"{"metadata":{"name":"a","namespace":"ns","resourceVersion":"4","labels":{"k":7}}}"#,
            "replace response",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "could not decode replace response (ns/a at resourceVersion 4): invalid type: \
             integer `…`, expected a string at metadata.labels.k"
        );
        let e = decode::<DynamicObject>(b"\xff", "get response").unwrap_err();
        assert_eq!(
            e.to_string(),
            "could not decode get response: the body is not UTF-8"
        );
    }

    #[test]
    fn statuses_are_told_from_objects() {
        assert!(is_status(
            br#"{"kind":"Status","apiVersion":"v1","status":"Success"}"#
        ));
        assert!(!is_status(br#"{"kind":"ConfigMap","metadata":{}}"#));
        assert!(!is_status(br#"{"metadata":{}}"#));
        assert!(!is_status(b"not json"));
    }
}
