//! Proxies: a kubeconfig's `proxy-url`, or `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` as
//! client-go reads them.
//!
//! [`Proxy`] says how [`HyperTransport`](crate::HyperTransport) reaches the API server. A
//! [`ProxyUrl`] is checked when the config is made: a URL this crate cannot honour is an error,
//! never a silent direct connection. Through an `http://` proxy the connection is an HTTP
//! `CONNECT` tunnel (for `https://` and `http://` servers alike), through a `socks5://` or
//! `socks5h://` proxy a SOCKS5 tunnel; either way TLS to the API server runs inside the tunnel,
//! end to end, and HTTP/2 is negotiated as without a proxy. Credentials in the proxy URL
//! (`http://user:password@host:port`) go to the proxy: Basic `Proxy-Authorization` for HTTP,
//! the username/password method for SOCKS5.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use http::Uri;
use hyper_util::client::proxy::matcher::{Intercept, Matcher};

use crate::{Error, Result, Secret};

/// How the default transport reaches the API server.
///
/// ```
/// use kcache_client_http::{Config, Proxy, ProxyUrl};
///
/// let mut config = Config::new("https://10.0.0.1:6443".parse()?);
/// assert!(matches!(config.proxy, Proxy::FromEnvironment)); // client-go's default
/// config.proxy = Proxy::Url("socks5://127.0.0.1:1080".parse::<ProxyUrl>()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum Proxy {
    /// As client-go does (Go's `ProxyFromEnvironment`): `HTTPS_PROXY` for an `https://` server,
    /// `HTTP_PROXY` for an `http://` one (each upper case first, then lower case), unless
    /// `NO_PROXY` names the host (host names with their subdomains, IP addresses, CIDR ranges,
    /// `*`). `localhost` and loopback addresses are always reached directly. The variables are
    /// read once, when the transport is built; a value that is not a usable proxy URL is an
    /// error then.
    #[default]
    FromEnvironment,
    /// Always directly, whatever the environment says.
    Direct,
    /// Always through this proxy, loopback servers included (a kubeconfig's `proxy-url`).
    Url(ProxyUrl),
}

/// The protocol of a proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyProtocol {
    /// An HTTP proxy (`http://`), tunnelling with `CONNECT`.
    HttpConnect,
    /// A SOCKS5 proxy (`socks5://` or `socks5h://`). Either way the server's host name is
    /// sent to the proxy to resolve, as kubectl does.
    Socks5,
}

/// A proxy URL: `http://`, `socks5://` or `socks5h://`, a host, an optional port (80 for HTTP
/// and 1080 for SOCKS5 by default) and optional credentials. No path, query or fragment.
///
/// `Display` and `Debug` never show the credentials.
///
/// ```
/// use kcache_client_http::{ProxyProtocol, ProxyUrl};
///
/// let proxy: ProxyUrl = "http://alice:s3cret@proxy.corp:3128".parse()?;
/// assert_eq!(proxy.protocol(), ProxyProtocol::HttpConnect);
/// assert_eq!(proxy.to_string(), "http://proxy.corp:3128");
/// assert!(proxy.has_credentials());
///
/// let err = "https://proxy.corp".parse::<ProxyUrl>().unwrap_err();
/// assert!(err.to_string().contains("https:// proxies"));
/// # Ok::<(), kcache_client_http::Error>(())
/// ```
#[derive(Clone)]
pub struct ProxyUrl {
    /// `scheme://[userinfo@]host:port`, the port always explicit.
    full: Secret<String>,
    /// `scheme://host:port`.
    shown: String,
    protocol: ProxyProtocol,
    credentials: bool,
}

impl ProxyUrl {
    /// Parses a proxy URL (the scheme is required).
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] for anything but a proxy URL described above;
    /// [`Error::Unsupported`] for an `https://` proxy (TLS to the proxy itself) and SOCKS4.
    pub fn parse(url: &str) -> Result<Self> {
        Self::parse_as("proxy URL", url, false)
    }

    /// The protocol spoken to the proxy.
    pub fn protocol(&self) -> ProxyProtocol {
        self.protocol
    }

    /// Whether the URL carries credentials for the proxy.
    pub fn has_credentials(&self) -> bool {
        self.credentials
    }

    /// Parses `url` as the value of `field`; `default_http` lets a value without a scheme mean
    /// `http://` (as Go reads the environment variables).
    pub(crate) fn parse_as(field: &str, url: &str, default_http: bool) -> Result<Self> {
        let bad = |message: &str| Error::invalid(field, message);
        let url = url.trim();
        let (scheme, rest) = match url.split_once("://") {
            Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
            None if default_http => ("http".to_owned(), url),
            None => return Err(bad("no scheme (expected http://, socks5:// or socks5h://)")),
        };
        let (protocol, default_port) = match scheme.as_str() {
            "http" => (ProxyProtocol::HttpConnect, 80),
            "socks5" | "socks5h" => (ProxyProtocol::Socks5, 1080),
            "https" => {
                return Err(Error::Unsupported(format!(
                    "{field}: https:// proxies (TLS to the proxy itself); use an http:// or \
                     socks5:// proxy"
                )));
            }
            "socks4" | "socks4a" => {
                return Err(Error::Unsupported(format!(
                    "{field}: SOCKS4 proxies; use socks5://"
                )));
            }
            _ => {
                return Err(bad(
                    "unknown scheme (expected http://, socks5:// or socks5h://)",
                ));
            }
        };
        let (authority, path) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
        if !path.is_empty() && path != "/" {
            return Err(bad("a proxy URL has no path, query or fragment"));
        }
        let (userinfo, host_port) = match authority.rsplit_once('@') {
            Some((userinfo, host_port)) => (Some(userinfo), host_port),
            None => (None, authority),
        };
        if host_port.is_empty() {
            return Err(bad("no host"));
        }
        let parsed: http::uri::Authority =
            host_port.parse().map_err(|_| bad("not a host[:port]"))?;
        let host = parsed.host();
        if host.is_empty() {
            return Err(bad("no host"));
        }
        // The port as written (`Authority::port` hides one out of range).
        let written_port = host_port
            .rfind(':')
            .filter(|&i| !host_port[i..].contains(']'))
            .map(|i| &host_port[i + 1..]);
        let port = match written_port {
            Some(port) => port
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| bad("the port is not 1-65535"))?,
            None => default_port,
        };
        let shown = format!("{scheme}://{host}:{port}");
        let full = match userinfo {
            Some(userinfo) => format!("{scheme}://{userinfo}@{host}:{port}"),
            None => shown.clone(),
        };
        // The form handed to the matcher must parse as a URI too.
        full.parse::<Uri>()
            .map_err(|_| bad("the credentials are not percent-encoded"))?;
        Ok(Self {
            full: Secret::new(full),
            shown,
            protocol,
            credentials: userinfo.is_some(),
        })
    }
}

impl FromStr for ProxyUrl {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

impl fmt::Display for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyUrl")
            .field("url", &self.shown)
            .field("protocol", &self.protocol)
            .field("credentials", &self.credentials)
            .finish_non_exhaustive()
    }
}

/// The proxy of one connection: the matcher's answer (the proxy's URI without credentials,
/// and the credentials) and its protocol.
pub(crate) struct Hop {
    pub(crate) intercept: Intercept,
    pub(crate) protocol: ProxyProtocol,
}

impl Hop {
    /// The proxy's URI (port explicit, no credentials).
    pub(crate) fn proxy(&self) -> &Uri {
        self.intercept.uri()
    }

    /// The proxy as errors show it: `scheme://host:port`.
    pub(crate) fn shown(&self) -> String {
        let uri = self.proxy();
        format!(
            "{}://{}",
            uri.scheme_str().unwrap_or("http"),
            uri.authority().map_or("", http::uri::Authority::as_str)
        )
    }
}

/// The routing decision of a transport, made once from its [`Proxy`].
#[derive(Debug)]
pub(crate) struct Route {
    matcher: Option<Matcher>,
    /// Loopback servers go direct (the environment's rule, not an explicit proxy's).
    bypass_loopback: bool,
}

/// The environment variables a [`Proxy::FromEnvironment`] route reads.
const ENV_HTTPS: [&str; 2] = ["HTTPS_PROXY", "https_proxy"];
const ENV_HTTP: [&str; 2] = ["HTTP_PROXY", "http_proxy"];
const ENV_NO: [&str; 2] = ["NO_PROXY", "no_proxy"];

impl Route {
    /// The route for `proxy`; `env` looks up an environment variable.
    pub(crate) fn new(proxy: &Proxy, env: &dyn Fn(&str) -> Option<String>) -> Result<Self> {
        match proxy {
            Proxy::Direct => Ok(Self {
                matcher: None,
                bypass_loopback: false,
            }),
            Proxy::Url(url) => Ok(Self {
                matcher: Some(Matcher::builder().all(url.full.expose().clone()).build()),
                bypass_loopback: false,
            }),
            Proxy::FromEnvironment => {
                // The first variable set, checked, in the form the matcher takes.
                let first = |names: [&str; 2]| -> Result<Option<String>> {
                    let Some((name, value)) = names
                        .iter()
                        .find_map(|n| env(n).filter(|v| !v.trim().is_empty()).map(|v| (n, v)))
                    else {
                        return Ok(None);
                    };
                    let url = ProxyUrl::parse_as(name, &value, true)?;
                    Ok(Some(url.full.expose().clone()))
                };
                let https = first(ENV_HTTPS)?;
                // Go ignores HTTP_PROXY under CGI, where a client can set it as a header.
                let http = if env("REQUEST_METHOD").is_some() {
                    None
                } else {
                    first(ENV_HTTP)?
                };
                if https.is_none() && http.is_none() {
                    return Ok(Self {
                        matcher: None,
                        bypass_loopback: true,
                    });
                }
                let no = ENV_NO
                    .iter()
                    .find_map(|name| env(name).filter(|v| !v.trim().is_empty()))
                    .unwrap_or_default();
                let mut builder = Matcher::builder().no(no);
                if let Some(url) = https {
                    builder = builder.https(url);
                }
                if let Some(url) = http {
                    builder = builder.http(url);
                }
                Ok(Self {
                    matcher: Some(builder.build()),
                    bypass_loopback: true,
                })
            }
        }
    }

    /// The proxy for a connection to `dst`, or `None` to connect directly.
    pub(crate) fn pick(&self, dst: &Uri) -> Option<Hop> {
        let matcher = self.matcher.as_ref()?;
        if self.bypass_loopback && dst.host().is_some_and(is_loopback) {
            return None;
        }
        let intercept = matcher.intercept(dst)?;
        let protocol = match intercept.uri().scheme_str() {
            Some("socks5" | "socks5h") => ProxyProtocol::Socks5,
            _ => ProxyProtocol::HttpConnect,
        };
        Some(Hop {
            intercept,
            protocol,
        })
    }
}

/// `localhost` or a loopback address (brackets of an IPv6 host allowed).
fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    fn pick(route: &Route, dst: &str) -> Option<String> {
        route
            .pick(&dst.parse().expect("uri"))
            .map(|hop| hop.shown())
    }

    #[test]
    fn proxy_urls_parse_strictly() {
        let p = ProxyUrl::parse("socks5://10.0.0.9").expect("parses");
        assert_eq!(p.protocol(), ProxyProtocol::Socks5);
        assert_eq!(p.to_string(), "socks5://10.0.0.9:1080");
        assert!(!p.has_credentials());
        let p = ProxyUrl::parse("HTTP://[::1]:3128/").expect("parses");
        assert_eq!(p.to_string(), "http://[::1]:3128");
        let p = ProxyUrl::parse("http://a%40b:p%3Aw@proxy").expect("parses");
        assert_eq!(p.to_string(), "http://proxy:80");
        assert!(!format!("{p:?}").contains("p%3Aw"));

        for (bad, says) in [
            ("proxy:3128", "no scheme"),
            ("ftp://proxy", "unknown scheme"),
            ("http://proxy/path", "no path"),
            ("http://proxy?x=1", "no path"),
            ("http://", "no host"),
            ("http://proxy:99999", "port is not 1-65535"),
            ("http://proxy:0", "port is not 1-65535"),
            ("http://a b", "host[:port]"),
            ("https://proxy", "https:// proxies"),
            ("socks4://proxy", "SOCKS4"),
        ] {
            let err = ProxyUrl::parse(bad).expect_err(bad).to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn an_explicit_proxy_takes_every_connection_loopback_included() {
        let url = ProxyUrl::parse("http://u:p@proxy:3128").expect("parses");
        let route = Route::new(&Proxy::Url(url), &env(&[("NO_PROXY", "*")])).expect("route");
        assert_eq!(
            pick(&route, "https://127.0.0.1:6443").as_deref(),
            Some("http://proxy:3128")
        );
        assert_eq!(
            pick(&route, "http://api.corp").as_deref(),
            Some("http://proxy:3128")
        );
        let hop = route
            .pick(&"https://api.corp:6443".parse().expect("uri"))
            .expect("hop");
        assert_eq!(hop.protocol, ProxyProtocol::HttpConnect);
        assert!(
            hop.intercept.basic_auth().is_some(),
            "credentials go to the proxy"
        );
    }

    #[test]
    fn direct_ignores_the_environment() {
        let route =
            Route::new(&Proxy::Direct, &env(&[("HTTPS_PROXY", "http://p:1")])).expect("route");
        assert_eq!(pick(&route, "https://api.corp"), None);
    }

    #[test]
    fn the_environment_follows_go_rules() {
        let route = Route::new(
            &Proxy::FromEnvironment,
            &env(&[
                ("HTTPS_PROXY", "socks5h://s:1"),
                ("https_proxy", "http://ignored:2"),
                ("http_proxy", "proxy.corp:8080"),
                ("no_proxy", "internal.corp, 10.0.0.0/8"),
            ]),
        )
        .expect("route");
        assert_eq!(
            pick(&route, "https://api.corp").as_deref(),
            Some("socks5h://s:1")
        );
        assert_eq!(
            pick(&route, "http://api.corp").as_deref(),
            Some("http://proxy.corp:8080")
        );
        assert_eq!(pick(&route, "https://k8s.internal.corp:6443"), None);
        assert_eq!(pick(&route, "https://10.1.2.3:6443"), None);
        for loopback in [
            "https://localhost:6443",
            "https://127.0.0.1:6443",
            "https://[::1]:6443",
        ] {
            assert_eq!(pick(&route, loopback), None, "{loopback}");
        }
    }

    #[test]
    fn cgi_ignores_http_proxy_and_no_variables_means_direct() {
        let route = Route::new(
            &Proxy::FromEnvironment,
            &env(&[("HTTP_PROXY", "http://p:1"), ("REQUEST_METHOD", "GET")]),
        )
        .expect("route");
        assert_eq!(pick(&route, "http://api.corp"), None);
        let route = Route::new(&Proxy::FromEnvironment, &env(&[])).expect("route");
        assert_eq!(pick(&route, "https://api.corp"), None);
    }

    #[test]
    fn a_bad_environment_value_is_an_error_naming_the_variable() {
        let err = Route::new(
            &Proxy::FromEnvironment,
            &env(&[("HTTPS_PROXY", "ftp://proxy")]),
        )
        .expect_err("bad scheme")
        .to_string();
        assert!(err.contains("HTTPS_PROXY"), "{err}");
        let err = Route::new(
            &Proxy::FromEnvironment,
            &env(&[("http_proxy", "https://proxy")]),
        )
        .expect_err("https proxy")
        .to_string();
        assert!(
            err.contains("http_proxy") && err.contains("https://"),
            "{err}"
        );
    }
}
