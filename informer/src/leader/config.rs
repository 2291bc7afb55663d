//! [`LeaderElectorBuilder`]: the election's timing, validated as client-go validates it.

use std::sync::Arc;
use std::time::Duration;

use kcache_reflector::LeaseLock;

use super::LeaderElector;
use crate::{Error, Result};

/// How long a lease is valid without renewal (client-go's documented default).
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// How long a leader keeps trying to renew before it stops leading.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// How often candidates try to acquire, and leaders to renew.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);
/// client-go's `JitterFactor`: acquire attempts are `retry_period · (1 + U[0, 1.2))` apart.
pub(super) const JITTER_FACTOR: f64 = 1.2;

/// Builds a [`LeaderElector`]; see [`LeaderElector::builder`].
pub struct LeaderElectorBuilder {
    pub(super) lock: Arc<dyn LeaseLock>,
    pub(super) identity: String,
    pub(super) lease_duration: Duration,
    pub(super) renew_deadline: Duration,
    pub(super) retry_period: Duration,
    pub(super) release_on_cancel: bool,
    pub(super) seed: Option<u64>,
}

impl LeaderElectorBuilder {
    /// How long a lease is valid without renewal (default 15 s): a candidate takes over a Lease
    /// that has not changed for this long on its own clock.
    #[must_use]
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = d;
        self
    }

    /// How long a leader keeps failing to renew before it stops leading (default 10 s).
    #[must_use]
    pub fn renew_deadline(mut self, d: Duration) -> Self {
        self.renew_deadline = d;
        self
    }

    /// How often candidates try to acquire and leaders to renew (default 2 s).
    #[must_use]
    pub fn retry_period(mut self, d: Duration) -> Self {
        self.retry_period = d;
        self
    }

    /// Whether a leader that is cancelled releases the Lease (an empty holder, so another
    /// candidate takes over at once) once its work has stopped (default: no).
    #[must_use]
    pub fn release_on_cancel(mut self, release: bool) -> Self {
        self.release_on_cancel = release;
        self
    }

    /// Seeds the acquire jitter (tests); random by default.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The elector.
    ///
    /// # Errors
    ///
    /// [`Error::LeaderElectionConfig`], in client-go's order: the lease duration, cut to whole
    /// seconds as a Lease carries it, must exceed the renew deadline, which must exceed 1.2 × the retry period; no duration may be zero;
    /// the identity must not be empty.
    pub fn build(self) -> Result<LeaderElector> {
        let invalid = |why: &str| Err(Error::LeaderElectionConfig(why.to_owned()));
        // Leases carry whole seconds: what the other candidates wait is the duration cut to
        // seconds, so that is what must exceed the renew deadline (and be at least 1 s).
        let written = Duration::from_secs(self.lease_duration.as_secs());
        if written <= self.renew_deadline {
            return invalid(
                "the lease duration (in whole seconds, as a Lease carries it) must be greater \
                 than the renew deadline",
            );
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return invalid("the renew deadline must be greater than 1.2 × the retry period");
        }
        if [self.lease_duration, self.renew_deadline, self.retry_period]
            .iter()
            .any(Duration::is_zero)
        {
            return invalid("the lease duration, renew deadline and retry period must be positive");
        }
        if self.identity.is_empty() {
            return invalid("the identity is empty");
        }
        Ok(LeaderElector::from_builder(self))
    }
}

impl std::fmt::Debug for LeaderElectorBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElectorBuilder")
            .field("lease", &self.lock.describe())
            .field("identity", &self.identity)
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .field("release_on_cancel", &self.release_on_cancel)
            .finish_non_exhaustive()
    }
}
