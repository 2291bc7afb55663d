//! The processor: fans events out to every listener and decides who takes part in a resync.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::Event;
use crate::listener::Listener;

/// The shortest resync period a handler may ask for (client-go's `minimumResyncPeriod`).
pub(crate) const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// client-go's `determineResyncPeriod`: 0 stays 0, an informer checking never resyncs nobody,
/// and a period shorter than the check period is raised to it.
pub(crate) fn determine_resync_period(desired: Duration, check: Duration) -> Duration {
    if desired.is_zero() || check.is_zero() {
        Duration::ZERO
    } else {
        desired.max(check)
    }
}

/// client-go's `sharedProcessor`.
pub(crate) struct Processor<T> {
    listeners: Mutex<Vec<Arc<Listener<T>>>>,
}

impl<T: Send + Sync + 'static> Processor<T> {
    pub(crate) fn new() -> Self {
        Self {
            listeners: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Listener<T>>>> {
        self.listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn add(&self, listener: Arc<Listener<T>>) {
        self.lock().push(listener);
    }

    /// Removes and returns the listener `id`.
    pub(crate) fn remove(&self, id: u64) -> Option<Arc<Listener<T>>> {
        let mut ls = self.lock();
        let at = ls.iter().position(|l| l.id == id)?;
        Some(ls.remove(at))
    }

    pub(crate) fn listeners(&self) -> Vec<Arc<Listener<T>>> {
        self.lock().clone()
    }

    /// Sends `event` to every listener, or for a resync only to those in the current round.
    pub(crate) fn distribute(&self, event: &Event<T>, sync: bool) {
        let mut ls = self.lock();
        // Dropped streams leave closed listeners behind.
        ls.retain(|l| !l.shared.is_closed());
        for l in ls.iter() {
            if sync
                && !l
                    .resync
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .syncing
            {
                continue;
            }
            l.push_deferred(event.clone());
        }
    }

    /// Wakes every listener with deferred events (see [`Listener::push_deferred`]).
    pub(crate) fn flush(&self) {
        for l in self.lock().iter() {
            l.flush();
        }
    }

    /// Marks the listeners whose resync is due and reports whether any is.
    pub(crate) fn should_resync(&self, now: Instant) -> bool {
        let mut any = false;
        for l in self.lock().iter() {
            let mut r = l.resync.lock().unwrap_or_else(PoisonError::into_inner);
            if r.effective.is_zero() {
                r.syncing = false;
                r.next = None;
                continue;
            }
            // A listener's first resync comes one period after it was first seen.
            let period = r.effective;
            let next = *r.next.get_or_insert(now + period);
            let due = now >= next;
            r.syncing = due;
            if due {
                r.next = Some(now + r.effective);
                any = true;
            }
        }
        any
    }

    /// Recomputes every listener's effective period against a new check period.
    pub(crate) fn reconcile(&self, check: Duration) {
        for l in self.lock().iter() {
            let mut r = l.resync.lock().unwrap_or_else(PoisonError::into_inner);
            r.effective = determine_resync_period(r.requested, check);
        }
    }

    /// Stops every listener and waits for their threads.
    pub(crate) fn shutdown(&self) {
        let all = std::mem::take(&mut *self.lock());
        for l in all {
            l.shutdown();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resync_period_rules() {
        let s = Duration::from_secs;
        assert_eq!(determine_resync_period(s(0), s(10)), s(0));
        assert_eq!(determine_resync_period(s(5), s(0)), s(0));
        assert_eq!(determine_resync_period(s(5), s(10)), s(10));
        assert_eq!(determine_resync_period(s(30), s(10)), s(30));
    }
}
