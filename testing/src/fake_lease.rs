//! [`FakeLease`]: one Lease in memory, shared by the candidates of a leader-election test, each
//! through its own [`LeaseLock`] whose calls can be made to fail or hang (a cut connection).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

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
/// assert!(b.create(&LeaseRecord::default()).await.unwrap_err().is_conflict());
/// let current = b.get().await?.expect("exists");
/// a.update(&created, &LeaseRecord::held_by("a", 15, std::time::UNIX_EPOCH)).await?;
/// assert!(b.update(&current, &LeaseRecord::default()).await.unwrap_err().is_conflict());
/// assert_eq!(lease.holders(), ["a", "a"]);
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
    cut: HashMap<String, bool>,
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

    /// Cuts (or restores) `identity`'s connection: its calls fail with a transport error.
    pub fn cut(&self, identity: &str, cut: bool) {
        self.inner().cut.insert(identity.to_owned(), cut);
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
    fn inner(&self) -> Result<MutexGuard<'_, Inner>, Error> {
        let inner = self.lease.inner();
        if inner.cut.get(&self.identity).copied().unwrap_or(false) {
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
        Ok(self.inner()?.current.clone())
    }

    async fn create(&self, record: &LeaseRecord) -> Result<VersionedLease, Error> {
        let mut inner = self.inner()?;
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
        let mut inner = self.inner()?;
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
