//! [`FailureCounts`]: how many times in a row each key failed, the state of the per-key rate
//! limiters ([`ItemExponentialBackoff`](super::ItemExponentialBackoff),
//! [`ItemFastSlow`](super::ItemFastSlow)).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A failure count per key, behind its own lock. A key without an entry has failed 0 times;
/// [`forget`](Self::forget) removes the entry, so a key that succeeded holds no memory.
pub(super) struct FailureCounts<K> {
    counts: Mutex<HashMap<K, u32>>,
}

impl<K> FailureCounts<K> {
    pub(super) fn new() -> Self {
        Self {
            counts: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<K, u32>> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many keys are tracked, without waiting for the lock (`None` if it is held): for
    /// `Debug`.
    pub(super) fn try_len(&self) -> Option<usize> {
        self.counts.try_lock().ok().map(|m| m.len())
    }
}

impl<K: Clone + Eq + Hash> FailureCounts<K> {
    /// Counts one more failure of `key` (saturating); returns the count before it. The key is
    /// cloned only the first time.
    pub(super) fn bump(&self, key: &K) -> u32 {
        let mut counts = self.lock();
        if let Some(n) = counts.get_mut(key) {
            let previous = *n;
            *n = n.saturating_add(1);
            previous
        } else {
            counts.insert(key.clone(), 1);
            0
        }
    }

    /// Forgets `key`'s failures.
    pub(super) fn forget(&self, key: &K) {
        self.lock().remove(key);
    }

    /// How many times `key` failed since it was last forgotten.
    pub(super) fn get(&self, key: &K) -> u32 {
        self.lock().get(key).copied().unwrap_or(0)
    }
}
