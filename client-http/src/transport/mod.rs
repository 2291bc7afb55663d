//! The transport seam: [`Transport`] sends one HTTP request, [`HyperTransport`] is the default,
//! over `connector` (TCP, proxies from `proxy`, TLS from `tls`); `request` builds the list,
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
pub(crate) mod hint;
pub(crate) mod path_segment;
pub(crate) mod proxy;
pub(crate) mod request;
pub(crate) mod response;
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
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::error::BoxError;
use crate::transport::connector::ProxyConnector;
use crate::transport::proxy::Route;
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

/// The default transport: one pooled hyper client over rustls (ring provider).
///
/// It connects directly or through the proxy of [`Config::proxy`] (HTTP `CONNECT` or SOCKS5;
/// TLS to the server runs inside the tunnel).
///
/// HTTP/2 through ALPN (`h2`, then `http/1.1`) with keep-alive pings every 30 s and a 15 s
/// timeout, which is how a dead connection under long watches is found (client-go does the
/// same); plain `http://` URLs speak HTTP/1.1. Every clone shares the connection pool, so all
/// informers built from one [`Client`](crate::Client) multiplex their watches on one
/// connection per server. It has no request timeout of its own: the client bounds lists and
/// guards watches.
#[derive(Clone)]
pub struct HyperTransport {
    client: HyperClient<HttpsConnector<ProxyConnector>, Full<Bytes>>,
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
        let https = HttpsConnector::new(ProxyConnector::new(http, route), tls, false, resolver);
        let client = HyperClient::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .http2_keep_alive_interval(H2_PING_INTERVAL)
            .http2_keep_alive_timeout(H2_PING_TIMEOUT)
            .http2_keep_alive_while_idle(true)
            .build(https);
        Ok(Self { client })
    }
}

#[async_trait::async_trait]
impl Transport for HyperTransport {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, BoxError> {
        let response = self.client.request(request.map(Full::new)).await?;
        Ok(response.map(|body| {
            body.into_data_stream()
                .map_err(|e| -> BoxError { Box::new(e) })
                .boxed()
        }))
    }
}
