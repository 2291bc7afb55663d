//! Capturing `tracing` output in a test: a minimal subscriber installed as the thread's default
//! (the tests that use it run on a current-thread runtime, so the reflector and the HTTP client
//! log on the test's thread). Every level is kept, so a test can also prove that something is
//! logged nowhere.

use std::fmt::{self, Write as _};
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// The lines logged while the guard of [`Logs::capture`] lives, each as `LEVEL `, the spans it
/// was logged in (`reflector{resource=pods}: `), its message and ` field=value` pairs.
#[derive(Clone, Default)]
pub(crate) struct Logs(Arc<Mutex<Vec<String>>>, Arc<Mutex<Spans>>);

#[derive(Default)]
struct Spans {
    names: Vec<String>,
    entered: Vec<usize>,
}

impl Logs {
    /// Starts capturing on this thread; stops when the guard is dropped.
    pub(crate) fn capture() -> (Self, tracing::subscriber::DefaultGuard) {
        install_global();
        let logs = Self::default();
        let guard = tracing::subscriber::set_default(logs.clone());
        tracing::callsite::rebuild_interest_cache();
        (logs, guard)
    }

    /// Every captured line.
    pub(crate) fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// The captured WARN lines containing `needle`.
    pub(crate) fn warnings(&self, needle: &str) -> Vec<String> {
        self.all()
            .into_iter()
            .filter(|l| l.starts_with("WARN ") && l.contains(needle))
            .collect()
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

impl Subscriber for Logs {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let mut fields = Line(String::new());
        attrs.record(&mut fields);
        let mut spans = self.1.lock().unwrap();
        let text = format!("{}{{{}}}", attrs.metadata().name(), fields.0.trim_start());
        spans.names.push(text);
        Id::from_u64(spans.names.len() as u64)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut line = Line(format!("{} ", event.metadata().level()));
        {
            let spans = self.1.lock().unwrap();
            for &i in &spans.entered {
                let _ = write!(line.0, "{}: ", spans.names[i - 1]);
            }
        }
        event.record(&mut line);
        self.0.lock().unwrap().push(line.0);
    }

    fn enter(&self, id: &Id) {
        let i = usize::try_from(id.into_u64()).unwrap();
        self.1.lock().unwrap().entered.push(i);
    }

    fn exit(&self, _: &Id) {
        self.1.lock().unwrap().entered.pop();
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
