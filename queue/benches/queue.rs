//! Criterion benchmarks of the queues: add+pop throughput with per-key merging (`DeltaFifo`,
//! `Fifo`) and without (`RealFifo`, and `DeltaFifo` over distinct keys), `RealFifo` batch pops,
//! and a relist of 100k objects of which 10% were deleted. Run with
//! `cargo bench -p kcache-queue`.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kcache_queue::{DeltaFifo, Deltas, Fifo, Queue, RealFifo};
use kcache_store::{Cache, DynamicObject, Store};

/// `n` small objects spread over `keys` keys, with increasing resource versions.
fn objects(n: usize, keys: usize) -> Vec<Arc<DynamicObject>> {
    (0..n)
        .map(|i| {
            let mut o = DynamicObject::new(Some("default"), &format!("pod-{}", i % keys));
            o.metadata.resource_version = Some(i.to_string());
            Arc::new(o)
        })
        .collect()
}

/// Polls a pop once; the queue is never empty when this is called.
fn pop_now<Q: Queue<DynamicObject>>(
    q: &Q,
    process: &mut (impl FnMut(Deltas<DynamicObject>) + Send),
) {
    let mut f = |d: Deltas<DynamicObject>| {
        process(d);
        Ok(())
    };
    let fut = pin!(q.pop(&mut f));
    match fut.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(r) => r.expect("pop"),
        Poll::Pending => panic!("pop would wait"),
    }
}

/// Adds every object, then pops until empty; returns the number of deltas seen.
fn add_then_drain<Q: Queue<DynamicObject>>(q: &Q, objs: &[Arc<DynamicObject>]) -> usize {
    for o in objs {
        q.update(Arc::clone(o)).expect("update");
    }
    let mut seen = 0;
    while !q.is_empty() {
        pop_now(q, &mut |d| seen += d.len());
    }
    seen
}

fn add_pop(c: &mut Criterion) {
    const N: usize = 100_000;
    let mut g = c.benchmark_group("add_pop");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(5));
    // Distinct keys: nothing to merge. 100 keys: each pop carries ~1000 merged deltas (DeltaFifo)
    // or the latest object only (Fifo).
    for keys in [N, 100] {
        let objs = objects(N, keys);
        g.bench_with_input(BenchmarkId::new("delta_fifo", keys), &objs, |b, objs| {
            b.iter_batched(
                DeltaFifo::new,
                |q| black_box(add_then_drain(&q, objs)),
                BatchSize::LargeInput,
            );
        });
        g.bench_with_input(BenchmarkId::new("real_fifo", keys), &objs, |b, objs| {
            b.iter_batched(
                RealFifo::new,
                |q| black_box(add_then_drain(&q, objs)),
                BatchSize::LargeInput,
            );
        });
        g.bench_with_input(BenchmarkId::new("fifo", keys), &objs, |b, objs| {
            b.iter_batched(
                Fifo::new,
                |q| black_box(add_then_drain(&q, objs)),
                BatchSize::LargeInput,
            );
        });
    }
    // Interleaved add/pop of one item at a time: the steady state of an informer.
    let objs = objects(N, N);
    g.bench_function("delta_fifo/interleaved", |b| {
        b.iter_batched(
            DeltaFifo::new,
            |q| {
                let mut seen = 0;
                for o in &objs {
                    q.add(Arc::clone(o)).expect("add");
                    pop_now(&q, &mut |d| seen += d.len());
                }
                black_box(seen)
            },
            BatchSize::LargeInput,
        );
    });
    g.bench_function("real_fifo/interleaved", |b| {
        b.iter_batched(
            RealFifo::new,
            |q| {
                let mut seen = 0;
                for o in &objs {
                    q.add(Arc::clone(o)).expect("add");
                    pop_now(&q, &mut |d| seen += d.len());
                }
                black_box(seen)
            },
            BatchSize::LargeInput,
        );
    });
    g.finish();
}

/// Polls a `pop_batch` of up to `max` once; the queue is never empty when this is called.
fn pop_batch_now<Q: Queue<DynamicObject>>(q: &Q, max: usize, seen: &mut usize) {
    let mut f = |d: Deltas<DynamicObject>| {
        *seen += d.len();
        Ok(())
    };
    let fut = pin!(q.pop_batch(max, &mut f));
    match fut.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(r) => r.expect("pop_batch"),
        Poll::Pending => panic!("pop_batch would wait"),
    }
}

/// `RealFifo` adds followed by batch pops of up to 1000 deltas, timed together (a batch pop
/// compares keys hashed as they were added): over distinct keys (full batches) and over 100
/// keys (batches closed at the first repeated key).
fn pop_batch(c: &mut Criterion) {
    const N: usize = 100_000;
    let mut g = c.benchmark_group("add_pop_batch");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(5));
    for keys in [N, 100] {
        let objs = objects(N, keys);
        g.bench_with_input(BenchmarkId::new("real_fifo", keys), &objs, |b, objs| {
            b.iter_batched(
                RealFifo::new,
                |q| {
                    for o in objs {
                        q.update(Arc::clone(o)).expect("update");
                    }
                    let mut seen = 0;
                    while !q.is_empty() {
                        pop_batch_now(&q, 1000, &mut seen);
                    }
                    black_box(seen)
                },
                BatchSize::LargeInput,
            );
        });
    }
    g.finish();
}

fn replace(c: &mut Criterion) {
    const N: usize = 100_000;
    let all = objects(N, N);
    let cache = Arc::new(Cache::<DynamicObject>::new());
    for o in &all {
        cache.add(Arc::clone(o)).expect("add");
    }
    // The relist lacks every tenth object: 10% were deleted while the watch was down.
    let relist: Vec<_> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 10 != 0)
        .map(|(_, o)| Arc::clone(o))
        .collect();
    let mut g = c.benchmark_group("replace_100k_10pct_deleted");
    g.sample_size(10);
    g.bench_function("delta_fifo", |b| {
        b.iter_batched(
            || {
                let q = DeltaFifo::builder()
                    .known_objects(Arc::clone(&cache))
                    .emit_delta_type_replaced(true)
                    .build();
                (q, relist.clone())
            },
            |(q, list)| {
                q.replace(list, "1").expect("replace");
                assert_eq!(q.len(), N);
                q
            },
            BatchSize::LargeInput,
        );
    });
    g.bench_function("real_fifo", |b| {
        b.iter_batched(
            || (RealFifo::new(), relist.clone()),
            |(q, list)| {
                q.replace(list, "1").expect("replace");
                q
            },
            BatchSize::LargeInput,
        );
    });
    g.finish();
}

criterion_group!(benches, add_pop, pop_batch, replace);
criterion_main!(benches);
