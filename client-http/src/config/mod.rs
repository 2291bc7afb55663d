//! [`Config`]: where the API server is and how to authenticate to it, from a kubeconfig, from
//! the pod's service account, or by hand.

mod exec;
mod in_cluster;
mod kubeconfig;
mod pem;
pub(crate) mod userinfo;

use std::path::PathBuf;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};

pub(crate) use self::exec::run as run_exec;
pub use self::exec::{ExecApiVersion, ExecConfig};
pub use self::in_cluster::InClusterOptions;
pub use self::kubeconfig::{
    AuthInfo, Cluster, Context, ExecEnvVar, ExecSpec, Kubeconfig, KubeconfigOptions, NamedAuthInfo,
    NamedCluster, NamedContext, fuzz_kubeconfig,
};
use crate::transport::request::DEFAULT_USER_AGENT;
use crate::{Error, Impersonate, Proxy, Result, Secret};

/// How requests authenticate, besides a client certificate.
///
/// `Debug` shows no credential, nor the user name of [`Basic`](Self::Basic) (it may come from
/// a server URL's user-info, where tokens are sometimes put).
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Auth {
    /// No `Authorization` header.
    #[default]
    None,
    /// A fixed bearer token.
    Bearer(Secret),
    /// A bearer token read from a file, re-read every
    /// [`token_file_refresh`](Config::token_file_refresh) and after a 401 (service account
    /// tokens rotate). When a read fails the last good token is kept; `fallback` is used before
    /// the first good read (a kubeconfig's `token` next to its `tokenFile`).
    TokenFile {
        /// The file.
        path: PathBuf,
        /// The token to use if the file cannot be read at all.
        fallback: Option<Secret>,
    },
    /// HTTP basic authentication (kubeconfig `username`/`password`).
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: Secret,
    },
    /// A credential plugin (kubeconfig `exec`): run on first use, cached until the credential's
    /// `expirationTimestamp`, run again on expiry and after a 401 (once per credential).
    Exec(Box<ExecConfig>),
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::None => f.write_str("None"),
            Self::Bearer(token) => f.debug_tuple("Bearer").field(token).finish(),
            Self::TokenFile { path, fallback } => f
                .debug_struct("TokenFile")
                .field("path", path)
                .field("fallback", fallback)
                .finish(),
            Self::Basic { password, .. } => f
                .debug_struct("Basic")
                .field("username", &format_args!("<redacted>"))
                .field("password", password)
                .finish(),
            Self::Exec(exec) => f.debug_tuple("Exec").field(exec).finish(),
        }
    }
}

/// A client certificate and its private key (mutual TLS).
pub struct Identity {
    pub(crate) chain: Vec<CertificateDer<'static>>,
    pub(crate) key: Secret<PrivateKeyDer<'static>>,
}

impl Identity {
    /// A certificate chain and key from PEM (the key as PKCS#8, PKCS#1 RSA or SEC1 EC).
    ///
    /// # Errors
    ///
    /// [`Error::Pem`] when either holds no valid PEM item of its kind.
    pub fn from_pem(cert_chain: &[u8], key: &[u8]) -> Result<Self> {
        Ok(Self {
            chain: pem::certificates(cert_chain, "client certificate")?,
            key: Secret::new(pem::private_key(key, "client key")?),
        })
    }
}

impl Clone for Identity {
    fn clone(&self) -> Self {
        Self {
            chain: self.chain.clone(),
            key: Secret::new(self.key.expose().clone_key()),
        }
    }
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("certificates", &self.chain.len())
            .field("key", &self.key)
            .finish()
    }
}

/// Where the API server is and how to talk to it. Build it with [`Config::infer`],
/// [`Config::from_kubeconfig`], [`Config::in_cluster`] or [`Config::new`], then make a
/// [`Client`](crate::Client) from it.
///
/// `Debug` shows no credential: tokens, passwords and keys are [`Secret`]s, and user-info
/// in [`cluster_url`](Self::cluster_url) is redacted.
#[derive(Clone)]
#[non_exhaustive]
pub struct Config {
    /// The server's base URL (`https://host:port`, possibly with a path prefix). `http://` is
    /// allowed (tests, local proxies).
    ///
    /// It has no user-info when the config comes from [`Config::new`] or a kubeconfig: that
    /// became [`Auth::Basic`]. User-info set here by hand is treated the same way when a
    /// [`Client`](crate::Client) is built: removed from the URL, and used as basic
    /// authentication if [`auth`](Self::auth) is [`Auth::None`].
    pub cluster_url: http::Uri,
    /// The namespace of the context (or the pod), `default` when none is set.
    pub default_namespace: String,
    /// Trusted CA certificates (DER); `None` trusts the system's roots.
    pub root_certificates: Option<Vec<Vec<u8>>>,
    /// The client certificate, if any.
    pub identity: Option<Identity>,
    /// The name checked in the server's certificate (and sent as SNI) instead of the URL's host.
    pub tls_server_name: Option<String>,
    /// Accept any server certificate. Only ever set because a kubeconfig says
    /// `insecure-skip-tls-verify: true` or the caller sets it by name.
    pub insecure_skip_tls_verify: bool,
    /// Bearer token, token file, basic or exec plugin.
    pub auth: Auth,
    /// The bound on one list request, body included (default 60 s, the API server's own limit),
    /// and on each read or write of an [`ObjectClient`](crate::ObjectClient). Watches have no
    /// total timeout.
    pub list_timeout: Duration,
    /// The bound on opening a connection (default 30 s): the TCP connection, and for HTTP/2
    /// (the default transport over `https://`) the proxy tunnel, TLS and HTTP/2 handshakes up
    /// to the server's settings.
    pub connect_timeout: Duration,
    /// How many HTTP/2 connections the default transport opens to one server at most (default
    /// [`DEFAULT_HTTP2_MAX_CONNECTIONS`], 8; 0 counts as 1). Requests share a connection until
    /// it carries as many streams as the server allows (its `SETTINGS_MAX_CONCURRENT_STREAMS`;
    /// a watch holds its stream as long as it runs), then the next one is opened. Other
    /// transports ignore it.
    pub http2_max_connections: usize,
    /// How long a request waits for an HTTP/2 stream when all
    /// [`http2_max_connections`](Self::http2_max_connections) connections carry as many streams
    /// as the server allows (default [`DEFAULT_HTTP2_STREAM_WAIT`], 30 s); then it fails with
    /// [`Error::Http2StreamWait`](crate::Error::Http2StreamWait). Other transports ignore it.
    pub http2_stream_wait: Duration,
    /// Whether the default transport opens and drives its connections on the runtime the
    /// [`Client`](crate::Client) was made on, when that is a multi-threaded one (default `false`:
    /// on the runtime of the request that opens them). On, a connection opened by an informer
    /// running on a thread of its own (its default run mode on a multi-threaded runtime) is not
    /// driven on that informer's thread, in turn with its decoding, and outlives it, so informers
    /// that share an HTTP/2 connection do not lose it when the one that opened it stops. If that
    /// runtime shuts down, the next connect fails once with an error saying so, and connections
    /// open on the request's runtime from then on. It costs throughput: the buffers a response is
    /// read into are then allocated on a worker thread of that runtime and freed on the informer's
    /// thread (memory the allocator hands back and faults in again), and on the project's bench
    /// over HTTP/2 an informer took in watch events at 0.41x the rate it has with the connection in
    /// place, for three times the CPU. Other transports ignore it.
    pub connections_on_client_runtime: bool,
    /// A watch asked to last `timeoutSeconds` is ended by the client after that plus this much,
    /// in case the server never ends it (default 30 s).
    pub watch_timeout_slack: Duration,
    /// How often a token file is re-read (default 60 s, like client-go).
    pub token_file_refresh: Duration,
    /// The `User-Agent` header.
    pub user_agent: String,
    /// How the default transport reaches the server: the environment's `HTTPS_PROXY` and
    /// friends unless said otherwise (a kubeconfig's `proxy-url`). Other transports ignore it.
    pub proxy: Proxy,
    /// Act as another user (a kubeconfig's `as`, `as-uid`, `as-groups`, `as-user-extra`).
    pub impersonate: Option<Impersonate>,
}

/// The default of [`Config::list_timeout`]: the API server's own limit on a request.
pub(crate) const DEFAULT_LIST_TIMEOUT: Duration = Duration::from_secs(60);

/// The default of [`Config::http2_max_connections`]: with the 100 to 250 streams API servers
/// and proxies usually allow per connection (nginx: 128), room for about a thousand watches.
pub const DEFAULT_HTTP2_MAX_CONNECTIONS: usize = 8;

/// The default of [`Config::http2_stream_wait`].
pub const DEFAULT_HTTP2_STREAM_WAIT: Duration = Duration::from_secs(30);

/// The default of [`Config::watch_timeout_slack`].
pub(crate) const DEFAULT_WATCH_TIMEOUT_SLACK: Duration = Duration::from_secs(30);

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field(
                "cluster_url",
                &format_args!("{}", userinfo::redacted_uri(&self.cluster_url)),
            )
            .field("default_namespace", &self.default_namespace)
            .field(
                "root_certificates",
                &self.root_certificates.as_ref().map(Vec::len),
            )
            .field("identity", &self.identity)
            .field("tls_server_name", &self.tls_server_name)
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .field("auth", &self.auth)
            .field("list_timeout", &self.list_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("http2_max_connections", &self.http2_max_connections)
            .field("http2_stream_wait", &self.http2_stream_wait)
            .field(
                "connections_on_client_runtime",
                &self.connections_on_client_runtime,
            )
            .field("watch_timeout_slack", &self.watch_timeout_slack)
            .field("token_file_refresh", &self.token_file_refresh)
            .field("user_agent", &self.user_agent)
            .field("proxy", &self.proxy)
            .field("impersonate", &self.impersonate)
            .finish()
    }
}

impl Config {
    /// A config for `cluster_url`, trusting the system roots, with no credentials but those
    /// of the URL's user-info.
    ///
    /// User-info (`https://user:password@host:6443`) is treated as Go's HTTP client, and so
    /// client-go, treats it: it is removed from [`cluster_url`](Self::cluster_url) (it never
    /// reaches the wire, `Debug`, errors or logs) and becomes [`Auth::Basic`], the user and
    /// password percent-decoded. Any credential set afterwards wins:
    /// [`with_auth`](Self::with_auth), or a kubeconfig user's token, token file, basic
    /// authentication or exec plugin. A client certificate is sent along with it.
    ///
    /// ```
    /// use kcache_client_http::{Auth, Config};
    ///
    /// let config = Config::new("https://alice:s%40cret@10.0.0.1:6443".parse()?);
    /// assert_eq!(config.cluster_url, "https://10.0.0.1:6443/");
    /// let Auth::Basic { username, password } = &config.auth else { unreachable!() };
    /// assert_eq!((username.as_str(), password.expose().as_str()), ("alice", "s@cret"));
    /// assert!(!format!("{config:?}").contains("alice"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(cluster_url: http::Uri) -> Self {
        let (cluster_url, credentials) = userinfo::split(cluster_url);
        let auth = match credentials {
            Some(c) => Auth::Basic {
                username: c.username,
                password: c.password,
            },
            None => Auth::None,
        };
        Self {
            cluster_url,
            default_namespace: "default".to_owned(),
            root_certificates: None,
            identity: None,
            tls_server_name: None,
            insecure_skip_tls_verify: false,
            auth,
            list_timeout: DEFAULT_LIST_TIMEOUT,
            connect_timeout: Duration::from_secs(30),
            http2_max_connections: DEFAULT_HTTP2_MAX_CONNECTIONS,
            http2_stream_wait: DEFAULT_HTTP2_STREAM_WAIT,
            connections_on_client_runtime: false,
            watch_timeout_slack: DEFAULT_WATCH_TIMEOUT_SLACK,
            token_file_refresh: Duration::from_secs(60),
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            proxy: Proxy::FromEnvironment,
            impersonate: None,
        }
    }

    /// Trusts the CA certificates of a PEM bundle (replacing the system roots).
    ///
    /// # Errors
    ///
    /// [`Error::Pem`] when the bundle holds no certificate or is malformed.
    pub fn with_root_certificates_pem(mut self, pem: &[u8]) -> Result<Self> {
        let certs = pem::certificates(pem, "certificate authority")?;
        self.root_certificates = Some(certs.into_iter().map(|c| c.to_vec()).collect());
        Ok(self)
    }

    /// Sets [`auth`](Self::auth) (replacing basic authentication from the URL's user-info).
    #[must_use]
    pub fn with_auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }

    /// The kubeconfig first, then the in-cluster config, like kubectl and client-go's
    /// `NewNonInteractiveDeferredLoadingClientConfig`.
    ///
    /// # Errors
    ///
    /// [`Error::Infer`] with both reasons when neither works.
    pub fn infer() -> Result<Self> {
        match Self::from_kubeconfig(&KubeconfigOptions::default()) {
            Ok(config) => Ok(config),
            Err(kubeconfig) => match Self::in_cluster() {
                Ok(config) => Ok(config),
                Err(in_cluster) => Err(Error::Infer {
                    kubeconfig: kcache_reflector::ErrorChain(&kubeconfig).to_string(),
                    in_cluster: kcache_reflector::ErrorChain(&in_cluster).to_string(),
                }),
            },
        }
    }

    /// The config of the kubeconfig files named by `$KUBECONFIG` (merged) or
    /// `~/.kube/config`, for the context `options` choose.
    pub fn from_kubeconfig(options: &KubeconfigOptions) -> Result<Self> {
        Kubeconfig::load(options)?.config(options)
    }

    /// The config of one kubeconfig file, at its current context.
    pub fn from_kubeconfig_path(path: impl Into<PathBuf>) -> Result<Self> {
        let options = KubeconfigOptions {
            paths: Some(vec![path.into()]),
            ..KubeconfigOptions::default()
        };
        Self::from_kubeconfig(&options)
    }

    /// The in-cluster config: the service account of the pod this process runs in.
    pub fn in_cluster() -> Result<Self> {
        Self::from_in_cluster(&InClusterOptions::from_env())
    }
}
