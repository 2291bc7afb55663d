//! The HTTP `CONNECT` side of [`FakeProxy`](super::FakeProxy) (RFC 9110 9.3.6): read the request
//! head, check the method, target and `Proxy-Authorization`, connect, answer, relay.

use std::io;
use std::net::Ipv6Addr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{HANDSHAKE_TIMEOUT, Shared, connect_target, refuse, relay};

/// The longest request head accepted, blank line included.
const MAX_HEAD: usize = 16 * 1024;

/// The realm of the `Proxy-Authenticate` challenge.
const REALM: &str = "kcache-fake-proxy";

/// What reading the request head gave.
enum Head {
    /// The head up to and including its blank line, and the bytes read past it.
    Complete { head: Vec<u8>, rest: Vec<u8> },
    /// No blank line within [`MAX_HEAD`] bytes.
    TooLarge,
    /// The client closed the connection before finishing the head.
    Closed,
}

/// A `CONNECT` request that passed the checks.
struct Connect<'a> {
    /// The request target as sent, `host:port` or `[v6]:port`.
    authority: &'a str,
    /// The host to connect to (an IPv6 address without brackets).
    host: &'a str,
    port: u16,
}

/// Serves one HTTP `CONNECT` client.
pub(super) async fn serve(mut client: TcpStream, shared: &Shared) -> io::Result<()> {
    let (head, rest) = match tokio::time::timeout(HANDSHAKE_TIMEOUT, read_head(&mut client)).await {
        Ok(Ok(Head::Complete { head, rest })) => (head, rest),
        Ok(Ok(Head::TooLarge)) => {
            let reply = response(431, "Request Header Fields Too Large", "");
            return refuse(client, shared, reply.as_bytes()).await;
        }
        // Gone or stalled before finishing its request: nothing to answer.
        Ok(Ok(Head::Closed)) | Err(_) => return Ok(()),
        Ok(Err(e)) => return Err(e),
    };
    let request = match check(&head, shared) {
        Ok(request) => request,
        Err(reply) => return refuse(client, shared, reply.as_bytes()).await,
    };
    let Ok(upstream) = connect_target(request.host, request.port).await else {
        let reply = response(502, "Bad Gateway", "");
        return refuse(client, shared, reply.as_bytes()).await;
    };
    shared.record_tunnel(request.authority.to_owned());
    client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await?;
    relay(client, upstream, &rest).await
}

/// Reads until the blank line ending the head, keeping what came after it in the same reads.
async fn read_head(client: &mut TcpStream) -> io::Result<Head> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0_u8; 4096];
    loop {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(Head::Closed);
        }
        // The blank line may straddle two reads: search from 3 bytes back.
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        let found = buf[from..].windows(4).position(|w| w == b"\r\n\r\n");
        if let Some(at) = found {
            let end = from + at + 4;
            if end > MAX_HEAD {
                return Ok(Head::TooLarge);
            }
            let rest = buf.split_off(end);
            return Ok(Head::Complete { head: buf, rest });
        }
        if buf.len() >= MAX_HEAD {
            return Ok(Head::TooLarge);
        }
    }
}

/// Checks the head: its shape (400), the method (405), the target (400) and the credentials
/// (407). The error is the response to send.
fn check<'a>(head: &'a [u8], shared: &Shared) -> Result<Connect<'a>, String> {
    let bad_request = || response(400, "Bad Request", "");
    let text = std::str::from_utf8(head).map_err(|_| bad_request())?;
    let text = text.strip_suffix("\r\n\r\n").unwrap_or(text);
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad_request());
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0") || method.is_empty() {
        return Err(bad_request());
    }
    if method != "CONNECT" {
        return Err(response(405, "Method Not Allowed", "Allow: CONNECT\r\n"));
    }
    let (host, port) = parse_authority(target).ok_or_else(bad_request)?;
    let mut authorized = shared.credentials.is_none();
    for line in lines {
        let (name, value) = line.split_once(':').ok_or_else(bad_request)?;
        if name.is_empty() || name.contains([' ', '\t']) {
            return Err(bad_request());
        }
        if let Some(credentials) = &shared.credentials
            && name.eq_ignore_ascii_case("proxy-authorization")
            && let Some((scheme, token)) = value.trim().split_once(' ')
            && scheme.eq_ignore_ascii_case("basic")
            && token.trim() == credentials.basic
        {
            authorized = true;
        }
    }
    if !authorized {
        let challenge = format!("Proxy-Authenticate: Basic realm=\"{REALM}\"\r\n");
        return Err(response(407, "Proxy Authentication Required", &challenge));
    }
    Ok(Connect {
        authority: target,
        host,
        port,
    })
}

/// Splits an authority-form target, `host:port` or `[v6]:port`, into the host to connect to and
/// a non-zero port. `None` if it is not one.
fn parse_authority(target: &str) -> Option<(&str, u16)> {
    let (host, port) = if let Some(bracketed) = target.strip_prefix('[') {
        let (v6, port) = bracketed.split_once("]:")?;
        v6.parse::<Ipv6Addr>().ok()?;
        (v6, port)
    } else {
        let (host, port) = target.rsplit_once(':')?;
        let name_like = host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
        if host.is_empty() || !name_like {
            return None;
        }
        (host, port)
    };
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let port = port.parse::<u16>().ok().filter(|&p| p != 0)?;
    Some((host, port))
}

/// A complete response without a body that closes the connection; `extra` is header lines,
/// each ending in CRLF.
fn response(code: u16, reason: &str, extra: &str) -> String {
    format!("HTTP/1.1 {code} {reason}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_in_authority_form_parse() {
        assert_eq!(
            parse_authority("example.com:443"),
            Some(("example.com", 443))
        );
        assert_eq!(parse_authority("127.0.0.1:6443"), Some(("127.0.0.1", 6443)));
        assert_eq!(parse_authority("[::1]:8443"), Some(("::1", 8443)));
        for bad in [
            "example.com",
            ":443",
            "example.com:",
            "example.com:0",
            "example.com:65536",
            "example.com:+1",
            "::1:443",
            "[::1]443",
            "[nope]:443",
            "a b:443",
            "user@host:443",
            "http://host:443",
        ] {
            assert_eq!(parse_authority(bad), None, "{bad}");
        }
    }
}
