//! The reflector's metrics, recorded through the [`metrics`] facade.
//!
//! Every name starts with `kcache_reflector_` and every metric carries the label
//! [`NAME_LABEL`] (`name`): the reflector's [name](crate::ReflectorBuilder::name), by default
//! what its lister-watcher serves ([`ListerWatcher::resource`](crate::ListerWatcher::resource),
//! e.g. `pods`), the `resource` of its span `reflector{resource=pods}`. Inside an informer it
//! is the informer's name.
//!
//! | name | kind | meaning |
//! |---|---|---|
//! | [`LISTS_TOTAL`] | counter | lists started: each paginated list and each streaming-list attempt |
//! | [`LIST_ERRORS_TOTAL`] | counter | lists (and streaming-list attempts) that failed, a streaming list the server does not serve (answered 400 or 422) included: unlike the watch errors, it is not reported |
//! | [`LIST_DURATION_SECONDS`] | histogram | how long each successful list took, from its first request to the store's replace |
//! | [`RELISTS_TOTAL`] | counter | rounds of list-and-watch started after the store was filled once: each begins with a new list (after a 410, an unreadable event, a failed watch...) |
//! | [`WATCHES_TOTAL`] | counter | watches started: each watch request that opened a stream, and each streaming list that goes on as the watch |
//! | [`WATCH_ERRORS_TOTAL`] | counter | every list and watch failure the reflector reports, as its watch-error hook hears them ([`Reflector::errors`](crate::Reflector::errors)) |
//! | [`EVENTS_TOTAL`] | counter | watch events received (streaming lists' initial events, bookmarks and undecodable events included) |
//! | [`DECODE_ERRORS_TOTAL`] | counter | versions of objects that could not be decoded and were left out ([`Reflector::decode_errors`](crate::Reflector::decode_errors)) |
//! | [`LAST_RESOURCE_VERSION`] | gauge | the last synced resource version, as client-go's store metric reads it: its last 15 characters parsed as an integer (a version that is not a number leaves the gauge as it was) |
//!
//! The handles are registered with the recorder in place when the reflector is
//! [built](crate::ReflectorBuilder::build): install the application's recorder first (as
//! client-go's `SetProvider` applies only to what is created after it). With no recorder every
//! update is a no-op.
//!
//! The `name` label must be unique among the reflectors (and informers) of a program: two with
//! the same name share every series, so their counters add up and their gauges overwrite each
//! other. The default name is the resource, so two reflectors (or informers) of one resource,
//! with different selectors or namespaces say, must each be given a
//! [name](crate::ReflectorBuilder::name) of their own. Nothing checks this (there is no
//! registry of names).

use metrics::{Counter, Gauge, Histogram};

/// The label every kcache metric carries: the reflector's, queue's or informer's name.
pub const NAME_LABEL: &str = "name";

/// Counter: lists started (paginated lists and streaming-list attempts).
pub const LISTS_TOTAL: &str = "kcache_reflector_lists_total";
/// Counter: lists and streaming-list attempts that failed.
pub const LIST_ERRORS_TOTAL: &str = "kcache_reflector_list_errors_total";
/// Histogram, seconds: the duration of each successful list.
pub const LIST_DURATION_SECONDS: &str = "kcache_reflector_list_duration_seconds";
/// Counter: rounds of list-and-watch (each starting with a list) after the store was first
/// filled.
pub const RELISTS_TOTAL: &str = "kcache_reflector_relists_total";
/// Counter: watches started.
pub const WATCHES_TOTAL: &str = "kcache_reflector_watches_total";
/// Counter: every list and watch failure reported.
pub const WATCH_ERRORS_TOTAL: &str = "kcache_reflector_watch_errors_total";
/// Counter: watch events received.
pub const EVENTS_TOTAL: &str = "kcache_reflector_events_total";
/// Counter: undecodable object versions left out of the cache.
pub const DECODE_ERRORS_TOTAL: &str = "kcache_reflector_decode_errors_total";
/// Gauge: the last synced resource version (its last 15 characters, as a number).
pub const LAST_RESOURCE_VERSION: &str = "kcache_reflector_last_resource_version";

/// Every metric name of this module, in the order of the table above.
pub const ALL: &[&str] = &[
    LISTS_TOTAL,
    LIST_ERRORS_TOTAL,
    LIST_DURATION_SECONDS,
    RELISTS_TOTAL,
    WATCHES_TOTAL,
    WATCH_ERRORS_TOTAL,
    EVENTS_TOTAL,
    DECODE_ERRORS_TOTAL,
    LAST_RESOURCE_VERSION,
];

/// How many trailing characters of a resource version the gauge keeps (client-go's rule: a
/// number of at most 15 digits is exact in an `f64`).
const RESOURCE_VERSION_DIGITS: usize = 15;

/// Describes every reflector metric (its help text and unit) to the installed recorder, for
/// exporters that show them. Optional: metrics are recorded without it.
pub fn describe() {
    metrics::describe_counter!(
        LISTS_TOTAL,
        "Lists started: each paginated list and each streaming-list attempt."
    );
    metrics::describe_counter!(
        LIST_ERRORS_TOTAL,
        "Lists and streaming-list attempts that failed."
    );
    metrics::describe_histogram!(
        LIST_DURATION_SECONDS,
        metrics::Unit::Seconds,
        "How long each successful list took, from its first request to the store's replace."
    );
    metrics::describe_counter!(
        RELISTS_TOTAL,
        "Rounds of list-and-watch (each starting with a list) after the store was first filled."
    );
    metrics::describe_counter!(
        WATCHES_TOTAL,
        "Watches started, a streaming list that goes on as the watch included."
    );
    metrics::describe_counter!(
        WATCH_ERRORS_TOTAL,
        "List and watch failures reported to the watch-error hook."
    );
    metrics::describe_counter!(
        EVENTS_TOTAL,
        "Watch events received, bookmarks and undecodable events included."
    );
    metrics::describe_counter!(
        DECODE_ERRORS_TOTAL,
        "Versions of objects that could not be decoded and were left out of the cache."
    );
    metrics::describe_gauge!(
        LAST_RESOURCE_VERSION,
        "The last synced resource version: its last 15 characters parsed as an integer."
    );
}

/// The value of the [`LAST_RESOURCE_VERSION`] gauge for `rv`: its last 15 characters parsed
/// as an unsigned integer, `None` when they are not one (resource versions are opaque; the
/// API server's are decimal numbers).
pub fn resource_version_value(rv: &str) -> Option<f64> {
    let tail = rv
        .char_indices()
        .rev()
        .nth(RESOURCE_VERSION_DIGITS - 1)
        .map_or(rv, |(at, _)| &rv[at..]);
    let n: u64 = tail.parse().ok()?;
    // At most 15 decimal digits: below 2^53, so exact.
    #[expect(
        clippy::cast_precision_loss,
        reason = "at most 15 decimal digits, exact in an f64"
    )]
    Some(n as f64)
}

/// The handles of one reflector's metrics that the reflector updates itself, registered once
/// when it is built.
#[derive(Debug, Clone)]
pub(crate) struct ReflectorMetrics {
    pub(crate) lists: Counter,
    pub(crate) list_errors: Counter,
    pub(crate) list_duration: Histogram,
    pub(crate) relists: Counter,
    pub(crate) watches: Counter,
    pub(crate) events: Counter,
    pub(crate) last_resource_version: Gauge,
}

/// The handles of one reflector's error counters, registered with the others and moved into
/// its reporter, which alone counts errors.
#[derive(Debug)]
pub(crate) struct ErrorCounters {
    /// [`WATCH_ERRORS_TOTAL`].
    pub(crate) watch_errors: Counter,
    /// [`DECODE_ERRORS_TOTAL`].
    pub(crate) decode_errors: Counter,
}

impl ReflectorMetrics {
    /// Registers the metrics of the reflector `name` with the recorder in place: the handles
    /// the reflector updates, and the error counters for its reporter.
    pub(crate) fn new(name: &str) -> (Self, ErrorCounters) {
        let metrics = Self {
            lists: metrics::counter!(LISTS_TOTAL, NAME_LABEL => name.to_owned()),
            list_errors: metrics::counter!(LIST_ERRORS_TOTAL, NAME_LABEL => name.to_owned()),
            list_duration: metrics::histogram!(LIST_DURATION_SECONDS, NAME_LABEL => name.to_owned()),
            relists: metrics::counter!(RELISTS_TOTAL, NAME_LABEL => name.to_owned()),
            watches: metrics::counter!(WATCHES_TOTAL, NAME_LABEL => name.to_owned()),
            events: metrics::counter!(EVENTS_TOTAL, NAME_LABEL => name.to_owned()),
            last_resource_version: metrics::gauge!(LAST_RESOURCE_VERSION, NAME_LABEL => name.to_owned()),
        };
        let errors = ErrorCounters {
            watch_errors: metrics::counter!(WATCH_ERRORS_TOTAL, NAME_LABEL => name.to_owned()),
            decode_errors: metrics::counter!(DECODE_ERRORS_TOTAL, NAME_LABEL => name.to_owned()),
        };
        (metrics, errors)
    }

    /// Sets the [`LAST_RESOURCE_VERSION`] gauge to `rv`, when it reads as a number.
    pub(crate) fn synced_to(&self, rv: &str) {
        if let Some(v) = resource_version_value(rv) {
            self.last_resource_version.set(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_versions_keep_their_last_15_digits() {
        assert_eq!(resource_version_value("12345"), Some(12345.0));
        assert_eq!(resource_version_value("0"), Some(0.0));
        assert_eq!(
            resource_version_value("123456789012345"),
            Some(123_456_789_012_345.0)
        );
        // 20 digits: the first five are dropped.
        assert_eq!(
            resource_version_value("99999123456789012345"),
            Some(123_456_789_012_345.0)
        );
        assert_eq!(resource_version_value(""), None);
        assert_eq!(resource_version_value("abc"), None);
        assert_eq!(resource_version_value("-5"), None);
        // Multi-byte characters are cut at a character boundary, never inside one.
        assert_eq!(
            resource_version_value("ü123456789012345"),
            Some(123_456_789_012_345.0)
        );
        assert_eq!(resource_version_value("12345678901234ü"), None);
    }

    #[test]
    fn every_name_is_prefixed_and_distinct() {
        let mut names = ALL.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert!(ALL.iter().all(|n| n.starts_with("kcache_reflector_")));
    }
}
