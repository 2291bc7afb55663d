//! Criterion benchmarks of the informer, in memory end to end: watch events through the
//! reflector, the queue, the indexer and 1 or 10 handlers, for `RealFifo` and `DeltaFifo`.
//!
//! `cargo bench -p kcache-informer`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kcache_informer::{HandlerFuncs, QueueKind, SharedIndexInformer};
use kcache_store::DynamicObject;
use kcache_testing::FakeListerWatcher;
use tokio_util::sync::CancellationToken;

const EVENTS: usize = 10_000;
const OBJECTS: usize = 1_000;

fn pod(i: usize) -> DynamicObject {
    let mut o = DynamicObject::new(
        Some(&format!("ns-{}", i % 10)),
        &format!("pod-{}", i % OBJECTS),
    );
    o.metadata.labels = Some([("app".to_owned(), format!("app-{}", i % 7))].into());
    o
}

/// Time for `EVENTS` watch events to reach every one of `handlers` handlers.
fn run_once(rt: &tokio::runtime::Runtime, queue: QueueKind, handlers: usize) -> Duration {
    rt.block_on(async {
        let fake = FakeListerWatcher::<DynamicObject>::new();
        let handle = fake.handle();
        let inf = SharedIndexInformer::builder(Arc::new(fake))
            .queue(queue)
            .build();
        let seen = Arc::new(AtomicUsize::new(0));
        for _ in 0..handlers {
            let seen = Arc::clone(&seen);
            let count = move || {
                seen.fetch_add(1, Ordering::Relaxed);
            };
            let c2 = count.clone();
            inf.add_event_handler(
                HandlerFuncs::new()
                    .on_added(move |_: &Arc<DynamicObject>, _| count())
                    .on_updated(move |_: &Arc<DynamicObject>, _: &Arc<DynamicObject>| c2()),
            )
            .expect("not stopped");
        }
        let cancel = CancellationToken::new();
        let run = tokio::spawn({
            let (inf, cancel) = (inf.clone(), cancel.clone());
            async move { inf.run(cancel).await }
        });
        while !inf.has_synced() {
            tokio::task::yield_now().await;
        }
        let start = Instant::now();
        for i in 0..EVENTS {
            handle.add(pod(i));
            if i % 256 == 0 {
                tokio::task::yield_now().await;
            }
        }
        while seen.load(Ordering::Relaxed) < EVENTS * handlers {
            tokio::task::yield_now().await;
        }
        let elapsed = start.elapsed();
        cancel.cancel();
        run.await.expect("joined").expect("ran");
        elapsed
    })
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut g = c.benchmark_group("informer/watch-events");
    g.throughput(Throughput::Elements(EVENTS as u64));
    g.sample_size(10);
    for queue in [QueueKind::RealFifo, QueueKind::DeltaFifo] {
        for handlers in [1usize, 10] {
            g.bench_function(
                BenchmarkId::new(format!("{queue:?}"), format!("{handlers} handlers")),
                |b| {
                    b.iter_custom(|iters| (0..iters).map(|_| run_once(&rt, queue, handlers)).sum());
                },
            );
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
