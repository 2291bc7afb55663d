//! [`EventWrite`]: one write of an `events.k8s.io/v1` Event (a create, or a merge patch of its
//! `series`), its JSON body, and the API's limits on the strings it carries.

use std::sync::Arc;
use std::time::SystemTime;

use kcache_reflector::micro_time;
use serde::Serialize;
use serde_json::{Value, json};

use super::event_type::EventType;
use super::reference::ObjectReference;
use super::series::SeriesKey;

/// The API version of the Events written.
pub(crate) const EVENTS_API_VERSION: &str = "events.k8s.io/v1";

/// The longest `note` the API accepts, in bytes (`NoteLengthLimit`, 1 KiB): a longer note is
/// cut to it, at a character boundary.
pub const MAX_NOTE_BYTES: usize = 1024;

/// The longest `reason` and `action` the API accepts, in bytes: longer ones are cut to it.
pub(crate) const MAX_REASON_BYTES: usize = 128;

/// Who writes the Events: `reportingController` and `reportingInstance`.
#[derive(Debug, Clone)]
pub(crate) struct Reporter {
    /// `reportingController`, e.g. `example.com/widget-controller`.
    pub(crate) controller: String,
    /// `reportingInstance`, e.g. the pod's name.
    pub(crate) instance: String,
}

/// A series as written: how many times the event was seen, the last time at which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SeriesState {
    /// `series.count`, 2 or more.
    pub(crate) count: u32,
    /// `series.lastObservedTime`.
    pub(crate) last_observed: SystemTime,
}

/// One write of an Event: a create when it has no series; a patch of its `series` when it has
/// one (a create with the series when the Event is gone).
#[derive(Debug, Clone)]
pub(crate) struct EventWrite {
    /// What the Event says, and the key of its series.
    pub(crate) key: Arc<SeriesKey>,
    /// `metadata.name`.
    pub(crate) name: Arc<str>,
    /// `eventTime`: when it was first seen.
    pub(crate) event_time: SystemTime,
    /// `series`, once it was seen again.
    pub(crate) series: Option<SeriesState>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: Metadata<'a>,
    event_time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    series: Option<Series>,
    reporting_controller: &'a str,
    reporting_instance: &'a str,
    action: &'a str,
    reason: &'a str,
    note: &'a str,
    #[serde(rename = "type")]
    event_type: EventType,
    regarding: &'a ObjectReference,
    #[serde(skip_serializing_if = "Option::is_none")]
    related: Option<&'a ObjectReference>,
}

#[derive(Serialize)]
struct Metadata<'a> {
    name: &'a str,
    namespace: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Series {
    count: i32,
    last_observed_time: String,
}

impl From<SeriesState> for Series {
    fn from(s: SeriesState) -> Self {
        Self {
            count: i32::try_from(s.count).unwrap_or(i32::MAX),
            last_observed_time: micro_time(s.last_observed),
        }
    }
}

impl EventWrite {
    /// How many times the event had been seen: 1 without a series.
    pub(crate) fn count(&self) -> u32 {
        self.series.map_or(1, |s| s.count)
    }

    /// The namespace the Event is written to: the regarding object's, `default` for a
    /// cluster-scoped one.
    pub(crate) fn namespace(&self) -> &str {
        self.key.regarding.event_namespace()
    }

    /// The whole Event, for a create.
    pub(crate) fn body(&self, reporter: &Reporter) -> Result<Value, serde_json::Error> {
        let key = &*self.key;
        serde_json::to_value(Body {
            api_version: EVENTS_API_VERSION,
            kind: "Event",
            metadata: Metadata {
                name: &self.name,
                namespace: self.namespace(),
            },
            event_time: micro_time(self.event_time),
            series: self.series.map(Series::from),
            reporting_controller: &reporter.controller,
            reporting_instance: &reporter.instance,
            action: &key.action,
            reason: &key.reason,
            note: &key.note,
            event_type: key.event_type,
            regarding: &key.regarding,
            related: key.related.as_ref(),
        })
    }

    /// The merge patch of the Event's `series` (what client-go's two-way strategic merge
    /// patch between the Event without and with its series comes to); `None` without one.
    pub(crate) fn series_patch(&self) -> Option<Value> {
        let s = Series::from(self.series?);
        Some(json!({"series": {"count": s.count, "lastObservedTime": s.last_observed_time}}))
    }
}

/// `text` cut to at most `max` bytes, at a character boundary.
pub(crate) fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn cuts_at_a_character_boundary() {
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("abcd", 3), "abc");
        // `é` is two bytes: cutting inside it drops it whole.
        assert_eq!(truncate("aé", 2), "a");
        assert_eq!(truncate("", 0), "");
    }

    #[test]
    fn bodies_carry_every_field_and_patches_only_the_series() {
        let at = UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
        let key = SeriesKey {
            regarding: ObjectReference::new("v1", "Node", None, "n1"),
            related: None,
            event_type: EventType::Warning,
            reason: "Failed".into(),
            action: "Drain".into(),
            note: "busy".into(),
        };
        let mut write = EventWrite {
            key: Arc::new(key),
            name: "n1.17".into(),
            event_time: at,
            series: None,
        };
        let reporter = Reporter {
            controller: "example.com/c".into(),
            instance: "pod-1".into(),
        };
        assert_eq!(
            write.body(&reporter).unwrap(),
            json!({
                "apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "n1.17", "namespace": "default"},
                "eventTime": "2023-11-14T22:13:20.123456Z",
                "reportingController": "example.com/c", "reportingInstance": "pod-1",
                "action": "Drain", "reason": "Failed", "note": "busy", "type": "Warning",
                "regarding": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
            })
        );
        assert_eq!(write.series_patch(), None);
        assert_eq!(write.count(), 1);
        write.series = Some(SeriesState {
            count: 3,
            last_observed: at + Duration::from_secs(1),
        });
        assert_eq!(
            write.series_patch(),
            Some(
                json!({"series": {"count": 3, "lastObservedTime": "2023-11-14T22:13:21.123456Z"}})
            )
        );
        assert_eq!(write.body(&reporter).unwrap()["series"]["count"], 3);
    }
}
