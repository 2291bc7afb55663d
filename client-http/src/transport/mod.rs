//! The transport seam: [`Transport`] sends one HTTP request, [`HyperTransport`] is the default,
//! over `connector` (TCP, proxies from `proxy`, TLS from `tls`), with its HTTP/2 connections in
//! `h2_pool` (each one an `h2_conn`), both opened and driven where `spawner` puts them; `request` builds the list,
//! watch and object requests (object names checked by `path_segment`), `response` turns error
//! answers into a `Status`, and `deadline` bounds a request by a timeout.
//!
//! Everything above it (authentication, error mapping, decoding, the reflector and the informer)
//! is independent of the HTTP stack. To use another one (a proxy-aware client, a test double, a
//! recording wrapper), implement [`Transport`] and pass it to
//! [`Client::with_transport`](crate::Client::with_transport). The request carries an absolute
//! URL and every header to send (including `Authorization`); the transport adds nothing but what
//! its protocol needs, follows no redirects, and returns every response, whatever its status.

pub(crate) mod connector;
pub(crate) mod deadline;
mod h2_conn;
mod h2_pool;
pub(crate) mod hint;
pub(crate) mod path_segment;
pub(crate) mod proxy;
pub(crate) mod request;
pub(crate) mod response;
mod spawner;
pub(crate) mod tls;

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use futures_util::{StreamExt, TryStreamExt};
use http_body_util::{BodyExt, Full};
use hyper_rustls::{DefaultServerNameResolver, FixedServerNameResolver, HttpsConnector};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioTimer;

use crate::error::BoxError;
use crate::transport::connector::ProxyConnector;
use crate::transport::h2_conn::Pings;
use crate::transport::h2_pool::{Limits, Pool, Sent};
use crate::transport::proxy::Route;
use crate::transport::spawner::{HomeConnector, Spawner};
use crate::{Config, Error};

/// A response body: its data frames as they arrive.
pub type ResponseBody = Pin<Box<dyn Stream<Item = Result<Bytes, BoxError>> + Send>>;

/// Sends HTTP requests: the seam between this crate and an HTTP stack.
///
/// # Example: a transport that records what it sends
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use bytes::Bytes;
/// use kcache_client_http::{BoxError, ResponseBody, Transport};
///
/// #[derive(Debug)]
/// struct Recording<T> { inner: T, urls: Arc<Mutex<Vec<String>>> }
///
/// #[async_trait::async_trait]
/// impl<T: Transport> Transport for Recording<T> {
///     async fn send(
///         &self,
///         request: http::Request<Bytes>,
///     ) -> Result<http::Response<ResponseBody>, BoxError> {
///         self.urls.lock().unwrap().push(request.uri().to_string());
///         self.inner.send(request).await
///     }
/// }
///
/// let config = kcache_client_http::Config::new("http://127.0.0.1:8080".parse()?);
/// let urls = Arc::new(Mutex::new(Vec::new()));
/// let inner = kcache_client_http::HyperTransport::new(&config)?;
/// let client = kcache_client_http::Client::with_transport(config, Recording { inner, urls })?;
/// # drop(client);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[async_trait::async_trait]
pub trait Transport: Send + Sync + fmt::Debug + 'static {
    /// Sends `request` and returns the response head with its body unread. An `Err` means no
    /// response arrived (refused, reset, TLS failure, ...); an HTTP error status is an `Ok`.
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, BoxError>;
}

#[async_trait::async_trait]
impl<T: Transport + ?Sized> Transport for Arc<T> {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, BoxError> {
        (**self).send(request).await
    }
}

/// The default transport: hyper and h2 over rustls (ring provider), with a connection pool.
///
/// It connects directly or through the proxy of [`Config::proxy`] (HTTP `CONNECT` or SOCKS5;
/// TLS to the server runs inside the tunnel).
///
/// `https://` servers are offered HTTP/2 through ALPN (`h2`, then `http/1.1`). HTTP/2
/// connections are pinged every 30 s and closed when a ping goes unanswered for 15 s, which is
/// how a dead connection under long watches is found (client-go does the same). Requests share
/// a connection (every clone of the transport shares the pool, so all informers built from one
/// [`Client`](crate::Client) multiplex their watches) until it carries as many streams as the
/// server allows: its `SETTINGS_MAX_CONCURRENT_STREAMS` (nginx allows 128) counts every request
/// until its response body ends or is dropped, so a watch holds a stream as long as it runs.
/// Then another connection is opened, up to [`Config::http2_max_connections`] per server (8 by
/// default); past that a request waits up to [`Config::http2_stream_wait`] (30 s) for a stream
/// to free up and fails with [`Error::Http2StreamWait`]. A server that allows no stream at all
/// fails the request at once with [`Error::NoHttp2Streams`] (and a warning is logged): the
/// reflector backs off and retries, as for any transport error, instead of a request hanging.
///
/// Plain `http://` URLs, and servers that answer ALPN with `http/1.1` (remembered after the
/// first connection), speak HTTP/1.1 through hyper's pooled client, one request per
/// connection at a time. Idle connections are closed after 90 s. It has no request timeout of
/// its own: the client bounds lists and guards watches.
///
/// # Example: more connections per server, a shorter wait, and telling the pool's errors
///
/// ```
/// use std::time::Duration;
/// use kcache_client_http::{Client, Config, Error};
///
/// let mut config = Config::new("https://10.0.0.1:6443".parse()?);
/// config.http2_max_connections = 16;
/// config.http2_stream_wait = Duration::from_secs(10);
/// let client = Client::new(config)?;
///
/// /// Whether a list or watch failed for want of an HTTP/2 stream.
/// fn no_stream(e: &kcache_reflector::Error) -> bool {
///     let kcache_reflector::Error::Transport(source) = e else {
///         return false;
///     };
///     matches!(
///         source.downcast_ref::<Error>(),
///         Some(Error::NoHttp2Streams { .. } | Error::Http2StreamWait { .. })
///     )
/// }
/// let e = kcache_reflector::Error::transport(Error::NoHttp2Streams {
///     server: "https://10.0.0.1:6443".to_owned(),
/// });
/// assert!(no_stream(&e));
/// # drop(client);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct HyperTransport {
    http1: HyperClient<HomeConnector<HttpsConnector<ProxyConnector>>, Full<Bytes>>,
    h2: Arc<Pool>,
}

impl fmt::Debug for HyperTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HyperTransport").finish_non_exhaustive()
    }
}

/// Interval of HTTP/2 keep-alive pings (client-go's `HTTP2_READ_IDLE_TIMEOUT_SECONDS`).
pub const H2_PING_INTERVAL: Duration = Duration::from_secs(30);
/// How long a ping may go unanswered before the connection is closed.
pub const H2_PING_TIMEOUT: Duration = Duration::from_secs(15);

/// A connection that carried no request for this long is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

impl HyperTransport {
    /// A transport for `config`: its trust roots, `tls-server-name`, insecure mode, client
    /// certificate (static, or renewed by an exec plugin) and proxy.
    ///
    /// # Errors
    ///
    /// [`Error::Tls`] when the TLS configuration cannot be built (e.g. a key rustls rejects);
    /// [`Error::Invalid`] or [`Error::Unsupported`] when a proxy environment variable is not a
    /// usable proxy URL.
    pub fn new(config: &Config) -> Result<Self, Error> {
        let tls = crate::transport::tls::client_config(config, Arc::default())?;
        Self::from_tls(config, tls)
    }

    pub(crate) fn from_tls(config: &Config, tls: rustls::ClientConfig) -> Result<Self, Error> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(config.connect_timeout));
        let resolver: Arc<dyn hyper_rustls::ResolveServerName + Send + Sync> =
            match &config.tls_server_name {
                Some(name) => {
                    let name = rustls::pki_types::ServerName::try_from(name.clone())
                        .map_err(|e| Error::invalid("tls-server-name", format!("`{name}`: {e}")))?;
                    Arc::new(FixedServerNameResolver::new(name))
                }
                None => Arc::new(DefaultServerNameResolver::default()),
            };
        let route = Route::new(&config.proxy, &|name| std::env::var(name).ok())?;
        let connector = ProxyConnector::new(http, route);
        // HTTP/1.1 only for hyper's client: HTTP/2 goes through the pool.
        let mut tls_http1 = tls.clone();
        tls_http1.alpn_protocols = vec![b"http/1.1".to_vec()];
        let spawner = if config.connections_on_client_runtime {
            Spawner::current()
        } else {
            Spawner::in_place()
        };
        let http1_connector = HomeConnector::new(
            HttpsConnector::new(connector.clone(), tls_http1, false, resolver.clone()),
            spawner.clone(),
        );
        let http1 = HyperClient::builder(spawner.clone())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(IDLE_TIMEOUT)
            .build(http1_connector);
        let limits = Limits {
            max_connections: config.http2_max_connections,
            stream_wait: config.http2_stream_wait,
            connect_timeout: config.connect_timeout,
            idle_timeout: IDLE_TIMEOUT,
            pings: Pings {
                interval: H2_PING_INTERVAL,
                timeout: H2_PING_TIMEOUT,
            },
        };
        let h2 = Pool::new(
            HttpsConnector::new(connector, tls, false, resolver),
            limits,
            spawner,
        );
        Ok(Self {
            http1,
            h2: Arc::new(h2),
        })
    }
}

#[async_trait::async_trait]
impl Transport for HyperTransport {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, BoxError> {
        let request = if request.uri().scheme() == Some(&http::uri::Scheme::HTTPS) {
            match self.h2.send(request).await? {
                Sent::Response(response) => return Ok(response),
                Sent::Http1(request) => request,
            }
        } else {
            request
        };
        let response = self.http1.request(request.map(Full::new)).await?;
        Ok(response.map(|body| {
            body.into_data_stream()
                .map_err(|e| -> BoxError { Box::new(e) })
                .boxed()
        }))
    }
}
