//! The in-cluster config: the service account mounted into every pod.

use std::path::PathBuf;

use super::{Auth, Config, pem};
use crate::{Error, Result};

/// The default service account directory.
const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Where the in-cluster config comes from: the `KUBERNETES_SERVICE_*` variables and the
/// service account files. [`from_env`](Self::from_env) gives the real ones; tests point the
/// paths at fixtures.
#[derive(Debug, Clone)]
pub struct InClusterOptions {
    /// `KUBERNETES_SERVICE_HOST`.
    pub host: Option<String>,
    /// `KUBERNETES_SERVICE_PORT`.
    pub port: Option<String>,
    /// `POD_NAMESPACE`, which wins over the namespace file.
    pub pod_namespace: Option<String>,
    /// The token file (re-read as it rotates).
    pub token_path: PathBuf,
    /// The CA bundle.
    pub ca_path: PathBuf,
    /// The namespace file.
    pub namespace_path: PathBuf,
}

impl InClusterOptions {
    /// The environment of this process and the standard service account paths.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let dir = PathBuf::from(SERVICE_ACCOUNT_DIR);
        Self {
            host: var("KUBERNETES_SERVICE_HOST"),
            port: var("KUBERNETES_SERVICE_PORT"),
            pod_namespace: var("POD_NAMESPACE"),
            token_path: dir.join("token"),
            ca_path: dir.join("ca.crt"),
            namespace_path: dir.join("namespace"),
        }
    }
}

impl Config {
    /// The in-cluster config described by `options`: `https://host:port`, the service account's
    /// CA, its token (re-read every [`token_file_refresh`](Config::token_file_refresh), so
    /// rotation is picked up), and its namespace.
    ///
    /// # Errors
    ///
    /// [`Error::NotInCluster`] without host and port; [`Error::ReadFile`] when the token or CA
    /// cannot be read; [`Error::Pem`] for a bad CA.
    pub fn from_in_cluster(options: &InClusterOptions) -> Result<Self> {
        let (Some(host), Some(port)) = (&options.host, &options.port) else {
            return Err(Error::NotInCluster(
                "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set".to_owned(),
            ));
        };
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.clone()
        };
        let url = format!("https://{host}:{port}");
        let url: http::Uri = url
            .parse()
            .map_err(|e| Error::invalid("KUBERNETES_SERVICE_HOST/PORT", format!("`{url}`: {e}")))?;
        // Read once now so a missing mount fails here, not on the first request.
        std::fs::read(&options.token_path).map_err(|e| {
            Error::read_file("service account token", options.token_path.clone(), e)
        })?;
        let ca = std::fs::read(&options.ca_path)
            .map_err(|e| Error::read_file("service account CA", options.ca_path.clone(), e))?;
        let certs = pem::certificates(&ca, "service account CA")?;
        let namespace = options.pod_namespace.clone().or_else(|| {
            std::fs::read_to_string(&options.namespace_path)
                .ok()
                .map(|n| n.trim().to_owned())
                .filter(|n| !n.is_empty())
        });
        let mut config = Config::new(url);
        config.root_certificates = Some(certs.into_iter().map(|c| c.to_vec()).collect());
        config.default_namespace = namespace.unwrap_or_else(|| "default".to_owned());
        config.auth = Auth::TokenFile {
            path: options.token_path.clone(),
            fallback: None,
        };
        Ok(config)
    }
}
