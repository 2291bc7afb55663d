//! A tiny HTTP client for the fake API server tests: one connection per request, HTTP/1.1 on
//! plain TCP, ALPN (h2 preferred) over TLS.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Method, Request, StatusCode, Version};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kcache_testing_server::FakeApiServer;
use rustls::pki_types::ServerName;
use serde_json::Value;
use tokio::net::TcpStream;

/// A client for one server.
pub(crate) struct Client {
    addr: std::net::SocketAddr,
    tls: Option<tokio_rustls::TlsConnector>,
}

/// A response read to the end.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) version: Version,
    pub(crate) body: Bytes,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

impl Client {
    pub(crate) fn new(server: &FakeApiServer) -> Self {
        let tls = server.ca_der().map(|ca| {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.clone()).unwrap();
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            tokio_rustls::TlsConnector::from(Arc::new(config))
        });
        Self {
            addr: server.addr(),
            tls,
        }
    }

    /// Sends a request and returns the response head with its body unread.
    pub(crate) async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        accept: Option<&str>,
    ) -> http::Response<Incoming> {
        let body = body.map_or_else(Bytes::new, |b| Bytes::from(serde_json::to_vec(&b).unwrap()));
        let content_type = (!body.is_empty()).then_some("application/json");
        self.send_raw(method, path, body, content_type, accept)
            .await
    }

    /// Sends a request with a body of any media type and returns the response head with its
    /// body unread.
    pub(crate) async fn send_raw(
        &self,
        method: Method,
        path: &str,
        body: Bytes,
        content_type: Option<&str>,
        accept: Option<&str>,
    ) -> http::Response<Incoming> {
        let tcp = TcpStream::connect(self.addr).await.unwrap();
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header("host", self.addr.to_string());
        if let Some(accept) = accept {
            builder = builder.header("accept", accept);
        }
        if let Some(content_type) = content_type {
            builder = builder.header("content-type", content_type);
        }
        match &self.tls {
            None => send_http1(TokioIo::new(tcp), builder.body(Full::new(body)).unwrap()).await,
            Some(tls) => {
                let name = ServerName::try_from("127.0.0.1").unwrap();
                let stream = tls.connect(name, tcp).await.unwrap();
                let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                let io = TokioIo::new(stream);
                if h2 {
                    let uri = format!("https://{}{path}", self.addr);
                    let req = builder
                        .uri(uri)
                        .version(Version::HTTP_2)
                        .body(Full::new(body))
                        .unwrap();
                    let (mut sender, conn) =
                        hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                            .await
                            .unwrap();
                    tokio::spawn(conn);
                    sender.send_request(req).await.unwrap()
                } else {
                    send_http1(io, builder.body(Full::new(body)).unwrap()).await
                }
            }
        }
    }

    pub(crate) async fn request(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        let resp = self.send(method, path, body, None).await;
        Self::read(resp).await
    }

    /// A request with body `body` of media type `content_type`, read to the end.
    pub(crate) async fn request_raw(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: impl Into<Bytes>,
    ) -> Reply {
        let resp = self
            .send_raw(method, path, body.into(), Some(content_type), None)
            .await;
        Self::read(resp).await
    }

    /// A PATCH of media type `content_type` with JSON body `body`.
    pub(crate) async fn patch(&self, path: &str, content_type: &str, body: &Value) -> Reply {
        self.request_raw(Method::PATCH, path, content_type, body.to_string())
            .await
    }

    /// A response read to the end (within 10 s).
    pub(crate) async fn read(resp: http::Response<Incoming>) -> Reply {
        let (parts, body) = resp.into_parts();
        let body = tokio::time::timeout(Duration::from_secs(10), body.collect())
            .await
            .expect("body within 10 s")
            .unwrap()
            .to_bytes();
        Reply {
            status: parts.status,
            headers: parts.headers,
            version: parts.version,
            body,
        }
    }

    pub(crate) async fn get(&self, path: &str) -> Reply {
        self.request(Method::GET, path, None).await
    }

    /// Opens a watch; the status must be 200.
    pub(crate) async fn watch(&self, path: &str) -> Watch {
        self.watch_with(path, None).await
    }

    /// Opens a watch with an `Accept` header; the status must be 200.
    pub(crate) async fn watch_with(&self, path: &str, accept: Option<&str>) -> Watch {
        let resp = self.send(Method::GET, path, None, accept).await;
        assert_eq!(resp.status(), StatusCode::OK, "watch {path}");
        assert_eq!(resp.headers()["content-type"], "application/json");
        Watch {
            body: resp.into_body(),
            buf: BytesMut::new(),
        }
    }
}

/// Sends one request over an HTTP/1.1 connection on `io`.
async fn send_http1<I>(io: I, req: Request<Full<Bytes>>) -> http::Response<Incoming>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
    tokio::spawn(conn);
    sender.send_request(req).await.unwrap()
}

/// How a watch stream ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// Clean end of the body.
    Clean,
    /// The body failed (connection dropped / stream reset).
    Aborted,
    /// Nothing within the wait.
    Timeout,
}

/// A watch body split into lines.
pub(crate) struct Watch {
    body: Incoming,
    buf: BytesMut,
}

impl Watch {
    /// The next raw line (without `\n`), or how the stream ended.
    pub(crate) async fn next_line(&mut self, wait: Duration) -> Result<Bytes, End> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let line = self.buf.split_to(i + 1).freeze();
                return Ok(line.slice(..line.len() - 1));
            }
            match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Err(_) => return Err(End::Timeout),
                Ok(None) => {
                    if self.buf.is_empty() {
                        return Err(End::Clean);
                    }
                    return Ok(self.buf.split().freeze());
                }
                Ok(Some(Err(_))) => return Err(End::Aborted),
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    /// The next event as JSON; panics on anything else.
    pub(crate) async fn next(&mut self) -> Value {
        let line = self
            .next_line(Duration::from_secs(5))
            .await
            .expect("an event");
        serde_json::from_slice(&line).unwrap()
    }

    /// Waits for the end of the stream, skipping nothing: panics if an event arrives.
    pub(crate) async fn end(&mut self, wait: Duration) -> End {
        match self.next_line(wait).await {
            Ok(line) => panic!("unexpected event {}", String::from_utf8_lossy(&line)),
            Err(end) => end,
        }
    }
}

/// `(type, name, resourceVersion)` of an event.
pub(crate) fn summary(event: &Value) -> (String, String, String) {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (
        s(&event["type"]),
        s(&event["object"]["metadata"]["name"]),
        s(&event["object"]["metadata"]["resourceVersion"]),
    )
}
