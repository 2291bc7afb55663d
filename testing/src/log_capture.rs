//! [`LogCapture`]: what a test logged through `tracing`, line by line, so it can assert that a
//! failure was logged with its cause (or that a secret was logged nowhere).
//!
//! A minimal subscriber installed as the thread's default: run the test on a current-thread
//! runtime, so everything under test logs on the test's thread. Every level is kept.

use std::fmt::{self, Write as _};
use std::sync::{Arc, Mutex, PoisonError};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// The lines logged while the guard of [`LogCapture::capture`] lives, each as `LEVEL `, the spans it
/// was logged in (`reflector{resource=pods}: `), its message and ` field=value` pairs.
///
/// ```
/// use kcache_testing::LogCapture;
///
/// let (logs, _guard) = LogCapture::capture();
/// let span = tracing::warn_span!("reflector", resource = "pods");
/// span.in_scope(|| tracing::warn!(error = "connection refused", "list failed"));
/// assert_eq!(
///     logs.warnings("list failed"),
///     ["WARN reflector{resource=\"pods\"}: list failed error=\"connection refused\""]
/// );
/// ```
#[derive(Clone, Default)]
pub struct LogCapture(Arc<Mutex<Vec<String>>>, Arc<Mutex<Spans>>);

#[derive(Default)]
struct Spans {
    names: Vec<String>,
    entered: Vec<usize>,
}

impl LogCapture {
    /// Starts capturing on this thread; stops when the guard is dropped.
    pub fn capture() -> (Self, tracing::subscriber::DefaultGuard) {
        install_global();
        let logs = Self::default();
        let guard = tracing::subscriber::set_default(logs.clone());
        tracing::callsite::rebuild_interest_cache();
        (logs, guard)
    }

    /// Every captured line.
    pub fn all(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The captured WARN lines containing `needle`.
    pub fn warnings(&self, needle: &str) -> Vec<String> {
        self.all()
            .into_iter()
            .filter(|l| l.starts_with("WARN ") && l.contains(needle))
            .collect()
    }
}

impl fmt::Debug for LogCapture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogCapture")
            .field(
                "lines",
                &self.0.lock().unwrap_or_else(PoisonError::into_inner).len(),
            )
            .finish_non_exhaustive()
    }
}

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

impl Subscriber for LogCapture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let mut fields = Line(String::new());
        attrs.record(&mut fields);
        let mut spans = self.1.lock().unwrap_or_else(PoisonError::into_inner);
        let text = format!("{}{{{}}}", attrs.metadata().name(), fields.0.trim_start());
        spans.names.push(text);
        Id::from_u64(u64::try_from(spans.names.len()).unwrap_or(u64::MAX))
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut line = Line(format!("{} ", event.metadata().level()));
        {
            let spans = self.1.lock().unwrap_or_else(PoisonError::into_inner);
            for name in spans.entered.iter().filter_map(|&i| spans.names.get(i - 1)) {
                let _ = write!(line.0, "{name}: ");
            }
        }
        event.record(&mut line);
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(line.0);
    }

    fn enter(&self, id: &Id) {
        if let Ok(i) = usize::try_from(id.into_u64()) {
            self.1
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entered
                .push(i);
        }
    }

    fn exit(&self, _: &Id) {
        self.1
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entered
            .pop();
    }
}

/// A process-wide subscriber that keeps nothing but tells `tracing` that every callsite may be
/// wanted. Without a global one, a callsite first hit on a thread that captures nothing can be
/// cached as never enabled, and a capture on another thread then misses its lines; with it,
/// every event asks the thread's current subscriber.
struct Undecided;

impl Subscriber for Undecided {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Installs [`Undecided`] once per test binary.
fn install_global() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = tracing::subscriber::set_global_default(Undecided);
    });
}
