//! Criterion benchmark of the reconcile runner end to end, in memory: an informer over 5,000
//! objects, its events through the runner's stream and work queue to 1 or 4 workers, each
//! reconcile reading its object from the cache. Timed from `run` to the last key's reconcile
//! (the informer's list and sync included), so its throughput is the runner's keys per second.
//!
//! `cargo bench -p kcache-informer --bench reconcile`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kcache_informer::{Action, BoxError, ReconcileRunner, SharedIndexInformer};
use kcache_store::{DynamicObject, ObjectKey};
use kcache_testing::FakeListerWatcher;
use tokio_util::sync::CancellationToken;

const OBJECTS: usize = 5_000;

/// Time for every one of `OBJECTS` keys to be reconciled once by `workers` workers.
fn run_once(rt: &tokio::runtime::Runtime, workers: usize) -> Duration {
    rt.block_on(async {
        let fake = FakeListerWatcher::<DynamicObject>::new();
        let handle = fake.handle();
        for i in 0..OBJECTS {
            handle.add(DynamicObject::new(
                Some(&format!("ns-{}", i % 10)),
                &format!("obj-{i}"),
            ));
        }
        let inf = SharedIndexInformer::builder(Arc::new(fake)).build();
        let runner = ReconcileRunner::builder(&inf)
            .workers(workers)
            .build()
            .expect("not stopped");
        let done = Arc::new(AtomicUsize::new(0));
        let cancel = CancellationToken::new();
        let start = Instant::now();
        let informer = tokio::spawn({
            let (inf, cancel) = (inf.clone(), cancel.clone());
            async move { inf.run(cancel).await }
        });
        let lister = inf.lister();
        let running = tokio::spawn(runner.run(
            Arc::clone(&done),
            move |key: ObjectKey, done: Arc<AtomicUsize>| {
                let found = lister.get_by_key(key.as_str()).is_some();
                async move {
                    if found {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok::<_, BoxError>(Action::Done)
                }
            },
            cancel.clone(),
        ));
        while done.load(Ordering::Relaxed) < OBJECTS {
            tokio::task::yield_now().await;
        }
        let elapsed = start.elapsed();
        cancel.cancel();
        running.await.expect("joined").expect("ran");
        informer.await.expect("joined").expect("ran");
        elapsed
    })
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut g = c.benchmark_group("reconcile/keys");
    g.throughput(Throughput::Elements(OBJECTS as u64));
    g.sample_size(10);
    for workers in [1usize, 4] {
        g.bench_function(
            BenchmarkId::new("runner", format!("{workers} workers")),
            |b| {
                b.iter_custom(|iters| (0..iters).map(|_| run_once(&rt, workers)).sum());
            },
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
