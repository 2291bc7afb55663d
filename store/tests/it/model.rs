//! Property tests: the cache and its indexes against a plain `BTreeMap` model.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kcache_store::{Cache, DynamicObject, Indexer, Object, Store};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

use crate::support::{app_values, indexer, letter_values, obj};

const NAMESPACES: [&str; 3] = ["a", "b", ""];
const NAMES: [&str; 5] = ["x", "y", "xy", "zz", "yzx"];
const APPS: [Option<&str>; 3] = [Some("web"), Some("db"), None];
const INDEXES: [&str; 3] = ["namespace", "app", "letters"];

#[derive(Debug, Clone)]
enum Op {
    Add(usize, usize, usize),
    Delete(usize, usize),
    Replace(Vec<(usize, usize, usize)>),
    AddIndexer(usize),
    Bookmark(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let spec = (0..NAMESPACES.len(), 0..NAMES.len(), 0..APPS.len());
    prop_oneof![
        6 => spec.clone().prop_map(|(n, m, a)| Op::Add(n, m, a)),
        3 => (0..NAMESPACES.len(), 0..NAMES.len()).prop_map(|(n, m)| Op::Delete(n, m)),
        1 => prop::collection::vec(spec, 0..8).prop_map(Op::Replace),
        1 => (0..INDEXES.len()).prop_map(Op::AddIndexer),
        1 => (1..1000u64).prop_map(Op::Bookmark),
    ]
}

fn values(index: &str, o: &DynamicObject) -> Vec<String> {
    match index {
        "namespace" => vec![o.namespace().unwrap_or_default().to_owned()],
        "app" => app_values(o),
        _ => letter_values(o),
    }
}

fn check(
    cache: &Cache<DynamicObject>,
    model: &BTreeMap<String, Arc<DynamicObject>>,
    indexes: &BTreeSet<&str>,
) {
    let mut keys: Vec<String> = cache.list_keys().iter().map(ToString::to_string).collect();
    keys.sort();
    assert_eq!(keys, model.keys().cloned().collect::<Vec<_>>());
    assert_eq!(cache.len(), model.len());
    for (k, o) in model {
        let got = cache.get_by_key(k).expect("key in model is in cache");
        assert!(Arc::ptr_eq(&got, o), "the cache hands out the stored Arc");
    }
    let listed = cache.list();
    for &index in indexes {
        // Every value with keys, and only those.
        let expected: BTreeSet<String> = model.values().flat_map(|o| values(index, o)).collect();
        let got: BTreeSet<String> = cache.list_index_func_values(index).into_iter().collect();
        assert_eq!(got, expected, "values of index {index}");
        for v in &expected {
            // by_index(name, v) equals a filter over list().
            let mut by: Vec<String> = cache
                .by_index(index, v)
                .unwrap()
                .iter()
                .map(|o| kcache_store::meta_namespace_key(&**o).unwrap().to_string())
                .collect();
            by.sort();
            let mut filtered: Vec<String> = listed
                .iter()
                .filter(|o| values(index, o).contains(v))
                .map(|o| kcache_store::meta_namespace_key(&**o).unwrap().to_string())
                .collect();
            filtered.sort();
            assert_eq!(by, filtered, "by_index({index}, {v})");
            let keys: Vec<String> = cache
                .index_keys(index, v)
                .unwrap()
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(keys, filtered, "index_keys is sorted and complete");
        }
    }
    for index in INDEXES.iter().filter(|i| !indexes.contains(*i)) {
        assert!(cache.by_index(index, "x").is_err());
    }
}

proptest! {
    // A fixed seed keeps CI deterministic; raise PROPTEST_CASES locally to search further.
    #![proptest_config(ProptestConfig {
        cases: 256,
        rng_seed: RngSeed::Fixed(0x6b63_6163_6865),
        ..ProptestConfig::default()
    })]

    #[test]
    fn cache_matches_model(ops in prop::collection::vec(op(), 1..60)) {
        let cache = Cache::with_indexers(indexer("namespace"));
        let mut indexes = BTreeSet::from(["namespace"]);
        let mut model: BTreeMap<String, Arc<DynamicObject>> = BTreeMap::new();
        let mut rv = 0u64;
        let key = |n: usize, m: usize| {
            if NAMESPACES[n].is_empty() { NAMES[m].to_owned() } else { format!("{}/{}", NAMESPACES[n], NAMES[m]) }
        };
        for op in ops {
            rv += 1;
            match op {
                Op::Add(n, m, a) => {
                    let o = obj(NAMESPACES[n], NAMES[m], APPS[a], rv);
                    cache.add(o.clone()).unwrap();
                    model.insert(key(n, m), o);
                    prop_assert_eq!(cache.last_sync_resource_version(), Some(rv.to_string()));
                }
                Op::Delete(n, m) => {
                    cache.delete(obj(NAMESPACES[n], NAMES[m], None, rv)).unwrap();
                    model.remove(&key(n, m));
                }
                Op::Replace(items) => {
                    let list: Vec<_> = items.iter().map(|&(n, m, a)| (key(n, m), obj(NAMESPACES[n], NAMES[m], APPS[a], rv))).collect();
                    cache.replace(list.iter().map(|(_, o)| o.clone()).collect(), &rv.to_string()).unwrap();
                    model = list.into_iter().collect();
                }
                Op::AddIndexer(i) => {
                    let res = cache.add_indexers(indexer(INDEXES[i]));
                    prop_assert_eq!(res.is_ok(), indexes.insert(INDEXES[i]));
                }
                Op::Bookmark(b) => {
                    cache.bookmark(&b.to_string());
                    prop_assert_eq!(cache.last_sync_resource_version(), Some(b.to_string()));
                }
            }
            check(&cache, &model, &indexes);
        }
    }
}
