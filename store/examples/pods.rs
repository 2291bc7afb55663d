//! Decodes a generated set of pods, caches them with indexes and answers lister queries.
//!
//! `cargo run -p kcache-store --example pods [COUNT]` (default 2,000 pods).

use std::error::Error;
use std::sync::Arc;
use std::time::Instant;

use kcache_store::{
    Cache, DynamicObject, Indexer, Indexers, Lister, NAMESPACE_INDEX, Selector, Store,
};

fn pod_json(i: usize) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"pod-{i}","namespace":"team-{ns}",
        "resourceVersion":"{rv}","uid":"uid-{i}","labels":{{"app":"app-{app}","tier":"{tier}"}}}},
        "spec":{{"nodeName":"node-{node}","containers":[{{"name":"main","image":"registry/app:{app}"}}]}},
        "status":{{"phase":"Running"}}}}"#,
        ns = i % 7,
        rv = 1000 + i,
        app = i % 13,
        tier = if i.is_multiple_of(3) {
            "web"
        } else {
            "backend"
        },
        node = i % 25,
    )
}

fn main() -> Result<(), Box<dyn Error>> {
    let count: usize = match std::env::args().nth(1) {
        Some(n) => n
            .parse()
            .map_err(|e| format!("COUNT must be a number: {e}"))?,
        None => 2_000,
    };
    let indexers = Indexers::new()
        .with_namespace()
        .with("node", |pod: &DynamicObject| {
            Ok(pod.data["spec"]["nodeName"]
                .as_str()
                .map(str::to_owned)
                .into_iter()
                .collect())
        });
    let cache = Arc::new(Cache::with_indexers(indexers));

    let start = Instant::now();
    let pods = (0..count)
        .map(|i| serde_json::from_str::<DynamicObject>(&pod_json(i)).map(Arc::new))
        .collect::<Result<Vec<_>, _>>()?;
    let decoded = start.elapsed();
    cache.replace(pods, &(1000 + count).to_string())?;
    let cached = start.elapsed();

    let lister = Lister::new(cache.clone());
    let web: Selector = "tier=web,app notin (app-0)".parse()?;
    eprintln!(
        "cached {} pods (decode {decoded:?}, decode+replace {cached:?})",
        cache.len()
    );
    eprintln!(
        "last synced resource version: {:?}",
        cache.last_sync_resource_version()
    );
    eprintln!("namespaces: {:?}", {
        let mut v = cache.list_index_func_values(NAMESPACE_INDEX);
        v.sort();
        v
    });
    eprintln!(
        "pods on node-3: {}",
        cache.by_index("node", "node-3")?.len()
    );
    eprintln!("pods matching {web}: {}", lister.list(&web).len());
    eprintln!(
        "in team-2 matching {web}: {}",
        lister.namespace("team-2").list(&web).len()
    );
    Ok(())
}
