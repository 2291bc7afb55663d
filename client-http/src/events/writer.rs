//! [`Writer`]: the background task of an [`EventRecorder`](crate::EventRecorder). It sends the
//! queued writes one at a time (creates, series patches) with bounded retries, writes the
//! counts of running series periodically, ends quiet series, and flushes on shutdown.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use kcache_reflector::{Error, ErrorChain};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, MissedTickBehavior, interval_at, sleep, timeout_at};

use super::event::EventWrite;
use super::name::random_u64;
use super::recorder::Shared;
use super::stats::Counters;
use crate::{ApiResource, ObjectClient, Patch};

/// The longest `Retry-After` honoured between two attempts.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// The background task: owns the queue's receiving end.
pub(crate) struct Writer {
    shared: Arc<Shared>,
    queue: mpsc::Receiver<EventWrite>,
    /// `true`, or closed with the last recorder handle: stop.
    stop: watch::Receiver<bool>,
    /// Set to `true` once the flush is over.
    done: watch::Sender<bool>,
}

/// What the task does next.
enum Next {
    Write(EventWrite),
    EndSeries,
    Refresh,
    Stop,
}

/// How one attempt of a write went.
enum Sent {
    /// The server has it.
    Written,
    /// It failed for a reason that may pass (after the server's `Retry-After`, if any).
    Retry(Option<Duration>),
    /// It failed for good (counted and logged).
    GaveUp,
}

impl Writer {
    pub(crate) fn new(
        shared: Arc<Shared>,
        queue: mpsc::Receiver<EventWrite>,
        stop: watch::Receiver<bool>,
        done: watch::Sender<bool>,
    ) -> Self {
        Self {
            shared,
            queue,
            stop,
            done,
        }
    }

    /// Writes until stopped (or every recorder handle is gone), then flushes.
    pub(crate) async fn run(mut self) {
        let (finish, refresh) = (
            self.shared.settings.series_finish,
            self.shared.settings.series_refresh,
        );
        let start = Instant::now();
        let mut end_series = interval_at(start + finish, finish);
        end_series.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut refresh_series = interval_at(start + refresh, refresh);
        refresh_series.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut interrupted = None;
        loop {
            // The timers before the queue, which a slow server can keep from ever being empty.
            let next = tokio::select! {
                biased;
                () = stopped(&mut self.stop) => Next::Stop,
                _ = end_series.tick() => Next::EndSeries,
                _ = refresh_series.tick() => Next::Refresh,
                write = self.queue.recv() => write.map_or(Next::Stop, Next::Write),
            };
            match next {
                Next::Write(write) => {
                    if let Err(write) = self.deliver(write).await {
                        interrupted = Some(write);
                        break;
                    }
                }
                Next::EndSeries => self.end_series().await,
                Next::Refresh => self.refresh_series().await,
                Next::Stop => break,
            }
        }
        self.flush(interrupted).await;
        self.done.send_replace(true);
    }

    /// Writes `write`, retrying a failure that may pass up to the attempts allowed. Gives the
    /// write back when stopped while waiting to retry (the flush tries it once more).
    async fn deliver(&mut self, write: EventWrite) -> Result<(), EventWrite> {
        let attempts = self.shared.settings.write_attempts.max(1);
        for attempt in 1..=attempts {
            let retry_after = match self.send(&write, attempt).await {
                Sent::Written | Sent::GaveUp => return Ok(()),
                Sent::Retry(retry_after) => retry_after,
            };
            if attempt == attempts {
                break;
            }
            let wait = jittered(self.shared.settings.retry_interval)
                .max(retry_after.unwrap_or_default().min(MAX_RETRY_AFTER));
            tokio::select! {
                () = sleep(wait) => {}
                () = stopped(&mut self.stop) => return Err(write),
            }
        }
        Counters::bump(&self.shared.counters.failed);
        if let Some(permit) = self.shared.logs.failed.allow() {
            tracing::error!(
                event = %write.name,
                namespace = write.namespace(),
                reason = %write.key.reason,
                attempts,
                suppressed = permit.suppressed(),
                "event not written: out of attempts"
            );
        }
        Ok(())
    }

    /// One attempt of `write`: a patch of its series (a create when its Event is gone), or a
    /// create. Counts a success and marks it in the series cache; logs a failure.
    async fn send(&self, write: &EventWrite, attempt: u32) -> Sent {
        let shared = &*self.shared;
        let body = match write.body(&shared.settings.reporter) {
            Ok(body) => body,
            Err(e) => return self.gave_up(write, &Error::transport(e)),
        };
        let events = ObjectClient::<Value>::builder(
            shared.client.clone(),
            ApiResource::new("events.k8s.io", "v1", "events", true),
        )
        .namespace(write.namespace())
        .timeout(shared.settings.write_timeout)
        .build();
        let created = match write_once(&events, write, &body).await {
            Ok(created) => created,
            // A create retried after a lost answer finds its own Event; as a series' create,
            // the Event was created meanwhile: patch it again.
            Err(e) if e.is_already_exists() && write.series.is_none() => true,
            Err(e) if is_transient(&e) || e.is_already_exists() => {
                if let Some(permit) = shared.logs.retry.allow() {
                    tracing::warn!(
                        event = %write.name,
                        namespace = write.namespace(),
                        attempt,
                        error = %ErrorChain(&e),
                        suppressed = permit.suppressed(),
                        "could not write an event; will retry"
                    );
                }
                return Sent::Retry(e.retry_after());
            }
            Err(e) => return self.gave_up(write, &e),
        };
        let counter = if created {
            &shared.counters.created
        } else {
            &shared.counters.series_written
        };
        Counters::bump(counter);
        shared.lock_state().series.written(write);
        Sent::Written
    }

    /// Counts and logs a write the server refused for good.
    fn gave_up(&self, write: &EventWrite, e: &Error) -> Sent {
        Counters::bump(&self.shared.counters.failed);
        if let Some(permit) = self.shared.logs.failed.allow() {
            tracing::error!(
                event = %write.name,
                namespace = write.namespace(),
                reason = %write.key.reason,
                error = %ErrorChain(e),
                suppressed = permit.suppressed(),
                "event not written: refused (not retried)"
            );
        }
        Sent::GaveUp
    }

    /// Writes the last count of each series that has ended (no repeat for `series_finish`)
    /// and forgets it, with the Events that never repeated. A series whose write failed for
    /// a reason that may pass stays, for the next round.
    async fn end_series(&self) {
        let quiet = self.shared.settings.series_finish;
        let ended = self.shared.lock_state().series.ended(Instant::now(), quiet);
        for ended in ended {
            if stopping(&self.stop) {
                // The flush writes what is left.
                return;
            }
            if let Some(write) = &ended.write
                && matches!(self.send(write, 1).await, Sent::Retry(_))
            {
                continue;
            }
            self.shared.lock_state().series.forget(&ended);
        }
    }

    /// Writes the count of each running series the server lags behind on, once.
    async fn refresh_series(&self) {
        let writes = self.shared.lock_state().series.unwritten();
        for write in writes {
            if stopping(&self.stop) {
                return;
            }
            self.send(&write, 1).await;
        }
    }

    /// Takes no more events, then writes what is queued and the series counts the server
    /// lacks, one attempt each, until the flush timeout; counts what is left as failed.
    async fn flush(&mut self, interrupted: Option<EventWrite>) {
        self.shared.closed.store(true, Ordering::Release);
        self.queue.close();
        let mut queued: Vec<EventWrite> = interrupted.into_iter().collect();
        while let Ok(write) = self.queue.try_recv() {
            queued.push(write);
        }
        let deadline = Instant::now() + self.shared.settings.flush_timeout;
        let mut left = self.flush_writes(queued, deadline).await;
        // After the queued writes, which may have been the series' own.
        let series = self.shared.lock_state().series.unwritten();
        left += self.flush_writes(series, deadline).await;
        if left > 0 {
            Counters::add(&self.shared.counters.failed, left);
            tracing::warn!(
                left,
                "event recorder shut down with writes not done (the API server is slow or down)"
            );
        }
    }

    /// Sends each of `writes` once until `deadline`; returns how many did not make it.
    async fn flush_writes(&self, writes: Vec<EventWrite>, deadline: Instant) -> u64 {
        let mut left = 0;
        for write in writes {
            match timeout_at(deadline, self.send(&write, 1)).await {
                Ok(Sent::Written | Sent::GaveUp) => {}
                Ok(Sent::Retry(_)) | Err(_) => left += 1,
            }
        }
        left
    }
}

/// Sends `write` once: a merge patch of its series when it has one, a create of `body` when
/// it has none or its Event is gone (expired). `Ok(true)` for a create.
async fn write_once(
    events: &ObjectClient<Value>,
    write: &EventWrite,
    body: &Value,
) -> Result<bool, Error> {
    if let Some(series) = write.series_patch() {
        match events.patch(&write.name, &Patch::Merge(series)).await {
            Ok(_) => return Ok(false),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    events.create(body).await.map(|_| true)
}

/// Whether a failed write may succeed later: no connection or answer, a timeout, a 429, or a
/// 5xx.
fn is_transient(e: &Error) -> bool {
    match e {
        Error::Transport(_) | Error::Timeout => true,
        Error::Api(status) => status.code.is_some_and(|code| code == 429 || code >= 500),
        _ => false,
    }
}

/// `interval` plus up to a quarter of it, at random (client-go's `wait.Jitter(d, 0.25)`), so
/// that recorders do not all retry together after an outage.
fn jittered(interval: Duration) -> Duration {
    let quarter = interval.as_nanos() / 4;
    let extra = u128::from(random_u64()) % (quarter + 1);
    interval + Duration::from_nanos(u64::try_from(extra).unwrap_or(u64::MAX))
}

/// Resolves when the recorder is told to stop, or when every recorder handle is gone.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    // An error is a sender gone with the last handle: stop as well.
    let _ = stop.wait_for(|stop| *stop).await;
}

/// Whether the recorder is stopping.
fn stopping(stop: &watch::Receiver<bool>) -> bool {
    *stop.borrow() || stop.has_changed().is_err()
}

#[cfg(test)]
mod tests {
    use kcache_reflector::Status;

    use super::*;

    #[test]
    fn jitter_adds_at_most_a_quarter() {
        let ten = Duration::from_secs(10);
        for _ in 0..100 {
            let d = jittered(ten);
            assert!(d >= ten && d <= ten + ten / 4, "{d:?}");
        }
        assert_eq!(jittered(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn transient_failures_are_the_ones_that_may_pass() {
        let status = |code| Error::api(Status::failure(code, "Reason", "message"));
        assert!(is_transient(&Error::Timeout));
        assert!(is_transient(&Error::transport("refused")));
        assert!(is_transient(&status(429)));
        assert!(is_transient(&status(503)));
        assert!(!is_transient(&status(422)));
        assert!(!is_transient(&status(403)));
        assert!(!is_transient(&Error::Limit("big".into())));
    }
}
