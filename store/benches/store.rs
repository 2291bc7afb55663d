//! Criterion benchmarks of the cache: `add`, `update`, `get_by_key`, `by_index` and `replace` at 10k and
//! 100k objects. Run with `cargo bench -p kcache-store`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use kcache_store::{Cache, DynamicObject, Indexer, Indexers, NAMESPACE_INDEX, Store};

fn objects(n: usize, generation: u64) -> Vec<Arc<DynamicObject>> {
    (0..n)
        .map(|i| {
            let mut o = DynamicObject::new(Some(&format!("ns-{}", i % 100)), &format!("pod-{i}"));
            o.metadata.resource_version = Some((generation * n as u64 + i as u64).to_string());
            o.metadata.labels = Some([("app".to_owned(), format!("app-{}", i % 10))].into());
            Arc::new(o)
        })
        .collect()
}

fn indexed() -> Cache<DynamicObject> {
    Cache::with_indexers(Indexers::new().with_namespace())
}

fn bench(c: &mut Criterion) {
    for n in [10_000usize, 100_000] {
        let objs = objects(n, 0);
        let updates = objects(n, 1);
        let mut g = c.benchmark_group(format!("store/{n}"));
        g.sample_size(10);

        g.bench_function("add", |b| {
            b.iter_batched(
                indexed,
                |cache| {
                    for o in &objs {
                        cache.add(Arc::clone(o)).expect("add");
                    }
                    cache
                },
                BatchSize::LargeInput,
            );
        });

        let full = indexed();
        full.replace(objs.clone(), "1").expect("replace");
        g.bench_function("update", |b| {
            b.iter(|| {
                for o in &updates {
                    full.update(Arc::clone(o)).expect("update");
                }
            });
        });

        let keys: Vec<String> = (0..n).map(|i| format!("ns-{}/pod-{i}", i % 100)).collect();
        g.bench_function("get_by_key", |b| {
            b.iter(|| {
                for k in &keys {
                    black_box(full.get_by_key(k));
                }
            });
        });

        g.bench_function(BenchmarkId::new("by_index", "namespace x100"), |b| {
            b.iter(|| {
                for ns in 0..100 {
                    black_box(
                        full.by_index(NAMESPACE_INDEX, &format!("ns-{ns}"))
                            .expect("index"),
                    );
                }
            });
        });

        g.bench_function("replace", |b| {
            b.iter_batched(
                || objs.clone(),
                |list| full.replace(list, "2").expect("replace"),
                BatchSize::LargeInput,
            );
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
