//! What every queue shares: closing, the initial-population count behind `has_synced`, and
//! waking a waiting `pop`.

use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

use crate::PopError;

/// Close and sync flags (atomics, so a process function may read them under the queue lock)
/// and the notifier a waiting `pop` sleeps on.
pub(crate) struct Lifecycle {
    notify: Notify,
    closed: AtomicBool,
    synced: AtomicBool,
}

impl Lifecycle {
    pub(crate) fn new() -> Self {
        Self {
            notify: Notify::new(),
            closed: AtomicBool::new(false),
            synced: AtomicBool::new(false),
        }
    }

    /// Latches `synced` once the population says so.
    pub(crate) fn update_synced(&self, population: &Population) {
        if population.is_synced() {
            self.synced.store(true, Ordering::Release);
        }
    }

    pub(crate) fn has_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Wakes one waiting `pop` (or lets the next one through at once).
    pub(crate) fn wake(&self) {
        self.notify.notify_one();
    }

    /// Calls `attempt` until it returns a result, sleeping in between until woken.
    ///
    /// `attempt` takes an item and processes it synchronously, or returns `None` when there is
    /// nothing to take. The waiter is registered before each attempt, so no wake-up is lost; the
    /// only await is the sleep, so dropping the future loses nothing.
    pub(crate) async fn pop_with<F>(&self, mut attempt: F) -> Result<(), PopError>
    where
        F: FnMut() -> Option<Result<(), PopError>> + Send,
    {
        loop {
            let mut notified = pin!(self.notify.notified());
            notified.as_mut().enable();
            if let Some(result) = attempt() {
                return result;
            }
            notified.await;
        }
    }
}

/// client-go's `populated` and `initialPopulationCount`.
#[derive(Debug, Default)]
pub(crate) struct Population {
    populated: bool,
    initial: usize,
}

impl Population {
    /// An add, update or delete: the queue is populated (with nothing initial to wait for if this
    /// is the first write).
    pub(crate) fn mark_populated(&mut self) {
        self.populated = true;
    }

    /// A replace: the first one sets the number of initial items.
    pub(crate) fn replaced(&mut self, initial: usize) {
        if !self.populated {
            self.populated = true;
            self.initial = initial;
        }
    }

    /// `n` items were processed.
    pub(crate) fn processed(&mut self, n: usize) {
        self.initial = self.initial.saturating_sub(n);
    }

    /// How many initial items remain to be processed.
    pub(crate) fn remaining(&self) -> usize {
        self.initial
    }

    pub(crate) fn is_synced(&self) -> bool {
        self.populated && self.initial == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn population_syncs_after_the_initial_items() {
        let mut p = Population::default();
        assert!(!p.is_synced());
        p.replaced(2);
        assert!(!p.is_synced());
        p.replaced(5);
        assert_eq!(p.remaining(), 2, "only the first replace counts");
        p.processed(1);
        assert!(!p.is_synced());
        p.processed(3);
        assert!(p.is_synced());
    }

    #[test]
    fn a_write_before_any_replace_syncs_at_once() {
        let mut p = Population::default();
        p.mark_populated();
        p.replaced(3);
        assert!(p.is_synced());
    }
}
