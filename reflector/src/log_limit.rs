//! [`LogLimiter`]: the one rate limit of kcache's log lines that can repeat (once per event,
//! per request or per round): at most [`LOG_BURST`] lines per [`LOG_WINDOW`] and cause, the
//! others counted, and the count carried by the next line let through (its `suppressed` field).
//!
//! The reflector keeps one limiter per cause (list and watch failures, undecodable objects,
//! store writes, the wait for a streaming list's bookmark), and so do the informer (a handler
//! falling behind, handler panics, refused cache writes), the leader elector and the reconcile
//! runner: a cause that repeats a million times logs ten lines a minute, and says how many it
//! held back.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// At most this many lines of one cause per [`LOG_WINDOW`] (per reflector, informer, elector or
/// runner); the others are counted and the next line says how many.
pub const LOG_BURST: u32 = 10;
/// The window of [`LOG_BURST`].
pub const LOG_WINDOW: Duration = Duration::from_secs(60);

/// Lets through [`LOG_BURST`] lines per [`LOG_WINDOW`] and counts the rest. Thread-safe; reads
/// tokio's clock (so a paused test clock drives it, and the system clock off a runtime).
///
/// ```
/// use kcache_reflector::{LOG_BURST, LogLimiter};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let limiter = LogLimiter::new();
/// for _ in 0..LOG_BURST {
///     let permit = limiter.allow().expect("within the burst");
///     assert_eq!(permit.suppressed(), None);
/// }
/// assert!(limiter.allow().is_none(), "held back");
/// assert!(limiter.allow().is_none(), "held back");
/// tokio::time::advance(kcache_reflector::LOG_WINDOW).await;
/// // The next line says how many were held back.
/// let permit = limiter.allow().expect("a new window");
/// assert_eq!(permit.suppressed(), Some(2));
/// tracing::warn!(suppressed = permit.suppressed(), "the cause, once more");
/// # }
/// ```
#[derive(Debug, Default)]
pub struct LogLimiter {
    window: Mutex<Window>,
}

#[derive(Debug, Default)]
struct Window {
    start: Option<Instant>,
    lines: u32,
    suppressed: u64,
}

/// Leave to log one line, from [`LogLimiter::allow`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a permit is for logging a line"]
pub struct LogPermit {
    held_back: u64,
}

impl LogPermit {
    /// How many lines of this cause were held back since the last one let through.
    pub fn held_back(self) -> u64 {
        self.held_back
    }

    /// The line's `suppressed` field: the count when lines were held back, else `None`, which
    /// `tracing` leaves out of the line.
    pub fn suppressed(self) -> Option<u64> {
        (self.held_back > 0).then_some(self.held_back)
    }
}

impl LogLimiter {
    /// A limiter with a fresh window.
    pub fn new() -> Self {
        Self::default()
    }

    /// A permit when a line may be logged now; `None` (and the line counted) when this
    /// window's [`LOG_BURST`] is spent.
    pub fn allow(&self) -> Option<LogPermit> {
        self.allow_at(Instant::now())
    }

    /// [`allow`](Self::allow) as of `now`.
    pub fn allow_at(&self, now: Instant) -> Option<LogPermit> {
        let mut w = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        if w.start
            .is_none_or(|s| now.saturating_duration_since(s) >= LOG_WINDOW)
        {
            w.start = Some(now);
            w.lines = 0;
        }
        if w.lines < LOG_BURST {
            w.lines += 1;
            Some(LogPermit {
                held_back: std::mem::take(&mut w.suppressed),
            })
        } else {
            w.suppressed += 1;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held_back(p: Option<LogPermit>) -> Option<u64> {
        p.map(LogPermit::held_back)
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_per_window_then_a_count() {
        let l = LogLimiter::new();
        let now = Instant::now();
        for _ in 0..LOG_BURST {
            assert_eq!(held_back(l.allow_at(now)), Some(0));
        }
        assert_eq!(l.allow_at(now), None);
        assert_eq!(l.allow_at(now + Duration::from_secs(59)), None);
        assert_eq!(held_back(l.allow_at(now + LOG_WINDOW)), Some(2));
        assert_eq!(held_back(l.allow_at(now + LOG_WINDOW)), Some(0));
    }

    #[test]
    fn the_field_is_left_out_when_nothing_was_held_back() {
        assert_eq!(LogPermit { held_back: 0 }.suppressed(), None);
        assert_eq!(LogPermit { held_back: 7 }.suppressed(), Some(7));
    }

    #[test]
    fn works_off_a_runtime_on_the_system_clock() {
        let l = LogLimiter::new();
        assert!(l.allow().is_some());
    }
}
