//! How a reflector tells of failures: a WARN line with the whole cause chain (at most
//! [`LOG_BURST`] per [`LOG_WINDOW`], the rest counted and summed up in the next line), the error
//! hooks, undecodable objects reported once per version, and the counters (plain atomics for
//! the reflector's accessors, and the [`metrics`](crate::metrics) handles).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use kcache_store::ObjectKey;
use metrics::Counter;
use tokio::time::Instant;

use crate::metrics::ErrorCounters;
use crate::{DecodeError, Error, ErrorChain};

/// At most this many WARN lines of one kind (list/watch failures, undecodable objects) per
/// [`LOG_WINDOW`] and reflector; the others are counted and the next line says how many.
pub const LOG_BURST: u32 = 10;
/// The window of [`LOG_BURST`].
pub const LOG_WINDOW: Duration = Duration::from_secs(60);
/// How many `(key, resourceVersion)` pairs of undecodable objects are remembered so that each
/// is reported once; past this the memory starts over (a version may then be reported again).
const REPORTED_CAPACITY: usize = 16_384;

/// A hook that is told about errors.
pub type ErrorHook = Arc<dyn Fn(&Error) + Send + Sync>;

/// Lets through [`LOG_BURST`] lines per [`LOG_WINDOW`] and counts the rest.
#[derive(Debug, Default)]
struct LogLimiter {
    window_start: Option<Instant>,
    in_window: u32,
    suppressed: u64,
}

impl LogLimiter {
    /// `Some(n)` when a line may be logged now, `n` being how many were held back before it.
    fn allow(&mut self, now: Instant) -> Option<u64> {
        if self
            .window_start
            .is_none_or(|s| now.saturating_duration_since(s) >= LOG_WINDOW)
        {
            self.window_start = Some(now);
            self.in_window = 0;
        }
        if self.in_window < LOG_BURST {
            self.in_window += 1;
            Some(std::mem::take(&mut self.suppressed))
        } else {
            self.suppressed += 1;
            None
        }
    }
}

#[derive(Debug, Default)]
struct State {
    errors: LogLimiter,
    decode: LogLimiter,
    reported: HashSet<(ObjectKey, String)>,
}

/// The reflector's failure reporting; see the module docs.
pub(crate) struct Reporter {
    watch_error_hook: Option<ErrorHook>,
    decode_error_hook: Option<ErrorHook>,
    state: Mutex<State>,
    errors: AtomicU64,
    decode_errors: AtomicU64,
    /// [`WATCH_ERRORS_TOTAL`](crate::metrics::WATCH_ERRORS_TOTAL).
    errors_metric: Counter,
    /// [`DECODE_ERRORS_TOTAL`](crate::metrics::DECODE_ERRORS_TOTAL).
    decode_errors_metric: Counter,
}

impl Reporter {
    /// A reporter telling the hooks, counting into the reflector's error `counters` too.
    pub(crate) fn new(
        watch_error_hook: Option<ErrorHook>,
        decode_error_hook: Option<ErrorHook>,
        counters: ErrorCounters,
    ) -> Self {
        Self {
            watch_error_hook,
            decode_error_hook,
            state: Mutex::new(State::default()),
            errors: AtomicU64::new(0),
            decode_errors: AtomicU64::new(0),
            errors_metric: counters.watch_errors,
            decode_errors_metric: counters.decode_errors,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A list or watch failure: counted, logged (rate-limited) with its cause chain, and given to
    /// the watch-error hook. An undecodable event that ends a watch (or a streaming-list
    /// attempt) was reported by [`decode`](Self::decode) when it was found: here it is only
    /// logged, so no hook hears the same failure twice.
    pub(crate) fn error(&self, e: &Error, what: &str) {
        // A list body that is not a list was reported by no one yet; an object was.
        let already_reported = matches!(e, Error::Decode(d) if d.is_of_an_object());
        if !already_reported {
            self.errors.fetch_add(1, Ordering::Relaxed);
            self.errors_metric.increment(1);
        }
        let allowed = self.state().errors.allow(Instant::now());
        if let Some(suppressed) = allowed {
            if suppressed > 0 {
                tracing::warn!(error = %ErrorChain(e), suppressed, "{what}");
            } else {
                tracing::warn!(error = %ErrorChain(e), "{what}");
            }
        }
        if let Some(hook) = self.watch_error_hook.as_ref().filter(|_| !already_reported) {
            hook(e);
        }
    }

    /// An undecodable object: reported once per `(key, resourceVersion)` when both are known
    /// (always otherwise), counted, logged (rate-limited) and given to the decode-error hook, or
    /// to the watch-error hook when there is no decode-error hook. `false` when this version
    /// had been reported before.
    pub(crate) fn decode(&self, d: &DecodeError) -> bool {
        let now = Instant::now();
        let allowed = {
            let mut st = self.state();
            let version = d.object.as_ref().and_then(|o| {
                Some((
                    o.key()?,
                    o.resource_version.clone().filter(|r| !r.is_empty())?,
                ))
            });
            if let Some(version) = version {
                if st.reported.contains(&version) {
                    return false;
                }
                if st.reported.len() >= REPORTED_CAPACITY {
                    st.reported.clear();
                }
                st.reported.insert(version);
            }
            st.decode.allow(now)
        };
        self.decode_errors.fetch_add(1, Ordering::Relaxed);
        self.decode_errors_metric.increment(1);
        if let Some(suppressed) = allowed {
            if suppressed > 0 {
                tracing::warn!(error = %d, suppressed, "leaving an undecodable object out of the cache");
            } else {
                tracing::warn!(error = %d, "leaving an undecodable object out of the cache");
            }
        }
        if let Some(hook) = self
            .decode_error_hook
            .as_ref()
            .or(self.watch_error_hook.as_ref())
        {
            hook(&Error::decode(d.clone()));
        }
        true
    }

    /// How many list and watch failures were reported.
    pub(crate) fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// How many undecodable object versions were reported.
    pub(crate) fn decode_errors(&self) -> u64 {
        self.decode_errors.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_per_window_then_a_count() {
        let mut l = LogLimiter::default();
        let now = Instant::now();
        for _ in 0..LOG_BURST {
            assert_eq!(l.allow(now), Some(0));
        }
        assert_eq!(l.allow(now), None);
        assert_eq!(l.allow(now + Duration::from_secs(59)), None);
        assert_eq!(l.allow(now + LOG_WINDOW), Some(2));
        assert_eq!(l.allow(now + LOG_WINDOW), Some(0));
    }

    #[tokio::test(start_paused = true)]
    async fn one_report_per_version() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        let r = Reporter::new(
            None,
            Some(Arc::new(move |e: &Error| {
                s.lock().unwrap().push(e.to_string());
            })),
            ErrorCounters {
                watch_errors: Counter::noop(),
                decode_errors: Counter::noop(),
            },
        );
        let d = |rv: &str| {
            DecodeError::new("list item 0", "bad").with_object(Some(crate::ObjectRef::new(
                Some("ns"),
                "a",
                rv,
            )))
        };
        assert!(r.decode(&d("1")));
        assert!(!r.decode(&d("1")));
        assert!(r.decode(&d("2")));
        assert!(r.decode(&DecodeError::new("watch event", "garbage")));
        assert!(r.decode(&DecodeError::new("watch event", "garbage")));
        assert_eq!(r.decode_errors(), 4);
        assert_eq!(seen.lock().unwrap().len(), 4);
    }
}
