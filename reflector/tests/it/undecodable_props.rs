//! Property: whatever mix of changes and undecodable events a server sends, once the stream
//! heals the cache equals the server's state minus the objects no client can decode.

use std::sync::Arc;
use std::time::Duration;

use kcache_reflector::Reflector;
use kcache_store::{Cache, DynamicObject, Store};
use kcache_testing::{FakeListerWatcher, Undecodable};
use proptest::prelude::*;
use tokio_util::sync::CancellationToken;

/// One change on the server, to pod `p{key}`.
#[derive(Debug, Clone)]
enum Op {
    Write(u8),
    Delete(u8),
    WriteUndecodable(u8, Undecodable),
    DeleteUndecodable(u8, Undecodable),
    /// Time passes (in tenths of a second).
    Wait(u8),
}

fn how() -> impl Strategy<Value = Undecodable> {
    prop_oneof![Just(Undecodable::Readable), Just(Undecodable::Unreadable)]
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..6;
    prop_oneof![
        4 => key.clone().prop_map(Op::Write),
        2 => key.clone().prop_map(Op::Delete),
        2 => (key.clone(), how()).prop_map(|(k, h)| Op::WriteUndecodable(k, h)),
        1 => (key, how()).prop_map(|(k, h)| Op::DeleteUndecodable(k, h)),
        2 => (1u8..30).prop_map(Op::Wait),
    ]
}

fn pod(key: u8, generation: usize) -> DynamicObject {
    let mut p = DynamicObject::new(Some("ns"), &format!("p{key}"));
    p.metadata.labels = Some([("gen".to_owned(), generation.to_string())].into());
    p
}

/// Sorted `(key, resourceVersion)` pairs.
type Versions = Vec<(String, String)>;

/// The server's state minus its undecodable objects, and the cache.
fn states(
    fake: &FakeListerWatcher<DynamicObject>,
    cache: &Cache<DynamicObject>,
) -> (Versions, Versions) {
    let handle = fake.handle();
    let poisoned = handle.undecodable_keys();
    let entry = |o: &DynamicObject| {
        (
            format!("ns/{}", o.metadata.name.as_deref().unwrap_or_default()),
            o.metadata.resource_version.clone().unwrap_or_default(),
        )
    };
    let mut server: Vec<_> = handle
        .objects()
        .iter()
        .map(entry)
        .filter(|(k, _)| !poisoned.iter().any(|p| p.as_str() == k))
        .collect();
    let mut cached: Vec<_> = cache.list().iter().map(|o| entry(o)).collect();
    server.sort();
    cached.sort();
    (server, cached)
}

fn run(ops: &[Op], streaming: bool, seed: u64) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    rt.block_on(async {
        let fake = FakeListerWatcher::<DynamicObject>::new();
        let handle = fake.handle();
        for k in 0..3 {
            handle.add(pod(k, 0));
        }
        let cache = Arc::new(Cache::<DynamicObject>::new());
        let reflector = Reflector::builder(Arc::new(fake.clone()), cache.clone())
            .seed(seed)
            .use_watch_list(streaming)
            .build();
        let cancel = CancellationToken::new();
        let (server, cached) = tokio::join!(reflector.run(cancel.clone()), async {
            handle.wait_for_watches(1).await;
            for (i, op) in ops.iter().enumerate() {
                match op {
                    Op::Write(k) => {
                        handle.update(pod(*k, i));
                    }
                    Op::Delete(k) => {
                        handle.delete(&pod(*k, i));
                    }
                    Op::WriteUndecodable(k, h) => {
                        handle.update_undecodable(pod(*k, i), *h);
                    }
                    Op::DeleteUndecodable(k, h) => {
                        handle.delete_undecodable(&pod(*k, i), *h);
                    }
                    Op::Wait(t) => {
                        tokio::time::sleep(Duration::from_millis(100 * u64::from(*t))).await;
                    }
                }
                tokio::task::yield_now().await;
            }
            // Healed: a relist may still be backing off, so wait (paused time is free).
            let mut last = states(&fake, &cache);
            for _ in 0..600 {
                if last.0 == last.1 {
                    break;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
                last = states(&fake, &cache);
            }
            cancel.cancel();
            last
        })
        .1;
        prop_assert_eq!(server, cached);
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x6b63_6163_6865),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_cache_heals_to_the_decodable_state(
        ops in proptest::collection::vec(op(), 1..40),
        streaming in any::<bool>(),
        seed in any::<u64>(),
    ) {
        run(&ops, streaming, seed)?;
    }
}
