//! [`WatchFrames`]: how a watch stream's bytes are cut into the writes (HTTP/1.1 chunks,
//! HTTP/2 DATA frames) a client reads.

/// How the server cuts a watch stream into writes. Each write is one HTTP/1.1 chunk, or as
/// many HTTP/2 DATA frames as its size needs (16 KiB each by default).
///
/// kube-apiserver writes and flushes each event on its own; proxies and load balancers in
/// between merge and re-cut the stream as they please. A client must read any of these the same.
///
/// ```
/// use kcache_testing_server::{FakeApiServer, WatchFrames};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // Every event in a write of its own, as kube-apiserver sends them.
/// let server = FakeApiServer::builder()
///     .watch_frames(WatchFrames::PerEvent)
///     .start()
///     .await?;
/// # server.shutdown().await;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WatchFrames {
    /// Events ready together (the initial events of a watch-list, a replay, a burst) share a
    /// write of whole lines, sent once it holds this many bytes or nothing more is ready
    /// (the default: 64 KiB).
    Lines(usize),
    /// Every event in a write of its own.
    PerEvent,
    /// Writes of exactly this many bytes (the last before a wait may be shorter), cutting
    /// lines anywhere, as a proxy that re-frames the stream does. Zero counts as one.
    Split(usize),
}

impl Default for WatchFrames {
    fn default() -> Self {
        Self::Lines(64 * 1024)
    }
}

impl WatchFrames {
    /// Whether lines wait for more before they are written.
    pub(crate) fn batches(self) -> bool {
        !matches!(self, Self::PerEvent)
    }

    /// The bytes a batch may grow to before it is written.
    pub(crate) fn limit(self) -> usize {
        match self {
            Self::Lines(n) | Self::Split(n) => n.max(1),
            Self::PerEvent => 0,
        }
    }
}
