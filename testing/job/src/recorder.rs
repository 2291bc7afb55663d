//! A minimal in-process recorder for the `metrics` facade: what the kcache crates record (see
//! `kcache_informer::metrics`), kept in atomics and printed as text. A real program installs an
//! exporter instead (a Prometheus endpoint, statsd...); this one keeps the job free of an HTTP
//! exporter's dependencies.
//!
//! Not `metrics-util`'s `DebuggingRecorder` (the tests' recorder): it keeps every histogram
//! sample until a snapshot takes them, so a job that runs for hours against a cluster (every
//! watch event records a few durations) would grow without bound. Here a histogram is its
//! count, sum and maximum: memory is fixed by the number of metrics, whatever the run's length.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};

/// The count, sum and maximum of a histogram's values.
#[derive(Debug, Default)]
struct Summary(Mutex<(u64, f64, f64)>);

impl HistogramFn for Summary {
    fn record(&self, value: f64) {
        let mut s = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        s.0 += 1;
        s.1 += value;
        s.2 = s.2.max(value);
    }
}

/// One registered metric.
#[derive(Debug)]
enum Value {
    Counter(Arc<AtomicU64>),
    /// An `f64`'s bits, as `metrics` implements gauges over an `AtomicU64`.
    Gauge(Arc<AtomicU64>),
    Histogram(Arc<Summary>),
}

/// Every metric registered, by its name and labels as Prometheus writes them
/// (`kcache_queue_depth{name="pods"}`).
#[derive(Debug, Default)]
pub(crate) struct Collector {
    metrics: Mutex<BTreeMap<String, Value>>,
}

/// `name{label="value",...}`, labels in the order given.
fn render(key: &Key) -> String {
    let mut out = key.name().to_owned();
    let mut labels = key.labels().peekable();
    if labels.peek().is_some() {
        out.push('{');
        for (i, label) in labels.enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{}={:?}", label.key(), label.value());
        }
        out.push('}');
    }
    out
}

impl Collector {
    /// The value registered under `key`, made by `make` the first time.
    fn entry<H>(&self, key: &Key, make: impl FnOnce() -> Value, pick: impl Fn(&Value) -> H) -> H {
        let mut metrics = self.metrics.lock().unwrap_or_else(PoisonError::into_inner);
        pick(metrics.entry(render(key)).or_insert_with(make))
    }

    /// One line per metric whose name starts with `prefix`, sorted: counters and gauges with
    /// their value, histograms with their count, sum and maximum.
    pub(crate) fn lines(&self, prefix: &str) -> Vec<String> {
        let metrics = self.metrics.lock().unwrap_or_else(PoisonError::into_inner);
        metrics
            .iter()
            .filter(|(key, _)| key.starts_with(prefix))
            .map(|(key, value)| match value {
                Value::Counter(c) => format!("{key} {}", c.load(Ordering::Relaxed)),
                Value::Gauge(g) => format!("{key} {}", f64::from_bits(g.load(Ordering::Relaxed))),
                Value::Histogram(h) => {
                    let (count, sum, max) = *h.0.lock().unwrap_or_else(PoisonError::into_inner);
                    format!("{key} count={count} sum={sum:.6} max={max:.6}")
                }
            })
            .collect()
    }
}

/// A handle of the kind asked for; another kind registered under the same key gets a no-op.
impl Recorder for Collector {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        self.entry(
            key,
            || Value::Counter(Arc::default()),
            |v| match v {
                Value::Counter(c) => Counter::from_arc(Arc::clone(c)),
                _ => Counter::noop(),
            },
        )
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        self.entry(
            key,
            || Value::Gauge(Arc::default()),
            |v| match v {
                Value::Gauge(g) => Gauge::from_arc(Arc::clone(g)),
                _ => Gauge::noop(),
            },
        )
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        self.entry(
            key,
            || Value::Histogram(Arc::default()),
            |v| match v {
                Value::Histogram(h) => Histogram::from_arc(Arc::clone(h)),
                _ => Histogram::noop(),
            },
        )
    }
}
