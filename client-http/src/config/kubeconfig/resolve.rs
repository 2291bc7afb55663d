//! Resolving one kubeconfig context into a [`Config`]: the cluster's server and trust, the
//! user's credential (token, token file, basic auth, client certificate, exec plugin) and
//! impersonation, reading the files they name.

use std::path::Path;

use base64::Engine as _;

use super::{AuthInfo, Cluster, ExecSpec, Kubeconfig, KubeconfigOptions};
use crate::config::{Auth, Config, ExecApiVersion, ExecConfig, Identity, pem, userinfo};
use crate::{Error, Impersonate, Proxy, ProxyUrl, Result, Secret};

/// Reads a file named by the configuration.
pub(super) fn read(what: &str, path: &Path) -> Result<Vec<u8>> {
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

impl Kubeconfig {
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
