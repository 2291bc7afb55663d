//! [`InformerLogs`]: the rate limits of the lines an informer's handlers can repeat once per
//! event (a handler falling behind, a handler's panics): one [`LogLimiter`] per cause, shared
//! by every handler of the informer, so each cause logs at most
//! [`LOG_BURST`](kcache_reflector::LOG_BURST) lines a minute per informer and the next line
//! says how many were held back (its `suppressed` field). Each line names the informer
//! (`informer=pods`) and the handler.

use std::sync::Arc;

use kcache_reflector::LogLimiter;

/// The informer's name and one limiter per cause; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct InformerLogs {
    /// The informer's name, the `informer` field of its lines.
    pub(crate) informer: String,
    /// "an event handler is falling behind".
    pub(crate) behind: LogLimiter,
    /// "an event handler panicked".
    pub(crate) panics: LogLimiter,
}

impl InformerLogs {
    /// The limits of the informer named `informer`.
    pub(crate) fn new(informer: &str) -> Arc<Self> {
        Arc::new(Self {
            informer: informer.to_owned(),
            ..Self::default()
        })
    }
}
