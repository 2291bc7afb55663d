//! What the kernel says about this process: resident memory (`VmRSS`, and its high-water mark
//! `VmHWM`, which `clear_refs` resets), where the resident memory is (anonymous or file-backed,
//! and glibc malloc's own count of its arenas) and CPU time, from `/proc/self`; and the memory
//! the machine has to give (`MemAvailable` of `/proc/meminfo`).

use std::time::Duration;

type BoxError = Box<dyn std::error::Error>;

/// A line `NAME:   123 kB` of `file`, in bytes.
fn kb_line(file: &str, name: &str) -> Result<usize, BoxError> {
    kb_of(&std::fs::read_to_string(file)?, file, name)
}

/// A line `NAME:   123 kB` of `text` (read from `file`), in bytes.
fn kb_of(text: &str, file: &str, name: &str) -> Result<usize, BoxError> {
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

/// Where a process's resident memory is: anonymous pages (malloc's arenas, thread stacks, the
/// runtime's own mappings) and file-backed ones (the program and its libraries), with glibc
/// malloc's own count of its arenas (`mallinfo2`): the bytes of the chunks it has handed out,
/// each with its header and rounding, and the bytes free in its arenas, kept for reuse (an
/// upper bound of what of them is resident: the top of an arena may never have been touched).
/// The malloc figures are zero under another allocator (`--features mimalloc`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resident {
    pub anon: usize,
    pub file: usize,
    pub malloc_in_use: usize,
    pub malloc_free: usize,
}

impl Resident {
    /// Now, from `/proc/self/status` (`RssAnon`; `RssFile` and `RssShmem`) and `mallinfo2`.
    pub fn now() -> Result<Self, BoxError> {
        const STATUS: &str = "/proc/self/status";
        let text = std::fs::read_to_string(STATUS)?;
        let (malloc_in_use, malloc_free) = malloc_arenas();
        Ok(Self {
            anon: kb_of(&text, STATUS, "RssAnon")?,
            file: kb_of(&text, STATUS, "RssFile")? + kb_of(&text, STATUS, "RssShmem")?,
            malloc_in_use,
            malloc_free,
        })
    }

    /// The four figures as the fields of a line, in bytes.
    pub fn fields(&self) -> String {
        format!(
            "{} {} {} {}",
            self.anon, self.file, self.malloc_in_use, self.malloc_free
        )
    }

    /// The four figures from the fields [`Resident::fields`] wrote.
    pub fn parse(fields: &[&str]) -> Result<Self, BoxError> {
        let [anon, file, malloc_in_use, malloc_free] = fields else {
            return Err(format!("expected 4 memory fields, got {fields:?}").into());
        };
        Ok(Self {
            anon: anon.parse()?,
            file: file.parse()?,
            malloc_in_use: malloc_in_use.parse()?,
            malloc_free: malloc_free.parse()?,
        })
    }
}

/// glibc malloc's bytes in use (chunks handed out, arenas and mmapped blocks) and free in its
/// arenas, over every arena (`mallinfo2`, glibc 2.33 and later).
#[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "mimalloc")))]
fn malloc_arenas() -> (usize, usize) {
    #[repr(C)]
    #[derive(Default)]
    struct MallInfo2 {
        arena: usize,
        ordblks: usize,
        smblks: usize,
        hblks: usize,
        hblkhd: usize,
        usmblks: usize,
        fsmblks: usize,
        uordblks: usize,
        fordblks: usize,
        keepcost: usize,
    }
    unsafe extern "C" {
        fn mallinfo2() -> MallInfo2;
    }
    // SAFETY: mallinfo2 takes no arguments, locks each arena while it reads it, and returns
    // its figures by value.
    let info = unsafe { mallinfo2() };
    (info.uordblks + info.hblkhd, info.fordblks)
}

/// Another allocator than glibc's: no malloc figures.
#[cfg(not(all(target_os = "linux", target_env = "gnu", not(feature = "mimalloc"))))]
fn malloc_arenas() -> (usize, usize) {
    (0, 0)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_memory_reads_back_from_its_fields() {
        let now = Resident::now().expect("this process's status");
        assert!(now.anon > 0 && now.file > 0, "{now:?}");
        let fields = now.fields();
        let fields: Vec<&str> = fields.split_whitespace().collect();
        assert_eq!(Resident::parse(&fields).expect("its own fields"), now);
        assert!(Resident::parse(&fields[..3]).is_err());
        assert!(Resident::parse(&["1", "2", "x", "4"]).is_err());
    }

    #[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "mimalloc")))]
    #[test]
    fn malloc_counts_a_block_it_hands_out() {
        let before = malloc_arenas().0;
        // Far larger than anything the other tests of this binary hold, so that their frees
        // on other threads cannot hide it.
        let block = std::hint::black_box(vec![1u8; 8 << 20]);
        let after = malloc_arenas().0;
        assert!(after >= before + (6 << 20), "{before} then {after}");
        drop(block);
    }
}
