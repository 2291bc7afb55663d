//! [`LeaseLock`]: the lock leader election takes on the API server, a `coordination.k8s.io/v1`
//! Lease read and written with the server's optimistic concurrency, and [`LeaseRecord`], what
//! the election keeps in it (mapped to and from the Lease's `spec` JSON in `lease_spec`).
//!
//! It lives beside [`ListerWatcher`](crate::ListerWatcher): both are what kcache asks of an API
//! server, so an HTTP backend implements both and the election (in `kcache-informer`) sees only
//! the trait.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::Error;

/// The election's state in a Lease's `spec` (client-go's `LeaderElectionRecord`): who holds
/// it, for how long, and how often it changed hands. [`from_spec`](Self::from_spec) and
/// [`write_spec`](Self::write_spec) map it to and from the `spec` JSON. Times are in the API's micro-time
/// format ([`micro_time`]); the election never reads them back (it measures expiry on its own
/// clock, from when it saw the record change), so clock skew between replicas does not matter.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct LeaseRecord {
    /// `spec.holderIdentity`: the holder, or `None` once released.
    pub holder_identity: Option<String>,
    /// `spec.leaseDurationSeconds`.
    pub lease_duration_seconds: Option<i32>,
    /// `spec.acquireTime`.
    pub acquire_time: Option<String>,
    /// `spec.renewTime`.
    pub renew_time: Option<String>,
    /// `spec.leaseTransitions`: how often the holder changed.
    pub lease_transitions: Option<i32>,
}

impl LeaseRecord {
    /// A record held by `holder` for `lease_duration_seconds`, acquired and renewed `now`.
    #[must_use]
    pub fn held_by(holder: &str, lease_duration_seconds: i32, now: SystemTime) -> Self {
        let t = micro_time(now);
        Self {
            holder_identity: Some(holder.to_owned()),
            lease_duration_seconds: Some(lease_duration_seconds),
            acquire_time: Some(t.clone()),
            renew_time: Some(t),
            lease_transitions: Some(0),
        }
    }

    /// The holder, if any (an empty identity is none, as in client-go).
    #[must_use]
    pub fn holder(&self) -> Option<&str> {
        self.holder_identity.as_deref().filter(|h| !h.is_empty())
    }
}

/// A Lease as read or written: its record and its `metadata.resourceVersion`, the precondition
/// of the next update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedLease {
    /// The election's state.
    pub record: LeaseRecord,
    /// The Lease's resource version.
    pub resource_version: String,
}

/// One Lease on the API server, as leader election uses it (client-go's `resourcelock.Interface`
/// for Leases).
///
/// `update` must send `current.resource_version` as the precondition: the server answers 409
/// Conflict when another candidate wrote the Lease in between, which is what makes the Lease a
/// lock. Dyn-compatible through `async-trait`.
#[async_trait::async_trait]
pub trait LeaseLock: Send + Sync {
    /// `namespace/name` of the Lease, for logs.
    fn describe(&self) -> String;
    /// The Lease, or `None` if it does not exist (the server's 404 `NotFound` for that
    /// Lease; a server that does not serve Leases at all is an error, not `None`).
    ///
    /// # Errors
    ///
    /// The server's error or the transport's.
    async fn get(&self) -> Result<Option<VersionedLease>, Error>;
    /// Creates the Lease holding `record`.
    ///
    /// # Errors
    ///
    /// A 409 `AlreadyExists` when another candidate created it first
    /// ([`Error::is_already_exists`]); the server's error or the transport's.
    async fn create(&self, record: &LeaseRecord) -> Result<VersionedLease, Error>;
    /// Replaces the Lease's record, on the condition that it is still at
    /// `current.resource_version`.
    ///
    /// # Errors
    ///
    /// A 409 `Conflict` when it changed meanwhile ([`Error::is_conflict`]); the server's error
    /// or the transport's.
    async fn update(
        &self,
        current: &VersionedLease,
        record: &LeaseRecord,
    ) -> Result<VersionedLease, Error>;
}

/// `t` in the API's micro-time format (`2026-11-24T18:22:40.123456Z`), as Leases carry it.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use kcache_reflector::micro_time;
///
/// let t = UNIX_EPOCH + Duration::from_micros(1_795_976_560_123_456);
/// assert_eq!(micro_time(t), "2026-11-29T18:22:40.123456Z");
/// ```
#[must_use]
pub fn micro_time(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_micros()
    )
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn micro_times_match_the_api_format() {
        assert_eq!(micro_time(UNIX_EPOCH), "1970-01-01T00:00:00.000000Z");
        // A leap day, and the last microsecond of a year.
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(micro_time(leap), "2000-02-29T00:00:00.000000Z");
        let end = UNIX_EPOCH + Duration::from_micros(1_704_067_199_999_999);
        assert_eq!(micro_time(end), "2023-12-31T23:59:59.999999Z");
    }

    #[test]
    fn an_empty_holder_is_none() {
        let mut r = LeaseRecord::held_by("a", 15, UNIX_EPOCH);
        assert_eq!(r.holder(), Some("a"));
        r.holder_identity = Some(String::new());
        assert_eq!(r.holder(), None);
    }
}
