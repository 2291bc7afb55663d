//! The churn driver: a seeded, bounded run of adds, updates and deletes of realistic pods
//! against a [`FakeApiServer`].

use std::time::Duration;

use kcache_testing::workload::PodGenerator;

use crate::fake_api_server::{FakeApiServer, ServedResource};

/// What a [`Churn`] run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChurnStats {
    /// Pods created.
    pub added: u64,
    /// Pods updated.
    pub updated: u64,
    /// Pods deleted.
    pub deleted: u64,
}

/// A seeded churn driver: a bounded number of adds, updates and deletes of pods at a given rate.
#[derive(Debug, Clone)]
pub struct Churn {
    /// Seed for the pods and the choice of operations.
    pub seed: u64,
    /// Operations in total.
    pub operations: u64,
    /// Operations per second; 0 runs as fast as possible (yielding between operations).
    pub rate: u32,
    /// Namespaces to spread new pods over.
    pub namespaces: usize,
    /// Relative weights of add, update and delete.
    pub weights: (u32, u32, u32),
}

impl Churn {
    /// `operations` operations with weights 2:5:1 (adds, updates, deletes), as fast as possible.
    pub fn new(seed: u64, operations: u64) -> Self {
        Self {
            seed,
            operations,
            rate: 0,
            namespaces: 4,
            weights: (2, 5, 1),
        }
    }

    /// Sets the rate in operations per second.
    #[must_use]
    pub fn rate(mut self, per_second: u32) -> Self {
        self.rate = per_second;
        self
    }

    /// Runs against `server`'s pods resource. Updates and deletes pick among existing pods;
    /// with none, they become adds.
    pub async fn run(&self, server: &FakeApiServer) -> ChurnStats {
        let pods = ServedResource::pods();
        let mut generator = PodGenerator::new(self.seed, self.namespaces);
        let mut rng = fastrand::Rng::with_seed(self.seed ^ 0xC0FF_EE00);
        let mut stats = ChurnStats::default();
        let (wa, wu, wd) = self.weights;
        let total = u64::from(wa) + u64::from(wu) + u64::from(wd);
        let period = (self.rate > 0).then(|| Duration::from_secs(1) / self.rate);
        let mut next = tokio::time::Instant::now();
        // The pods as of the start, kept up to date with this driver's own writes: listing the
        // server on every operation would make the driver, not the clients, the bottleneck.
        let mut existing: Vec<(Option<String>, String)> = server
            .list(&pods)
            .iter()
            .map(|p| {
                (
                    p.metadata.namespace.clone(),
                    p.metadata.name.clone().unwrap_or_default(),
                )
            })
            .collect();
        for _ in 0..self.operations {
            let roll = rng.u64(..) % total.max(1);
            let pick = usize::try_from(rng.u64(..) % existing.len().max(1) as u64).unwrap_or(0);
            if roll < u64::from(wa) || existing.is_empty() {
                if let Ok(p) = server.create(&pods, generator.next_pod()) {
                    existing.push((
                        p.metadata.namespace.clone(),
                        p.metadata.name.clone().unwrap_or_default(),
                    ));
                    stats.added += 1;
                }
            } else if roll < u64::from(wa) + u64::from(wu) {
                let (ns, name) = &existing[pick];
                if let Some(pod) = server.get(&pods, ns.as_deref(), name)
                    && server.update(&pods, generator.mutate(&pod)).is_ok()
                {
                    stats.updated += 1;
                }
            } else {
                let (ns, name) = existing.swap_remove(pick);
                if server.delete(&pods, ns.as_deref(), &name).is_ok() {
                    stats.deleted += 1;
                }
            }
            match period {
                Some(p) => {
                    next += p;
                    tokio::time::sleep_until(next).await;
                }
                None => tokio::task::yield_now().await,
            }
        }
        stats
    }
}
