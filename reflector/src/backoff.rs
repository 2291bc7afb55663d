//! [`Backoff`]: the reflector's exponential backoff with jitter and reset (client-go's
//! `DelayWithReset` over `wait.Backoff`).

use std::time::Duration;

use tokio::time::Instant;

/// The numbers of a [`Backoff`]. The default is client-go's: 800 ms, doubling, capped at 30 s,
/// jitter 1.0 (each delay is drawn from `[d, 2d)`), reset after 2 minutes without a backoff.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffConfig {
    /// The first delay.
    pub initial: Duration,
    /// The growth factor between delays.
    pub factor: f64,
    /// The largest base delay (jitter comes on top).
    pub cap: Duration,
    /// The jitter factor: a delay `d` becomes `d + rand[0,1) * jitter * d`.
    pub jitter: f64,
    /// After this long without a backoff the delay starts again from `initial`.
    pub reset_after: Duration,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            factor: 2.0,
            cap: Duration::from_secs(30),
            jitter: 1.0,
            reset_after: Duration::from_secs(120),
        }
    }
}

/// Exponential backoff state: one per reflector, never shared.
///
/// ```
/// use std::time::Duration;
/// use kcache_reflector::{Backoff, BackoffConfig};
///
/// let mut b = Backoff::new(BackoffConfig { jitter: 0.0, ..BackoffConfig::default() }, 1);
/// let now = tokio::time::Instant::now();
/// assert_eq!(b.next_delay(now), Duration::from_millis(800));
/// assert_eq!(b.next_delay(now), Duration::from_millis(1600));
/// // Two quiet minutes later it starts over.
/// assert_eq!(b.next_delay(now + Duration::from_secs(121)), Duration::from_millis(800));
/// ```
#[derive(Debug)]
pub struct Backoff {
    config: BackoffConfig,
    current: Duration,
    last: Option<Instant>,
    rng: fastrand::Rng,
}

impl Backoff {
    /// A fresh backoff whose jitter is drawn from a generator seeded with `seed`.
    #[must_use]
    pub fn new(config: BackoffConfig, seed: u64) -> Self {
        Self {
            config,
            current: config.initial,
            last: None,
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// The largest base delay: also the most a server's `Retry-After` is honoured.
    pub fn cap(&self) -> Duration {
        self.config.cap
    }

    /// The next delay, as of `now`; advances the state.
    pub fn next_delay(&mut self, now: Instant) -> Duration {
        if self
            .last
            .is_some_and(|last| now.saturating_duration_since(last) >= self.config.reset_after)
        {
            self.current = self.config.initial;
        }
        self.last = Some(now);
        let base = self.current;
        self.current = base.mul_f64(self.config.factor).min(self.config.cap);
        if self.config.jitter > 0.0 {
            base + base.mul_f64(self.rng.f64() * self.config.jitter)
        } else {
            base
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_to_the_cap_with_jitter_in_range() {
        let mut b = Backoff::new(BackoffConfig::default(), 7);
        let now = Instant::now();
        let mut base = Duration::from_millis(800);
        for _ in 0..10 {
            let d = b.next_delay(now);
            assert!(d >= base && d < base * 2, "{d:?} for base {base:?}");
            base = (base * 2).min(Duration::from_secs(30));
        }
        assert_eq!(base, Duration::from_secs(30));
    }

    #[test]
    fn same_seed_same_delays() {
        let now = Instant::now();
        let mut a = Backoff::new(BackoffConfig::default(), 3);
        let mut b = Backoff::new(BackoffConfig::default(), 3);
        for _ in 0..5 {
            assert_eq!(a.next_delay(now), b.next_delay(now));
        }
    }
}
