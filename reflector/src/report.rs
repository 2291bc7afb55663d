//! How a reflector tells of failures: a WARN line with the whole cause chain (rate limited by
//! a [`LogLimiter`] per cause: at most [`LOG_BURST`](crate::LOG_BURST) lines per
//! [`LOG_WINDOW`](crate::LOG_WINDOW), the rest counted and summed up in the next line), the
//! error hooks, undecodable objects reported once per version, and the counters (plain atomics
//! for the reflector's accessors, and the [`metrics`](crate::metrics) handles). The other lines
//! a reflector may repeat (a store write it could not make, the wait for a streaming list's
//! bookmark) are rate limited here too.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kcache_store::ObjectKey;
use metrics::Counter;

use crate::metrics::ErrorCounters;
use crate::{DecodeError, Error, ErrorChain, LogLimiter};

/// How many `(key, resourceVersion)` pairs of undecodable objects are remembered so that each
/// is reported once; past this the memory starts over (a version may then be reported again).
const REPORTED_CAPACITY: usize = 16_384;

/// A hook that is told about errors.
pub type ErrorHook = Arc<dyn Fn(&Error) + Send + Sync>;

/// One limiter per cause of a repeated line.
#[derive(Debug, Default)]
struct Limiters {
    errors: LogLimiter,
    decode: LogLimiter,
    store_writes: LogLimiter,
    awaiting_bookmark: LogLimiter,
}

#[derive(Debug, Default)]
struct State {
    reported: HashSet<(ObjectKey, String)>,
}

/// The reflector's failure reporting; see the module docs.
pub(crate) struct Reporter {
    watch_error_hook: Option<ErrorHook>,
    decode_error_hook: Option<ErrorHook>,
    state: Mutex<State>,
    limiters: Limiters,
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
            limiters: Limiters::default(),
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
        if let Some(permit) = self.limiters.errors.allow() {
            tracing::warn!(error = %ErrorChain(e), suppressed = permit.suppressed(), "{what}");
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
        {
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
        }
        self.decode_errors.fetch_add(1, Ordering::Relaxed);
        self.decode_errors_metric.increment(1);
        if let Some(permit) = self.limiters.decode.allow() {
            tracing::warn!(
                error = %d,
                suppressed = permit.suppressed(),
                "leaving an undecodable object out of the cache"
            );
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

    /// A watch event the store refused (rate limited; the next relist corrects the store).
    pub(crate) fn store_write_failed(&self, e: &kcache_store::Error, key: Option<&ObjectKey>) {
        if let Some(permit) = self.limiters.store_writes.allow() {
            tracing::warn!(
                error = %ErrorChain(e),
                key = key.map(tracing::field::display),
                suppressed = permit.suppressed(),
                "store write failed"
            );
        }
    }

    /// A streaming list still waits for the bookmark that ends its initial events (client-go's
    /// ticker; rate limited with the other lines).
    pub(crate) fn awaiting_bookmark(&self, objects: usize, last_event_secs_ago: u64) {
        if let Some(permit) = self.limiters.awaiting_bookmark.allow() {
            tracing::warn!(
                objects,
                last_event_secs_ago,
                suppressed = permit.suppressed(),
                "still waiting for the bookmark that ends the streaming list's initial events"
            );
        }
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
