//! [`Kubeconfig`]: the kubeconfig file format. Loading and merging files the way kubectl does is
//! in `load.rs`; resolving one context into a [`Config`](crate::Config) in `resolve.rs`.

mod load;
mod resolve;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer};

use super::userinfo;
use crate::Secret;

/// Which kubeconfig files to read and which context to use (kubectl's `--kubeconfig`,
/// `--context`, `--cluster`, `--user`).
#[derive(Debug, Clone, Default)]
pub struct KubeconfigOptions {
    /// The context to use instead of the `current-context`.
    pub context: Option<String>,
    /// The cluster to use instead of the context's.
    pub cluster: Option<String>,
    /// The user to use instead of the context's.
    pub user: Option<String>,
    /// The files to merge; `None` reads `$KUBECONFIG` (a path list; missing files are skipped)
    /// or else `~/.kube/config`. Files named here must exist.
    pub paths: Option<Vec<PathBuf>>,
}

/// A kubeconfig (`apiVersion: v1`, `kind: Config`), as written, YAML or JSON.
///
/// Paths in it are made absolute against the directory of the file that defined them when the
/// file is [read](Self::read). Unknown fields (`preferences`, `extensions`) are ignored.
///
/// ```
/// use kcache_client_http::{Kubeconfig, KubeconfigOptions};
///
/// let kc = Kubeconfig::from_yaml(r#"
/// apiVersion: v1
/// kind: Config
/// current-context: dev
/// clusters:
/// - name: dev
///   cluster: {server: "http://127.0.0.1:8080"}
/// contexts:
/// - name: dev
///   context: {cluster: dev, namespace: team-a}
/// "#)?;
/// let config = kc.config(&KubeconfigOptions::default())?;
/// assert_eq!(config.default_namespace, "team-a");
/// # Ok::<(), kcache_client_http::Error>(())
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Kubeconfig {
    /// `current-context`.
    #[serde(default, rename = "current-context")]
    pub current_context: Option<String>,
    /// `clusters`.
    #[serde(default, deserialize_with = "nullable")]
    pub clusters: Vec<NamedCluster>,
    /// `users`.
    #[serde(default, deserialize_with = "nullable")]
    pub users: Vec<NamedAuthInfo>,
    /// `contexts`.
    #[serde(default, deserialize_with = "nullable")]
    pub contexts: Vec<NamedContext>,
}

fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

/// An entry of `clusters`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct NamedCluster {
    /// `name`.
    #[serde(default)]
    pub name: String,
    /// `cluster`.
    #[serde(default)]
    pub cluster: Option<Cluster>,
}

/// A cluster: the server and how to trust it.
///
/// `Debug` redacts user-info in `server` and `proxy-url` (`http://<redacted>@proxy:3128`).
#[derive(Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Cluster {
    /// `server`: the URL. User-info in it (`https://user:password@host`) is basic
    /// authentication for a user that has no credential of its own (see [`Config::new`](crate::Config::new)).
    #[serde(default)]
    pub server: Option<String>,
    /// `certificate-authority`: a PEM file.
    #[serde(default)]
    pub certificate_authority: Option<PathBuf>,
    /// `certificate-authority-data`: base64 of PEM; wins over the file.
    #[serde(default)]
    pub certificate_authority_data: Option<String>,
    /// `tls-server-name`.
    #[serde(default)]
    pub tls_server_name: Option<String>,
    /// `insecure-skip-tls-verify`.
    #[serde(default)]
    pub insecure_skip_tls_verify: Option<bool>,
    /// `proxy-url`: `http://` (CONNECT) or `socks5://`; anything else is an error, never a
    /// silent direct connection.
    #[serde(default)]
    pub proxy_url: Option<String>,
    /// `disable-compression` (compression is never requested, so it changes nothing).
    #[serde(default)]
    pub disable_compression: Option<bool>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn redacted(url: Option<&String>) -> Option<std::borrow::Cow<'_, str>> {
            url.map(|u| userinfo::redact(u))
        }
        f.debug_struct("Cluster")
            .field("server", &redacted(self.server.as_ref()))
            .field("certificate_authority", &self.certificate_authority)
            .field(
                "certificate_authority_data",
                &self.certificate_authority_data,
            )
            .field("tls_server_name", &self.tls_server_name)
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .field("proxy_url", &redacted(self.proxy_url.as_ref()))
            .field("disable_compression", &self.disable_compression)
            .finish()
    }
}

/// An entry of `users`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct NamedAuthInfo {
    /// `name`.
    #[serde(default)]
    pub name: String,
    /// `user`.
    #[serde(default)]
    pub user: Option<AuthInfo>,
}

/// A user: credentials. Every secret is a [`Secret`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct AuthInfo {
    /// `client-certificate`: a PEM file.
    #[serde(default)]
    pub client_certificate: Option<PathBuf>,
    /// `client-certificate-data`: base64 of PEM; wins over the file.
    #[serde(default)]
    pub client_certificate_data: Option<String>,
    /// `client-key`: a PEM file.
    #[serde(default)]
    pub client_key: Option<PathBuf>,
    /// `client-key-data`: base64 of PEM; wins over the file.
    #[serde(default)]
    pub client_key_data: Option<Secret>,
    /// `token`.
    #[serde(default)]
    pub token: Option<Secret>,
    /// `tokenFile`.
    #[serde(default, rename = "tokenFile")]
    pub token_file: Option<PathBuf>,
    /// `username` (basic authentication).
    #[serde(default)]
    pub username: Option<String>,
    /// `password` (basic authentication).
    #[serde(default)]
    pub password: Option<Secret>,
    /// `exec`: a credential plugin.
    #[serde(default)]
    pub exec: Option<ExecSpec>,
    /// `auth-provider` (legacy, not supported).
    #[serde(default)]
    pub auth_provider: Option<Secret<serde_json::Value>>,
    /// `as`: the user to impersonate.
    #[serde(default, rename = "as")]
    pub impersonate: Option<String>,
    /// `as-groups`: groups to impersonate.
    #[serde(default)]
    pub as_groups: Option<Vec<String>>,
    /// `as-uid`: the uid to impersonate.
    #[serde(default)]
    pub as_uid: Option<String>,
    /// `as-user-extra`: extra user information to impersonate.
    #[serde(default)]
    pub as_user_extra: Option<BTreeMap<String, Vec<String>>>,
}

/// `exec` of a user: a credential plugin command.
///
/// `Debug` shows how many `args` there are, not what they are (they may carry a credential,
/// as client-go assumes too); `env` values are [`Secret`]s.
#[derive(Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecSpec {
    /// `apiVersion` of the `ExecCredential` exchanged.
    #[serde(default)]
    pub api_version: Option<String>,
    /// `command`.
    #[serde(default)]
    pub command: String,
    /// `args`.
    #[serde(default, deserialize_with = "nullable")]
    pub args: Vec<String>,
    /// `env`: added to the inherited environment.
    #[serde(default, deserialize_with = "nullable")]
    pub env: Vec<ExecEnvVar>,
    /// `interactiveMode`: `Never`, `IfAvailable` or `Always` (required for v1).
    #[serde(default)]
    pub interactive_mode: Option<String>,
    /// `provideClusterInfo`.
    #[serde(default)]
    pub provide_cluster_info: Option<bool>,
    /// `installHint`: shown when the command cannot be started.
    #[serde(default)]
    pub install_hint: Option<String>,
}

impl std::fmt::Debug for ExecSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecSpec")
            .field("api_version", &self.api_version)
            .field("command", &self.command)
            .field("args", &super::exec::RedactedArgs(self.args.len()))
            .field("env", &self.env)
            .field("interactive_mode", &self.interactive_mode)
            .field("provide_cluster_info", &self.provide_cluster_info)
            .field("install_hint", &self.install_hint)
            .finish()
    }
}

/// One `env` entry of an [`ExecSpec`]. The value is a [`Secret`]: plugins often get keys this way.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ExecEnvVar {
    /// `name`.
    #[serde(default)]
    pub name: String,
    /// `value`.
    #[serde(default)]
    pub value: Secret,
}

/// An entry of `contexts`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct NamedContext {
    /// `name`.
    #[serde(default)]
    pub name: String,
    /// `context`.
    #[serde(default)]
    pub context: Option<Context>,
}

/// A context: a cluster, a user and a default namespace.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Context {
    /// `cluster`.
    #[serde(default)]
    pub cluster: String,
    /// `user`.
    #[serde(default)]
    pub user: Option<String>,
    /// `namespace`.
    #[serde(default)]
    pub namespace: Option<String>,
}

/// Parses `data` as a kubeconfig and resolves its current context when that reads no file,
/// for the fuzzer. Never panics on any input.
#[doc(hidden)]
pub fn fuzz_kubeconfig(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let Ok(kc) = Kubeconfig::from_yaml(text) else {
        return false;
    };
    let names_files = kc
        .clusters
        .iter()
        .filter_map(|c| c.cluster.as_ref())
        .any(|c| c.certificate_authority.is_some())
        || kc.users.iter().filter_map(|u| u.user.as_ref()).any(|u| {
            u.client_certificate.is_some() || u.client_key.is_some() || u.token_file.is_some()
        });
    let merged = kc.clone().merge(kc);
    !names_files && merged.config(&KubeconfigOptions::default()).is_ok()
}
