//! [`Locked`]: the work queue's state under its lock, with the getters to wake once the lock
//! is released.

use std::ops::{Deref, DerefMut};
use std::sync::MutexGuard;

use tokio::sync::Notify;

use super::state::State;

/// The locked [`State`], and how many getters to wake (one per key queued) when it is dropped:
/// the lock is released first, so a woken getter does not wait on it.
pub(super) struct Locked<'a, K> {
    // Fields are dropped in declaration order: the guard (the lock) before the wake-ups.
    state: MutexGuard<'a, State<K>>,
    wake: Wake<'a>,
}

/// Wakes `keys` getters when dropped.
struct Wake<'a> {
    ready: &'a Notify,
    keys: usize,
}

impl Drop for Wake<'_> {
    fn drop(&mut self) {
        for _ in 0..self.keys {
            self.ready.notify_one();
        }
    }
}

impl<'a, K> Locked<'a, K> {
    /// `state`, locked; getters wait on `ready`.
    pub(super) fn new(state: MutexGuard<'a, State<K>>, ready: &'a Notify) -> Self {
        Self {
            state,
            wake: Wake { ready, keys: 0 },
        }
    }

    /// Wakes `keys` more getters once the lock is released.
    pub(super) fn wake(&mut self, keys: usize) {
        self.wake.keys += keys;
    }
}

impl<K> Deref for Locked<'_, K> {
    type Target = State<K>;

    fn deref(&self) -> &State<K> {
        &self.state
    }
}

impl<K> DerefMut for Locked<'_, K> {
    fn deref_mut(&mut self) -> &mut State<K> {
        &mut self.state
    }
}
