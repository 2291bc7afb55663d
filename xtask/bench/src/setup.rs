//! What a table of the bench is run under: the scenario (when the updates come), the pods'
//! shape, how the server cuts its watch streams and the transport. The parent loops over
//! scenario × shape; frames and transport are one choice per run, passed to every server.

use kcache_testing::workload::PodShape;
use kcache_testing_server::WatchFrames;

/// When the updates reach the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// The updates are held back until the client has synced and is idle, then released as
    /// one burst: sync and watch throughput apart.
    Quiet,
    /// The updates are already queued behind the initial state: the list is served as of the
    /// resource version before them, and they follow it at once (after the initial-events
    /// bookmark of a streaming list, from the list's resource version on the watch after a
    /// paginated one), as on a busy cluster. The client syncs while they pour in.
    Backlog,
}

impl Scenario {
    /// The scenario named `name` (`quiet` or `backlog`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "quiet" => Some(Self::Quiet),
            "backlog" => Some(Self::Backlog),
            _ => None,
        }
    }

    /// Its name, as [`parse`](Self::parse) takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Quiet => "quiet",
            Self::Backlog => "backlog",
        }
    }
}

/// The server's cut of its watch streams, from `--frames`: `lines` (its default, 64 KiB of
/// whole lines), `lines:N`, `event` (one event per write) or `split:N` (exactly N-byte writes
/// cutting lines anywhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Frames(pub WatchFrames);

impl Frames {
    /// Parses the text of `--frames`.
    pub fn parse(text: &str) -> Option<Self> {
        let bytes = |n: &str| n.parse::<usize>().ok().filter(|&n| n > 0);
        let frames = match text.split_once(':') {
            None if text == "lines" => WatchFrames::default(),
            None if text == "event" => WatchFrames::PerEvent,
            Some(("lines", n)) => WatchFrames::Lines(bytes(n)?),
            Some(("split", n)) => WatchFrames::Split(bytes(n)?),
            _ => return None,
        };
        Some(Self(frames))
    }

    /// The text [`parse`](Self::parse) takes back (what the server child is given).
    pub fn arg(self) -> String {
        match self.0 {
            WatchFrames::Lines(n) if WatchFrames::Lines(n) == WatchFrames::default() => {
                "lines".to_owned()
            }
            WatchFrames::Lines(n) => format!("lines:{n}"),
            WatchFrames::PerEvent => "event".to_owned(),
            WatchFrames::Split(n) => format!("split:{n}"),
            _ => "lines".to_owned(),
        }
    }

    /// How a table's title names it.
    pub fn describe(self) -> String {
        match self.0 {
            WatchFrames::Lines(n) if n % 1024 == 0 => {
                format!("frames: whole lines, up to {} KiB a write", n / 1024)
            }
            WatchFrames::Lines(n) => format!("frames: whole lines, up to {n} bytes a write"),
            WatchFrames::PerEvent => "frames: one event per write".to_owned(),
            WatchFrames::Split(n) => format!("frames: {n}-byte writes cutting lines anywhere"),
            _ => "frames: the server's default".to_owned(),
        }
    }
}

/// How the clients reach the server, from `--transport`. Every client of a run uses the same
/// one; kube-rs speaks HTTP/1.1 in every case, kcache's own client HTTP/2 when it is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// Plain HTTP/1.1 (`http`).
    #[default]
    Http,
    /// HTTPS with HTTP/2 offered by ALPN (`https`).
    Https,
    /// HTTPS with only HTTP/1.1 offered (`https-h1`).
    HttpsH1,
}

impl Transport {
    /// The transport named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "http" => Some(Self::Http),
            "https" => Some(Self::Https),
            "https-h1" => Some(Self::HttpsH1),
            _ => None,
        }
    }

    /// Its name, as [`parse`](Self::parse) takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
            Self::HttpsH1 => "https-h1",
        }
    }

    /// Whether the server serves TLS.
    pub fn tls(self) -> bool {
        self != Self::Http
    }

    /// How a table's title names it.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Http => "transport: plain HTTP/1.1",
            Self::Https => {
                "transport: HTTPS, HTTP/2 offered (kcache's client on HTTP/2, kube-rs's on HTTP/1.1)"
            }
            Self::HttpsH1 => "transport: HTTPS, only HTTP/1.1 offered (every client on HTTP/1.1)",
        }
    }
}

/// One table's setting: a scenario and a shape, under the run's frames and transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    pub scenario: Scenario,
    pub shape: PodShape,
    pub frames: Frames,
    pub transport: Transport,
}

impl Setup {
    /// The table's title, for `pods` pods and `updates` updates.
    pub fn title(&self, pods: usize, updates: usize) -> String {
        format!(
            "{} scenario: {pods} {} pods, {updates} updates; {}; {}",
            self.scenario.name(),
            self.shape.name(),
            self.frames.describe(),
            self.transport.describe()
        )
    }

    /// The arguments that give this setting to a child (`--scenario S --shape S ...`).
    pub fn args(&self) -> Vec<String> {
        vec![
            "--scenario".to_owned(),
            self.scenario.name().to_owned(),
            "--shape".to_owned(),
            self.shape.name().to_owned(),
            "--frames".to_owned(),
            self.frames.arg(),
            "--transport".to_owned(),
            self.transport.name().to_owned(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        for text in ["lines", "lines:4096", "event", "split:1", "split:4096"] {
            let frames = Frames::parse(text).map(Frames::arg);
            assert_eq!(frames.as_deref(), Some(text));
        }
        for bad in [
            "", "line", "split", "split:", "split:0", "split:x", "event:3",
        ] {
            assert_eq!(Frames::parse(bad), None, "{bad}");
        }
    }
}
