//! The work queue's state under its lock: client-go's `queue`, `dirty` and `processing`, the
//! delayed keys, and the shutdown flags. Synchronous; the waking is [`WorkQueue`]'s.
//!
//! [`WorkQueue`]: super::WorkQueue

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

use super::delayed::Delayed;
use super::in_flight::InFlight;

/// Invariant (client-go's): every key of `queue` is dirty and not processing, and appears in
/// `queue` once.
pub(super) struct State<K> {
    /// The keys waiting to be handed out, in order.
    queue: VecDeque<K>,
    /// client-go's `dirty` and `processing` sets as one map, so each operation hashes its key
    /// once: every key that is dirty (in `queue`, or added again while processing), processing
    /// (handed out and not yet done), or both.
    marks: HashMap<K, Mark>,
    /// How many keys are processing.
    processing: usize,
    /// The keys added with a delay, not yet due.
    delayed: Delayed<K>,
    shutting_down: bool,
    /// Whether a `shut_down_with_drain` is waiting (a later `shut_down` clears it).
    drain: bool,
    /// With timing on (the queue records metrics, and [`Mark::since`] is set): the start
    /// times of the keys being processed, for the in-flight gauges.
    in_flight: Option<InFlight>,
    /// Whether a task recomputes the in-flight gauges on a timer (then operations do not).
    ticking: bool,
}

/// Whether a key of [`State::marks`] is dirty, processing, or both (never neither).
#[derive(Clone, Copy)]
struct Mark {
    dirty: bool,
    processing: bool,
    /// With timing on: when the key was queued (waiting) or handed out (processing).
    since: Option<Instant>,
}

/// What a non-blocking get found.
pub(super) enum Take<K> {
    /// A key, now processing, and how long it waited (when timed).
    Key(K, Option<Duration>),
    /// Nothing is waiting and the queue is shutting down.
    ShutDown,
    /// Nothing is waiting (yet); the earliest delayed key is due at this instant, if any.
    Wait(Option<Instant>),
}

impl<K> State<K> {
    pub(super) fn len(&self) -> usize {
        self.queue.len()
    }

    pub(super) fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }
}

impl<K: Clone + Eq + Hash> State<K> {
    pub(super) fn new(timed: bool) -> Self {
        Self {
            in_flight: timed.then(InFlight::new),
            ticking: false,
            queue: VecDeque::new(),
            marks: HashMap::new(),
            processing: 0,
            delayed: Delayed::new(),
            shutting_down: false,
            drain: false,
        }
    }

    /// Moves the delayed keys that are due to the queue, earliest first, as client-go's
    /// waiting loop does when their time comes. Every operation calls this first, so a due key
    /// is queued before anything the operation does, exactly as if it had been added at its
    /// deadline. Returns how many keys were pushed to the queue.
    pub(super) fn promote_due(&mut self) -> usize {
        if self.delayed.len() == 0 {
            return 0;
        }
        let now = Instant::now();
        let mut pushed = 0;
        while let Some((key, copy)) = self.delayed.pop_due(now) {
            pushed += usize::from(self.insert(key, Some(copy)));
        }
        pushed
    }

    /// client-go's `Add`; returns whether the key was pushed to the queue (and a getter should
    /// be woken). Ignored while shutting down.
    pub(super) fn add(&mut self, key: K) -> bool {
        !self.shutting_down && self.insert(key, None)
    }

    /// Marks `key` dirty and queues it unless it is processing; a key already dirty is left
    /// alone without cloning it (the one given is dropped). `spare` is a second copy of the key,
    /// if the caller has one.
    fn insert(&mut self, key: K, spare: Option<K>) -> bool {
        match self.marks.entry(key) {
            Entry::Occupied(mut e) => {
                // Processing (and not dirty yet), or dirty already: either way not queued now.
                e.get_mut().dirty = true;
                false
            }
            Entry::Vacant(e) => {
                let copy = spare.unwrap_or_else(|| e.key().clone());
                e.insert(Mark {
                    dirty: true,
                    processing: false,
                    since: self.in_flight.is_some().then(Instant::now),
                });
                self.queue.push_back(copy);
                true
            }
        }
    }

    /// Delays `key` until `deadline` (an earlier deadline for a delayed key wins). Returns
    /// whether the earliest deadline changed. Ignored while shutting down.
    pub(super) fn add_at(&mut self, key: K, deadline: Instant) -> bool {
        !self.shutting_down && self.delayed.schedule(key, deadline)
    }

    /// Hands out the key at the head of the queue.
    pub(super) fn take(&mut self) -> Take<K> {
        if let Some(key) = self.queue.pop_front() {
            let mut waited = None;
            if let Some(mark) = self.marks.get_mut(&key) {
                mark.dirty = false;
                mark.processing = true;
                self.processing += 1;
                if let Some(since) = mark.since {
                    let now = Instant::now();
                    waited = Some(now - since);
                    mark.since = Some(now);
                    if let Some(in_flight) = &mut self.in_flight {
                        in_flight.start(now);
                    }
                }
            }
            return Take::Key(key, waited);
        }
        if self.shutting_down {
            Take::ShutDown
        } else {
            Take::Wait(self.delayed.next_deadline())
        }
    }

    /// client-go's `Done`: `key` is no longer processing, and is queued again if it was added
    /// meanwhile (the one place a key is cloned: the queue needs a copy besides the mark's). A
    /// key that is not processing is ignored. Returns whether the key was queued again, whether
    /// a waiting drain may now return (a drain is waiting and nothing is processing any more),
    /// and how long the key was processed (when timed).
    pub(super) fn done(&mut self, key: &K) -> (bool, bool, Option<Duration>) {
        let Some((key, mark)) = self.marks.remove_entry(key) else {
            return (false, false, None);
        };
        if !mark.processing {
            // Waiting, not processing: put it back as it was.
            self.marks.insert(key, mark);
            return (false, false, None);
        }
        self.processing -= 1;
        let now = mark.since.map(|_| Instant::now());
        if let (Some(in_flight), Some(since)) = (&mut self.in_flight, mark.since) {
            in_flight.finish(since);
        }
        let worked = mark.since.zip(now).map(|(since, now)| now - since);
        let requeued = mark.dirty;
        if requeued {
            self.queue.push_back(key.clone());
            self.marks.insert(
                key,
                Mark {
                    dirty: true,
                    processing: false,
                    since: now,
                },
            );
        }
        (requeued, self.drain && self.processing == 0, worked)
    }

    /// The summed age of the keys being processed and the oldest one's, now (`None` when keys
    /// are not timed). Constant time: see [`InFlight`].
    pub(super) fn in_flight(&self) -> Option<(Duration, Duration)> {
        self.in_flight.as_ref().map(|f| f.ages(Instant::now()))
    }

    /// [`in_flight`](Self::in_flight), for an operation: `None` when a task keeps the gauges
    /// on a timer instead, or once the queue is shutting down (the gauges freeze, as
    /// client-go's stop being updated).
    pub(super) fn in_flight_on_operation(&self) -> Option<(Duration, Duration)> {
        if self.ticking || self.shutting_down {
            return None;
        }
        self.in_flight()
    }

    /// A task now recomputes the in-flight gauges on a timer: operations stop doing it.
    pub(super) fn start_ticking(&mut self) {
        self.ticking = true;
    }

    /// Starts shutting down (`drain`: a drain is waiting for the keys in flight). The delayed
    /// keys are dropped; those already due were queued by the lock that called this (they are
    /// still handed out).
    pub(super) fn shut_down(&mut self, drain: bool) {
        self.delayed.clear();
        self.shutting_down = true;
        self.drain = drain;
    }

    /// Whether a drain may return: nothing is processing, or a `shut_down` released it.
    pub(super) fn drained(&self) -> bool {
        self.processing == 0 || !self.drain
    }

    /// The waiting keys, in order.
    pub(super) fn waiting_keys(&self) -> Vec<K> {
        self.queue.iter().cloned().collect()
    }

    pub(super) fn delayed_len(&self) -> usize {
        self.delayed.len()
    }

    pub(super) fn processing_len(&self) -> usize {
        self.processing
    }
}
