//! [`RemainingCounts`]: the `remainingItemCount` of recent list pages, so that the next page
//! need not count the remaining objects again.
//!
//! A page's `remainingItemCount` is the number of objects (in the list's namespace) from the
//! next page's first key to the end of the snapshot the pages come from. Counting it walks every
//! one of those keys, so paginating through n objects `limit` at a time walked about
//! n²/(2·limit) keys. The objects at a resource version never change (a write makes a new one),
//! so the count at the key a page starts from, minus the keys that page walks, is the count at
//! its end: each page after the first walks only its own keys.

use std::collections::VecDeque;

/// Remembered counts kept per resource: enough for a few paginations at once.
const KEEP: usize = 64;

/// One page end: in the snapshot at `rv`, `remaining` objects of `namespace` (all, if `None`)
/// have a key at or after `key`.
#[derive(Debug)]
struct PageEnd {
    rv: u64,
    namespace: Option<String>,
    key: String,
    remaining: usize,
}

/// The most recent page ends of one resource, oldest first.
#[derive(Debug, Default)]
pub(crate) struct RemainingCounts {
    ends: VecDeque<PageEnd>,
}

impl RemainingCounts {
    /// The number of objects of `namespace` at or after `key` in the snapshot at `rv`, if a
    /// recent page ended there.
    pub(crate) fn get(&self, rv: u64, namespace: Option<&str>, key: &str) -> Option<usize> {
        self.ends
            .iter()
            .rev()
            .find(|e| e.rv == rv && e.namespace.as_deref() == namespace && e.key == key)
            .map(|e| e.remaining)
    }

    /// Remembers that a page ended at `key` with `remaining` objects from there on.
    pub(crate) fn insert(
        &mut self,
        rv: u64,
        namespace: Option<&str>,
        key: String,
        remaining: usize,
    ) {
        if self.get(rv, namespace, &key).is_some() {
            return;
        }
        if self.ends.len() >= KEEP {
            self.ends.pop_front();
        }
        self.ends.push_back(PageEnd {
            rv,
            namespace: namespace.map(str::to_owned),
            key,
            remaining,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_recent_page_ends_by_rv_namespace_and_key() {
        let mut counts = RemainingCounts::default();
        counts.insert(5, None, "a/x".into(), 10);
        counts.insert(5, Some("a"), "a/x".into(), 3);
        assert_eq!(counts.get(5, None, "a/x"), Some(10));
        assert_eq!(counts.get(5, Some("a"), "a/x"), Some(3));
        assert_eq!(counts.get(6, None, "a/x"), None);
        assert_eq!(counts.get(5, None, "a/y"), None);
        for i in 0..KEEP {
            counts.insert(7, None, format!("k{i}"), i);
        }
        assert_eq!(counts.get(5, None, "a/x"), None, "the oldest go first");
        assert_eq!(counts.get(7, None, "k0"), Some(0));
    }
}
