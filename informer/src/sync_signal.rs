//! [`SyncSignal`]: an informer's "synced" and "stopped" as flags that futures wait on without
//! polling.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Two latched flags and the notification that either changed.
#[derive(Debug, Default)]
pub(crate) struct SyncSignal {
    synced: AtomicBool,
    stopped: AtomicBool,
    changed: Notify,
}

impl SyncSignal {
    pub(crate) fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    pub(crate) fn set_synced(&self) {
        self.synced.store(true, Ordering::Release);
        self.changed.notify_waiters();
    }

    pub(crate) fn set_stopped(&self) {
        self.stopped.store(true, Ordering::Release);
        self.changed.notify_waiters();
    }

    /// The notification, for waiters that watch this signal beside another one.
    pub(crate) fn changed(&self) -> &Notify {
        &self.changed
    }

    /// Resolves with `true` once synced, `false` once stopped without having synced.
    pub(crate) async fn wait(&self) -> bool {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.is_synced() {
                return true;
            }
            if self.is_stopped() {
                return false;
            }
            changed.await;
        }
    }
}
