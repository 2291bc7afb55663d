//! [`Kubeconfig`]: the kubeconfig file format, kubectl's loading and merging rules, and the
//! resolution of one context into a [`Config`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Deserializer};

use super::{Auth, Config, ExecApiVersion, ExecConfig, Identity, pem, userinfo};
use crate::{Error, Impersonate, Proxy, ProxyUrl, Result, Secret};

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
    /// authentication for a user that has no credential of its own (see [`Config::new`]).
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

/// Makes `path` absolute against `dir` when it is relative.
fn resolve(dir: &Path, path: &mut Option<PathBuf>) {
    if let Some(p) = path
        && p.is_relative()
        && !p.as_os_str().is_empty()
    {
        *p = dir.join(&*p);
    }
}

/// Reads a file named by the configuration.
fn read(what: &str, path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::read_file(what, path.to_owned(), e))
}

/// Decodes a `*-data` field.
fn base64_field(field: &str, data: &str) -> Result<Vec<u8>> {
    let compact: String = data.split_ascii_whitespace().collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact)
        .map_err(|e| Error::Base64 {
            field: field.to_owned(),
            source: Box::new(e),
        })
}

/// The paths of `$KUBECONFIG`, or `~/.kube/config`.
fn default_paths() -> Vec<PathBuf> {
    if let Some(list) = std::env::var_os("KUBECONFIG")
        && !list.is_empty()
    {
        return std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
    }
    std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".kube").join("config"))
        .into_iter()
        .collect()
}

impl Kubeconfig {
    /// Parses a kubeconfig from YAML (or JSON) text. Relative paths stay as written.
    ///
    /// # Errors
    ///
    /// [`Error::ParseKubeconfig`] with the position of the problem (never the input itself).
    pub fn from_yaml(text: &str) -> Result<Self> {
        Self::parse(text, Path::new("<memory>"))
    }

    fn parse(text: &str, path: &Path) -> Result<Self> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let mut options = serde_saphyr::Options::default();
        // The snippet of the input around an error could show a token.
        options.with_snippet = false;
        serde_saphyr::from_str_with_options::<Option<Self>>(text, options)
            .map(Option::unwrap_or_default)
            .map_err(|e| Error::ParseKubeconfig {
                path: path.to_owned(),
                source: e.to_string().into(),
            })
    }

    /// Reads one kubeconfig file and makes its relative paths absolute against its directory.
    ///
    /// # Errors
    ///
    /// [`Error::ReadFile`] or [`Error::ParseKubeconfig`], with the path.
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = read("kubeconfig", path)?;
        let text = String::from_utf8(bytes).map_err(|e| Error::ParseKubeconfig {
            path: path.to_owned(),
            source: Box::new(e.utf8_error()),
        })?;
        let mut kc = Self::parse(&text, path)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        kc.resolve_paths(dir);
        Ok(kc)
    }

    fn resolve_paths(&mut self, dir: &Path) {
        for c in self.clusters.iter_mut().filter_map(|c| c.cluster.as_mut()) {
            resolve(dir, &mut c.certificate_authority);
        }
        for u in self.users.iter_mut().filter_map(|u| u.user.as_mut()) {
            resolve(dir, &mut u.client_certificate);
            resolve(dir, &mut u.client_key);
            resolve(dir, &mut u.token_file);
            if let Some(exec) = &mut u.exec
                && exec.command.contains(std::path::MAIN_SEPARATOR)
                && Path::new(&exec.command).is_relative()
            {
                exec.command = dir.join(&exec.command).to_string_lossy().into_owned();
            }
        }
    }

    /// Merges `other` into `self` by kubectl's rules: the first file to define a name keeps
    /// it, and `current-context` comes from the first file that sets one.
    #[must_use]
    pub fn merge(mut self, other: Self) -> Self {
        if self.current_context.as_deref().is_none_or(str::is_empty) {
            self.current_context = other.current_context;
        }
        for c in other.clusters {
            if !self.clusters.iter().any(|x| x.name == c.name) {
                self.clusters.push(c);
            }
        }
        for u in other.users {
            if !self.users.iter().any(|x| x.name == u.name) {
                self.users.push(u);
            }
        }
        for c in other.contexts {
            if !self.contexts.iter().any(|x| x.name == c.name) {
                self.contexts.push(c);
            }
        }
        self
    }

    /// Reads and merges the files `options` name (see [`KubeconfigOptions::paths`]).
    ///
    /// # Errors
    ///
    /// [`Error::NoKubeconfig`] when no file exists; any error of [`read`](Self::read).
    pub fn load(options: &KubeconfigOptions) -> Result<Self> {
        let (paths, must_exist) = match &options.paths {
            Some(paths) => (paths.clone(), true),
            None => (default_paths(), false),
        };
        let mut merged: Option<Self> = None;
        for path in &paths {
            if !must_exist && !path.exists() {
                continue;
            }
            let kc = Self::read(path)?;
            merged = Some(match merged {
                Some(m) => m.merge(kc),
                None => kc,
            });
        }
        merged.ok_or_else(|| Error::NoKubeconfig {
            searched: if paths.is_empty() {
                "nothing: KUBECONFIG and HOME are unset".to_owned()
            } else {
                paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        })
    }

    /// Resolves the chosen context into a [`Config`], reading the files it names.
    ///
    /// # Errors
    ///
    /// A specific [`Error`] for a missing context, cluster or user, an unreadable file, a bad
    /// base64 or PEM value, an unknown exec plugin version, or an unsupported setting.
    pub fn config(&self, options: &KubeconfigOptions) -> Result<Config> {
        let context_name = options
            .context
            .clone()
            .or_else(|| self.current_context.clone())
            .filter(|c| !c.is_empty())
            .ok_or(Error::NoCurrentContext)?;
        let context = self
            .contexts
            .iter()
            .find(|c| c.name == context_name)
            .ok_or_else(|| Error::MissingContext(context_name.clone()))?
            .context
            .clone()
            .unwrap_or_default();
        let cluster_name = options.cluster.clone().unwrap_or(context.cluster);
        let cluster = self
            .clusters
            .iter()
            .find(|c| c.name == cluster_name)
            .ok_or_else(|| Error::MissingCluster(cluster_name.clone()))?
            .cluster
            .clone()
            .unwrap_or_default();
        let user_name = options
            .user
            .clone()
            .or(context.user)
            .filter(|u| !u.is_empty());
        let user = match &user_name {
            Some(name) => self
                .users
                .iter()
                .find(|u| &u.name == name)
                .ok_or_else(|| Error::MissingUser(name.clone()))?
                .user
                .clone()
                .unwrap_or_default(),
            None => AuthInfo::default(),
        };

        let mut config = cluster_config(&cluster_name, &cluster)?;
        config.default_namespace = context
            .namespace
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let user_label = user_name.unwrap_or_default();
        config.identity = identity(&user_label, &user)?;
        // Basic authentication from the server URL's user-info (made by `Config::new`) stays
        // only when the user has no credential of its own.
        match auth(&user_label, &user, &cluster)? {
            Auth::None => {}
            auth => config.auth = auth,
        }
        config.impersonate = impersonation(&user_label, &user)?;
        Ok(config)
    }
}

/// The server, trust and TLS settings of a cluster.
fn cluster_config(name: &str, cluster: &Cluster) -> Result<Config> {
    let server = cluster
        .server
        .as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::invalid(format!("cluster `{name}`"), "no server is set"))?;
    let url: http::Uri = server
        .parse()
        .map_err(|e| Error::invalid(format!("server of cluster `{name}`"), format!("{e}")))?;
    if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
        return Err(Error::invalid(
            format!("server of cluster `{name}`"),
            "not an http:// or https:// URL with a host",
        ));
    }
    let ca_pem = match (
        &cluster.certificate_authority_data,
        &cluster.certificate_authority,
    ) {
        (Some(data), _) if !data.is_empty() => {
            Some(base64_field("certificate-authority-data", data)?)
        }
        (_, Some(path)) if !path.as_os_str().is_empty() => {
            Some(read("certificate-authority", path)?)
        }
        _ => None,
    };
    let insecure = cluster.insecure_skip_tls_verify.unwrap_or(false);
    if insecure && ca_pem.is_some() {
        return Err(Error::InsecureWithCa(name.to_owned()));
    }
    let mut config = Config::new(url);
    if let Some(pem) = ca_pem {
        let what = format!("certificate authority of cluster `{name}`");
        let certs = pem::certificates(&pem, &what)?;
        config.root_certificates = Some(certs.into_iter().map(|c| c.to_vec()).collect());
    }
    config.insecure_skip_tls_verify = insecure;
    config.tls_server_name = cluster.tls_server_name.clone().filter(|s| !s.is_empty());
    if let Some(proxy) = cluster
        .proxy_url
        .as_deref()
        .filter(|p| !p.trim().is_empty())
    {
        let field = format!("proxy-url of cluster `{name}`");
        config.proxy = Proxy::Url(ProxyUrl::parse_as(&field, proxy, false)?);
    }
    Ok(config)
}

/// The client certificate of a user.
fn identity(name: &str, user: &AuthInfo) -> Result<Option<Identity>> {
    let cert = match (&user.client_certificate_data, &user.client_certificate) {
        (Some(data), _) if !data.is_empty() => Some(base64_field("client-certificate-data", data)?),
        (_, Some(path)) if !path.as_os_str().is_empty() => Some(read("client-certificate", path)?),
        _ => None,
    };
    let key = match (&user.client_key_data, &user.client_key) {
        (Some(data), _) if !data.expose().is_empty() => {
            Some(base64_field("client-key-data", data.expose())?)
        }
        (_, Some(path)) if !path.as_os_str().is_empty() => Some(read("client-key", path)?),
        _ => None,
    };
    match (cert, key) {
        (None, None) => Ok(None),
        (Some(cert), Some(key)) => Ok(Some(Identity {
            chain: pem::certificates(&cert, &format!("client certificate of user `{name}`"))?,
            key: Secret::new(pem::private_key(
                &key,
                &format!("client key of user `{name}`"),
            )?),
        })),
        (Some(_), None) => Err(Error::invalid(
            format!("user `{name}`"),
            "client-certificate is set without client-key",
        )),
        (None, Some(_)) => Err(Error::invalid(
            format!("user `{name}`"),
            "client-key is set without client-certificate",
        )),
    }
}

/// Who a user acts as: `as`, `as-uid`, `as-groups`, `as-user-extra` (empty values unset).
fn impersonation(name: &str, user: &AuthInfo) -> Result<Option<Impersonate>> {
    let as_user = user.impersonate.clone().filter(|u| !u.is_empty());
    let uid = user.as_uid.clone().filter(|u| !u.is_empty());
    let groups = user.as_groups.clone().unwrap_or_default();
    let extra = user.as_user_extra.clone().unwrap_or_default();
    let Some(as_user) = as_user else {
        if uid.is_some() || !groups.is_empty() || !extra.is_empty() {
            return Err(Error::invalid(
                format!("user `{name}`"),
                "as-uid, as-groups or as-user-extra is set without `as` (the user to impersonate)",
            ));
        }
        return Ok(None);
    };
    let mut impersonate = Impersonate::user(as_user);
    impersonate.uid = uid;
    impersonate.groups = groups;
    impersonate.extra = extra;
    // Checked here, so that a header it cannot make is a kubeconfig error.
    impersonate
        .headers()
        .map_err(|e| Error::invalid(format!("impersonation of user `{name}`"), e.to_string()))?;
    Ok(Some(impersonate))
}

/// The request authentication of a user.
fn auth(name: &str, user: &AuthInfo, cluster: &Cluster) -> Result<Auth> {
    let token = user.token.clone().filter(|t| !t.expose().is_empty());
    let token_file = user
        .token_file
        .clone()
        .filter(|p| !p.as_os_str().is_empty());
    let basic = user.username.as_deref().is_some_and(|u| !u.is_empty())
        || user
            .password
            .as_ref()
            .is_some_and(|p| !p.expose().is_empty());
    if basic && (token.is_some() || token_file.is_some()) {
        return Err(Error::invalid(
            format!("user `{name}`"),
            "username/password and a token cannot both be set",
        ));
    }
    if let Some(path) = token_file {
        return Ok(Auth::TokenFile {
            path,
            fallback: token,
        });
    }
    if let Some(token) = token {
        return Ok(Auth::Bearer(token));
    }
    if basic {
        return Ok(Auth::Basic {
            username: user.username.clone().unwrap_or_default(),
            password: user.password.clone().unwrap_or_default(),
        });
    }
    if let Some(spec) = &user.exec {
        return Ok(Auth::Exec(Box::new(exec_config(name, spec, cluster)?)));
    }
    if user.auth_provider.is_some() {
        return Err(Error::Unsupported(format!(
            "auth-provider of user `{name}` (use an exec credential plugin)"
        )));
    }
    Ok(Auth::None)
}

fn exec_config(name: &str, spec: &ExecSpec, cluster: &Cluster) -> Result<ExecConfig> {
    let version = spec.api_version.as_deref().unwrap_or_default();
    let api_version = ExecApiVersion::parse(version)
        .ok_or_else(|| Error::UnknownExecApiVersion(version.to_owned()))?;
    if spec.command.is_empty() {
        return Err(Error::invalid(
            format!("exec of user `{name}`"),
            "command is empty",
        ));
    }
    match (spec.interactive_mode.as_deref(), api_version) {
        (None, ExecApiVersion::V1) => {
            return Err(Error::invalid(
                format!("exec interactiveMode of user `{name}`"),
                "must be set for client.authentication.k8s.io/v1 (Never or IfAvailable)",
            ));
        }
        (None | Some("Never" | "IfAvailable"), _) => {}
        (Some("Always"), _) => {
            return Err(Error::invalid(
                format!("exec interactiveMode of user `{name}`"),
                "Always needs a terminal; plugins run non-interactively here",
            ));
        }
        (Some(other), _) => {
            return Err(Error::invalid(
                format!("exec interactiveMode of user `{name}`"),
                format!("`{other}` is not Never, IfAvailable or Always"),
            ));
        }
    }
    let mut config = ExecConfig::new(api_version, spec.command.clone());
    config.args.clone_from(&spec.args);
    config.env = spec
        .env
        .iter()
        .map(|v| (v.name.clone(), v.value.clone()))
        .collect();
    config.install_hint.clone_from(&spec.install_hint);
    if spec.provide_cluster_info.unwrap_or(false) {
        let server = cluster.server.as_deref().map(userinfo::strip);
        let mut info = serde_json::json!({"server": server.unwrap_or_default()});
        if let Some(n) = &cluster.tls_server_name {
            info["tls-server-name"] = n.clone().into();
        }
        if let Some(i) = cluster.insecure_skip_tls_verify {
            info["insecure-skip-tls-verify"] = i.into();
        }
        if let Some(d) = &cluster.certificate_authority_data {
            info["certificate-authority-data"] = d.clone().into();
        }
        config.cluster_info = Some(info);
    }
    Ok(config)
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
