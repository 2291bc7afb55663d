//! One worker of a [`ReconcileRunner`](super::ReconcileRunner): takes a key, reconciles it, acts
//! on the outcome, marks the key done. Failed reconciles are logged within the runner's rate
//! limits ([`WorkerLogs`]), shared by its workers.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt as _;
use kcache_queue::WorkQueue;
use kcache_reflector::{ErrorChain, LogLimiter};
use kcache_store::ObjectKey;
use tokio_util::sync::CancellationToken;

use super::{Action, TerminalError};
use crate::BoxError;
use crate::ShardFilter;
use crate::handler_panic::panic_message;
use crate::metrics::{Outcome, ReconcileMetrics};

/// The rate limits of a runner's lines about failed reconciles, one per outcome, shared by its
/// workers: each can repeat with every key and retry, so each logs at most ten lines a minute,
/// the next one saying how many were held back.
#[derive(Debug, Default)]
pub(super) struct WorkerLogs {
    /// "reconcile failed; retrying with backoff".
    failed: LogLimiter,
    /// "reconcile failed for good".
    terminal: LogLimiter,
    /// "reconcile panicked".
    panicked: LogLimiter,
}

pub(super) struct Worker<F, Ctx> {
    pub(super) id: usize,
    pub(super) runner: String,
    pub(super) queue: WorkQueue<ObjectKey>,
    pub(super) reconcile: Arc<F>,
    pub(super) ctx: Arc<Ctx>,
    pub(super) cancel: CancellationToken,
    pub(super) metrics: Arc<ReconcileMetrics>,
    pub(super) shards: Option<ShardFilter>,
    pub(super) logs: Arc<WorkerLogs>,
}

impl<F, Fut, Ctx> Worker<F, Ctx>
where
    Ctx: Send + Sync + 'static,
    F: Fn(ObjectKey, Arc<Ctx>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, BoxError>> + Send + 'static,
{
    /// Reconciles keys until the queue shuts down or `cancel` fires; a reconcile that started
    /// always finishes.
    pub(super) async fn run(self) {
        loop {
            let key = tokio::select! {
                biased;
                () = self.cancel.cancelled() => return,
                key = self.queue.get() => key,
            };
            let Some(key) = key else { return };
            if self.cancel.is_cancelled() {
                // Shutting down: no new reconcile starts.
                self.queue.done(&key);
                return;
            }
            // Sharded: only a key of a held shard runs, and its shard is not given up until it
            // ends; a key of a shard lost since it was queued is dropped.
            let in_flight = self.shards.as_ref().map(|f| f.begin(key.as_str()));
            if matches!(in_flight, Some(None)) {
                self.queue.forget(&key);
                self.queue.done(&key);
                continue;
            }
            self.reconcile_one(&key).await;
            drop(in_flight);
            self.queue.done(&key);
        }
    }

    async fn reconcile_one(&self, key: &ObjectKey) {
        self.metrics.started();
        let started = tokio::time::Instant::now();
        // Calling the function is inside the guard too: a closure that panics before it
        // returns its future must not kill the worker (and leave the key processing forever).
        let call = async { (self.reconcile)(key.clone(), Arc::clone(&self.ctx)).await };
        let outcome = AssertUnwindSafe(call).catch_unwind().await;
        let result = match outcome {
            Ok(Ok(Action::Done)) => {
                self.queue.forget(key);
                Outcome::Success
            }
            Ok(Ok(Action::Requeue)) => {
                self.queue.add_rate_limited(key.clone());
                Outcome::Requeue
            }
            Ok(Ok(Action::RequeueAfter(delay))) => {
                self.queue.forget(key);
                self.queue.add_after(key.clone(), delay);
                Outcome::RequeueAfter
            }
            Ok(Err(e)) if e.downcast_ref::<TerminalError>().is_some() => {
                // Not retried: its backoff is dropped too, so no per-key state outlives it.
                self.queue.forget(key);
                if let Some(permit) = self.logs.terminal.allow() {
                    tracing::error!(
                        runner = %self.runner,
                        worker = self.id,
                        key = %key,
                        error = %ErrorChain(&*e),
                        suppressed = permit.suppressed(),
                        "reconcile failed for good; not retried until the object changes"
                    );
                }
                Outcome::Terminal
            }
            Ok(Err(e)) => {
                if let Some(permit) = self.logs.failed.allow() {
                    tracing::warn!(
                        runner = %self.runner,
                        worker = self.id,
                        key = %key,
                        retries = self.queue.num_requeues(key),
                        error = %ErrorChain(&*e),
                        suppressed = permit.suppressed(),
                        "reconcile failed; retrying with backoff"
                    );
                }
                self.queue.add_rate_limited(key.clone());
                Outcome::Error
            }
            Err(panic) => {
                if let Some(permit) = self.logs.panicked.allow() {
                    tracing::error!(
                        runner = %self.runner,
                        worker = self.id,
                        key = %key,
                        panic = %panic_message(&*panic),
                        suppressed = permit.suppressed(),
                        "reconcile panicked; retrying with backoff"
                    );
                }
                self.queue.add_rate_limited(key.clone());
                Outcome::Panic
            }
        };
        self.metrics.ended(result, started.elapsed());
    }
}
