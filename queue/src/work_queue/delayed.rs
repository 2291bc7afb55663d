//! The keys waiting for their deadline (client-go's `waitingForQueue`): a binary min-heap by
//! deadline with an index from key to heap slot, so a key is held once and can move earlier.

use std::collections::HashMap;
use std::hash::Hash;

use tokio::time::Instant;

/// One delayed key. Ties on `deadline` are broken by `seq`, the order of scheduling, so keys
/// due at the same instant come out in the order they were (last) scheduled.
struct Entry<K> {
    deadline: Instant,
    seq: u64,
    key: K,
}

impl<K> Entry<K> {
    fn before(&self, other: &Self) -> bool {
        (self.deadline, self.seq) < (other.deadline, other.seq)
    }
}

/// A min-heap of delayed keys, each key at most once.
///
/// `heap` owns one copy of each key and `index` another (the slot of the key in `heap`); a
/// key taken out hands both copies back, so promoting it to the queue clones nothing.
pub(super) struct Delayed<K> {
    heap: Vec<Entry<K>>,
    index: HashMap<K, usize>,
    seq: u64,
}

impl<K: Clone + Eq + Hash> Delayed<K> {
    pub(super) fn new() -> Self {
        Self {
            heap: Vec::new(),
            index: HashMap::new(),
            seq: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.heap.len()
    }

    /// The earliest deadline.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.heap.first().map(|e| e.deadline)
    }

    /// Schedules `key` at `deadline`. A key already delayed moves to `deadline` only if it is
    /// earlier (client-go's dedupe); a later deadline is ignored, and nothing is cloned. Returns
    /// whether the earliest deadline changed, so that waiting getters re-arm their timers.
    pub(super) fn schedule(&mut self, key: K, deadline: Instant) -> bool {
        let seq = self.seq;
        self.seq = self.seq.wrapping_add(1);
        if let Some(&slot) = self.index.get(&key) {
            let entry = &mut self.heap[slot];
            if deadline >= entry.deadline {
                return false;
            }
            entry.deadline = deadline;
            entry.seq = seq;
            return self.sift_up(slot) == 0;
        }
        let slot = self.heap.len();
        self.index.insert(key.clone(), slot);
        self.heap.push(Entry { deadline, seq, key });
        self.sift_up(slot) == 0
    }

    /// Takes out the earliest key if its deadline is at or before `now`: the heap's copy and
    /// the index's.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<(K, K)> {
        if self.heap.first()?.deadline > now {
            return None;
        }
        let entry = self.heap.swap_remove(0);
        if let Some(moved) = self.heap.first()
            && let Some(slot) = self.index.get_mut(&moved.key)
        {
            *slot = 0;
            self.sift_down(0);
        }
        let (copy, _) = self.index.remove_entry(&entry.key)?;
        Some((entry.key, copy))
    }

    /// Drops every delayed key.
    pub(super) fn clear(&mut self) {
        self.heap.clear();
        self.index.clear();
    }

    /// Moves the entry at `slot` up to its place; returns its new slot.
    fn sift_up(&mut self, mut slot: usize) -> usize {
        while slot > 0 {
            let parent = (slot - 1) / 2;
            if !self.heap[slot].before(&self.heap[parent]) {
                break;
            }
            self.swap(slot, parent);
            slot = parent;
        }
        slot
    }

    /// Moves the entry at `slot` down to its place.
    fn sift_down(&mut self, mut slot: usize) {
        loop {
            let (left, right) = (2 * slot + 1, 2 * slot + 2);
            let mut least = slot;
            if left < self.heap.len() && self.heap[left].before(&self.heap[least]) {
                least = left;
            }
            if right < self.heap.len() && self.heap[right].before(&self.heap[least]) {
                least = right;
            }
            if least == slot {
                return;
            }
            self.swap(slot, least);
            slot = least;
        }
    }

    /// Swaps two entries and their index slots.
    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        for slot in [a, b] {
            if let Some(i) = self.index.get_mut(&self.heap[slot].key) {
                *i = slot;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn drain(d: &mut Delayed<u32>, now: Instant) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some((k, copy)) = d.pop_due(now) {
            assert_eq!(k, copy);
            out.push(k);
        }
        out
    }

    /// The heap and its index agree after every operation.
    fn check(d: &Delayed<u32>) {
        assert_eq!(d.heap.len(), d.index.len());
        for (slot, e) in d.heap.iter().enumerate() {
            assert_eq!(d.index[&e.key], slot);
            if slot > 0 {
                assert!(!e.before(&d.heap[(slot - 1) / 2]));
            }
        }
    }

    #[test]
    fn pops_by_deadline_then_schedule_order() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut d = Delayed::new();
        for (k, at) in [(1, 30), (2, 10), (3, 20), (4, 10), (5, 50), (6, 5)] {
            d.schedule(k, ms(at));
            check(&d);
        }
        assert_eq!(drain(&mut d, ms(4)), Vec::<u32>::new());
        assert_eq!(drain(&mut d, ms(20)), [6, 2, 4, 3]);
        check(&d);
        assert_eq!(d.next_deadline(), Some(ms(30)));
        assert_eq!(drain(&mut d, ms(100)), [1, 5]);
        assert_eq!(d.len(), 0);
    }

    #[test]
    fn a_key_moves_earlier_only() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut d = Delayed::new();
        assert!(d.schedule(1, ms(50)));
        assert!(!d.schedule(2, ms(60)));
        assert!(!d.schedule(1, ms(70)), "a later deadline is ignored");
        assert!(!d.schedule(2, ms(55)), "earlier, but not the head");
        check(&d);
        assert!(d.schedule(2, ms(40)), "earlier than the head");
        check(&d);
        assert_eq!(d.len(), 2);
        assert_eq!(drain(&mut d, ms(45)), [2]);
        assert_eq!(drain(&mut d, ms(50)), [1]);
    }
}
