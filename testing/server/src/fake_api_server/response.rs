//! JSON and error responses: the status code, content type and `Retry-After` of an answer.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};

use super::body::ResponseBody;
use super::status::{ApiError, ErrorBody};

/// A JSON response with status `code` and `body`.
pub(crate) fn json_response(code: u16, body: impl Into<Bytes>) -> Response<ResponseBody> {
    let mut resp = Response::new(ResponseBody::full(body));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// The response for `err`: a `Status` object (or plain text) with its code and `Retry-After`.
pub(crate) fn error_response(err: &ApiError) -> Response<ResponseBody> {
    let mut resp = match &err.body {
        ErrorBody::Status(v) => json_response(err.code, serde_json::to_vec(v).unwrap_or_default()),
        ErrorBody::Text(t) => {
            let mut resp = Response::new(ResponseBody::full(Bytes::from(t.clone())));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            resp
        }
    };
    *resp.status_mut() =
        StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Some(s) = err.retry_after {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(s));
    }
    resp
}
