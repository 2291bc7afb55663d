//! [`SeriesCache`]: the Events recently written, by what makes two events the same
//! ([`SeriesKey`]), so that a repeat becomes a `series` (a count and a last time) on the Event
//! already written rather than another Event; bounded, the least recently seen forgotten first.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::event::{EventWrite, SeriesState};
use super::event_type::EventType;
use super::lru::Lru;
use super::reference::ObjectReference;

/// What makes two events the same Event: client-go's `eventKey` (type, action, reason,
/// regarding and related objects; the reporting controller and instance are the recorder's)
/// plus the note, so that events that say different things stay apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SeriesKey {
    /// `regarding`.
    pub(crate) regarding: ObjectReference,
    /// `related`.
    pub(crate) related: Option<ObjectReference>,
    /// `type`.
    pub(crate) event_type: EventType,
    /// `reason`, cut to the API's limit.
    pub(crate) reason: String,
    /// `action`, cut to the API's limit.
    pub(crate) action: String,
    /// `note`, cut to the API's limit.
    pub(crate) note: String,
}

/// One Event written (or being written) and what has been seen of it since.
#[derive(Debug)]
struct Entry {
    name: Arc<str>,
    event_time: SystemTime,
    /// Times seen: 1 until it repeats.
    count: u32,
    /// When last seen, on the wall clock (`series.lastObservedTime`).
    last_observed: SystemTime,
    /// When last seen, on tokio's clock (when the series ends).
    last_seen: Instant,
    /// The highest count the server is known to have.
    written: u32,
}

impl Entry {
    fn write(&self, key: &Arc<SeriesKey>) -> EventWrite {
        EventWrite {
            key: Arc::clone(key),
            name: Arc::clone(&self.name),
            event_time: self.event_time,
            series: (self.count > 1).then_some(SeriesState {
                count: self.count,
                last_observed: self.last_observed,
            }),
        }
    }

    /// Whether the server lags behind what was seen.
    fn unwritten(&self) -> bool {
        self.count > self.written
    }
}

/// What a repeat of a known event comes to.
#[derive(Debug)]
pub(crate) enum Repeat {
    /// The first repeat: the series starts, written at once.
    Started(EventWrite),
    /// A later one, the series' count now: written with the next refresh or when the
    /// series ends.
    Counted(u32),
}

/// The Events recently written, by [`SeriesKey`], at most `capacity` of them.
pub(crate) struct SeriesCache {
    entries: Lru<Arc<SeriesKey>, Entry>,
}

impl SeriesCache {
    /// An empty cache of at most `capacity` Events.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            entries: Lru::new(capacity),
        }
    }

    /// The number of Events remembered.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Counts one more sighting of `key`, seen at `now` (`wall` on the wall clock), if it is
    /// known; `None` if it is not.
    pub(crate) fn repeat(
        &mut self,
        key: &SeriesKey,
        now: Instant,
        wall: SystemTime,
    ) -> Option<Repeat> {
        let (key, entry) = self.entries.get_mut(key)?;
        entry.count = entry.count.saturating_add(1);
        entry.last_observed = wall;
        entry.last_seen = now;
        if entry.count > 2 {
            return Some(Repeat::Counted(entry.count));
        }
        Some(Repeat::Started(entry.write(&key)))
    }

    /// Remembers a new Event `name` for `key`, first seen at `now` (`wall`). Returns its create,
    /// and the write of an evicted series whose last count the server does not have yet.
    pub(crate) fn insert(
        &mut self,
        key: Arc<SeriesKey>,
        name: Arc<str>,
        now: Instant,
        wall: SystemTime,
    ) -> (EventWrite, Option<EventWrite>) {
        let entry = Entry {
            name,
            event_time: wall,
            count: 1,
            last_observed: wall,
            last_seen: now,
            written: 0,
        };
        let create = entry.write(&key);
        let evicted = self
            .entries
            .insert(key, entry)
            .filter(|(_, old)| old.count > 1 && old.unwritten())
            .map(|(key, old)| old.write(&key));
        (create, evicted)
    }

    /// Notes that the server has `write` (its count at least), if its Event is still here.
    pub(crate) fn written(&mut self, write: &EventWrite) {
        if let Some(entry) = self.entries.peek_mut(&*write.key)
            && entry.name == write.name
        {
            entry.written = entry.written.max(write.count());
        }
    }

    /// The series whose count the server does not have yet: the writes of a refresh, or of a
    /// shutdown.
    pub(crate) fn unwritten(&self) -> Vec<EventWrite> {
        self.entries
            .iter()
            .filter(|(_, e)| e.count > 1 && e.unwritten())
            .map(|(key, e)| e.write(key))
            .collect()
    }

    /// The Events not seen for `quiet` at `now`, each with the count seen (to
    /// [`forget`](Self::forget) it by) and, for a series the server lags behind on, its last
    /// write.
    pub(crate) fn ended(&self, now: Instant, quiet: Duration) -> Vec<Ended> {
        self.entries
            .iter()
            .filter(|(_, e)| now.saturating_duration_since(e.last_seen) >= quiet)
            .map(|(key, e)| Ended {
                key: Arc::clone(key),
                count: e.count,
                write: (e.count > 1 && e.unwritten()).then(|| e.write(key)),
            })
            .collect()
    }

    /// Forgets `ended`'s Event unless it was seen again since.
    pub(crate) fn forget(&mut self, ended: &Ended) {
        let seen_again = self
            .entries
            .peek_mut(&*ended.key)
            .is_some_and(|e| e.count != ended.count);
        if !seen_again {
            self.entries.remove(&*ended.key);
        }
    }
}

/// An Event not seen for a while: see [`SeriesCache::ended`].
#[derive(Debug)]
pub(crate) struct Ended {
    key: Arc<SeriesKey>,
    count: u32,
    /// The series' last count, to write before forgetting it.
    pub(crate) write: Option<EventWrite>,
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    fn key(note: &str) -> SeriesKey {
        SeriesKey {
            regarding: ObjectReference::new("v1", "Pod", Some("ns"), "p"),
            related: None,
            event_type: EventType::Normal,
            reason: "Pulled".into(),
            action: "Pull".into(),
            note: note.into(),
        }
    }

    #[test]
    fn the_first_repeat_is_written_the_others_counted() {
        let (t0, wall) = (Instant::now(), UNIX_EPOCH);
        let mut cache = SeriesCache::new(4);
        assert!(cache.repeat(&key("a"), t0, wall).is_none());
        let (create, evicted) = cache.insert(Arc::new(key("a")), "p.1".into(), t0, wall);
        assert!(create.series.is_none() && evicted.is_none());
        cache.written(&create);

        let later = wall + Duration::from_secs(5);
        let Some(Repeat::Started(patch)) = cache.repeat(&key("a"), t0, later) else {
            panic!("the first repeat starts the series");
        };
        assert_eq!(
            patch.series,
            Some(SeriesState {
                count: 2,
                last_observed: later
            })
        );
        assert_eq!(&*patch.name, "p.1");
        assert!(matches!(
            cache.repeat(&key("a"), t0, later),
            Some(Repeat::Counted(3))
        ));
        // The server has 1, not 3.
        assert_eq!(cache.unwritten().len(), 1);
        cache.written(&patch);
        assert_eq!(cache.unwritten()[0].count(), 3);
    }

    #[test]
    fn ended_series_are_forgotten_unless_seen_again() {
        let (t0, wall) = (Instant::now(), UNIX_EPOCH);
        let quiet = Duration::from_secs(360);
        let mut cache = SeriesCache::new(4);
        cache.insert(Arc::new(key("a")), "p.1".into(), t0, wall);
        cache.insert(Arc::new(key("b")), "p.2".into(), t0, wall);
        cache.repeat(&key("b"), t0, wall);
        assert!(cache.ended(t0 + quiet / 2, quiet).is_empty());
        let ended = cache.ended(t0 + quiet, quiet);
        assert_eq!(ended.len(), 2);
        // `b` has a count the server lacks; `a` does not repeat.
        let with_write: Vec<_> = ended.iter().filter_map(|e| e.write.as_ref()).collect();
        assert_eq!(with_write.len(), 1);
        assert_eq!(with_write[0].count(), 2);
        // `a` is seen again while the sweep runs: it stays.
        cache.repeat(&key("a"), t0 + quiet, wall);
        for e in &ended {
            cache.forget(e);
        }
        assert_eq!(cache.len(), 1);
        assert!(cache.repeat(&key("a"), t0 + quiet, wall).is_some());
    }

    #[test]
    fn an_evicted_series_hands_over_its_last_count() {
        let (t0, wall) = (Instant::now(), UNIX_EPOCH);
        let mut cache = SeriesCache::new(1);
        cache.insert(Arc::new(key("a")), "p.1".into(), t0, wall);
        cache.repeat(&key("a"), t0, wall);
        let (_, evicted) = cache.insert(Arc::new(key("b")), "p.2".into(), t0, wall);
        assert_eq!(
            evicted.map(|w| (w.count(), w.name)),
            Some((2, "p.1".into()))
        );
        // A single Event is dropped silently: the server has it (or will).
        let (_, evicted) = cache.insert(Arc::new(key("c")), "p.3".into(), t0, wall);
        assert!(evicted.is_none());
        assert_eq!(cache.len(), 1);
    }
}
