//! [`RefusingPort`]: a loopback port where every connection is refused, for as long as the test
//! holds it.
//!
//! Binding a listener, reading its port and dropping it leaves a port that another test's
//! server may take a moment later (tests run in parallel and ports are reused): a test that
//! expects "connection refused" then talks to a stranger. A socket that is bound but never
//! listens keeps the port reserved and refuses every connection.

use std::io;

/// A reserved loopback port that refuses connections until dropped.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let refusing = kcache_testing_server::RefusingPort::new()?;
/// let e = tokio::net::TcpStream::connect(("127.0.0.1", refusing.port())).await.unwrap_err();
/// assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct RefusingPort {
    _socket: tokio::net::TcpSocket,
    port: u16,
}

impl RefusingPort {
    /// Reserves a port on 127.0.0.1.
    ///
    /// # Errors
    ///
    /// The socket cannot be made or bound.
    pub fn new() -> io::Result<Self> {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind((std::net::Ipv4Addr::LOCALHOST, 0).into())?;
        let port = socket.local_addr()?.port();
        Ok(Self {
            _socket: socket,
            port,
        })
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}
