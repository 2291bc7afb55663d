//! What reading a cached object costs, typed against compact: a cache `get_by_key`, then for a
//! compact pod `typed()` (a full decode), `pointer("/spec/nodeName")` (one field), and the bare
//! `serde_json` decode of the same JSON as the yardstick ("one decode of that object").
//! Also `list` of every object and the bytes each form keeps per pod.
//!
//! 2,000 realistic pods (`kcache_testing::workload::pods`), managedFields dropped in both forms.
//! Run with `cargo bench -p kcache-client-http --features k8s-openapi --bench compact`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use kcache_store::{Cache, Compact, CompactCodec, Store};

const PODS: usize = 2000;

fn bench(c: &mut Criterion) {
    let codec = CompactCodec::new();
    let mut texts = Vec::with_capacity(PODS);
    let typed = Cache::<Pod>::new();
    let compact = Cache::<Compact<Pod>>::new();
    let mut keys = Vec::with_capacity(PODS);
    let (mut json_bytes, mut stored_bytes) = (0, 0);
    for pod in kcache_testing::workload::pods(7, PODS, 8) {
        let mut pod: Pod =
            serde_json::from_value(serde_json::to_value(&pod).expect("encodes")).expect("a Pod");
        pod.metadata.managed_fields = None;
        let text = serde_json::to_string(&pod).expect("encodes");
        let c: Compact<Pod> = codec.encode(&text).expect("encodes");
        json_bytes += c.json_len();
        stored_bytes += c.stored_len();
        keys.push(format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default()
        ));
        typed.add(Arc::new(pod)).expect("add");
        compact.add(Arc::new(c)).expect("add");
        texts.push(text);
    }
    eprintln!(
        "{PODS} pods: {} bytes of JSON per pod, {} stored compressed ({}.{}x smaller)",
        json_bytes / PODS,
        stored_bytes / PODS,
        json_bytes / stored_bytes.max(1),
        json_bytes * 10 / stored_bytes.max(1) % 10
    );

    let mut g = c.benchmark_group("lister");
    g.bench_function("typed/get", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % PODS;
            black_box(typed.get_by_key(&keys[i]))
        });
    });
    g.bench_function("compact/get", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % PODS;
            black_box(compact.get_by_key(&keys[i]))
        });
    });
    g.bench_function("compact/get_then_typed", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % PODS;
            let c = compact.get_by_key(&keys[i]).expect("cached");
            black_box(c.typed().expect("decodes"))
        });
    });
    g.bench_function("serde_json_decode_of_the_same_json", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % PODS;
            black_box(serde_json::from_str::<Pod>(&texts[i]).expect("decodes"))
        });
    });
    g.bench_function("compact/get_then_pointer", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % PODS;
            let c = compact.get_by_key(&keys[i]).expect("cached");
            black_box(c.pointer("/spec/nodeName").expect("reads"))
        });
    });
    g.bench_function("typed/list", |b| {
        b.iter(|| black_box(typed.list().len()));
    });
    g.bench_function("compact/list", |b| {
        b.iter(|| black_box(compact.list().len()));
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
