//! The HTTP/2 connection pool of [`HyperTransport`](crate::HyperTransport): per server, the
//! connections its stream limit calls for, so that no request waits for a stream while another
//! connection could carry it.
//!
//! A connection counts its streams: a request's from the moment it is sent until its response
//! body ends, fails or is dropped (a watch holds one as long as it runs). A request takes a
//! stream on the first connection that carries fewer than the server allows (its
//! `SETTINGS_MAX_CONCURRENT_STREAMS`, as it stands); when none does, another connection is
//! opened, one at a time, up to [`Config::http2_max_connections`](crate::Config); past that the
//! request waits for a stream to free up, at most
//! [`Config::http2_stream_wait`](crate::Config), then fails with
//! [`Error::Http2StreamWait`]. A new connection whose server allows no stream at all is closed,
//! with a warning, and the request fails with [`Error::NoHttp2Streams`]. When a server answers
//! ALPN with `http/1.1`, the pool remembers it and hands that server's requests back to the
//! HTTP/1.1 client. A connection unused for `idle_timeout` is closed at a keep-alive tick.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use http::uri::{Authority, Scheme};
use http::{Request, Response, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::Connection;
use hyper_util::rt::TokioIo;
use tokio::sync::Notify;
use tokio::time::Instant;
use tower_service::Service;

use crate::Error;
use crate::error::BoxError;
use crate::transport::ResponseBody;
use crate::transport::connector::ProxyConnector;
use crate::transport::h2_conn::{self, Owner, Pings, SendError};
use crate::transport::spawner::Spawner;

/// How often a waiting request looks at the connections again even if no stream was freed (a
/// server may raise its limit with new settings, which wakes no one).
const RECHECK: Duration = Duration::from_secs(1);

/// How many times a request the server never saw is sent again, beyond once per connection
/// the pool may hold (a connection that failed before the request left is taken out first).
const RETRIES: usize = 2;

/// The bounds of the pool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Connections per server at most (at least 1).
    pub(crate) max_connections: usize,
    /// How long a request waits for a stream when every connection is full.
    pub(crate) stream_wait: Duration,
    /// The bound on opening a connection, settings included.
    pub(crate) connect_timeout: Duration,
    /// A connection carrying no stream for this long is closed.
    pub(crate) idle_timeout: Duration,
    /// The keep-alive pings of each connection.
    pub(crate) pings: Pings,
}

/// What became of a request given to the pool.
pub(crate) enum Sent {
    /// The server's response, its body unread.
    Response(Response<ResponseBody>),
    /// The server speaks HTTP/1.1: send the request with the HTTP/1.1 client.
    Http1(Request<Bytes>),
}

/// The HTTP/2 connections of a transport, by server.
pub(crate) struct Pool {
    connector: HttpsConnector<ProxyConnector>,
    limits: Limits,
    /// Where connections are opened and driven.
    spawner: Spawner,
    /// By scheme and authority (cheap to clone: no string is built per request).
    routes: Mutex<HashMap<(Scheme, Authority), Arc<Route>>>,
}

impl Pool {
    pub(crate) fn new(
        connector: HttpsConnector<ProxyConnector>,
        limits: Limits,
        spawner: Spawner,
    ) -> Self {
        Self {
            connector,
            spawner,
            limits: Limits {
                max_connections: limits.max_connections.max(1),
                ..limits
            },
            routes: Mutex::default(),
        }
    }

    /// Sends `request` (an `https://` URL) on a stream of one of its server's connections.
    ///
    /// # Errors
    ///
    /// No connection could be opened, the server allows no stream, no stream freed up in time,
    /// or the exchange failed.
    pub(crate) async fn send(&self, request: Request<Bytes>) -> Result<Sent, BoxError> {
        let route = self.route(request.uri())?;
        let attempts = self.limits.max_connections + RETRIES;
        let mut attempt = 1;
        loop {
            let (send, lease) = match route.acquire(self).await? {
                Acquired::Stream(send, lease) => (send, lease),
                Acquired::Http1 => return Ok(Sent::Http1(request)),
            };
            let id = lease.id;
            match h2_conn::send(send, &request, lease).await {
                Ok(response) => return Ok(Sent::Response(response)),
                Err(SendError::Unsent { retire, error }) if attempt < attempts => {
                    tracing::debug!(
                        server = %route.server,
                        connection = id,
                        error = %error,
                        "HTTP/2 request not processed by the server; sending it again"
                    );
                    if retire {
                        route.retire(id);
                    }
                    attempt += 1;
                }
                Err(e) => return Err(e.into_error()),
            }
        }
    }

    /// The route of `uri`'s server, made on first use.
    fn route(&self, uri: &Uri) -> Result<Arc<Route>, BoxError> {
        let (Some(scheme), Some(authority)) = (uri.scheme(), uri.authority()) else {
            return Err(format!("not an absolute URL: {uri}").into());
        };
        let key = (scheme.clone(), authority.clone());
        let mut routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(route) = routes.get(&key) {
            return Ok(Arc::clone(route));
        }
        let origin = Uri::builder()
            .scheme(scheme.clone())
            .authority(authority.clone())
            .path_and_query("/")
            .build()?;
        let route = Arc::new(Route {
            server: format!("{scheme}://{authority}"),
            origin,
            limits: self.limits,
            state: Mutex::default(),
            changed: Notify::new(),
        });
        routes.insert(key, Arc::clone(&route));
        Ok(route)
    }

    /// Opens a connection to `route`'s server: TCP (through the proxy, if any), TLS, and for
    /// `h2` the HTTP/2 handshake up to the server's settings; on the spawner's runtime, which
    /// then drives the connection.
    async fn dial(&self, route: &Arc<Route>, id: u64) -> Result<Dialed, BoxError> {
        let mut connector = self.connector.clone();
        let origin = route.origin.clone();
        let owner: Weak<dyn Owner> = Arc::downgrade(route) as Weak<Route>;
        let pings = self.limits.pings;
        self.spawner
            .run(async move {
                std::future::poll_fn(|cx| connector.poll_ready(cx)).await?;
                let stream = connector.call(origin).await?;
                if !stream.connected().is_negotiated_h2() {
                    return Ok(Dialed::Http1);
                }
                let send = h2_conn::handshake(TokioIo::new(stream), id, owner, pings).await?;
                Ok(Dialed::H2(send))
            })
            .await
    }
}

/// A newly opened connection.
enum Dialed {
    H2(SendRequest<Bytes>),
    /// ALPN chose HTTP/1.1 (or nothing): the connection is dropped and the server remembered as
    /// speaking HTTP/1.1.
    Http1,
}

/// What a request got from its route.
enum Acquired {
    /// A stream on a connection, held by the lease.
    Stream(SendRequest<Bytes>, Lease),
    Http1,
}

/// The connections to one server.
struct Route {
    /// `scheme://authority`, for errors and logs.
    server: String,
    /// What the connector is asked to connect to.
    origin: Uri,
    limits: Limits,
    state: Mutex<RouteState>,
    /// Told when a stream is freed, a connection ends or an opening one is done.
    changed: Notify,
}

#[derive(Default)]
struct RouteState {
    connections: Vec<Conn>,
    /// A connection is being opened (one at a time; the requests that find every connection
    /// full wait for it).
    dialing: bool,
    /// The server answered ALPN with HTTP/1.1.
    http1: bool,
    next_id: u64,
    /// The last connection that could not be opened, and why: what the requests that waited
    /// for it are told (rather than a stream wait that was never one).
    failed_dial: Option<FailedDial>,
}

/// A connection that could not be opened: its cause as one line, and the kind of its I/O error
/// (so that a refused connection still reads as one to the requests that waited for it).
struct FailedDial {
    id: u64,
    kind: std::io::ErrorKind,
    why: String,
}

impl FailedDial {
    fn new(id: u64, error: &(dyn std::error::Error + 'static)) -> Self {
        let mut kind = std::io::ErrorKind::Other;
        let mut next = Some(error);
        while let Some(e) = next {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                kind = io.kind();
                break;
            }
            next = e.source();
        }
        Self {
            id,
            kind,
            why: kcache_reflector::ErrorChain(error).to_string(),
        }
    }
}

struct Conn {
    id: u64,
    send: SendRequest<Bytes>,
    /// Requests sent on it whose response body has not ended (nor been dropped).
    streams: usize,
    /// When `streams` last fell to 0.
    idle_since: Instant,
}

impl Conn {
    /// The streams the server allows on this connection now.
    fn limit(&self) -> usize {
        self.send.current_max_send_streams()
    }
}

/// What a request does next.
enum Step {
    Take(SendRequest<Bytes>, Lease),
    Http1,
    Dial(u64),
    /// Every connection is full, or one is being opened (`dialing`, its id).
    Wait {
        connections: usize,
        streams: usize,
        dialing: Option<u64>,
    },
}

impl Route {
    fn state(&self) -> MutexGuard<'_, RouteState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A stream for one request: on a connection with room, on a new connection, or after
    /// waiting for one to free up.
    async fn acquire(self: &Arc<Self>, pool: &Pool) -> Result<Acquired, BoxError> {
        let started = Instant::now();
        let deadline = started + self.limits.stream_wait;
        // The connection being opened that this request waits for, if any.
        let mut awaited_dial = None;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(id) = awaited_dial
                && let Some(failed) = &self.state().failed_dial
                && failed.id == id
            {
                // The connection this request waited for could not be opened: its cause.
                return Err(Box::new(std::io::Error::new(
                    failed.kind,
                    format!("no connection to {}: {}", self.server, failed.why),
                )));
            }
            match self.step() {
                Step::Take(send, lease) => return Ok(Acquired::Stream(send, lease)),
                Step::Http1 => return Ok(Acquired::Http1),
                Step::Dial(id) => {
                    let _dialing = Dialing(self);
                    let dialed = self.dial(pool, id).await;
                    if let Err(e) = &dialed {
                        self.state().failed_dial = Some(FailedDial::new(id, &**e));
                    }
                    return dialed;
                }
                Step::Wait {
                    dialing: Some(id), ..
                } => {
                    // Opening a connection is bounded by the connect timeout: wait for it
                    // without counting against the stream wait.
                    awaited_dial = Some(id);
                    let _ = tokio::time::timeout(RECHECK, notified).await;
                }
                Step::Wait {
                    connections,
                    streams,
                    dialing: None,
                } => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(Box::new(Error::Http2StreamWait {
                            server: self.server.clone(),
                            connections,
                            streams,
                            waited: now - started,
                        }));
                    }
                    let _ = tokio::time::timeout_at((now + RECHECK).min(deadline), notified).await;
                }
            }
        }
    }

    /// Looks at the connections once (under the lock, never held across an await).
    fn step(self: &Arc<Self>) -> Step {
        let mut state = self.state();
        if state.http1 {
            return Step::Http1;
        }
        // A connection whose server has taken back every stream is useless once empty.
        state.connections.retain(|c| c.streams > 0 || c.limit() > 0);
        if let Some(conn) = state.connections.iter_mut().find(|c| c.streams < c.limit()) {
            conn.streams += 1;
            let lease = Lease {
                route: Arc::clone(self),
                id: conn.id,
            };
            return Step::Take(conn.send.clone(), lease);
        }
        if !state.dialing && state.connections.len() < self.limits.max_connections {
            state.dialing = true;
            state.next_id += 1;
            return Step::Dial(state.next_id);
        }
        Step::Wait {
            connections: state.connections.len(),
            streams: state.connections.iter().map(|c| c.streams).sum(),
            dialing: state.dialing.then_some(state.next_id),
        }
    }

    /// Opens connection `id` and takes a stream on it.
    async fn dial(self: &Arc<Self>, pool: &Pool, id: u64) -> Result<Acquired, BoxError> {
        let timeout = self.limits.connect_timeout;
        let dialed = match tokio::time::timeout(timeout, pool.dial(self, id)).await {
            Ok(dialed) => dialed?,
            Err(_) => {
                return Err(Box::new(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no connection to {} within {timeout:?}", self.server),
                )));
            }
        };
        let send = match dialed {
            Dialed::H2(send) => send,
            Dialed::Http1 => {
                tracing::debug!(server = %self.server, "the server speaks HTTP/1.1");
                self.state().http1 = true;
                return Ok(Acquired::Http1);
            }
        };
        let limit = send.current_max_send_streams();
        if limit == 0 {
            let error = Error::NoHttp2Streams {
                server: self.server.clone(),
            };
            tracing::warn!(
                server = %self.server,
                error = %error,
                "closing a new HTTP/2 connection that allows no stream; the request fails"
            );
            // Dropping `send`, the connection's only handle, closes it.
            return Err(Box::new(error));
        }
        let mut state = self.state();
        let others = state.connections.len();
        if others > 0 {
            tracing::debug!(
                server = %self.server,
                connections = others + 1,
                streams_allowed = limit,
                "opened another HTTP/2 connection: the others carry as many streams as the server allows"
            );
        }
        state.connections.push(Conn {
            id,
            send: send.clone(),
            streams: 1,
            idle_since: Instant::now(),
        });
        Ok(Acquired::Stream(
            send,
            Lease {
                route: Arc::clone(self),
                id,
            },
        ))
    }

    /// Connection `id` takes no more streams (those it carries go on).
    fn retire(&self, id: u64) {
        self.state().connections.retain(|c| c.id != id);
        self.changed.notify_waiters();
    }

    /// A stream of connection `id` has ended.
    fn release(&self, id: u64) {
        {
            let mut state = self.state();
            if let Some(conn) = state.connections.iter_mut().find(|c| c.id == id) {
                conn.streams = conn.streams.saturating_sub(1);
                if conn.streams == 0 {
                    conn.idle_since = Instant::now();
                }
            }
        }
        self.changed.notify_waiters();
    }
}

impl Owner for Route {
    fn retire_if_idle(&self, id: u64) -> bool {
        let mut state = self.state();
        let idle = state.connections.iter().position(|c| {
            c.id == id && c.streams == 0 && c.idle_since.elapsed() >= self.limits.idle_timeout
        });
        match idle {
            Some(index) => {
                state.connections.remove(index);
                true
            }
            None => false,
        }
    }

    fn ended(&self, id: u64) {
        self.retire(id);
    }
}

/// A stream taken on connection `id`, given back when dropped.
pub(crate) struct Lease {
    route: Arc<Route>,
    id: u64,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.route.release(self.id);
    }
}

/// The route's one opening connection; done when dropped (also when the request that opens it
/// is dropped), which wakes the requests waiting for it.
struct Dialing<'a>(&'a Route);

impl Drop for Dialing<'_> {
    fn drop(&mut self) {
        self.0.state().dialing = false;
        self.0.changed.notify_waiters();
    }
}
