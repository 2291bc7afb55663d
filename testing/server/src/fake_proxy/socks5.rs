//! The SOCKS5 side of [`FakeProxy`](super::FakeProxy): the greeting and method choice (RFC 1928
//! section 3), username/password authentication (RFC 1929), the `CONNECT` request (RFC 1928
//! section 4) and its reply (section 6).

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{HANDSHAKE_TIMEOUT, Shared, connect_target, refuse, relay};

const VERSION: u8 = 0x05;
/// The version of the username/password subnegotiation (RFC 1929).
const AUTH_VERSION: u8 = 0x01;

const METHOD_NO_AUTH: u8 = 0x00;
const METHOD_USER_PASSWORD: u8 = 0x02;
const METHOD_NONE_ACCEPTABLE: u8 = 0xFF;

const COMMAND_CONNECT: u8 = 0x01;

const ATYP_IPV4: u8 = 0x01;
const ATYP_DOMAIN: u8 = 0x03;
const ATYP_IPV6: u8 = 0x04;

const REPLY_SUCCEEDED: u8 = 0x00;
const REPLY_GENERAL_FAILURE: u8 = 0x01;
const REPLY_HOST_UNREACHABLE: u8 = 0x04;
const REPLY_CONNECTION_REFUSED: u8 = 0x05;
const REPLY_COMMAND_NOT_SUPPORTED: u8 = 0x07;
const REPLY_ADDRESS_TYPE_NOT_SUPPORTED: u8 = 0x08;

/// Where a handshake ended.
enum Step {
    /// A `CONNECT` to `host:port`; `target` is how the client named it.
    Connect {
        host: String,
        port: u16,
        target: String,
    },
    /// Refused: send these bytes (maybe none) and close.
    Refuse(Vec<u8>),
}

/// Serves one SOCKS5 client.
pub(super) async fn serve(mut client: TcpStream, shared: &Shared) -> io::Result<()> {
    let (host, port, target) =
        match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake(&mut client, shared)).await {
            Ok(Ok(Step::Connect { host, port, target })) => (host, port, target),
            Ok(Ok(Step::Refuse(reply))) => return refuse(client, shared, &reply).await,
            Ok(Err(e)) => return Err(e),
            // Stalled before finishing its request: nothing to answer.
            Err(_) => return Ok(()),
        };
    let upstream = match connect_target(&host, port).await {
        Ok(upstream) => upstream,
        Err(e) => {
            let code = if e.kind() == io::ErrorKind::ConnectionRefused {
                REPLY_CONNECTION_REFUSED
            } else {
                REPLY_HOST_UNREACHABLE
            };
            return refuse(client, shared, &reply(code)).await;
        }
    };
    shared.record_tunnel(target);
    client.write_all(&reply(REPLY_SUCCEEDED)).await?;
    relay(client, upstream, &[]).await
}

/// Reads the greeting, authenticates and reads the request. A client closing midway is an
/// `UnexpectedEof` error.
async fn handshake(client: &mut TcpStream, shared: &Shared) -> io::Result<Step> {
    let [version, count] = read_array(client).await?;
    if version != VERSION {
        // Not SOCKS5 at all: no reply it could understand.
        return Ok(Step::Refuse(Vec::new()));
    }
    let methods = read_vec(client, count).await?;
    let method = match &shared.credentials {
        Some(_) if methods.contains(&METHOD_USER_PASSWORD) => METHOD_USER_PASSWORD,
        None if methods.contains(&METHOD_NO_AUTH) => METHOD_NO_AUTH,
        _ => return Ok(Step::Refuse(vec![VERSION, METHOD_NONE_ACCEPTABLE])),
    };
    client.write_all(&[VERSION, method]).await?;

    if let Some(credentials) = &shared.credentials {
        let failure = || Step::Refuse(vec![AUTH_VERSION, 0x01]);
        let [version, user_len] = read_array(client).await?;
        if version != AUTH_VERSION {
            return Ok(failure());
        }
        let user = read_vec(client, user_len).await?;
        let [password_len] = read_array(client).await?;
        let password = read_vec(client, password_len).await?;
        if user != credentials.user.as_bytes() || password != credentials.password.as_bytes() {
            return Ok(failure());
        }
        client.write_all(&[AUTH_VERSION, 0x00]).await?;
    }

    let [version, command, _reserved, address_type] = read_array(client).await?;
    if version != VERSION {
        return Ok(Step::Refuse(reply(REPLY_GENERAL_FAILURE)));
    }
    let (host, named) = match address_type {
        ATYP_IPV4 => {
            let ip = Ipv4Addr::from(read_array::<4>(client).await?);
            (ip.to_string(), ip.to_string())
        }
        ATYP_DOMAIN => {
            let [len] = read_array(client).await?;
            let name = read_vec(client, len).await?;
            match String::from_utf8(name) {
                Ok(name) if !name.is_empty() => (name.clone(), name),
                _ => return Ok(Step::Refuse(reply(REPLY_GENERAL_FAILURE))),
            }
        }
        ATYP_IPV6 => {
            let ip = Ipv6Addr::from(read_array::<16>(client).await?);
            (ip.to_string(), format!("[{ip}]"))
        }
        _ => return Ok(Step::Refuse(reply(REPLY_ADDRESS_TYPE_NOT_SUPPORTED))),
    };
    let port = u16::from_be_bytes(read_array(client).await?);
    if command != COMMAND_CONNECT {
        return Ok(Step::Refuse(reply(REPLY_COMMAND_NOT_SUPPORTED)));
    }
    Ok(Step::Connect {
        host,
        port,
        target: format!("{named}:{port}"),
    })
}

/// A reply to a request: `code`, then the bound address as IPv4 `0.0.0.0` port 0.
fn reply(code: u8) -> Vec<u8> {
    vec![VERSION, code, 0x00, ATYP_IPV4, 0, 0, 0, 0, 0, 0]
}

async fn read_array<const N: usize>(client: &mut TcpStream) -> io::Result<[u8; N]> {
    let mut buf = [0_u8; N];
    client.read_exact(&mut buf).await?;
    Ok(buf)
}

async fn read_vec(client: &mut TcpStream, len: u8) -> io::Result<Vec<u8>> {
    let mut buf = vec![0_u8; usize::from(len)];
    client.read_exact(&mut buf).await?;
    Ok(buf)
}
