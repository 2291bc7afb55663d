//! Criterion benchmarks of the work queue: the hand-off of 100k keys from one producer to 1 and
//! 8 worker tasks (`add`, then `get` and `done` by a worker), against a tokio unbounded mpsc
//! channel doing the same hand-off with the same keys and workers (no dedupe, no `done`; with
//! several workers they share the receiver behind a tokio mutex, the usual way to fan a tokio
//! channel out); on a current-thread runtime and on a two-thread one. Also an `add` of a key
//! already waiting (a dedupe hit). Run with `cargo bench -p kcache-queue --bench work_queue`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kcache_queue::WorkQueue;
use kcache_store::ObjectKey;
use tokio::runtime::{Builder, Runtime};
use tokio::sync::{Mutex, mpsc};

const N: usize = 100_000;
/// The producer yields every this many keys, so workers run while it adds.
const YIELD_EVERY: usize = 256;

fn keys() -> Arc<[ObjectKey]> {
    (0..N)
        .map(|i| ObjectKey::new(Some("default"), &format!("pod-{i}")))
        .collect()
}

/// Adds every key while `workers` tasks get and finish them; returns how many were handed out.
async fn work_queue(keys: Arc<[ObjectKey]>, workers: usize) -> usize {
    let q = WorkQueue::<ObjectKey>::new();
    let tasks: Vec<_> = (0..workers)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move {
                let mut n = 0;
                while let Some(k) = q.get().await {
                    q.done(black_box(&k));
                    n += 1;
                }
                n
            })
        })
        .collect();
    for (i, k) in keys.iter().enumerate() {
        q.add(k.clone());
        if i % YIELD_EVERY == YIELD_EVERY - 1 {
            tokio::task::yield_now().await;
        }
    }
    // Waiting keys are still handed out after shutdown; then every get returns `None`.
    q.shut_down();
    let mut n = 0;
    for t in tasks {
        n += t.await.expect("worker");
    }
    n
}

/// The same hand-off through a tokio unbounded channel.
async fn mpsc(keys: Arc<[ObjectKey]>, workers: usize) -> usize {
    let (tx, mut rx) = mpsc::unbounded_channel::<ObjectKey>();
    let tasks: Vec<_> = if workers == 1 {
        vec![tokio::spawn(async move {
            let mut n = 0;
            while let Some(k) = rx.recv().await {
                black_box(&k);
                n += 1;
            }
            n
        })]
    } else {
        let rx = Arc::new(Mutex::new(rx));
        (0..workers)
            .map(|_| {
                let rx = Arc::clone(&rx);
                tokio::spawn(async move {
                    let mut n = 0;
                    loop {
                        let k = rx.lock().await.recv().await;
                        let Some(k) = k else { break n };
                        black_box(&k);
                        n += 1;
                    }
                })
            })
            .collect()
    };
    for (i, k) in keys.iter().enumerate() {
        tx.send(k.clone()).expect("send");
        if i % YIELD_EVERY == YIELD_EVERY - 1 {
            tokio::task::yield_now().await;
        }
    }
    drop(tx);
    let mut n = 0;
    for t in tasks {
        n += t.await.expect("worker");
    }
    n
}

fn runtimes() -> [(&'static str, Runtime); 2] {
    [
        (
            "current_thread",
            Builder::new_current_thread().build().expect("runtime"),
        ),
        (
            "multi_thread_2",
            Builder::new_multi_thread()
                .worker_threads(2)
                .build()
                .expect("runtime"),
        ),
    ]
}

fn handoff(c: &mut Criterion) {
    let keys = keys();
    let mut g = c.benchmark_group("handoff_100k");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    for (flavor, rt) in runtimes() {
        for workers in [1, 8] {
            let id = format!("{flavor}/{workers}_workers");
            g.bench_with_input(BenchmarkId::new("work_queue", &id), &workers, |b, &w| {
                b.iter(|| {
                    let n = rt.block_on(work_queue(Arc::clone(&keys), w));
                    assert_eq!(n, N);
                });
            });
            g.bench_with_input(
                BenchmarkId::new("mpsc_unbounded", &id),
                &workers,
                |b, &w| {
                    b.iter(|| {
                        let n = rt.block_on(mpsc(Arc::clone(&keys), w));
                        assert_eq!(n, N);
                    });
                },
            );
        }
    }
    g.finish();
}

/// `add` of a key that is already waiting: a lookup by reference, nothing stored (the clone is
/// the caller's, an `Arc` increment, dropped by the queue).
fn dedupe_hit(c: &mut Criterion) {
    let q = WorkQueue::<ObjectKey>::new();
    let key = ObjectKey::new(Some("default"), "pod-0");
    for k in keys().iter() {
        q.add(k.clone());
    }
    let mut g = c.benchmark_group("add_waiting_key");
    g.throughput(Throughput::Elements(1));
    g.bench_function("work_queue", |b| b.iter(|| q.add(black_box(key.clone()))));
    g.finish();
    assert_eq!(q.len(), N);
}

criterion_group!(benches, handoff, dedupe_hit);
criterion_main!(benches);
