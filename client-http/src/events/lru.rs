//! [`Lru`]: a map with a capacity that forgets its least recently used entry to make room,
//! which keeps the event recorder's caches (series, rate-limit buckets) bounded.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// A map of at most `capacity` entries: inserting into a full map evicts the entry used least
/// recently (looked up with [`get_mut`](Self::get_mut) or inserted). Every operation is
/// `O(log n)`; keys are cloned once per use, so they should be cheap to clone (`Arc`s).
pub(crate) struct Lru<K, V> {
    entries: HashMap<K, (u64, V)>,
    /// Each entry's last use, oldest first.
    order: BTreeMap<u64, K>,
    /// The next use's stamp.
    clock: u64,
    capacity: usize,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    /// An empty map of at most `capacity` entries (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            entries: HashMap::new(),
            order: BTreeMap::new(),
            clock: 0,
            capacity: capacity.max(1),
        }
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entry of `key`, now the most recently used, with the map's own key.
    pub(crate) fn get_mut<Q>(&mut self, key: &Q) -> Option<(K, &mut V)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let stamp = self.clock;
        let (owned, (used, _)) = self.entries.get_key_value(key)?;
        let (owned, used) = (owned.clone(), *used);
        self.order.remove(&used);
        self.order.insert(stamp, owned.clone());
        self.clock += 1;
        let (used, value) = self.entries.get_mut(key)?;
        *used = stamp;
        Some((owned, value))
    }

    /// The entry of `key`, without counting as a use.
    pub(crate) fn peek_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.get_mut(key).map(|(_, value)| value)
    }

    /// Inserts `value` for `key` as the most recently used entry. Returns the entry evicted to
    /// make room, if the map was full, or the value `key` had.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<(K, V)> {
        let stamp = self.clock;
        self.clock += 1;
        if let Some((used, old)) = self.entries.insert(key.clone(), (stamp, value)) {
            self.order.remove(&used);
            self.order.insert(stamp, key.clone());
            return Some((key, old));
        }
        self.order.insert(stamp, key);
        if self.entries.len() <= self.capacity {
            return None;
        }
        let (_, oldest) = self.order.pop_first()?;
        let (_, value) = self.entries.remove(&oldest)?;
        Some((oldest, value))
    }

    /// Removes the entry of `key`.
    pub(crate) fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (used, value) = self.entries.remove(key)?;
        self.order.remove(&used);
        Some(value)
    }

    /// Every entry, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(key, (_, value))| (key, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_entry_makes_room() {
        let mut lru = Lru::new(2);
        assert!(lru.insert("a", 1).is_none());
        assert!(lru.insert("b", 2).is_none());
        // `a` is used, so `b` is now the oldest.
        let (key, value) = lru.get_mut("a").unwrap();
        assert_eq!(key, "a");
        *value += 10;
        assert_eq!(lru.insert("c", 3), Some(("b", 2)));
        assert_eq!(lru.len(), 2);
        // A peek is not a use.
        assert_eq!(lru.peek_mut("a").copied(), Some(11));
        assert_eq!(lru.insert("d", 4), Some(("a", 11)));
        let mut left: Vec<_> = lru.iter().map(|(k, v)| (*k, *v)).collect();
        left.sort_unstable();
        assert_eq!(left, [("c", 3), ("d", 4)]);
    }

    #[test]
    fn replacing_and_removing_keep_the_order_consistent() {
        let mut lru = Lru::new(2);
        lru.insert("a", 1);
        assert_eq!(lru.insert("a", 2), Some(("a", 1)));
        lru.insert("b", 3);
        assert_eq!(lru.remove("a"), Some(2));
        assert_eq!(lru.remove("a"), None);
        lru.insert("c", 4);
        assert_eq!(lru.insert("d", 5), Some(("b", 3)));
        assert_eq!(lru.len(), 2);
        assert_eq!(Lru::<u8, u8>::new(0).capacity, 1);
    }
}
