//! [`WorkQueueModel`]: client-go's work queue as plain ordered collections on a simulated clock
//! in whole milliseconds, with the rate limiter the runner installs.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use kcache_queue::{ItemExponentialBackoff, ItemFastSlow, MaxOf, RateLimiter, TryGetError};

/// The base and cap of the exponential part of the model's limiter, in milliseconds.
const EXP_BASE_MS: u64 = 1;
const EXP_MAX_MS: u64 = 32;
/// The fast and slow delays of the fast/slow part, and how many fast attempts it allows.
const FAST_MS: u64 = 2;
const SLOW_MS: u64 = 20;
const MAX_FAST: u32 = 3;

/// A reference model of [`WorkQueue`](kcache_queue::WorkQueue), written for clarity: the
/// waiting keys in order, the dirty and processing sets, the delayed keys with their deadlines,
/// the failures the rate limiter counts, and the shutdown flags, on a clock of whole
/// milliseconds that moves only when told.
///
/// Delayed keys are queued *eagerly*, as soon as the clock reaches their deadline, in deadline
/// order (ties in the order they were scheduled), exactly as client-go's waiting loop adds them.
/// The limiter is [`WorkQueueModel::rate_limiter`]'s: the longer of an exponential backoff
/// (1 ms doubling to 32 ms) and a fast/slow one (2 ms three times, then 20 ms), both counting
/// a key's failures since it was last forgotten.
#[derive(Debug, Clone, Default)]
pub struct WorkQueueModel {
    now_ms: u64,
    queue: VecDeque<u32>,
    dirty: BTreeSet<u32>,
    processing: BTreeSet<u32>,
    /// Key -> (deadline, order of scheduling).
    delayed: BTreeMap<u32, (u64, u64)>,
    seq: u64,
    failures: BTreeMap<u32, u32>,
    shutting_down: bool,
    drain: bool,
}

impl WorkQueueModel {
    /// An empty queue at time 0.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The real limiter the model follows: `MaxOf(ItemExponentialBackoff(1 ms, 32 ms),
    /// ItemFastSlow(2 ms, 20 ms, 3))`.
    #[must_use]
    pub fn rate_limiter() -> Arc<dyn RateLimiter<u32>> {
        let ms = Duration::from_millis;
        Arc::new(MaxOf::new(vec![
            Arc::new(ItemExponentialBackoff::new(ms(EXP_BASE_MS), ms(EXP_MAX_MS))),
            Arc::new(ItemFastSlow::new(ms(FAST_MS), ms(SLOW_MS), MAX_FAST)),
        ]))
    }

    /// The simulated time, in milliseconds since the start.
    #[must_use]
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// Moves the clock on by `ms`; returns the delayed keys that fired (were added), in order.
    pub fn advance(&mut self, ms: u64) -> Vec<u32> {
        self.now_ms += ms;
        self.promote()
    }

    /// Adds every delayed key that is due, earliest first; returns them.
    fn promote(&mut self) -> Vec<u32> {
        let mut due: Vec<(u64, u64, u32)> = self
            .delayed
            .iter()
            .filter(|(_, (at, _))| *at <= self.now_ms)
            .map(|(&k, &(at, seq))| (at, seq, k))
            .collect();
        due.sort_unstable();
        for &(_, _, k) in &due {
            self.delayed.remove(&k);
            self.insert(k);
        }
        due.into_iter().map(|(_, _, k)| k).collect()
    }

    fn insert(&mut self, key: u32) {
        if !self.dirty.insert(key) {
            return;
        }
        if !self.processing.contains(&key) {
            self.queue.push_back(key);
        }
    }

    /// `add`; whether it was taken (not shutting down).
    pub fn add(&mut self, key: u32) -> bool {
        if self.shutting_down {
            return false;
        }
        self.insert(key);
        true
    }

    /// `add_after` with `ms` milliseconds; whether the key was added now (a zero delay, not
    /// shutting down).
    pub fn add_after(&mut self, key: u32, ms: u64) -> bool {
        if ms == 0 {
            return self.add(key);
        }
        if self.shutting_down {
            return false;
        }
        let at = self.now_ms + ms;
        let seq = self.seq;
        self.seq += 1;
        match self.delayed.get_mut(&key) {
            Some(entry) if at < entry.0 => *entry = (at, seq),
            Some(_) => {}
            None => {
                self.delayed.insert(key, (at, seq));
            }
        }
        false
    }

    /// The delay the limiter gives `key` now, counting one more failure.
    pub fn when(&mut self, key: u32) -> u64 {
        let n = self.failures.entry(key).or_default();
        let exp = EXP_BASE_MS
            .checked_shl(*n)
            .filter(|d| d >> *n == EXP_BASE_MS)
            .map_or(EXP_MAX_MS, |d| d.min(EXP_MAX_MS));
        *n = n.saturating_add(1);
        let fast_slow = if *n <= MAX_FAST { FAST_MS } else { SLOW_MS };
        exp.max(fast_slow)
    }

    /// `add_rate_limited`: the delay the limiter gave, and whether the key was added now.
    pub fn add_rate_limited(&mut self, key: u32) -> (u64, bool) {
        let ms = self.when(key);
        (ms, self.add_after(key, ms))
    }

    /// `forget`.
    pub fn forget(&mut self, key: u32) {
        self.failures.remove(&key);
    }

    /// `num_requeues`.
    #[must_use]
    pub fn num_requeues(&self, key: u32) -> u32 {
        self.failures.get(&key).copied().unwrap_or(0)
    }

    /// `try_get`.
    ///
    /// # Errors
    ///
    /// As the queue's: [`TryGetError::Empty`] or [`TryGetError::ShutDown`].
    pub fn try_get(&mut self) -> Result<u32, TryGetError> {
        match self.queue.pop_front() {
            Some(k) => {
                self.dirty.remove(&k);
                self.processing.insert(k);
                Ok(k)
            }
            None if self.shutting_down => Err(TryGetError::ShutDown),
            None => Err(TryGetError::Empty),
        }
    }

    /// `done`.
    pub fn done(&mut self, key: u32) {
        if self.processing.remove(&key) && self.dirty.contains(&key) {
            self.queue.push_back(key);
        }
    }

    /// `shut_down` (`drain`: `shut_down_with_drain`).
    pub fn shut_down(&mut self, drain: bool) {
        self.delayed.clear();
        self.shutting_down = true;
        self.drain = drain;
    }

    /// Whether a `shut_down_with_drain` may return.
    #[must_use]
    pub fn drained(&self) -> bool {
        self.processing.is_empty() || !self.drain
    }

    /// Whether the queue is shutting down.
    #[must_use]
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }

    /// The waiting keys, in order.
    #[must_use]
    pub fn waiting_keys(&self) -> Vec<u32> {
        self.queue.iter().copied().collect()
    }

    /// How many keys are waiting.
    #[must_use]
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no key is waiting.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// How many keys are delayed.
    #[must_use]
    pub fn delayed_len(&self) -> usize {
        self.delayed.len()
    }

    /// How many keys are processing.
    #[must_use]
    pub fn processing_len(&self) -> usize {
        self.processing.len()
    }

    /// The latest deadline of a delayed key, in milliseconds since the start.
    #[must_use]
    pub fn last_deadline_ms(&self) -> Option<u64> {
        self.delayed.values().map(|&(at, _)| at).max()
    }
}
