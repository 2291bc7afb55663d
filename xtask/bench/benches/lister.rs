//! What reading a synced cache costs: a lister `get` by namespace and name, a `list` of every
//! object and a `list` of one namespace, on 20,000 realistic pods, kcache's [`Lister`] (and its
//! cache's `get_by_key`) against kube-rs's reflector [`Store`] (`get` by `ObjectRef`, `state`,
//! `state_filter`), which has no namespace index.
//!
//! `cargo bench --manifest-path xtask/bench/Cargo.toml --bench lister`
//!
//! kcache's side is generic over the cached object type ([`kcache`]): another form of the same
//! pods is one more call in [`benches`].

use std::error::Error;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use kcache_store::{Cache, CompactCodec, Indexers, Lister, Object, Selector, Store};
use kube::runtime::reflector::{ObjectRef, Store as KubeStore};
use kube::runtime::watcher::Event;

/// Pods in the cache, spread over this many namespaces, from this seed (the `xtask bench`
/// workload).
const PODS: usize = 20_000;
const NAMESPACES: usize = 20;
const SEED: u64 = 7;
/// How many different keys the `get` benches cycle through.
const KEYS: usize = 1_000;
/// The namespace the per-namespace lists read (a twentieth of the pods).
const NAMESPACE: &str = "ns-3";

/// The workload's pods decoded as k8s-openapi `Pod`s (each `DynamicObject` through
/// `serde_json`).
fn typed_pods() -> Result<Vec<Pod>, Box<dyn Error>> {
    kcache_testing::workload::pods(SEED, PODS, NAMESPACES)
        .into_iter()
        .map(|o| Ok(serde_json::from_value(serde_json::to_value(o)?)?))
        .collect()
}

/// `(namespace, name)` of every `PODS / KEYS`-th pod.
fn keys(pods: &[Pod]) -> Vec<(String, String)> {
    pods.iter()
        .step_by((PODS / KEYS).max(1))
        .map(|p| {
            (
                p.metadata.namespace.clone().unwrap_or_default(),
                p.metadata.name.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// The workload's pods as the server sends them (JSON, with managedFields).
fn pod_jsons() -> Result<Vec<String>, Box<dyn Error>> {
    kcache_testing::workload::pods(SEED, PODS, NAMESPACES)
        .into_iter()
        .map(|o| Ok(serde_json::to_string(&o)?))
        .collect()
}

/// kcache's lister over the pods in `jsons`, each built by `make` as it is added (so that the
/// cache's memory is laid out as an informer's is, one object's allocations after another's),
/// cached as `form` (`typed`, ...), in a cache with the namespace index every informer's lister
/// uses.
fn kcache<T: Object, E: Error + 'static>(
    c: &mut Criterion,
    form: &str,
    jsons: &[String],
    make: impl Fn(&str) -> Result<T, E>,
    keys: &[(String, String)],
) -> Result<(), Box<dyn Error>> {
    let cache = Arc::new(Cache::with_indexers(Indexers::new().with_namespace()));
    for json in jsons {
        cache.add(Arc::new(make(json)?))?;
    }
    let lister = Lister::new(cache.clone());
    let store_keys: Vec<String> = keys.iter().map(|(ns, n)| format!("{ns}/{n}")).collect();
    let everything = Selector::everything();

    each(
        c,
        &format!("get/kcache {form}: lister.namespace(ns).get(name)"),
        keys,
        |(ns, name)| lister.namespace(ns).get(name),
    );
    each(
        c,
        &format!("get/kcache {form}: cache.get_by_key(\"ns/name\")"),
        &store_keys,
        |item| cache.get_by_key(item),
    );
    c.bench_function(
        &format!("list all/kcache {form}: lister.list(everything)"),
        |b| {
            b.iter(|| black_box(lister.list(&everything)));
        },
    );
    c.bench_function(
        &format!("list namespace/kcache {form}: lister.namespace(ns).list(everything)"),
        |b| b.iter(|| black_box(lister.namespace(NAMESPACE).list(&everything))),
    );
    Ok(())
}

/// What reading a compact pod's fields costs once it is got: its whole `Pod` (`typed()`), one
/// field beyond metadata (`pointer`), against one `serde_json` decode of the same pod's JSON
/// (without managedFields, as the compact form holds it).
fn compact_reads(
    c: &mut Criterion,
    codec: &CompactCodec,
    pods: &[Pod],
    keys: &[(String, String)],
) -> Result<(), Box<dyn Error>> {
    let cache = Arc::new(Cache::with_indexers(Indexers::new().with_namespace()));
    let mut json = Vec::new();
    for p in pods.iter().step_by((PODS / KEYS).max(1)) {
        let mut p = p.clone();
        p.metadata.managed_fields = None;
        json.push(serde_json::to_vec(&p)?);
    }
    for p in pods {
        cache.add(Arc::new(codec.encode_typed(p)?))?;
    }
    let lister = Lister::new(cache);
    each(
        c,
        "get+decode/kcache compact: lister get, then typed()",
        keys,
        |(ns, name)| lister.namespace(ns).get(name).map(|p| p.typed()),
    );
    each(
        c,
        "get+decode/kcache compact: lister get, then pointer(\"/spec/nodeName\")",
        keys,
        |(ns, name)| {
            lister
                .namespace(ns)
                .get(name)
                .map(|p| p.pointer("/spec/nodeName"))
        },
    );
    each(
        c,
        "get+decode/baseline: serde_json::from_slice::<Pod> of the same pod",
        &json,
        |item| serde_json::from_slice::<Pod>(item),
    );
    // The fastest decode of JSON already known to be UTF-8 (what kcache's watch decoder does).
    let text: Vec<String> = json
        .iter()
        .map(|j| String::from_utf8(j.clone()))
        .collect::<Result<_, _>>()?;
    each(
        c,
        "get+decode/baseline: serde_json::from_str::<Pod> of the same pod",
        &text,
        |item| serde_json::from_str::<Pod>(item),
    );
    Ok(())
}

/// Benches `f` on one of `inputs` per iteration, taking them in turn.
fn each<I, R>(c: &mut Criterion, name: &str, inputs: &[I], mut f: impl FnMut(&I) -> R) {
    let mut i = 0;
    c.bench_function(name, |b| {
        b.iter(|| {
            i = (i + 1) % inputs.len();
            black_box(f(&inputs[i]))
        });
    });
}

/// kube-rs's reflector store over the pods in `jsons`, filled as its watcher fills it (each
/// decoded as it is applied).
fn kube_rs(
    c: &mut Criterion,
    jsons: &[String],
    keys: &[(String, String)],
) -> Result<(), Box<dyn Error>> {
    let (store, mut writer): (KubeStore<Pod>, _) = kube::runtime::reflector::store();
    writer.apply_watcher_event(&Event::Init);
    for json in jsons {
        writer.apply_watcher_event(&Event::InitApply(serde_json::from_str(json)?));
    }
    writer.apply_watcher_event(&Event::InitDone);

    each(
        c,
        "get/kube-rs: store.get(ObjectRef::new(name).within(ns))",
        keys,
        |(ns, name)| store.get(&ObjectRef::new(name).within(ns)),
    );
    c.bench_function("list all/kube-rs: store.state()", |b| {
        b.iter(|| black_box(store.state()));
    });
    c.bench_function(
        "list namespace/kube-rs: store.state_filter(namespace)",
        |b| {
            b.iter(|| {
                black_box(
                    store.state_filter(|p| p.metadata.namespace.as_deref() == Some(NAMESPACE)),
                )
            });
        },
    );
    Ok(())
}

fn benches(c: &mut Criterion) {
    let run = |c: &mut Criterion| -> Result<(), Box<dyn Error>> {
        let pods = typed_pods()?;
        let keys = keys(&pods);
        let jsons = pod_jsons()?;
        kcache(
            c,
            "typed",
            &jsons,
            |j| serde_json::from_str::<Pod>(j),
            &keys,
        )?;
        let codec = CompactCodec::new();
        kcache(c, "compact", &jsons, |j| codec.encode::<Pod>(j), &keys)?;
        compact_reads(c, &CompactCodec::new(), &pods, &keys)?;
        kube_rs(c, &jsons, &keys)?;
        Ok(())
    };
    if let Err(e) = run(c) {
        eprintln!("lister bench: {e}");
        std::process::exit(1);
    }
}

criterion_group! {
    name = lister;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = benches
}
criterion_main!(lister);
