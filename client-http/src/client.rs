//! [`Client`]: one configured connection to an API server, shared by every
//! [`HttpListerWatcher`](crate::HttpListerWatcher) built from it.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::AUTHORIZATION;
use http::{Request, Response, StatusCode};

use crate::auth::Authenticator;
use crate::config::userinfo;
use crate::transport::deadline::within;
use crate::transport::response::error_status;
use crate::transport::tls::CertSlot;
use crate::transport::{HyperTransport, ResponseBody, Transport};
use crate::{Auth, Config, Error};

/// An API server client: the server's URL, the credentials, and a [`Transport`].
///
/// Cheap to clone (an `Arc`): every clone, and every lister-watcher built from it, shares the
/// transport's connection pool (so with HTTP/2 the watches of a program share one connection,
/// or as many as the server's stream limit calls for) and the credential cache (an exec plugin
/// runs once for all of them).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    transport: Arc<dyn Transport>,
    auth: Authenticator,
    base: String,
    default_namespace: String,
    user_agent: String,
    list_timeout: Duration,
    watch_timeout_slack: Duration,
    /// The impersonation headers (empty without impersonation).
    impersonation: http::HeaderMap,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.inner.base)
            .field("default_namespace", &self.inner.default_namespace)
            .field("transport", &self.inner.transport)
            .field("auth", &self.inner.auth)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client over the default [`HyperTransport`] (hyper, h2 and rustls: HTTP/2 with
    /// keep-alive pings, one pool, another connection whenever one carries as many streams as
    /// the server allows). Needs a tokio runtime when it sends.
    ///
    /// User-info in the config's URL is never sent as such: see [`Config::cluster_url`].
    ///
    /// # Errors
    ///
    /// [`Error::Tls`] or [`Error::Invalid`] when the TLS settings or credentials are unusable,
    /// among them a client key that does not match the client certificate.
    pub fn new(config: Config) -> Result<Self, Error> {
        let slot = Arc::new(CertSlot::default());
        let tls = crate::transport::tls::client_config(&config, slot.clone())?;
        let transport = HyperTransport::from_tls(&config, tls)?;
        Self::build(config, Arc::new(transport), slot)
    }

    /// A client over another HTTP stack. The TLS settings of `config` (roots, client
    /// certificate, `tls-server-name`, insecure mode) and its proxy are the transport's
    /// business and are not used; the URL, the request authentication, the impersonation and
    /// the timeouts are.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] when a credential cannot be put in a header.
    pub fn with_transport(config: Config, transport: impl Transport) -> Result<Self, Error> {
        Self::build(config, Arc::new(transport), Arc::default())
    }

    fn build(
        mut config: Config,
        transport: Arc<dyn Transport>,
        slot: Arc<CertSlot>,
    ) -> Result<Self, Error> {
        // User-info put into `cluster_url` by hand (`Config::new` already took it out): never
        // sent, shown or logged; basic authentication unless the config has a credential.
        let (url, credentials) = userinfo::split(config.cluster_url);
        config.cluster_url = url;
        if let Some(c) = credentials
            && matches!(config.auth, Auth::None)
        {
            config.auth = Auth::Basic {
                username: c.username,
                password: c.password,
            };
        }
        let auth = Authenticator::new(&config, slot)?;
        let impersonation = match &config.impersonate {
            Some(impersonate) => impersonate.headers()?,
            None => http::HeaderMap::new(),
        };
        let base = config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_owned();
        Ok(Self {
            inner: Arc::new(Inner {
                transport,
                auth,
                base,
                default_namespace: config.default_namespace,
                user_agent: config.user_agent,
                list_timeout: config.list_timeout,
                watch_timeout_slack: config.watch_timeout_slack,
                impersonation,
            }),
        })
    }

    /// The namespace of the config's context (or pod).
    pub fn default_namespace(&self) -> &str {
        &self.inner.default_namespace
    }

    /// The server's base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.inner.base
    }

    pub(crate) fn user_agent(&self) -> &str {
        &self.inner.user_agent
    }

    pub(crate) fn list_timeout(&self) -> Duration {
        self.inner.list_timeout
    }

    pub(crate) fn watch_timeout_slack(&self) -> Duration {
        self.inner.watch_timeout_slack
    }

    /// Makes sure a credential is at hand (running an exec plugin if one is due), so that a
    /// request's own timeout does not also count the plugin's run: a plugin that hangs is
    /// reported by its own timeout, which names it.
    pub(crate) async fn ready_credentials(
        &self,
    ) -> Result<crate::auth::Credential, kcache_reflector::Error> {
        self.inner
            .auth
            .credential()
            .await
            .map_err(kcache_reflector::Error::transport)
    }

    /// Sends a request with the client's credentials (and impersonation headers) and returns a
    /// 2xx response with its body unread. A request that already has an `Authorization` header
    /// keeps it; one that already has an `Impersonate-User` header keeps its impersonation.
    ///
    /// A 401 drops the credential used (a token file is re-read, an exec plugin run again, at
    /// most once per credential) and the request is retried once.
    ///
    /// # Errors
    ///
    /// - [`Api`](kcache_reflector::Error::Api): a non-2xx answer, with the server's `Status`
    ///   or one made from the code and text body (`Retry-After` in its details);
    /// - [`Transport`](kcache_reflector::Error::Transport): no answer (refused, reset, TLS), or
    ///   no credential (its [`Error`] is the source).
    pub async fn send(
        &self,
        request: Request<Bytes>,
    ) -> Result<Response<ResponseBody>, kcache_reflector::Error> {
        self.send_with(request, None).await
    }

    /// [`send`](Self::send), using `first` (from [`ready_credentials`](Self::ready_credentials))
    /// for the first try instead of asking for a credential again.
    pub(crate) async fn send_with(
        &self,
        request: Request<Bytes>,
        mut first: Option<crate::auth::Credential>,
    ) -> Result<Response<ResponseBody>, kcache_reflector::Error> {
        let (mut parts, body) = request.into_parts();
        if !self.inner.impersonation.is_empty() && !parts.headers.contains_key("impersonate-user") {
            for (name, value) in &self.inner.impersonation {
                parts.headers.append(name.clone(), value.clone());
            }
        }
        let has_auth = parts.headers.contains_key(AUTHORIZATION);
        let mut retried = false;
        loop {
            let mut req = Request::from_parts(parts.clone(), body.clone());
            let generation = if has_auth {
                None
            } else {
                let cred = match first.take() {
                    Some(cred) => cred,
                    None => self.ready_credentials().await?,
                };
                if let Some(h) = cred.header {
                    req.headers_mut().insert(AUTHORIZATION, h);
                }
                Some(cred.generation)
            };
            let response = self
                .inner
                .transport
                .send(req)
                .await
                // A TLS failure says what to check first (the scheme, the CA, the chain).
                .map_err(|e| {
                    kcache_reflector::Error::Transport(crate::transport::hint::explain(e))
                })?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            if status == StatusCode::UNAUTHORIZED
                && !retried
                && generation.is_some_and(|g| self.inner.auth.unauthorized(g))
            {
                retried = true;
                continue;
            }
            return Err(kcache_reflector::Error::api(error_status(response).await));
        }
    }

    /// One exchange with the server, as every list, watch and object call makes it: a
    /// credential is made ready ([`ready_credentials`](Self::ready_credentials), outside the
    /// bound, so an exec plugin's run is bounded by its own timeout, which names it), then
    /// `request` is [sent](Self::send_with) and the 2xx answer's body handed to `read`, the
    /// sending and the reading together bounded by `timeout`.
    ///
    /// `read` decides what is bounded: reading the whole body (a list, an object), or only
    /// waiting for the answer's head (a watch, whose `read` returns the body as it is).
    ///
    /// # Errors
    ///
    /// Those of [`send`](Self::send) and `read`'s, or
    /// [`Timeout`](kcache_reflector::Error::Timeout) past `timeout`.
    pub(crate) async fn exchange<R, F, Fut>(
        &self,
        request: Request<Bytes>,
        timeout: Duration,
        read: F,
    ) -> Result<R, kcache_reflector::Error>
    where
        F: FnOnce(ResponseBody) -> Fut,
        Fut: Future<Output = Result<R, kcache_reflector::Error>>,
    {
        self.exchange_typed(request, timeout, |_, body| read(body))
            .await
    }
}

impl Client {
    /// As [`exchange`](Self::exchange), with the answer's `Content-Type` handed to `read`
    /// beside its body (a lister-watcher that asked for protobuf or JSON reads either).
    ///
    /// # Errors
    ///
    /// As [`exchange`](Self::exchange).
    pub(crate) async fn exchange_typed<R, F, Fut>(
        &self,
        request: Request<Bytes>,
        timeout: Duration,
        read: F,
    ) -> Result<R, kcache_reflector::Error>
    where
        F: FnOnce(Option<String>, ResponseBody) -> Fut,
        Fut: Future<Output = Result<R, kcache_reflector::Error>>,
    {
        let credential = self.ready_credentials().await?;
        within(timeout, async {
            let response = self.send_with(request, Some(credential)).await?;
            let content_type = crate::decode::response::content_type(response.headers());
            read(content_type, response.into_body()).await
        })
        .await
    }
}

impl TryFrom<Config> for Client {
    type Error = Error;
    fn try_from(config: Config) -> Result<Self, Error> {
        Self::new(config)
    }
}
