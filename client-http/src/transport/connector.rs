//! The TCP connector of [`HyperTransport`](crate::HyperTransport): straight to the server, or
//! through the proxy its [`Route`] picks (HTTP `CONNECT` or SOCKS5, from hyper-util).
//!
//! It sits below rustls: the stream it returns is a tunnel to the API server, and TLS to the
//! server runs inside it.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use http::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::{SocksV5, Tunnel};
use tower_service::Service;

use crate::error::BoxError;
use crate::transport::proxy::{Hop, ProxyProtocol, Route};

/// The stream of a connection: what [`HttpConnector`] gives, tunnelled or not.
type Stream = <HttpConnector as Service<Uri>>::Response;

/// Connects to the API server, directly or through a proxy.
#[derive(Clone)]
pub(crate) struct ProxyConnector {
    http: HttpConnector,
    route: Arc<Route>,
}

impl fmt::Debug for ProxyConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyConnector")
            .field("route", &self.route)
            .finish_non_exhaustive()
    }
}

impl ProxyConnector {
    pub(crate) fn new(http: HttpConnector, route: Route) -> Self {
        Self {
            http,
            route: Arc::new(route),
        }
    }
}

/// A connection through a proxy failed: the proxy, then what went wrong (the tunnel's error as
/// the source, or why the proxy could not be reached).
#[derive(Debug, thiserror::Error)]
#[error("through proxy {proxy}{detail}")]
pub(crate) struct ProxyError {
    proxy: String,
    /// `: why`, or empty when the source says it.
    detail: String,
    #[source]
    source: Option<BoxError>,
}

impl ProxyError {
    /// The tunnel's `error`, unless connecting to the proxy failed (`unreachable`, kept as the
    /// source so that a refused connection is still seen as one, and retried as one).
    fn boxed(hop: &Hop, error: BoxError, unreachable: Option<BoxError>) -> BoxError {
        let (detail, source) = match unreachable {
            Some(cause) => (": cannot connect to the proxy".to_owned(), cause),
            None => (String::new(), error),
        };
        Box::new(Self {
            proxy: hop.shown(),
            detail,
            source: Some(source),
        })
    }
}

impl Service<Uri> for ProxyConnector {
    type Response = Stream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let Some(hop) = self.route.pick(&dst) else {
            let connecting = self.http.call(dst);
            return Box::pin(async move { connecting.await.map_err(Into::into) });
        };
        let dst = with_port(dst);
        let failure = Arc::new(Mutex::new(None));
        let http = Remember {
            inner: self.http.clone(),
            failure: Arc::clone(&failure),
        };
        let unreachable = move || failure.lock().ok().and_then(|mut f| f.take());
        match hop.protocol {
            ProxyProtocol::HttpConnect => Box::pin(async move {
                let mut tunnel = Tunnel::new(hop.proxy().clone(), http);
                if let Some(auth) = hop.intercept.basic_auth() {
                    tunnel = tunnel.with_auth(auth.clone());
                }
                let tunnelled = match std::future::poll_fn(|cx| tunnel.poll_ready(cx)).await {
                    Ok(()) => tunnel.call(dst).await,
                    Err(e) => Err(e),
                };
                tunnelled.map_err(|e| ProxyError::boxed(&hop, e.into(), unreachable()))
            }),
            ProxyProtocol::Socks5 => Box::pin(async move {
                let mut socks = SocksV5::new(hop.proxy().clone(), http).local_dns(false);
                if let Some((user, password)) = hop.intercept.raw_auth() {
                    socks = socks.with_auth(user.to_owned(), password.to_owned());
                }
                socks
                    .call(dst)
                    .await
                    .map_err(|e| ProxyError::boxed(&hop, e.into(), unreachable()))
            }),
        }
    }
}

/// The connector to the proxy, keeping the error of a failed connection: the tunnels' own
/// errors do not always carry it.
#[derive(Clone)]
struct Remember {
    inner: HttpConnector,
    failure: Arc<Mutex<Option<BoxError>>>,
}

impl Service<Uri> for Remember {
    type Response = Stream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, proxy: Uri) -> Self::Future {
        let connecting = self.inner.call(proxy);
        let failure = Arc::clone(&self.failure);
        Box::pin(async move {
            connecting.await.map_err(|e| -> BoxError {
                let message = kcache_reflector::ErrorChain(&e).to_string();
                match failure.lock() {
                    Ok(mut slot) => {
                        *slot = Some(e.into());
                        // The tunnel only wraps this; the caller reports the kept error.
                        message.into()
                    }
                    Err(_) => e.into(),
                }
            })
        })
    }
}

/// `dst` with its port spelled out (80 for `http`, 443 otherwise): the tunnels take the port
/// from the URI and would assume 443.
fn with_port(dst: Uri) -> Uri {
    if dst.port().is_some() {
        return dst;
    }
    let port = if dst.scheme_str() == Some("http") {
        80
    } else {
        443
    };
    let Some(host) = dst.host() else {
        return dst;
    };
    let authority = format!("{host}:{port}");
    let mut parts = dst.clone().into_parts();
    match authority.parse() {
        Ok(authority) => {
            parts.authority = Some(authority);
            Uri::from_parts(parts).unwrap_or(dst)
        }
        Err(_) => dst,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_spelled_out_for_the_tunnel() {
        let cases = [
            ("https://api.corp/x", "https://api.corp:443/x"),
            ("http://api.corp", "http://api.corp:80/"),
            ("https://[::1]", "https://[::1]:443/"),
            ("https://api.corp:6443/y?z", "https://api.corp:6443/y?z"),
        ];
        for (from, to) in cases {
            assert_eq!(with_port(from.parse().expect("uri")).to_string(), to);
        }
    }
}
