//! The configuration [`Error`] of this crate: loading a kubeconfig or in-cluster config,
//! credentials and TLS setup (and, with the `kube` feature, label selector conversions), and the
//! failures of the default transport's HTTP/2 pool (a server granting no stream, a request
//! that found no free stream in time), which reach callers as a request error's source.
//!
//! List and watch calls return [`kcache_reflector::Error`] instead, as the
//! [`ListerWatcher`](kcache_reflector::ListerWatcher) contract requires, and so do the reads and
//! writes of [`ObjectClient`](crate::ObjectClient) and [`HttpLeaseLock`](crate::HttpLeaseLock)
//! (one error type for every request, whose `is_conflict` and `is_not_found` read the server's
//! `Status`); a credential failure during a request becomes its
//! [`Transport`](kcache_reflector::Error::Transport) source.

use std::io;
use std::path::PathBuf;

/// The source type of the variants that wrap other crates' errors (so that YAML, base64, PEM
/// and TLS crates stay out of this crate's API): the workspace's one boxed error.
pub use kcache_store::BoxError;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a configuration could not be loaded or a credential could not be obtained.
///
/// Messages are lowercase and never contain a credential; the underlying cause, when there is
/// one, is the [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file named by the configuration could not be read.
    #[error("could not read {what} {}", path.display())]
    ReadFile {
        /// What the file is (`kubeconfig`, `certificate-authority`, `tokenFile`, ...).
        what: String,
        /// The path, as resolved.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// A kubeconfig file is not valid YAML (or JSON) of the kubeconfig schema.
    #[error("could not parse kubeconfig {}", path.display())]
    ParseKubeconfig {
        /// The file (`<memory>` for a string).
        path: PathBuf,
        /// The parser's error (position and expectation, never the input).
        #[source]
        source: BoxError,
    },
    /// None of the kubeconfig files exists.
    #[error("no kubeconfig file found (looked at {searched})")]
    NoKubeconfig {
        /// The paths looked at.
        searched: String,
    },
    /// The kubeconfig sets no `current-context` and no context was chosen.
    #[error("kubeconfig has no current-context and no context was chosen")]
    NoCurrentContext,
    /// The chosen context is not in the kubeconfig.
    #[error("context `{0}` not found in kubeconfig")]
    MissingContext(String),
    /// The context names a cluster the kubeconfig does not define.
    #[error("cluster `{0}` not found in kubeconfig")]
    MissingCluster(String),
    /// The context names a user the kubeconfig does not define.
    #[error("user `{0}` not found in kubeconfig")]
    MissingUser(String),
    /// A setting has an invalid value.
    #[error("invalid {field}: {message}")]
    Invalid {
        /// The setting (`cluster "x" server`, `exec interactiveMode`, ...).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A `*-data` field is not valid base64.
    #[error("{field} is not valid base64")]
    Base64 {
        /// The field (`certificate-authority-data`, ...).
        field: String,
        /// The decoder's error.
        #[source]
        source: BoxError,
    },
    /// A certificate or key is not valid PEM, or holds no certificate or key.
    #[error("malformed PEM in {what}")]
    Pem {
        /// Which certificate or key (`certificate-authority of cluster "x"`, ...).
        what: String,
        /// The PEM decoder's error, when it gave one.
        #[source]
        source: Option<BoxError>,
    },
    /// `insecure-skip-tls-verify` is set together with a certificate authority.
    #[error(
        "cluster `{0}` sets insecure-skip-tls-verify together with a certificate authority; remove one of them"
    )]
    InsecureWithCa(String),
    /// The exec plugin's `apiVersion` is not one this crate speaks.
    #[error(
        "unknown exec plugin api version `{0}` (expected client.authentication.k8s.io/v1 or v1beta1)"
    )]
    UnknownExecApiVersion(String),
    /// The exec plugin could not be started, or exited unsuccessfully.
    #[error("exec plugin `{command}` failed: {summary}")]
    ExecFailed {
        /// The command.
        command: String,
        /// Its exit status and the first lines of its stderr.
        summary: String,
    },
    /// The exec plugin did not finish within its [`timeout`](crate::ExecConfig::timeout); it
    /// was killed, with the processes it started.
    #[error("exec plugin `{command}` did not finish within {timeout:?}")]
    ExecTimeout {
        /// The command.
        command: String,
        /// The timeout.
        timeout: std::time::Duration,
    },
    /// The exec plugin printed more than [`max_stdout`](crate::ExecConfig::max_stdout) bytes
    /// on stdout; it was killed, with the processes it started.
    #[error("exec plugin `{command}` printed more than {limit} bytes on stdout (the limit)")]
    ExecOutputTooLarge {
        /// The command.
        command: String,
        /// The limit, in bytes.
        limit: usize,
    },
    /// The exec plugin printed something that is not a valid `ExecCredential`.
    #[error("exec plugin `{command}` printed an invalid ExecCredential: {reason}")]
    ExecCredential {
        /// The command.
        command: String,
        /// What is wrong with its output.
        reason: String,
    },
    /// Not running inside a pod (no `KUBERNETES_SERVICE_HOST`/`PORT`).
    #[error("not running in a cluster: {0}")]
    NotInCluster(String),
    /// Neither a kubeconfig nor an in-cluster config could be loaded (see [`Config::infer`]).
    ///
    /// [`Config::infer`]: crate::Config::infer
    #[error("no configuration found; kubeconfig: {kubeconfig}; in-cluster: {in_cluster}")]
    Infer {
        /// Why the kubeconfig failed (the full chain).
        kubeconfig: String,
        /// Why the in-cluster config failed (the full chain).
        in_cluster: String,
    },
    /// A setting this crate does not support (`auth-provider`, an `https://` proxy, ...).
    #[error("unsupported setting: {0}")]
    Unsupported(String),
    /// A label selector could not be converted between kcache's
    /// [`Selector`](kcache_store::Selector) and kube-rs's (the `kube` feature): kube-rs has no
    /// `>` and `<` requirements, and a kube-rs selector must follow the Kubernetes grammar
    /// (keys and values valid, no empty `in ()` set).
    #[error("label selector `{selector}` cannot be converted: {reason}")]
    Selector {
        /// The selector, as printed by the side it came from.
        selector: String,
        /// What cannot be expressed on the other side.
        reason: String,
        /// The parser's error, when the text did not parse.
        #[source]
        source: Option<kcache_store::SelectorError>,
    },
    /// An HTTP/2 connection to the server grants no stream: its `SETTINGS_MAX_CONCURRENT_STREAMS`
    /// is 0, so no request can be sent on it. The default transport closes such a connection
    /// (logging a warning) and fails the request with this error, the
    /// [`Transport`](kcache_reflector::Error::Transport) source of a list or watch, which the
    /// reflector retries with backoff like any transport failure.
    #[error(
        "the server {server} allows no HTTP/2 streams on this connection (SETTINGS_MAX_CONCURRENT_STREAMS is 0)"
    )]
    NoHttp2Streams {
        /// The server, as `scheme://host:port`.
        server: String,
    },
    /// Every HTTP/2 connection the default transport may open to the server
    /// ([`Config::http2_max_connections`](crate::Config::http2_max_connections)) carried as
    /// many streams as the server allows, and none freed up within
    /// [`Config::http2_stream_wait`](crate::Config::http2_stream_wait).
    #[error(
        "no HTTP/2 stream to {server} freed up within {waited:?}: its {connections} connections (the most allowed) carry {streams} streams, as many as the server allows"
    )]
    Http2StreamWait {
        /// The server, as `scheme://host:port`.
        server: String,
        /// The connections open to it.
        connections: usize,
        /// The streams they carry.
        streams: usize,
        /// How long the request waited.
        waited: std::time::Duration,
    },
    /// The TLS configuration could not be built (bad key, unusable certificate).
    #[error("could not set up TLS: {what}")]
    Tls {
        /// What failed.
        what: String,
        /// The TLS library's error.
        #[source]
        source: BoxError,
    },
}

impl Error {
    pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    pub(crate) fn read_file(what: impl Into<String>, path: PathBuf, source: io::Error) -> Self {
        Self::ReadFile {
            what: what.into(),
            path,
            source,
        }
    }
}
