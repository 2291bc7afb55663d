//! `FakeProxy` over loopback: HTTP `CONNECT` and SOCKS5 tunnels to a small echo server, their
//! refusals (credentials, methods, commands, unreachable targets), and the real kubectl reaching
//! a TLS `FakeApiServer` through the proxy named by its kubeconfig's `proxy-url`.
//!
//! The kubectl tests need `/usr/bin/kubectl` (Debian: `apt install kubernetes-client`). Without
//! it they print that they did not run and pass, unless `KCACHE_REQUIRE_KUBECTL` is set (CI sets
//! it), in which case they fail.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use kcache_testing_server::fake_api_server::{FakeApiServer, ServedResource};
use kcache_testing_server::{FakeProxy, ProxyProtocol};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Command;

use crate::fake_api_server::pod;
use crate::fake_api_server_kubectl::{KUBECTL, kubectl_available};

/// Fails the test instead of hanging when `f` does not finish within 10 s.
async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("finished within 10 s")
}

/// A TCP server on 127.0.0.1 echoing every connection's bytes back until it closes.
async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut read, mut write) = stream.into_split();
                let _ = tokio::io::copy(&mut read, &mut write).await;
            });
        }
    });
    addr
}

/// A port on 127.0.0.1 where nothing listens: bound, then released.
async fn unreachable_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

/// Writes `bytes` and reads them back through the tunnel, both at once (so a large write
/// cannot deadlock on full buffers).
async fn echo_round_trip(stream: &mut TcpStream, bytes: &[u8]) {
    let (mut read, mut write) = stream.split();
    let mut back = vec![0; bytes.len()];
    let (written, echoed) =
        within(async { tokio::join!(write.write_all(bytes), read.read_exact(&mut back)) }).await;
    written.unwrap();
    echoed.unwrap();
    assert_eq!(back, bytes);
}

/// Reads a response head byte by byte, so nothing of the tunnel after it is consumed.
async fn read_response_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0];
        let n = within(stream.read(&mut byte)).await.unwrap();
        assert_eq!(n, 1, "closed after {:?}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

/// Everything until the proxy closes the connection.
async fn read_until_closed(stream: &mut TcpStream) -> String {
    let mut all = Vec::new();
    within(stream.read_to_end(&mut all)).await.unwrap();
    String::from_utf8_lossy(&all).into_owned()
}

/// Sends `CONNECT target` with `headers` (each ending in CRLF) and returns the connection and
/// the response head.
async fn http_connect(proxy: &FakeProxy, target: &str, headers: &str) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    let request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{headers}\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let head = read_response_head(&mut stream).await;
    (stream, head)
}

fn status_line(head: &str) -> &str {
    head.lines().next().unwrap()
}

#[tokio::test]
async fn http_connect_tunnels_to_an_echo_server() {
    let echo = echo_server().await;
    let proxy = FakeProxy::start(ProxyProtocol::HttpConnect).await.unwrap();
    assert_eq!(proxy.url(), format!("http://{}", proxy.addr()));

    let (mut tunnel, head) = http_connect(&proxy, &echo.to_string(), "").await;
    assert_eq!(head, "HTTP/1.1 200 Connection established\r\n\r\n");
    echo_round_trip(&mut tunnel, b"ping").await;
    echo_round_trip(&mut tunnel, &vec![7; 100_000]).await;

    // A domain name is recorded as the client named it.
    let by_name = format!("localhost:{}", echo.port());
    let (mut tunnel2, head) = http_connect(&proxy, &by_name, "").await;
    assert_eq!(status_line(&head), "HTTP/1.1 200 Connection established");
    echo_round_trip(&mut tunnel2, b"pong").await;

    assert_eq!(proxy.tunnels(), vec![echo.to_string(), by_name]);
    assert_eq!(proxy.refusals(), 0);
}

#[tokio::test]
async fn http_connect_requires_the_configured_credentials() {
    let echo = echo_server().await;
    let proxy = FakeProxy::builder()
        .credentials("alice", "s3cret")
        .start()
        .await
        .unwrap();
    let target = echo.to_string();

    // Missing.
    let (mut refused, head) = http_connect(&proxy, &target, "").await;
    assert_eq!(
        status_line(&head),
        "HTTP/1.1 407 Proxy Authentication Required"
    );
    assert!(
        head.contains("Proxy-Authenticate: Basic realm=\"kcache-fake-proxy\"\r\n"),
        "{head}"
    );
    assert_eq!(read_until_closed(&mut refused).await, "");
    assert_eq!(proxy.refusals(), 1);

    // Wrong: base64("alice:wrong").
    let (_, head) = http_connect(
        &proxy,
        &target,
        "Proxy-Authorization: Basic YWxpY2U6d3Jvbmc=\r\n",
    )
    .await;
    assert_eq!(
        status_line(&head),
        "HTTP/1.1 407 Proxy Authentication Required"
    );
    // Another scheme with the right token is no Basic credential either.
    let (_, head) = http_connect(
        &proxy,
        &target,
        "Proxy-Authorization: Bearer YWxpY2U6czNjcmV0\r\n",
    )
    .await;
    assert_eq!(
        status_line(&head),
        "HTTP/1.1 407 Proxy Authentication Required"
    );
    assert_eq!(proxy.refusals(), 3);
    assert!(proxy.tunnels().is_empty());

    // Right: base64("alice:s3cret"), header name and scheme in any case.
    for header in [
        "Proxy-Authorization: Basic YWxpY2U6czNjcmV0\r\n",
        "proxy-authorization: basic YWxpY2U6czNjcmV0\r\n",
    ] {
        let (mut tunnel, head) = http_connect(&proxy, &target, header).await;
        assert_eq!(status_line(&head), "HTTP/1.1 200 Connection established");
        echo_round_trip(&mut tunnel, b"authorized").await;
    }
    assert_eq!(proxy.tunnels(), vec![target.clone(), target]);
    assert_eq!(proxy.refusals(), 3);
}

#[tokio::test]
async fn http_proxy_refuses_other_methods_with_405() {
    let proxy = FakeProxy::start(ProxyProtocol::HttpConnect).await.unwrap();
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    stream
        .write_all(b"GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
        .await
        .unwrap();
    let response = read_until_closed(&mut stream).await;
    assert!(
        response.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
        "{response}"
    );
    assert!(response.contains("Allow: CONNECT\r\n"), "{response}");
    assert_eq!(proxy.refusals(), 1);
    assert!(proxy.tunnels().is_empty());
}

#[tokio::test]
async fn http_connect_to_an_unreachable_target_is_502() {
    let port = unreachable_port().await;
    let proxy = FakeProxy::start(ProxyProtocol::HttpConnect).await.unwrap();
    let (mut stream, head) = http_connect(&proxy, &format!("127.0.0.1:{port}"), "").await;
    assert_eq!(status_line(&head), "HTTP/1.1 502 Bad Gateway");
    assert_eq!(read_until_closed(&mut stream).await, "");
    assert_eq!(proxy.refusals(), 1);
    assert!(proxy.tunnels().is_empty());
}

#[tokio::test]
async fn http_connect_forwards_bytes_pipelined_after_the_head() {
    let echo = echo_server().await;
    let proxy = FakeProxy::start(ProxyProtocol::HttpConnect).await.unwrap();
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    // The head and the first tunnel bytes in one write (so most likely one read).
    let request = format!("CONNECT {echo} HTTP/1.1\r\nHost: {echo}\r\n\r\nearly bytes");
    stream.write_all(request.as_bytes()).await.unwrap();
    let head = read_response_head(&mut stream).await;
    assert_eq!(status_line(&head), "HTTP/1.1 200 Connection established");
    let mut early = [0; 11];
    within(stream.read_exact(&mut early)).await.unwrap();
    assert_eq!(&early, b"early bytes");
    echo_round_trip(&mut stream, b" and later ones").await;
    assert_eq!(proxy.tunnels(), vec![echo.to_string()]);
}

#[tokio::test]
async fn http_proxy_refuses_malformed_and_oversized_heads() {
    let echo = echo_server().await;
    let proxy = FakeProxy::start(ProxyProtocol::HttpConnect).await.unwrap();
    for (request, status) in [
        ("CONNECT no-port HTTP/1.1\r\n\r\n", "400 Bad Request"),
        ("CONNECT 127.0.0.1:0 HTTP/1.1\r\n\r\n", "400 Bad Request"),
        ("CONNECT  127.0.0.1:80 HTTP/1.1\r\n\r\n", "400 Bad Request"),
        ("CONNECT 127.0.0.1:80 HTTP/2\r\n\r\n", "400 Bad Request"),
        (
            "CONNECT 127.0.0.1:80 HTTP/1.1\r\nno colon\r\n\r\n",
            "400 Bad Request",
        ),
    ] {
        let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let response = read_until_closed(&mut stream).await;
        assert!(
            response.starts_with(&format!("HTTP/1.1 {status}\r\n")),
            "{request:?}: {response}"
        );
    }
    // A head longer than 16 KiB.
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    let long = format!(
        "CONNECT {echo} HTTP/1.1\r\nX-Padding: {}\r\n\r\n",
        "a".repeat(17 * 1024)
    );
    stream.write_all(long.as_bytes()).await.unwrap();
    let response = read_until_closed(&mut stream).await;
    assert!(
        response.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
        "{response}"
    );
    assert_eq!(proxy.refusals(), 6);
    assert!(proxy.tunnels().is_empty());

    // Clients that hang up early or send garbage do not stop the proxy.
    drop(TcpStream::connect(proxy.addr()).await.unwrap());
    let mut half = TcpStream::connect(proxy.addr()).await.unwrap();
    half.write_all(b"CONNECT 127.0.0.1:").await.unwrap();
    drop(half);
    let (mut tunnel, head) = http_connect(&proxy, &echo.to_string(), "").await;
    assert_eq!(status_line(&head), "HTTP/1.1 200 Connection established");
    echo_round_trip(&mut tunnel, b"still serving").await;
    assert_eq!(proxy.refusals(), 6, "hanging up early is no refusal");
}

#[tokio::test]
async fn shutdown_closes_open_tunnels_and_stops_accepting() {
    let echo = echo_server().await;
    let proxy = FakeProxy::start(ProxyProtocol::HttpConnect).await.unwrap();
    let (mut tunnel, head) = http_connect(&proxy, &echo.to_string(), "").await;
    assert_eq!(status_line(&head), "HTTP/1.1 200 Connection established");
    echo_round_trip(&mut tunnel, b"before").await;
    let addr = proxy.addr();
    proxy.shutdown();
    let mut rest = Vec::new();
    let closed = within(tunnel.read_to_end(&mut rest)).await;
    assert!(closed.is_err() || rest.is_empty(), "{closed:?} {rest:?}");
    // The listener goes away with the accept loop.
    within(async {
        while TcpStream::connect(addr).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn urls_percent_encode_credentials_and_debug_hides_the_password() {
    let proxy = FakeProxy::builder()
        .protocol(ProxyProtocol::Socks5)
        .credentials("al:ice", "p@ss/w%rd")
        .start()
        .await
        .unwrap();
    let port = proxy.addr().port();
    assert_eq!(proxy.url(), format!("socks5://127.0.0.1:{port}"));
    assert_eq!(
        proxy.url_with_credentials("al:ice", "p@ss/w%rd"),
        format!("socks5://al%3Aice:p%40ss%2Fw%25rd@127.0.0.1:{port}")
    );
    let shown = format!("{proxy:?}");
    assert!(shown.contains("al:ice"), "{shown}");
    assert!(!shown.contains("p@ss"), "{shown}");
    let builder = format!("{:?}", FakeProxy::builder().credentials("u", "hunter2"));
    assert!(!builder.contains("hunter2"), "{builder}");
}

// SOCKS5 (RFC 1928, RFC 1929).

/// Connects and sends the greeting offering `methods`; returns the method reply.
async fn socks_greet(proxy: &FakeProxy, methods: &[u8]) -> (TcpStream, [u8; 2]) {
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    let mut greeting = vec![5, u8::try_from(methods.len()).unwrap()];
    greeting.extend_from_slice(methods);
    stream.write_all(&greeting).await.unwrap();
    let mut choice = [0; 2];
    within(stream.read_exact(&mut choice)).await.unwrap();
    (stream, choice)
}

/// Username/password subnegotiation; returns the status reply.
async fn socks_login(stream: &mut TcpStream, user: &str, password: &str) -> [u8; 2] {
    let mut auth = vec![1, u8::try_from(user.len()).unwrap()];
    auth.extend_from_slice(user.as_bytes());
    auth.push(u8::try_from(password.len()).unwrap());
    auth.extend_from_slice(password.as_bytes());
    stream.write_all(&auth).await.unwrap();
    let mut status = [0; 2];
    within(stream.read_exact(&mut status)).await.unwrap();
    status
}

/// Sends a request with command `command`, address type `atyp` and `address` to `port`;
/// returns the 10-byte reply.
async fn socks_request(
    stream: &mut TcpStream,
    command: u8,
    atyp: u8,
    address: &[u8],
    port: u16,
) -> [u8; 10] {
    let mut request = vec![5, command, 0, atyp];
    request.extend_from_slice(address);
    request.extend_from_slice(&port.to_be_bytes());
    stream.write_all(&request).await.unwrap();
    let mut reply = [0; 10];
    within(stream.read_exact(&mut reply)).await.unwrap();
    reply
}

fn domain(name: &str) -> Vec<u8> {
    let mut address = vec![u8::try_from(name.len()).unwrap()];
    address.extend_from_slice(name.as_bytes());
    address
}

const SUCCEEDED: [u8; 10] = [5, 0, 0, 1, 0, 0, 0, 0, 0, 0];

fn failed(code: u8) -> [u8; 10] {
    [5, code, 0, 1, 0, 0, 0, 0, 0, 0]
}

#[tokio::test]
async fn socks5_tunnels_without_auth_by_ipv4_and_by_domain_name() {
    let echo = echo_server().await;
    let proxy = FakeProxy::start(ProxyProtocol::Socks5).await.unwrap();
    assert_eq!(proxy.url(), format!("socks5://{}", proxy.addr()));

    let (mut stream, choice) = socks_greet(&proxy, &[0x00]).await;
    assert_eq!(choice, [5, 0x00]);
    let reply = socks_request(&mut stream, 1, 1, &[127, 0, 0, 1], echo.port()).await;
    assert_eq!(reply, SUCCEEDED);
    echo_round_trip(&mut stream, b"by address").await;

    // Offering more methods than needed is fine; the name stays a name.
    let (mut stream, choice) = socks_greet(&proxy, &[0x02, 0x00, 0x01]).await;
    assert_eq!(choice, [5, 0x00]);
    let reply = socks_request(&mut stream, 1, 3, &domain("localhost"), echo.port()).await;
    assert_eq!(reply, SUCCEEDED);
    echo_round_trip(&mut stream, &vec![9; 50_000]).await;

    assert_eq!(
        proxy.tunnels(),
        vec![echo.to_string(), format!("localhost:{}", echo.port())]
    );
    assert_eq!(proxy.refusals(), 0);
}

#[tokio::test]
async fn socks5_username_password_right_and_wrong() {
    let echo = echo_server().await;
    let proxy = FakeProxy::builder()
        .protocol(ProxyProtocol::Socks5)
        .credentials("alice", "s3cret")
        .start()
        .await
        .unwrap();

    let (mut stream, choice) = socks_greet(&proxy, &[0x00, 0x02]).await;
    assert_eq!(choice, [5, 0x02]);
    assert_eq!(socks_login(&mut stream, "alice", "wrong").await, [1, 1]);
    let mut rest = Vec::new();
    within(stream.read_to_end(&mut rest)).await.unwrap();
    assert!(rest.is_empty(), "closed after a failed login");
    assert_eq!(proxy.refusals(), 1);

    let (mut stream, choice) = socks_greet(&proxy, &[0x02]).await;
    assert_eq!(choice, [5, 0x02]);
    assert_eq!(socks_login(&mut stream, "bob", "s3cret").await, [1, 1]);
    assert_eq!(proxy.refusals(), 2);

    let (mut stream, choice) = socks_greet(&proxy, &[0x02]).await;
    assert_eq!(choice, [5, 0x02]);
    assert_eq!(socks_login(&mut stream, "alice", "s3cret").await, [1, 0]);
    let reply = socks_request(&mut stream, 1, 1, &[127, 0, 0, 1], echo.port()).await;
    assert_eq!(reply, SUCCEEDED);
    echo_round_trip(&mut stream, b"logged in").await;
    assert_eq!(proxy.tunnels(), vec![echo.to_string()]);
    assert_eq!(proxy.refusals(), 2);
}

#[tokio::test]
async fn socks5_unsupported_command_gets_0x07() {
    let echo = echo_server().await;
    let proxy = FakeProxy::start(ProxyProtocol::Socks5).await.unwrap();
    for command in [0x02, 0x03] {
        let (mut stream, _) = socks_greet(&proxy, &[0x00]).await;
        let reply = socks_request(&mut stream, command, 1, &[127, 0, 0, 1], echo.port()).await;
        assert_eq!(reply, failed(0x07), "command {command}");
    }
    assert_eq!(proxy.refusals(), 2);
    assert!(proxy.tunnels().is_empty());
}

#[tokio::test]
async fn socks5_no_acceptable_method_gets_0xff() {
    // No credentials configured, the client only offers username/password.
    let proxy = FakeProxy::start(ProxyProtocol::Socks5).await.unwrap();
    let (mut stream, choice) = socks_greet(&proxy, &[0x02]).await;
    assert_eq!(choice, [5, 0xFF]);
    assert_eq!(read_until_closed(&mut stream).await, "");
    assert_eq!(proxy.refusals(), 1);

    // Credentials configured, the client only offers no authentication.
    let proxy = FakeProxy::builder()
        .protocol(ProxyProtocol::Socks5)
        .credentials("alice", "s3cret")
        .start()
        .await
        .unwrap();
    let (_, choice) = socks_greet(&proxy, &[0x00]).await;
    assert_eq!(choice, [5, 0xFF]);
    let (_, choice) = socks_greet(&proxy, &[]).await;
    assert_eq!(choice, [5, 0xFF]);
    assert_eq!(proxy.refusals(), 2);
}

#[tokio::test]
async fn socks5_refuses_unreachable_targets_and_unknown_address_types() {
    let echo = echo_server().await;
    let port = unreachable_port().await;
    let proxy = FakeProxy::start(ProxyProtocol::Socks5).await.unwrap();

    let (mut stream, _) = socks_greet(&proxy, &[0x00]).await;
    let reply = socks_request(&mut stream, 1, 1, &[127, 0, 0, 1], port).await;
    assert_eq!(reply, failed(0x05));

    let (mut stream, _) = socks_greet(&proxy, &[0x00]).await;
    let reply = socks_request(&mut stream, 1, 0x09, &[], echo.port()).await;
    assert_eq!(reply, failed(0x08));

    // Not SOCKS5 at all: closed without a reply.
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    stream
        .write_all(&[4, 1, 0, 80, 127, 0, 0, 1, 0])
        .await
        .unwrap();
    assert_eq!(read_until_closed(&mut stream).await, "");

    assert_eq!(proxy.refusals(), 3);
    assert!(proxy.tunnels().is_empty());

    // Still serving.
    let (mut stream, _) = socks_greet(&proxy, &[0x00]).await;
    let reply = socks_request(&mut stream, 1, 1, &[127, 0, 0, 1], echo.port()).await;
    assert_eq!(reply, SUCCEEDED);
    echo_round_trip(&mut stream, b"ok").await;
}

// The real kubectl through the proxy.

/// A kubeconfig file removed on drop.
struct Kubeconfig(PathBuf);

impl Drop for Kubeconfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes `server`'s kubeconfig with `proxy-url` set in its cluster entry.
fn kubeconfig_with_proxy(server: &FakeApiServer, proxy_url: &str, name: &str) -> Kubeconfig {
    let mut kc: serde_json::Value = serde_json::from_str(&server.kubeconfig("default")).unwrap();
    kc["clusters"][0]["cluster"]["proxy-url"] = proxy_url.into();
    let path = std::env::temp_dir().join(format!(
        "kcache-it-proxy-{}-{}-{name}.kubeconfig",
        std::process::id(),
        server.addr().port()
    ));
    std::fs::write(&path, kc.to_string()).unwrap();
    Kubeconfig(path)
}

/// Runs `kubectl get pods -A` with `kubeconfig` and no proxy from the environment.
async fn kubectl_get_pods_output(kubeconfig: &Kubeconfig) -> std::process::Output {
    let mut cmd = Command::new(KUBECTL);
    cmd.args(["get", "pods", "-A", "--request-timeout=10s"])
        .env("KUBECONFIG", &kubeconfig.0)
        .env("HOME", std::env::temp_dir())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    for var in ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"] {
        cmd.env_remove(var).env_remove(var.to_lowercase());
    }
    tokio::time::timeout(Duration::from_secs(20), cmd.output())
        .await
        .expect("kubectl within 20 s")
        .unwrap()
}

/// [`kubectl_get_pods_output`]'s stdout, failing on a non-zero exit.
async fn kubectl_get_pods(kubeconfig: &Kubeconfig) -> String {
    let out = kubectl_get_pods_output(kubeconfig).await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "kubectl get pods -A failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// kubectl `get pods -A` against a TLS fake server through `proxy`, named by `proxy_url`.
async fn kubectl_through(proxy: &FakeProxy, proxy_url: &str, name: &str) {
    let server = FakeApiServer::builder().tls(true).start().await.unwrap();
    server
        .create(&ServedResource::pods(), pod("alpha", "web-1", "web"))
        .unwrap();
    let kubeconfig = kubeconfig_with_proxy(&server, proxy_url, name);
    let out = kubectl_get_pods(&kubeconfig).await;
    eprintln!("kubectl get pods -A through {name}:\n{out}");
    assert!(out.contains("web-1"), "{out}");
    let tunnels = proxy.tunnels();
    let target = format!("127.0.0.1:{}", server.addr().port());
    assert!(!tunnels.is_empty(), "kubectl went around the proxy");
    assert!(tunnels.iter().all(|t| *t == target), "{tunnels:?}");
    assert_eq!(proxy.refusals(), 0);
}

#[tokio::test]
async fn kubectl_get_pods_through_http_connect_and_socks5_proxies() {
    if !kubectl_available("kubectl_get_pods_through_http_connect_and_socks5_proxies") {
        return;
    }
    for (protocol, name) in [
        (ProxyProtocol::HttpConnect, "http"),
        (ProxyProtocol::Socks5, "socks5"),
    ] {
        let proxy = FakeProxy::start(protocol).await.unwrap();
        kubectl_through(&proxy, &proxy.url(), name).await;
    }
}

#[tokio::test]
async fn kubectl_get_pods_through_a_proxy_with_credentials() {
    if !kubectl_available("kubectl_get_pods_through_a_proxy_with_credentials") {
        return;
    }
    for protocol in [ProxyProtocol::HttpConnect, ProxyProtocol::Socks5] {
        let proxy = FakeProxy::builder()
            .protocol(protocol)
            .credentials("kcache", "pa:ss@word")
            .start()
            .await
            .unwrap();
        let url = proxy.url_with_credentials("kcache", "pa:ss@word");
        kubectl_through(&proxy, &url, &format!("{protocol:?}-credentials")).await;
    }
}

#[tokio::test]
async fn kubectl_fails_through_a_proxy_without_the_credentials() {
    if !kubectl_available("kubectl_fails_through_a_proxy_without_the_credentials") {
        return;
    }
    let proxy = FakeProxy::builder()
        .credentials("kcache", "secret")
        .start()
        .await
        .unwrap();
    let server = FakeApiServer::builder().tls(true).start().await.unwrap();
    let kubeconfig = kubeconfig_with_proxy(&server, &proxy.url(), "no-credentials");
    let out = kubectl_get_pods_output(&kubeconfig).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("kubectl without proxy credentials: {stderr}");
    assert!(!out.status.success());
    assert!(proxy.refusals() > 0);
    assert!(proxy.tunnels().is_empty());
    assert!(server.requests().is_empty(), "nothing reached the server");
}
