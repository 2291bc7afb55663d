//! One HTTP/2 connection of [`HyperTransport`](crate::HyperTransport)'s pool, driven with the
//! `h2` crate: the handshake, the server's first settings, the task that drives the connection
//! and pings it, and one request sent on it, whose response body holds the pool's lease on the
//! stream until the body ends or is dropped.
//!
//! The server's `SETTINGS` frame is the first frame it sends, and frames are handled in order,
//! so once the answer to a ping sent right after the handshake is in, the server's stream limit
//! is known ([`SendRequest::current_max_send_streams`]); [`handshake`] returns only then.

use std::pin::Pin;
use std::sync::Weak;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use h2::client::{Connection, SendRequest};
use h2::{Ping, PingPong, Reason, RecvStream};
use http::header::{CONNECTION, CONTENT_LENGTH, HeaderValue, TE, TRANSFER_ENCODING, UPGRADE};
use http::{Method, Request, Response, Version};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;

use crate::error::BoxError;
use crate::transport::ResponseBody;

/// What a connection's driver tells the pool that owns the connection.
pub(crate) trait Owner: Send + Sync + 'static {
    /// Asked at each keep-alive tick: whether connection `id` has carried no stream for long
    /// enough and was taken out of the pool, in which case the driver closes it.
    fn retire_if_idle(&self, id: u64) -> bool;
    /// Connection `id` has ended (closed by either side, or its pings went unanswered).
    fn ended(&self, id: u64);
}

/// The keep-alive pings of a connection: one every `interval`, each answered within `timeout`
/// or the connection is closed (and its streams fail).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pings {
    pub(crate) interval: Duration,
    pub(crate) timeout: Duration,
}

/// The flow-control windows and frame limits of the connections (hyper's client defaults: a
/// large list is not slowed by window updates).
fn builder() -> h2::client::Builder {
    let mut builder = h2::client::Builder::new();
    builder
        .enable_push(false)
        .initial_window_size(2 * 1024 * 1024)
        .initial_connection_window_size(5 * 1024 * 1024)
        .max_frame_size(16 * 1024)
        .max_send_buffer_size(1024 * 1024)
        .max_header_list_size(16 * 1024);
    builder
}

/// Performs the HTTP/2 handshake on `io` (TLS done, `h2` negotiated), spawns the task that
/// drives the connection and returns once the server's first settings are applied.
///
/// # Errors
///
/// The handshake failed, or the connection ended or failed before the server's settings came.
pub(crate) async fn handshake<T>(
    io: T,
    id: u64,
    owner: Weak<dyn Owner>,
    pings: Pings,
) -> Result<SendRequest<Bytes>, BoxError>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (send, mut connection) = builder().handshake::<_, Bytes>(io).await?;
    let ping_pong = connection
        .ping_pong()
        .ok_or("the HTTP/2 connection has no ping handle")?;
    let (settled_tx, settled_rx) = oneshot::channel();
    tokio::spawn(drive(connection, ping_pong, settled_tx, id, owner, pings));
    match settled_rx.await {
        Ok(Ok(())) => Ok(send),
        Ok(Err(e)) => Err(e),
        Err(_) => Err("the HTTP/2 connection ended before the server's settings came".into()),
    }
}

/// Drives `connection`: first until the answer to a ping (so the server's settings are
/// applied, told through `settled`), then with keep-alive pings until it ends, fails a ping or
/// is retired idle; tells `owner` when it has ended (or the task was dropped).
async fn drive<T>(
    connection: Connection<T, Bytes>,
    mut ping_pong: PingPong,
    mut settled: oneshot::Sender<Result<(), BoxError>>,
    id: u64,
    owner: Weak<dyn Owner>,
    pings: Pings,
) where
    T: AsyncRead + AsyncWrite + Unpin,
{
    // Also when the task is dropped unfinished (its runtime shut down, and the connection with
    // it).
    let _ended = Ended { id, owner: &owner };
    tokio::pin!(connection);
    let first = tokio::select! {
        // The caller gave up waiting (its connect timeout): drop the connection.
        () = settled.closed() => return,
        ended = connection.as_mut() => Err(match ended {
            Ok(()) => "the server closed the HTTP/2 connection before its settings came".into(),
            Err(e) => BoxError::from(e),
        }),
        pong = ping_pong.ping(Ping::opaque()) => pong.map(drop).map_err(BoxError::from),
    };
    let usable = first.is_ok();
    let _ = settled.send(first);
    if usable {
        let why = keep_alive(connection.as_mut(), &mut ping_pong, id, &owner, pings).await;
        tracing::debug!(connection = id, reason = %why, "HTTP/2 connection ended");
    }
}

/// Tells the owner that connection `id` has ended, when dropped.
struct Ended<'a> {
    id: u64,
    owner: &'a Weak<dyn Owner>,
}

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        if let Some(owner) = self.owner.upgrade() {
            owner.ended(self.id);
        }
    }
}

/// Polls `connection` and pings it every `pings.interval` until it ends, a ping goes
/// unanswered or the owner retires it idle; returns why it stopped.
async fn keep_alive<T>(
    mut connection: Pin<&mut Connection<T, Bytes>>,
    ping_pong: &mut PingPong,
    id: u64,
    owner: &Weak<dyn Owner>,
    pings: Pings,
) -> String
where
    T: AsyncRead + AsyncWrite + Unpin,
{
    loop {
        tokio::select! {
            ended = connection.as_mut() => return closed(ended),
            () = tokio::time::sleep(pings.interval) => {}
        }
        // Without an owner (the transport is gone) the connection lives on until its last
        // stream ends: h2 closes a connection nothing can send on any more.
        if owner.upgrade().is_some_and(|o| o.retire_if_idle(id)) {
            return "idle".to_owned();
        }
        let pong = tokio::select! {
            ended = connection.as_mut() => return closed(ended),
            pong = tokio::time::timeout(pings.timeout, ping_pong.ping(Ping::opaque())) => pong,
        };
        match pong {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return format!("keep-alive ping failed: {e}"),
            Err(_) => {
                return format!("no answer to a keep-alive ping within {:?}", pings.timeout);
            }
        }
    }
}

fn closed(ended: Result<(), h2::Error>) -> String {
    match ended {
        Ok(()) => "closed".to_owned(),
        Err(e) => format!("failed: {e}"),
    }
}

/// A request that failed on a connection.
#[derive(Debug)]
pub(crate) enum SendError {
    /// The server did not process it (the stream could not be opened, the server refused it
    /// or went away before it): it may be sent again on another stream. With `retire`, the
    /// connection takes no more streams.
    Unsent { retire: bool, error: h2::Error },
    /// It may have been processed, or the failure is not the connection's.
    Failed(BoxError),
}

impl SendError {
    pub(crate) fn into_error(self) -> BoxError {
        match self {
            Self::Unsent { error, .. } => Box::new(error),
            Self::Failed(error) => error,
        }
    }
}

/// A failure to open a stream: the connection's (gone away, broken, reset: it takes no more
/// streams and the request is sent again elsewhere) or the request's own (a header h2 refuses,
/// say: no other connection would take it, and this one is fine).
fn connection_failed(error: h2::Error) -> SendError {
    if error.is_go_away() || error.is_io() || error.reason().is_some() {
        SendError::Unsent {
            retire: true,
            error,
        }
    } else {
        SendError::Failed(Box::new(error))
    }
}

/// Sends `request` on the connection of `send` and waits for the response head. The response
/// body holds `lease` until it ends, fails or is dropped (so does an error, by dropping it).
pub(crate) async fn send<L>(
    send: SendRequest<Bytes>,
    request: &Request<Bytes>,
    lease: L,
) -> Result<Response<ResponseBody>, SendError>
where
    L: Send + Unpin + 'static,
{
    let mut send = send.ready().await.map_err(connection_failed)?;
    let body = request.body().clone();
    let (response, mut body_tx) = send
        .send_request(head(request), body.is_empty())
        .map_err(connection_failed)?;
    if !body.is_empty() {
        // Request bodies are small and already in memory: h2 sends them as the windows allow.
        body_tx
            .send_data(body, true)
            .map_err(|e| SendError::Failed(Box::new(e)))?;
    }
    let response = response.await.map_err(|error| {
        let refused = error.reason() == Some(Reason::REFUSED_STREAM);
        // A GOAWAY fails the streams the server never saw (above its last stream id); a
        // failure seen as one after its last stream started is retried only if repeatable.
        let gone = error.is_go_away() && error.is_remote() && request.method() == Method::GET;
        if refused || gone {
            SendError::Unsent {
                retire: gone,
                error,
            }
        } else {
            SendError::Failed(Box::new(error))
        }
    })?;
    let (parts, recv) = response.into_parts();
    let lease = (!recv.is_end_stream()).then_some(lease);
    Ok(Response::from_parts(parts, Box::pin(Body { recv, lease })))
}

/// The head of `request` for HTTP/2: the URL stays absolute (h2 writes `:scheme`,
/// `:authority` and `:path` from it), headers HTTP/2 forbids are left out, and a body's length
/// is given.
fn head(request: &Request<Bytes>) -> Request<()> {
    let mut head = Request::new(());
    *head.method_mut() = request.method().clone();
    *head.uri_mut() = request.uri().clone();
    *head.version_mut() = Version::HTTP_2;
    let headers = head.headers_mut();
    for (name, value) in request.headers() {
        let connection_specific = name == CONNECTION
            || name == TRANSFER_ENCODING
            || name == UPGRADE
            || name.as_str() == "keep-alive"
            || name.as_str() == "proxy-connection"
            || (name == TE && value != "trailers");
        if !connection_specific {
            headers.append(name, value.clone());
        }
    }
    let length = request.body().len();
    if length > 0 && !headers.contains_key(CONTENT_LENGTH) {
        headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
    }
    head
}

/// A response body: the stream's data frames, each given back to the flow-control window as
/// it is handed on, holding the lease until the body ends or fails (or is dropped).
struct Body<L> {
    recv: RecvStream,
    lease: Option<L>,
}

impl<L: Unpin> Stream for Body<L> {
    type Item = Result<Bytes, BoxError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match this.recv.poll_data(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(data))) => {
                // Only fails once the stream is gone, when the window no longer matters.
                let _ = this.recv.flow_control().release_capacity(data.len());
                Poll::Ready(Some(Ok(data)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.lease = None;
                Poll::Ready(Some(Err(Box::new(e))))
            }
            Poll::Ready(None) => {
                this.lease = None;
                Poll::Ready(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_leave_out_connection_headers_and_give_the_body_length() {
        let request = Request::builder()
            .method(Method::POST)
            .uri("https://api.example:6443/api/v1/namespaces/ns/pods")
            .header(CONNECTION, "keep-alive")
            .header("keep-alive", "timeout=5")
            .header(TE, "gzip")
            .header("accept", "application/json")
            .body(Bytes::from_static(b"{}"))
            .expect("request");
        let head = head(&request);
        assert_eq!(head.version(), Version::HTTP_2);
        assert_eq!(head.uri(), request.uri());
        let names: Vec<_> = head
            .headers()
            .keys()
            .map(http::HeaderName::as_str)
            .collect();
        assert_eq!(names, ["accept", "content-length"]);
        assert_eq!(head.headers()[CONTENT_LENGTH], "2");
    }

    #[test]
    fn te_trailers_is_kept() {
        let request = Request::builder()
            .uri("https://api.example/")
            .header(TE, "trailers")
            .body(Bytes::new())
            .expect("request");
        let head = head(&request);
        assert_eq!(head.headers()[TE], "trailers");
        assert!(!head.headers().contains_key(CONTENT_LENGTH));
    }
}
