//! [`RetryWithDeadline`]: how long a reflector keeps re-watching after internal errors before it
//! relists (client-go's `RetryWithDeadline`, used for `MaxInternalErrorRetryDuration`).

use std::time::Duration;

use tokio::time::Instant;

use crate::Error;

/// Errors within a window: retrying is allowed while the first retryable error of the current
/// run of errors is at most `max` old. A run ends (and the window starts afresh) when the next
/// error comes `reset_after` or more after the previous one.
///
/// `max` zero never retries (client-go's default).
///
/// ```
/// use std::time::Duration;
/// use kcache_reflector::{Error, RetryWithDeadline, Status};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let mut retry = RetryWithDeadline::new(Duration::from_secs(30), Duration::from_secs(60));
/// let internal = Error::from(Status::internal_error("etcd timeout"));
/// retry.after(&internal);
/// assert!(retry.should_retry());
/// tokio::time::sleep(Duration::from_secs(31)).await;
/// retry.after(&internal);
/// assert!(!retry.should_retry(), "the run of errors is older than 30 s");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RetryWithDeadline {
    max: Duration,
    reset_after: Duration,
    first: Option<Instant>,
    last: Option<Instant>,
}

impl RetryWithDeadline {
    /// A window of `max`; a gap of `reset_after` between errors starts a new run.
    pub fn new(max: Duration, reset_after: Duration) -> Self {
        Self {
            max,
            reset_after,
            first: None,
            last: None,
        }
    }

    /// Records the outcome of an attempt: an internal error (a 500 `InternalError` status)
    /// extends the run of errors; anything else is ignored.
    pub fn after(&mut self, error: &Error) {
        if !error.is_internal_error() {
            return;
        }
        let now = Instant::now();
        if self.last.is_some_and(|last| now - last >= self.reset_after) {
            self.reset();
        }
        self.first.get_or_insert(now);
        self.last = Some(now);
    }

    /// Whether to retry: the current run of errors started at most `max` ago. Once it has not,
    /// the window starts afresh.
    pub fn should_retry(&mut self) -> bool {
        if self.max.is_zero() {
            return false;
        }
        if self
            .first
            .is_some_and(|first| Instant::now() - first <= self.max)
        {
            return true;
        }
        self.reset();
        false
    }

    fn reset(&mut self) {
        self.first = None;
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Status;

    fn internal() -> Error {
        Error::from(Status::internal_error("boom"))
    }

    #[tokio::test(start_paused = true)]
    async fn zero_never_retries() {
        let mut r = RetryWithDeadline::new(Duration::ZERO, Duration::from_secs(60));
        r.after(&internal());
        assert!(!r.should_retry());
    }

    #[tokio::test(start_paused = true)]
    async fn other_errors_do_not_open_a_window() {
        let mut r = RetryWithDeadline::new(Duration::from_secs(30), Duration::from_secs(60));
        r.after(&Error::from(Status::expired("old")));
        assert!(!r.should_retry());
    }

    #[tokio::test(start_paused = true)]
    async fn the_window_counts_from_the_first_error_of_a_run() {
        let mut r = RetryWithDeadline::new(Duration::from_secs(30), Duration::from_secs(60));
        for _ in 0..3 {
            r.after(&internal());
            assert!(r.should_retry());
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
        r.after(&internal()); // 30 s after the first: still inside
        assert!(r.should_retry());
        tokio::time::sleep(Duration::from_secs(1)).await;
        r.after(&internal());
        assert!(!r.should_retry(), "31 s after the first");
        // The window started afresh: the next error opens a new one.
        r.after(&internal());
        assert!(r.should_retry());
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_gap_starts_a_new_run() {
        let mut r = RetryWithDeadline::new(Duration::from_secs(30), Duration::from_secs(60));
        r.after(&internal());
        assert!(r.should_retry());
        tokio::time::sleep(Duration::from_secs(60)).await;
        r.after(&internal());
        assert!(r.should_retry(), "a new run after a 60 s gap");
    }
}
