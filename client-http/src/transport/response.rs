//! Error responses: every non-2xx answer becomes a [`Status`], JSON or not.

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use http::{HeaderMap, StatusCode};
use kcache_reflector::{Status, StatusDetails};

use crate::transport::ResponseBody;

/// At most this much of an error body is read.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// At most this much of a text error body is kept as the message.
const MAX_TEXT_MESSAGE: usize = 1024;

/// Reads a whole body into one buffer (no copy when it came in one chunk), up to `limit` bytes.
pub(crate) async fn collect(
    mut body: ResponseBody,
    limit: Option<usize>,
) -> Result<Bytes, crate::BoxError> {
    let mut first: Option<Bytes> = None;
    let mut rest = BytesMut::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        match &first {
            None if rest.is_empty() => first = Some(chunk),
            _ => {
                if let Some(f) = first.take() {
                    rest.extend_from_slice(&f);
                }
                rest.extend_from_slice(&chunk);
            }
        }
        let len = first.as_ref().map_or(rest.len(), Bytes::len);
        if limit.is_some_and(|l| len >= l) {
            break;
        }
    }
    Ok(first.unwrap_or_else(|| rest.freeze()))
}

/// The reason client-go gives a code when the body is not a Status (`NewGenericServerResponse`).
fn reason_for(code: StatusCode) -> &'static str {
    match code.as_u16() {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Gone",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

/// The `Status` of an error response: the body's own when it is one, else one made from the
/// code with the text body as its message. A numeric `Retry-After` header sets
/// `details.retryAfterSeconds` (the header wins, as in client-go).
pub(crate) fn status_of(code: StatusCode, headers: &HeaderMap, body: &[u8]) -> Status {
    let parsed = serde_json::from_slice::<Status>(body)
        .ok()
        .filter(|s| s.kind.as_deref() == Some("Status") || s.reason.is_some() || s.code.is_some());
    let mut status = parsed.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        let message = if text.is_empty() {
            format!(
                "the server answered {} {}",
                code.as_u16(),
                code.canonical_reason().unwrap_or("")
            )
            .trim_end()
            .to_owned()
        } else {
            let mut end = text.len().min(MAX_TEXT_MESSAGE);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text[..end].to_owned()
        };
        Status::failure(code.as_u16(), reason_for(code), &message)
    });
    if status.code.is_none() {
        status.code = Some(code.as_u16());
    }
    let retry_after = headers
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i32>().ok())
        .filter(|&s| s > 0);
    if let Some(secs) = retry_after {
        status
            .details
            .get_or_insert_with(StatusDetails::default)
            .retry_after_seconds = Some(secs);
    }
    status
}

/// Reads an error response's body and makes its [`Status`].
pub(crate) async fn error_status(response: http::Response<ResponseBody>) -> Status {
    let (parts, body) = response.into_parts();
    let body = collect(body, Some(MAX_ERROR_BODY))
        .await
        .unwrap_or_default();
    status_of(parts.status, &parts.headers, &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn json_status_is_kept() {
        let body = br#"{"kind":"Status","status":"Failure","message":"too old","reason":"Expired","code":410}"#;
        let s = status_of(StatusCode::GONE, &HeaderMap::new(), body);
        assert!(s.is_gone() && s.is_expired());
        assert_eq!(s.message.as_deref(), Some("too old"));
    }

    #[test]
    fn text_body_is_kept_as_the_message_and_retry_after_read() {
        let mut h = HeaderMap::new();
        h.insert(http::header::RETRY_AFTER, "3".parse().unwrap());
        let s = status_of(
            StatusCode::TOO_MANY_REQUESTS,
            &h,
            b"Too many requests, please try again later.\n",
        );
        assert!(s.is_too_many_requests());
        assert_eq!(s.retry_after(), Some(Duration::from_secs(3)));
        assert_eq!(
            s.message.as_deref(),
            Some("Too many requests, please try again later.")
        );
        let s = status_of(
            StatusCode::NOT_FOUND,
            &HeaderMap::new(),
            b"404 page not found",
        );
        assert_eq!((s.code, s.reason.as_deref()), (Some(404), Some("NotFound")));
    }

    #[test]
    fn header_wins_over_details_and_empty_body_gets_a_message() {
        let mut h = HeaderMap::new();
        h.insert(http::header::RETRY_AFTER, "7".parse().unwrap());
        let body = br#"{"kind":"Status","code":429,"details":{"retryAfterSeconds":2}}"#;
        assert_eq!(
            status_of(StatusCode::TOO_MANY_REQUESTS, &h, body).retry_after(),
            Some(Duration::from_secs(7))
        );
        let s = status_of(StatusCode::BAD_GATEWAY, &HeaderMap::new(), b"");
        assert_eq!(
            s.message.as_deref(),
            Some("the server answered 502 Bad Gateway")
        );
        assert_eq!(s.code, Some(502));
    }
}
