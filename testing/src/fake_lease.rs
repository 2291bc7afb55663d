//! [`FakeLease`]: one Lease in memory, shared by the candidates of a leader-election test, each
//! through its own [`LeaseLock`] whose calls can be made to fail (a cut connection), to answer
//! late (a slow one) or never (a hung one).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use kcache_reflector::{Error, LeaseLock, LeaseRecord, Status, VersionedLease};

/// One Lease on a pretend API server: its record and resource version, every successful write
/// in order, and per-candidate faults.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use kcache_reflector::{LeaseLock, LeaseRecord};
/// use kcache_testing::FakeLease;
///
/// let lease = FakeLease::new("kube-system/controller");
/// let (a, b) = (lease.lock("a"), lease.lock("b"));
/// let created = a.create(&LeaseRecord::held_by("a", 15, std::time::UNIX_EPOCH)).await?;
/// assert!(b.create(&LeaseRecord::default()).await.unwrap_err().is_already_exists());
/// let current = b.get().await?.expect("exists");
/// a.update(&created, &LeaseRecord::held_by("a", 15, std::time::UNIX_EPOCH)).await?;
/// assert!(b.update(&current, &LeaseRecord::default()).await.unwrap_err().is_conflict());
/// assert_eq!(lease.holders(), ["a", "a"]);
/// # Ok::<(), kcache_reflector::Error>(())
/// # }).unwrap();
/// ```
///
/// Faults, per candidate:
///
/// - [`cut`](Self::cut): the candidate's calls fail with a transport error (after their delay,
///   if any);
/// - [`delay`](Self::delay): the candidate's calls sleep first (`tokio::time::sleep`, so they
///   follow paused time), then answer from the Lease as it is *after* the sleep: a slow
///   connection, or with [`Duration::MAX`] a hung one (a call that never answers, until the
///   caller's own timeout gives up on it).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// use std::time::Duration;
/// use kcache_reflector::{LeaseLock, LeaseRecord};
/// use kcache_testing::FakeLease;
///
/// let lease = FakeLease::new("kube-system/controller");
/// let (a, b) = (lease.lock("a"), lease.lock("b"));
/// lease.delay("b", Duration::from_secs(2));
/// let start = tokio::time::Instant::now();
/// let record = LeaseRecord::held_by("a", 15, std::time::UNIX_EPOCH);
/// // Written while b's read sleeps: the read answers with it.
/// let (read, created) = tokio::join!(b.get(), a.create(&record));
/// assert_eq!(start.elapsed(), Duration::from_secs(2));
/// assert_eq!(read?, Some(created?));
///
/// lease.delay("b", Duration::MAX); // hung
/// let hung = tokio::time::timeout(Duration::from_secs(10), b.get()).await;
/// assert!(hung.is_err(), "no answer before the caller's timeout");
/// # Ok::<(), kcache_reflector::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct FakeLease {
    name: String,
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    current: Option<VersionedLease>,
    next_rv: u64,
    /// The holder after each successful write, in order.
    writes: Vec<Option<String>>,
    /// Candidates whose calls fail as if their connection were cut.
    cut: HashSet<String>,
    /// Candidates whose calls sleep this long before they answer.
    delay: HashMap<String, Duration>,
}

impl FakeLease {
    /// A Lease named `namespace/name` that does not exist yet.
    #[must_use]
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            inner: Arc::default(),
        }
    }

    /// The lock candidate `identity` uses.
    #[must_use]
    pub fn lock(&self, identity: &str) -> Arc<dyn LeaseLock> {
        Arc::new(FakeLeaseLock {
            lease: self.clone(),
            identity: identity.to_owned(),
        })
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Cuts (or restores) `identity`'s connection: its calls fail with a transport error
    /// (after their [delay](Self::delay), if any).
    pub fn cut(&self, identity: &str, cut: bool) {
        let mut inner = self.inner();
        if cut {
            inner.cut.insert(identity.to_owned());
        } else {
            inner.cut.remove(identity);
        }
    }

    /// Slows `identity`'s connection: each of its calls sleeps `delay` (tokio's sleep, so
    /// paused time applies), then answers from the Lease as it is then: a `get` reads the
    /// record after the sleep, and a write checks for a conflict (and a [cut](Self::cut))
    /// after it. [`Duration::MAX`] hangs its calls (they answer only once about 30 years have
    /// passed); [`Duration::ZERO`] restores a prompt connection. The delay is read as a call
    /// starts: changing it does not shorten a call already asleep.
    pub fn delay(&self, identity: &str, delay: Duration) {
        let mut inner = self.inner();
        if delay.is_zero() {
            inner.delay.remove(identity);
        } else {
            inner.delay.insert(identity.to_owned(), delay);
        }
    }

    /// The holder after each successful write, in order (`""` for a released Lease).
    #[must_use]
    pub fn holders(&self) -> Vec<String> {
        self.inner()
            .writes
            .iter()
            .map(|h| h.clone().unwrap_or_default())
            .collect()
    }

    /// The Lease as stored.
    #[must_use]
    pub fn current(&self) -> Option<VersionedLease> {
        self.inner().current.clone()
    }
}

struct FakeLeaseLock {
    lease: FakeLease,
    identity: String,
}

impl FakeLeaseLock {
    /// The Lease, once the candidate's delay has passed; an error if its connection is cut.
    /// The lock is not held across the sleep.
    async fn inner(&self) -> Result<MutexGuard<'_, Inner>, Error> {
        let delay = self.lease.inner().delay.get(&self.identity).copied();
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        let inner = self.lease.inner();
        if inner.cut.contains(&self.identity) {
            return Err(Error::transport(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                format!("{}: connection cut by the test", self.identity),
            )));
        }
        Ok(inner)
    }
}

fn status(code: u16, reason: &str, message: &str) -> Error {
    Error::api(Status::failure(code, reason, message))
}

fn write(inner: &mut Inner, record: &LeaseRecord) -> VersionedLease {
    inner.next_rv += 1;
    let lease = VersionedLease {
        record: record.clone(),
        resource_version: inner.next_rv.to_string(),
    };
    inner.current = Some(lease.clone());
    inner.writes.push(record.holder().map(str::to_owned));
    lease
}

#[async_trait::async_trait]
impl LeaseLock for FakeLeaseLock {
    fn describe(&self) -> String {
        self.lease.name.clone()
    }

    async fn get(&self) -> Result<Option<VersionedLease>, Error> {
        Ok(self.inner().await?.current.clone())
    }

    async fn create(&self, record: &LeaseRecord) -> Result<VersionedLease, Error> {
        let mut inner = self.inner().await?;
        if inner.current.is_some() {
            return Err(status(
                409,
                "AlreadyExists",
                "leases.coordination.k8s.io already exists",
            ));
        }
        Ok(write(&mut inner, record))
    }

    async fn update(
        &self,
        current: &VersionedLease,
        record: &LeaseRecord,
    ) -> Result<VersionedLease, Error> {
        let mut inner = self.inner().await?;
        match &inner.current {
            None => Err(status(
                404,
                "NotFound",
                "leases.coordination.k8s.io not found",
            )),
            Some(stored) if stored.resource_version != current.resource_version => Err(status(
                409,
                "Conflict",
                "the object has been modified; please apply your changes to the latest version",
            )),
            Some(_) => Ok(write(&mut inner, record)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(holder: &str) -> LeaseRecord {
        LeaseRecord::held_by(holder, 15, std::time::UNIX_EPOCH)
    }

    /// A slow write is checked against the Lease as it is once its delay passed: a write by
    /// another candidate meanwhile makes it a conflict, and a cut meanwhile an error.
    #[tokio::test(start_paused = true)]
    async fn a_delayed_write_is_checked_after_its_delay() {
        let lease = FakeLease::new("ns/l");
        let (a, b) = (lease.lock("a"), lease.lock("b"));
        let (by_a, by_b) = (record("a"), record("b"));
        let first = a.create(&by_a).await.unwrap();
        lease.delay("b", Duration::from_secs(1));
        let start = tokio::time::Instant::now();
        let (late, renewed) = tokio::join!(b.update(&first, &by_b), a.update(&first, &by_a));
        assert_eq!(start.elapsed(), Duration::from_secs(1));
        assert!(late.unwrap_err().is_conflict(), "a renewed while b slept");
        let renewed = renewed.unwrap();

        let (cut, ()) = tokio::join!(b.update(&renewed, &by_b), async {
            lease.cut("b", true);
        });
        assert!(cut.is_err_and(|e| !e.is_conflict()), "cut while it slept");
        lease.cut("b", false);
        lease.delay("b", Duration::ZERO);
        b.update(&renewed, &by_b).await.unwrap();
        assert_eq!(lease.holders(), ["a", "a", "b"]);
    }
}
