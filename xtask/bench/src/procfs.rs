//! What the kernel says about this process: resident memory (`VmRSS`, and its high-water mark
//! `VmHWM`, which `clear_refs` resets) and CPU time, from `/proc/self`; and the memory the
//! machine has to give (`MemAvailable` of `/proc/meminfo`).

use std::time::Duration;

type BoxError = Box<dyn std::error::Error>;

/// A line `NAME:   123 kB` of `file`, in bytes.
fn kb_line(file: &str, name: &str) -> Result<usize, BoxError> {
    let text = std::fs::read_to_string(file)?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .ok_or_else(|| format!("no {name} in {file}"))?;
    let kb: usize = line
        .split_whitespace()
        .next()
        .ok_or_else(|| format!("empty {name} in {file}"))?
        .parse()?;
    Ok(kb * 1024)
}

/// A line `NAME:   123 kB` of `/proc/self/status`, in bytes.
fn status_bytes(name: &str) -> Result<usize, BoxError> {
    kb_line("/proc/self/status", name)
}

/// The memory the machine can give without swapping (`MemAvailable`), in bytes.
pub fn mem_available() -> Result<usize, BoxError> {
    kb_line("/proc/meminfo", "MemAvailable")
}

/// Resident memory now.
pub fn rss() -> Result<usize, BoxError> {
    status_bytes("VmRSS")
}

/// The most resident memory since the process started or since [`reset_peak_rss`].
pub fn peak_rss() -> Result<usize, BoxError> {
    status_bytes("VmHWM")
}

/// Resets the high-water mark to the current resident memory (`echo 5 > /proc/self/clear_refs`).
pub fn reset_peak_rss() -> Result<(), BoxError> {
    std::fs::write("/proc/self/clear_refs", "5")?;
    Ok(())
}

/// The bytes received on the loopback interface so far (`lo` of `/proc/net/dev`): the bench's
/// server and clients talk over it and nothing else does, so over a client's sync this is what
/// the server sent it (with the TCP/IP headers, a few bytes per 64 KiB) and the little it sent
/// the server.
pub fn loopback_bytes() -> Result<u64, BoxError> {
    let text = std::fs::read_to_string("/proc/net/dev")?;
    let line = text
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("lo:"))
        .ok_or("no lo in /proc/net/dev")?;
    let received = line
        .split_whitespace()
        .next()
        .ok_or("empty lo line in /proc/net/dev")?;
    Ok(received.parse()?)
}

/// CPU time of this process so far, and its minor page faults.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cpu {
    pub user: Duration,
    pub system: Duration,
    pub minor_faults: u64,
}

impl Cpu {
    /// Now, from `/proc/self/stat` (in clock ticks of 10 ms).
    pub fn now() -> Result<Self, BoxError> {
        let stat = std::fs::read_to_string("/proc/self/stat")?;
        // The fields after the command name, which is in parentheses and may hold spaces.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .ok_or("unreadable /proc/self/stat")?
            .1
            .split_whitespace()
            .collect();
        let field = |i: usize| -> Result<u64, BoxError> {
            Ok(fields
                .get(i)
                .ok_or("short /proc/self/stat")?
                .parse::<u64>()?)
        };
        // After the name: state (0), ..., minflt (7), ..., utime (11), stime (12).
        const TICK_MS: u64 = 10;
        Ok(Self {
            user: Duration::from_millis(field(11)? * TICK_MS),
            system: Duration::from_millis(field(12)? * TICK_MS),
            minor_faults: field(7)?,
        })
    }

    /// The time and faults since `earlier`.
    pub fn since(self, earlier: Self) -> Self {
        Self {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
        }
    }
}
