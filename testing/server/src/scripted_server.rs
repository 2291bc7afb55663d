//! [`ScriptedServer`]: an HTTP/1.1 server on 127.0.0.1 whose every answer comes from a closure
//! the test writes, to play a broken or hostile API server at the byte level.
//!
//! [`FakeApiServer`](crate::FakeApiServer) is a faithful server with faults; this one is a
//! script: a list whose continue token never changes, a body that never ends, a watch line of
//! any size, a `Retry-After` of 63 years, an object with a field of the wrong type. Each request
//! is logged ([`ScriptedServer::requests`], with its tokio-clock arrival time, so paused-time
//! tests can measure gaps), and what the server actually wrote is counted
//! ([`ScriptedServer::bytes_sent`], [`ScriptedServer::open_streams`]), so a test can prove a
//! client stopped reading.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! use kcache_testing_server::scripted_server::{Reply, ScriptedServer, list_body};
//! use serde_json::json;
//!
//! let server = ScriptedServer::start(|req| {
//!     if req.is_list() {
//!         Reply::json(200, list_body("7", None, &[json!({"metadata": {"name": "a"}})]))
//!     } else {
//!         Reply::status(404, "NotFound", "no watches here")
//!     }
//! })
//! .await?;
//! assert!(server.url().starts_with("http://127.0.0.1:"));
//! assert!(server.requests().is_empty());
//! # Ok(()) }
//! ```

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::{Body, Frame, SizeHint};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::fake_api_server::INITIAL_EVENTS_END;
use crate::fake_api_server::util::parse_query;

/// The script: called once per request, in arrival order, on the server's task.
pub type Script = Arc<dyn Fn(&ScriptedRequest) -> Reply + Send + Sync>;

/// One request as the script sees it (and the log keeps it).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ScriptedRequest {
    /// Its place in the order of arrival, from 0.
    pub seq: usize,
    /// The method.
    pub method: Method,
    /// The path, without the query.
    pub path: String,
    /// The query parameters, percent-decoded, in order.
    pub query: Vec<(String, String)>,
    /// When it arrived, on the tokio clock (paused in paused-time tests).
    pub at: Instant,
    /// Its `Accept` header, if any.
    pub accept: Option<String>,
}

impl ScriptedRequest {
    /// The first value of query parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn flag(&self, name: &str) -> bool {
        self.param(name)
            .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
    }

    /// A watch (`watch=1` or `watch=true`).
    pub fn is_watch(&self) -> bool {
        self.flag("watch")
    }

    /// A streaming list: a watch with `sendInitialEvents=true`.
    pub fn is_streaming_list(&self) -> bool {
        self.is_watch() && self.flag("sendInitialEvents")
    }

    /// A plain watch (not a streaming list).
    pub fn is_plain_watch(&self) -> bool {
        self.is_watch() && !self.flag("sendInitialEvents")
    }

    /// A list: a GET that is not a watch.
    pub fn is_list(&self) -> bool {
        self.method == Method::GET && !self.is_watch()
    }

    /// The `continue` token, when not empty.
    pub fn continue_token(&self) -> Option<&str> {
        self.param("continue").filter(|t| !t.is_empty())
    }

    /// The `resourceVersion` parameter, when given.
    pub fn resource_version(&self) -> Option<&str> {
        self.param("resourceVersion")
    }
}

/// A body that is sent as it is produced (see [`Reply::stream`]).
pub type ChunkStream = Pin<Box<dyn Stream<Item = Bytes> + Send>>;

enum ReplyBody {
    Full(Bytes),
    Stream(ChunkStream),
}

/// The answer to one request: a status, headers and a whole or streamed body.
#[must_use]
pub struct Reply {
    status: StatusCode,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: ReplyBody,
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reply")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .field("streamed", &matches!(self.body, ReplyBody::Stream(_)))
            .finish()
    }
}

/// `code` as a status, 500 when it is not a valid one.
fn status_code(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

impl Reply {
    /// A whole JSON body with status `code`.
    pub fn json(code: u16, body: impl Into<Bytes>) -> Self {
        Self {
            status: status_code(code),
            headers: vec![(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body: ReplyBody::Full(body.into()),
        }
    }

    /// A `metav1.Status` failure with `code`, `reason` and `message`.
    pub fn status(code: u16, reason: &str, message: &str) -> Self {
        let status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code,
        });
        Self::json(code, status.to_string())
    }

    /// A JSON body with status `code` sent chunk by chunk as `chunks` yields them (while the
    /// client reads: a slow reader holds the stream back), ending when the stream does. A
    /// stream that never ends (`futures_util::stream::pending`) keeps the response open until
    /// the client goes away or the server stops.
    pub fn stream(code: u16, chunks: impl Stream<Item = Bytes> + Send + 'static) -> Self {
        Self {
            body: ReplyBody::Stream(Box::pin(chunks)),
            ..Self::json(code, Bytes::new())
        }
    }

    /// A whole body in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`).
    pub fn protobuf(code: u16, body: impl Into<Bytes>) -> Self {
        Self {
            headers: vec![(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/vnd.kubernetes.protobuf"),
            )],
            ..Self::json(code, body)
        }
    }

    /// A protobuf watch stream (`application/vnd.kubernetes.protobuf;stream=watch`) sent chunk
    /// by chunk, as [`stream`](Self::stream) sends JSON.
    pub fn protobuf_stream(code: u16, chunks: impl Stream<Item = Bytes> + Send + 'static) -> Self {
        Self {
            headers: vec![(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/vnd.kubernetes.protobuf;stream=watch"),
            )],
            ..Self::stream(code, chunks)
        }
    }

    /// Adds a header (ignored when the name or value is not valid HTTP).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            self.headers.push((n, v));
        }
        self
    }
}

/// A watch line: `{"type":"<event_type>","object":<object>}` and a newline (the type first, as
/// servers write it).
pub fn watch_line(event_type: &str, object: &Value) -> Bytes {
    Bytes::from(format!(
        "{{\"type\":{},\"object\":{object}}}\n",
        Value::from(event_type)
    ))
}

/// The BOOKMARK line that ends a streaming list's initial events, at `rv`.
pub fn initial_events_end(rv: &str) -> Bytes {
    watch_line(
        "BOOKMARK",
        &json!({"kind": "Pod", "apiVersion": "v1",
            "metadata": {"resourceVersion": rv, "annotations": {INITIAL_EVENTS_END: "true"}}}),
    )
}

/// A list body at `rv` with `items` and, when given, a continue token.
pub fn list_body(rv: &str, continue_token: Option<&str>, items: &[Value]) -> Bytes {
    let mut metadata = json!({"resourceVersion": rv});
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    Bytes::from(
        json!({"kind": "List", "apiVersion": "v1", "metadata": metadata, "items": items})
            .to_string(),
    )
}

/// The writing end of a [`feed`]: a test sends watch lines through it while a client reads the
/// response. Dropping every `Feed` ends the body.
#[derive(Debug, Clone)]
pub struct Feed(mpsc::UnboundedSender<Bytes>);

impl Feed {
    /// Sends bytes (a line, or any piece of one); `false` when the body is gone.
    pub fn send(&self, bytes: impl Into<Bytes>) -> bool {
        self.0.send(bytes.into()).is_ok()
    }
}

/// The reading end of a [`feed`], for [`Reply::stream`].
#[derive(Debug)]
pub struct FeedStream(mpsc::UnboundedReceiver<Bytes>);

impl Stream for FeedStream {
    type Item = Bytes;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.get_mut().0.poll_recv(cx)
    }
}

/// A body the test writes into while the client reads it: hand the [`FeedStream`] to
/// [`Reply::stream`] and send lines through the [`Feed`].
pub fn feed() -> (Feed, FeedStream) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Feed(tx), FeedStream(rx))
}

#[derive(Debug, Default)]
struct Counters {
    bytes_sent: AtomicU64,
    streams_opened: AtomicU64,
    streams_closed: AtomicU64,
}

/// A response body that counts what it hands to hyper, and streamed bodies opened and dropped.
struct CountedBody {
    body: Option<ReplyBody>,
    counters: Arc<Counters>,
}

impl CountedBody {
    fn new(body: ReplyBody, counters: Arc<Counters>) -> Self {
        if matches!(body, ReplyBody::Stream(_)) {
            counters.streams_opened.fetch_add(1, Ordering::SeqCst);
        }
        Self {
            body: Some(body),
            counters,
        }
    }
}

impl Drop for CountedBody {
    fn drop(&mut self) {
        if matches!(self.body, Some(ReplyBody::Stream(_))) {
            self.counters.streams_closed.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Body for CountedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let chunk = match &mut this.body {
            None => return Poll::Ready(None),
            Some(ReplyBody::Full(bytes)) => {
                let bytes = std::mem::take(bytes);
                // Taken once: the next poll ends the body.
                this.body = None;
                Some(bytes)
            }
            Some(ReplyBody::Stream(stream)) => match stream.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(chunk) => chunk,
            },
        };
        Poll::Ready(chunk.map(|bytes| {
            this.counters
                .bytes_sent
                .fetch_add(bytes.len() as u64, Ordering::SeqCst);
            Ok(Frame::data(bytes))
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        match &self.body {
            Some(ReplyBody::Full(b)) => SizeHint::with_exact(b.len() as u64),
            None => SizeHint::with_exact(0),
            Some(ReplyBody::Stream(_)) => SizeHint::default(),
        }
    }
}

struct Shared {
    script: Script,
    log: Mutex<Vec<ScriptedRequest>>,
    counters: Arc<Counters>,
    cancel: CancellationToken,
}

impl Shared {
    fn log(&self) -> MutexGuard<'_, Vec<ScriptedRequest>> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An HTTP/1.1 server on 127.0.0.1 answering from a script; see the [module docs](self).
///
/// Dropping it (or [`shutdown`](Self::shutdown)) stops accepting and closes every connection.
pub struct ScriptedServer {
    addr: SocketAddr,
    url: String,
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedServer")
            .field("url", &self.url)
            .field("requests", &self.shared.log().len())
            .finish_non_exhaustive()
    }
}

impl ScriptedServer {
    /// Binds 127.0.0.1 on a free port and serves `script` on the current runtime.
    ///
    /// # Errors
    ///
    /// The port cannot be bound.
    pub async fn start(
        script: impl Fn(&ScriptedRequest) -> Reply + Send + Sync + 'static,
    ) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script: Arc::new(script),
            log: Mutex::new(Vec::new()),
            counters: Arc::default(),
            cancel: CancellationToken::new(),
        });
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Ok(Self {
            addr,
            url: format!("http://{addr}"),
            shared,
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<ScriptedRequest> {
        self.shared.log().clone()
    }

    /// How many requests so far satisfy `pred`.
    pub fn count(&self, pred: impl Fn(&ScriptedRequest) -> bool) -> usize {
        self.shared.log().iter().filter(|r| pred(r)).count()
    }

    /// Body bytes handed to the connection so far (written to the socket or about to be): what
    /// a client can have read at most.
    pub fn bytes_sent(&self) -> u64 {
        self.shared.counters.bytes_sent.load(Ordering::SeqCst)
    }

    /// Streamed bodies ([`Reply::stream`]) still open: neither ended nor dropped because the
    /// client went away.
    pub fn open_streams(&self) -> u64 {
        let c = &self.shared.counters;
        c.streams_opened.load(Ordering::SeqCst) - c.streams_closed.load(Ordering::SeqCst)
    }

    /// Stops accepting, closes every connection and waits for the accept loop to end.
    pub async fn shutdown(mut self) {
        self.shared.cancel.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.shared.cancel.cancel();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let accepted = tokio::select! {
            () = shared.cancel.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((tcp, _)) = accepted else {
            continue;
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(serve_connection(TokioIo::new(tcp), Arc::clone(&shared)));
    }
}

async fn serve_connection(io: TokioIo<tokio::net::TcpStream>, shared: Arc<Shared>) {
    let cancel = shared.cancel.clone();
    let service = service_fn(move |req: Request<hyper::body::Incoming>| {
        let response = answer(&shared, &req);
        async move { Ok::<_, Infallible>(response) }
    });
    let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
    tokio::select! {
        _ = conn => {}
        () = cancel.cancelled() => {}
    }
}

fn answer<B>(shared: &Shared, req: &Request<B>) -> Response<CountedBody> {
    let request = {
        let mut log = shared.log();
        let request = ScriptedRequest {
            seq: log.len(),
            method: req.method().clone(),
            path: req.uri().path().to_owned(),
            query: parse_query(req.uri().query()),
            at: Instant::now(),
            accept: req
                .headers()
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        };
        log.push(request.clone());
        request
    };
    let reply = (shared.script)(&request);
    let mut response = Response::new(CountedBody::new(reply.body, Arc::clone(&shared.counters)));
    *response.status_mut() = reply.status;
    for (name, value) in reply.headers {
        response.headers_mut().insert(name, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_their_parameters() {
        let r = ScriptedRequest {
            seq: 0,
            method: Method::GET,
            path: "/api/v1/pods".into(),
            query: parse_query(Some(
                "watch=1&sendInitialEvents=true&resourceVersion=&continue=",
            )),
            at: Instant::now(),
            accept: None,
        };
        assert!(r.is_watch() && r.is_streaming_list() && !r.is_plain_watch() && !r.is_list());
        assert_eq!(r.resource_version(), Some(""));
        assert_eq!(r.continue_token(), None);
    }

    #[test]
    fn bodies_and_lines() {
        assert_eq!(
            &watch_line("ADDED", &json!({"metadata": {"name": "a"}}))[..],
            b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
        );
        let list: Value = serde_json::from_slice(&list_body("3", Some("t"), &[])).unwrap();
        assert_eq!(list["metadata"]["continue"], "t");
        let end: Value = serde_json::from_slice(&initial_events_end("9")).unwrap();
        assert_eq!(
            end["object"]["metadata"]["annotations"][INITIAL_EVENTS_END],
            "true"
        );
    }
}
