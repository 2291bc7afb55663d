//! [`FakeProxy`]: a forward proxy on loopback speaking HTTP `CONNECT` or SOCKS5, recording the
//! tunnels it opens and the requests it refuses, for testing clients' proxy support (the
//! kubeconfig's `proxy-url`).
//!
//! This file holds the handle, the accept loop and the relay; `http_connect` and `socks5` hold
//! the two handshakes.

mod http_connect;
mod socks5;

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long a client has to finish its request (the CONNECT head, or the SOCKS5 greeting,
/// authentication and request) before the proxy hangs up.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long connecting to a target may take before it counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a refused connection is drained after the reply, so that closing it with unread
/// bytes does not reset it and lose the reply.
const LINGER: Duration = Duration::from_secs(1);

/// Which protocol the proxy speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyProtocol {
    /// HTTP `CONNECT` tunnels (RFC 9110 9.3.6), with `Basic` proxy authentication; `http://`
    /// proxy URLs.
    HttpConnect,
    /// SOCKS5 `CONNECT` (RFC 1928), with username/password authentication (RFC 1929);
    /// `socks5://` proxy URLs.
    Socks5,
}

impl ProxyProtocol {
    /// The URL scheme clients use for this protocol.
    fn scheme(self) -> &'static str {
        match self {
            Self::HttpConnect => "http",
            Self::Socks5 => "socks5",
        }
    }
}

/// The username and password a proxy requires. Its `Debug` never shows the password.
#[derive(Clone)]
struct Credentials {
    user: String,
    password: String,
    /// `base64(user:password)`, the token of a right `Proxy-Authorization: Basic` header.
    basic: String,
}

impl Credentials {
    fn new(user: String, password: String) -> Self {
        let basic = STANDARD.encode(format!("{user}:{password}").as_bytes());
        Self {
            user,
            password,
            basic,
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// Configures and starts a [`FakeProxy`]: its [`protocol`](Self::protocol) and the
/// [`credentials`](Self::credentials) it requires, if any.
#[derive(Debug, Clone)]
pub struct FakeProxyBuilder {
    protocol: ProxyProtocol,
    credentials: Option<Credentials>,
}

impl Default for FakeProxyBuilder {
    fn default() -> Self {
        Self {
            protocol: ProxyProtocol::HttpConnect,
            credentials: None,
        }
    }
}

impl FakeProxyBuilder {
    /// The protocol to speak (default [`ProxyProtocol::HttpConnect`]).
    #[must_use]
    pub fn protocol(mut self, protocol: ProxyProtocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Require these credentials (default: none required). HTTP `CONNECT` then wants
    /// `Proxy-Authorization: Basic base64(user:password)` and answers 407 without it; SOCKS5
    /// accepts only the username/password method (RFC 1929) with exactly these.
    #[must_use]
    pub fn credentials(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.credentials = Some(Credentials::new(user.into(), password.into()));
        self
    }

    /// Binds `127.0.0.1` on a free port and spawns the accept loop on the current tokio
    /// runtime (so it must be called inside one).
    ///
    /// # Errors
    ///
    /// Binding the listener fails.
    pub async fn start(self) -> io::Result<FakeProxy> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            protocol: self.protocol,
            credentials: self.credentials,
            tunnels: Mutex::new(Vec::new()),
            refusals: AtomicUsize::new(0),
            cancel: CancellationToken::new(),
        });
        let task = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(FakeProxy { shared, addr, task })
    }
}

/// A fake forward proxy on `127.0.0.1`, speaking HTTP `CONNECT` or SOCKS5, that records every
/// tunnel it opens: tests use it to prove that a client (kcache's HTTP client, `kubectl`) goes
/// through the proxy its kubeconfig's `proxy-url` names.
///
/// - **HTTP `CONNECT`** ([`ProxyProtocol::HttpConnect`], RFC 9110 9.3.6): the request head is
///   read up to its blank line (at most 16 KiB, else `431`). Only `CONNECT host:port HTTP/1.1`
///   (authority form; `HTTP/1.0` is accepted too) opens a tunnel: any other method gets `405`,
///   a malformed head `400`. With [`credentials`](FakeProxyBuilder::credentials), a missing or
///   wrong `Proxy-Authorization: Basic ...` gets `407` with
///   `Proxy-Authenticate: Basic realm="kcache-fake-proxy"`. A target that cannot be reached
///   gets `502`. Otherwise the proxy answers `200 Connection established` and relays bytes
///   both ways; bytes the client sent right after the head are forwarded too.
/// - **SOCKS5** ([`ProxyProtocol::Socks5`], RFC 1928 and RFC 1929): with credentials only the
///   username/password method is accepted, without them only "no authentication"; else the
///   greeting is answered `0xFF`. A failed login gets `0x01 0x01`. Only `CONNECT` is supported
///   (other commands: reply `0x07`), to an IPv4 address, a domain name or an IPv6 address
///   (other address types: `0x08`). An unreachable target gets `0x05` (connection refused) or
///   `0x04` (host unreachable).
/// - **Records**: [`tunnels`](Self::tunnels) lists the target of every tunnel once it is
///   established, as the client named it; [`refusals`](Self::refusals) counts the refused
///   requests. Both are updated before the proxy answers, so a client that has read the answer
///   sees them. A client that hangs up or stalls (10 s) before finishing its request is not
///   counted.
/// - **Robustness**: every connection is a task of its own; a misbehaving client only ends its
///   own connection. [`shutdown`](Self::shutdown), or dropping the proxy, stops accepting and
///   closes every open tunnel.
///
/// Not supported: TLS to the proxy itself (`https://` proxy URLs), plain HTTP forwarding of
/// absolute-form requests (`GET http://...` gets `405`), SOCKS4, SOCKS5 `BIND` and
/// `UDP ASSOCIATE`, GSSAPI.
///
/// # Example
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// use kcache_testing_server::{FakeProxy, ProxyProtocol};
///
/// let proxy = FakeProxy::builder()
///     .protocol(ProxyProtocol::Socks5)
///     .credentials("alice", "s3cret")
///     .start()
///     .await?;
/// println!("proxy-url: {}", proxy.url_with_credentials("alice", "s3cret"));
/// assert!(proxy.url().starts_with("socks5://127.0.0.1:"));
/// assert!(proxy.tunnels().is_empty());
/// proxy.shutdown();
/// # Ok(()) }
/// ```
pub struct FakeProxy {
    shared: Arc<Shared>,
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl fmt::Debug for FakeProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeProxy")
            .field("addr", &self.addr)
            .field("protocol", &self.shared.protocol)
            .field(
                "user",
                &self.shared.credentials.as_ref().map(|c| c.user.as_str()),
            )
            .field("tunnels", &self.tunnels().len())
            .field("refusals", &self.refusals())
            .finish_non_exhaustive()
    }
}

impl FakeProxy {
    /// A builder with the defaults: HTTP `CONNECT`, no credentials required.
    pub fn builder() -> FakeProxyBuilder {
        FakeProxyBuilder::default()
    }

    /// Starts a proxy speaking `protocol` that requires no credentials.
    ///
    /// # Errors
    ///
    /// Binding the listener fails.
    pub async fn start(protocol: ProxyProtocol) -> io::Result<Self> {
        Self::builder().protocol(protocol).start().await
    }

    /// The bound address (`127.0.0.1` and a free port).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>` or `socks5://127.0.0.1:<port>`, without credentials: a
    /// kubeconfig's `proxy-url`.
    pub fn url(&self) -> String {
        format!("{}://{}", self.shared.protocol.scheme(), self.addr)
    }

    /// The [`url`](Self::url) with `user:password@` in it, both percent-encoded (every byte but
    /// ASCII letters, digits and `-._~`), for a proxy built with
    /// [`credentials`](FakeProxyBuilder::credentials).
    pub fn url_with_credentials(&self, user: &str, password: &str) -> String {
        format!(
            "{}://{}:{}@{}",
            self.shared.protocol.scheme(),
            percent_encode(user),
            percent_encode(password),
            self.addr
        )
    }

    /// The targets of every tunnel opened so far, in order, as `host:port` exactly as the
    /// client named them: a domain name stays a name, an IPv6 address is in brackets.
    pub fn tunnels(&self) -> Vec<String> {
        self.shared.tunnels().clone()
    }

    /// How many requests were refused: bad or missing credentials, an unsupported command,
    /// method or address type, a malformed or oversized request, an unreachable target.
    pub fn refusals(&self) -> usize {
        self.shared.refusals.load(Ordering::SeqCst)
    }

    /// Stops accepting and closes every open tunnel. Dropping the proxy does the same.
    pub fn shutdown(&self) {
        self.shared.cancel.cancel();
        self.task.abort();
    }
}

impl Drop for FakeProxy {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// What the handle and the connection tasks share.
#[derive(Debug)]
struct Shared {
    protocol: ProxyProtocol,
    credentials: Option<Credentials>,
    tunnels: Mutex<Vec<String>>,
    refusals: AtomicUsize,
    /// Cancelled on shutdown: ends the accept loop and every connection task.
    cancel: CancellationToken,
}

impl Shared {
    /// Locks the tunnel list. Never held across an `.await`.
    fn tunnels(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.tunnels.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records an established tunnel to `target`.
    fn record_tunnel(&self, target: String) {
        self.tunnels().push(target);
    }

    /// Counts a refused request.
    fn refuse(&self) {
        self.refusals.fetch_add(1, Ordering::SeqCst);
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let accepted = tokio::select! {
            () = shared.cancel.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((client, _)) = accepted else {
            // Out of file descriptors and the like: back off a little.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = client.set_nodelay(true);
        let shared = shared.clone();
        tokio::spawn(async move {
            let cancel = shared.cancel.clone();
            // Errors only end this connection: the crate does not log, so they are dropped.
            tokio::select! {
                () = cancel.cancelled() => {}
                _ = serve(client, &shared) => {}
            }
        });
    }
}

/// Serves one client connection: the handshake, then the tunnel until either side is done.
async fn serve(client: TcpStream, shared: &Shared) -> io::Result<()> {
    match shared.protocol {
        ProxyProtocol::HttpConnect => http_connect::serve(client, shared).await,
        ProxyProtocol::Socks5 => socks5::serve(client, shared).await,
    }
}

/// Connects to `host:port` (a name is resolved), within [`CONNECT_TIMEOUT`].
async fn connect_target(host: &str, port: u16) -> io::Result<TcpStream> {
    match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect((host, port))).await {
        Ok(connected) => connected,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "fake proxy: connecting to the target timed out",
        )),
    }
}

/// Relays bytes between `client` and `upstream` until both directions are done, after sending
/// `upstream` what the client had already sent past its handshake.
async fn relay(mut client: TcpStream, mut upstream: TcpStream, pending: &[u8]) -> io::Result<()> {
    let _ = upstream.set_nodelay(true);
    if !pending.is_empty() {
        upstream.write_all(pending).await?;
    }
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// Counts a refusal, sends `reply` and closes the connection gracefully.
async fn refuse(mut client: TcpStream, shared: &Shared, reply: &[u8]) -> io::Result<()> {
    shared.refuse();
    if !reply.is_empty() {
        client.write_all(reply).await?;
    }
    hang_up(client).await;
    Ok(())
}

/// Closes `client` after a refusal: half-closes it, then reads and drops what it still sends
/// for up to [`LINGER`], so the kernel does not answer unread bytes with a reset that could
/// lose the reply.
async fn hang_up(mut client: TcpStream) {
    let _ = client.shutdown().await;
    let drain = async {
        let mut sink = [0_u8; 4096];
        let mut total = 0_usize;
        while let Ok(n @ 1..) = client.read(&mut sink).await {
            total += n;
            if total > 1 << 20 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

/// Percent-encodes every byte of `s` but ASCII letters, digits and `-._~` (RFC 3986
/// unreserved), which is always valid in a URL's userinfo.
fn percent_encode(s: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_encoding_keeps_unreserved_and_escapes_the_rest() {
        assert_eq!(percent_encode("alice-1.x_~"), "alice-1.x_~");
        assert_eq!(percent_encode("p:w@/%"), "p%3Aw%40%2F%25");
        assert_eq!(percent_encode("é"), "%C3%A9");
    }

    #[test]
    fn credentials_debug_hides_the_password() {
        let c = Credentials::new("alice".to_owned(), "s3cret".to_owned());
        let shown = format!("{c:?}");
        assert!(shown.contains("alice"));
        assert!(!shown.contains("s3cret"));
        assert!(!shown.contains(&c.basic));
        assert_eq!(c.basic, "YWxpY2U6czNjcmV0");
    }
}
