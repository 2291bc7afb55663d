//! [`ReconcileLedger`]: who reconciled which key, and whether a key ever ran on two replicas
//! at once; the record every test of sharded or leader-elected reconciles checks.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

/// A record of reconciles across replicas: each replica's reconcile calls
/// [`reconcile`](Self::reconcile) with its own index, and the test reads back who reconciled
/// what ([`reconciled_by`](Self::reconciled_by)) and how often a key ran on two replicas at the
/// same time ([`overlaps`](Self::overlaps), which single ownership keeps at zero).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// use std::collections::BTreeSet;
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use kcache_testing::ReconcileLedger;
///
/// let ledger = Arc::new(ReconcileLedger::new(Duration::from_millis(5)));
/// // Replicas 0 and 1 reconcile the same key at once: an overlap.
/// let (a, b) = (Arc::clone(&ledger), Arc::clone(&ledger));
/// tokio::join!(a.reconcile(0, "ns/a"), b.reconcile(1, "ns/a"));
/// ledger.reconcile(1, "ns/b").await;
/// assert_eq!(ledger.overlaps(), 1);
/// assert_eq!(ledger.reconciled_by("ns/a"), BTreeSet::from([0, 1]));
/// assert_eq!(ledger.reconciled_by("ns/b"), BTreeSet::from([1]));
/// assert_eq!(ledger.len(), 2);
/// ledger.clear();
/// assert!(ledger.reconciled_by("ns/a").is_empty());
/// assert_eq!(ledger.overlaps(), 1, "overlaps are never cleared");
/// # });
/// ```
#[derive(Debug)]
pub struct ReconcileLedger {
    /// How long each reconcile lasts (zero: it yields once), so that two replicas reconciling
    /// a key at once overlap in time.
    hold: Duration,
    /// key -> the replica reconciling it now.
    running: Mutex<HashMap<String, usize>>,
    overlaps: AtomicUsize,
    /// key -> the replicas that reconciled it, since the last [`clear`](Self::clear).
    by: Mutex<HashMap<String, BTreeSet<usize>>>,
}

impl Default for ReconcileLedger {
    /// Reconciles that only yield once.
    fn default() -> Self {
        Self::new(Duration::ZERO)
    }
}

/// Pending once (waking itself at once), then ready: lets other tasks run, as tokio's
/// `yield_now` does, without the runtime feature a library leaves to the application.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ReconcileLedger {
    /// A ledger whose reconciles each last `hold` (of tokio time; zero: one yield).
    #[must_use]
    pub fn new(hold: Duration) -> Self {
        Self {
            hold,
            running: Mutex::default(),
            overlaps: AtomicUsize::new(0),
            by: Mutex::default(),
        }
    }

    /// One reconcile of `key` by `replica`: notes an overlap if another replica is reconciling
    /// the key now (and says so on stderr), lasts the ledger's hold, then records `replica` as
    /// one that reconciled `key`.
    pub async fn reconcile(&self, replica: usize, key: impl AsRef<str>) {
        let key = key.as_ref();
        let other = locked(&self.running).insert(key.to_owned(), replica);
        if let Some(other) = other {
            eprintln!("{key} reconciled by replicas {other} and {replica} at once");
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        if self.hold.is_zero() {
            YieldOnce(false).await;
        } else {
            tokio::time::sleep(self.hold).await;
        }
        {
            let mut running = locked(&self.running);
            if running.get(key) == Some(&replica) {
                running.remove(key);
            }
        }
        locked(&self.by)
            .entry(key.to_owned())
            .or_default()
            .insert(replica);
    }

    /// How many times a reconcile of a key started while another replica's of the same key
    /// ran: zero under single ownership. Never cleared.
    #[must_use]
    pub fn overlaps(&self) -> usize {
        self.overlaps.load(Ordering::SeqCst)
    }

    /// The replicas that reconciled `key` since the last [`clear`](Self::clear) (empty: none).
    #[must_use]
    pub fn reconciled_by(&self, key: &str) -> BTreeSet<usize> {
        locked(&self.by).get(key).cloned().unwrap_or_default()
    }

    /// Whether every one of `keys` was reconciled since the last [`clear`](Self::clear).
    pub fn all_reconciled<'k>(&self, keys: impl IntoIterator<Item = &'k str>) -> bool {
        let by = locked(&self.by);
        keys.into_iter().all(|k| by.contains_key(k))
    }

    /// Every key reconciled since the last [`clear`](Self::clear), with its replicas.
    #[must_use]
    pub fn snapshot(&self) -> HashMap<String, BTreeSet<usize>> {
        locked(&self.by).clone()
    }

    /// How many keys were reconciled since the last [`clear`](Self::clear).
    #[must_use]
    pub fn len(&self) -> usize {
        locked(&self.by).len()
    }

    /// Whether no key was reconciled since the last [`clear`](Self::clear).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        locked(&self.by).is_empty()
    }

    /// Forgets who reconciled what (not the overlaps), to watch what happens next.
    pub fn clear(&self) {
        locked(&self.by).clear();
    }
}
