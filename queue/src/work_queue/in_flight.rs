//! [`InFlight`]: the start times of the keys being processed. The work queue's in-flight
//! gauges (client-go's `unfinished_work_seconds` and `longest_running_processor_seconds`) are
//! read from it in constant time, whatever the number of keys, waiting or processing.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::time::Duration;

use tokio::time::Instant;

/// A multiset of start times and their running sum.
///
/// With `n` keys processing, started at `s1..sn`, at `now`:
///
/// - the summed age is `n * now - (s1 + ... + sn)`, from a count and a sum kept as keys start
///   and finish, each time measured in nanoseconds from `base`;
/// - the oldest age is `now - min(s)`, the first entry of a sorted map.
///
/// A key's start costs `O(log n)` (a map entry; keys started at the same instant share one),
/// its finish the same, and reading both ages `O(1)`.
pub(super) struct InFlight {
    /// The instant every start is measured from (when the queue was built).
    base: Instant,
    /// Start time -> how many keys being processed started then.
    starts: BTreeMap<Instant, usize>,
    /// How many keys are being processed.
    count: u128,
    /// The sum of `start - base` over the keys being processed, in nanoseconds.
    sum: u128,
}

impl InFlight {
    pub(super) fn new() -> Self {
        Self {
            base: Instant::now(),
            starts: BTreeMap::new(),
            count: 0,
            sum: 0,
        }
    }

    /// `at` measured from `base`, in nanoseconds.
    fn offset(&self, at: Instant) -> u128 {
        at.saturating_duration_since(self.base).as_nanos()
    }

    /// A key started processing `at`.
    pub(super) fn start(&mut self, at: Instant) {
        *self.starts.entry(at).or_default() += 1;
        self.count += 1;
        self.sum += self.offset(at);
    }

    /// A key that started processing at `started` finished. A start never recorded is ignored.
    pub(super) fn finish(&mut self, started: Instant) {
        let Entry::Occupied(mut entry) = self.starts.entry(started) else {
            return;
        };
        *entry.get_mut() -= 1;
        if *entry.get() == 0 {
            entry.remove();
        }
        self.count -= 1;
        self.sum -= self.offset(started);
    }

    /// At `now`: the summed age of the keys being processed, and the oldest one's (both zero
    /// when none is).
    pub(super) fn ages(&self, now: Instant) -> (Duration, Duration) {
        let Some((&oldest, _)) = self.starts.first_key_value() else {
            return (Duration::ZERO, Duration::ZERO);
        };
        let unfinished = (self.count * self.offset(now)).saturating_sub(self.sum);
        (
            from_nanos(unfinished),
            now.saturating_duration_since(oldest),
        )
    }
}

/// `nanos` as a duration, [`Duration::MAX`] if it does not fit.
fn from_nanos(nanos: u128) -> Duration {
    const PER_SEC: u128 = 1_000_000_000;
    match (
        u64::try_from(nanos / PER_SEC),
        u32::try_from(nanos % PER_SEC),
    ) {
        (Ok(secs), Ok(sub)) => Duration::new(secs, sub),
        _ => Duration::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_and_oldest_follow_starts_and_finishes() {
        let mut f = InFlight::new();
        let t0 = f.base;
        let ms = |n| Duration::from_millis(n);
        assert_eq!(f.ages(t0 + ms(5)), (Duration::ZERO, Duration::ZERO));
        f.start(t0 + ms(10));
        f.start(t0 + ms(10));
        f.start(t0 + ms(30));
        // At 100 ms: 90 + 90 + 70, the oldest 90.
        assert_eq!(f.ages(t0 + ms(100)), (ms(250), ms(90)));
        f.finish(t0 + ms(10));
        assert_eq!(f.ages(t0 + ms(100)), (ms(160), ms(90)));
        f.finish(t0 + ms(10));
        assert_eq!(f.ages(t0 + ms(100)), (ms(70), ms(70)));
        f.finish(t0 + ms(99));
        assert_eq!(
            f.ages(t0 + ms(100)),
            (ms(70), ms(70)),
            "unknown start ignored"
        );
        f.finish(t0 + ms(30));
        assert_eq!(f.ages(t0 + ms(100)), (Duration::ZERO, Duration::ZERO));
    }

    #[test]
    fn huge_sums_saturate() {
        assert_eq!(from_nanos(u128::MAX), Duration::MAX);
        assert_eq!(from_nanos(1_500_000_000), Duration::from_millis(1500));
    }
}
