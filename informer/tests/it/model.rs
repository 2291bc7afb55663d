//! Random scripted faults: after quiescence the cache equals the fake's state, and replaying
//! each subscriber's event log from empty yields the same state. Every scenario runs twice:
//! with typed objects (`DynamicObject`) and with their compact form (`Compact<DynamicObject>`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use kcache_informer::{EventStream, QueueKind};
use kcache_reflector::Status;
use kcache_store::{Compact, DynamicObject};
use kcache_testing::FakeObject;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

use crate::support::{Seen, cache_state, fake_state, informer_of, pod, replay, start};

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    Update(u8),
    Delete(u8),
    DropWatches,
    ExpireWatches,
    CloseWatches,
    Compact,
    FailNextList,
    FailNextWatch,
    Bookmark,
    Subscribe,
    Wait(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..12u8).prop_map(Op::Add),
        4 => (0..12u8).prop_map(Op::Update),
        3 => (0..12u8).prop_map(Op::Delete),
        1 => Just(Op::DropWatches),
        1 => Just(Op::ExpireWatches),
        1 => Just(Op::CloseWatches),
        1 => Just(Op::Compact),
        1 => Just(Op::FailNextList),
        1 => Just(Op::FailNextWatch),
        1 => Just(Op::Bookmark),
        1 => Just(Op::Subscribe),
        4 => (0..3000u16).prop_map(Op::Wait),
    ]
}

/// Drains a stream into a shared log for as long as it is open.
fn record<T: kcache_store::Object>(mut stream: EventStream<T>) -> Arc<Mutex<Vec<Seen>>> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let out = Arc::clone(&log);
    tokio::spawn(async move {
        while let Some(e) = stream.next().await {
            out.lock().unwrap().push(Seen::from_event(&e));
        }
    });
    log
}

/// Typed objects, or their compact form, as the fake's objects.
trait Form: FakeObject {
    fn of(obj: DynamicObject) -> Self;
}

impl Form for DynamicObject {
    fn of(obj: DynamicObject) -> Self {
        obj
    }
}

impl Form for Compact<DynamicObject> {
    fn of(obj: DynamicObject) -> Self {
        Compact::from_typed(&obj).unwrap()
    }
}

async fn scenario<T: Form>(queue: QueueKind, initial: u8, ops: Vec<Op>) {
    let (fake, inf) = informer_of::<T>(Duration::ZERO, |b| b.queue(queue));
    let pod = |ns: &str, name: &str| T::of(pod(ns, name));
    for i in 0..initial {
        fake.add(pod("ns", &format!("p{i}")));
    }
    let mut logs = vec![record(inf.subscribe().unwrap())];
    let (cancel, run) = start(&inf);
    for op in ops {
        let name = |i: u8| format!("p{i}");
        match op {
            Op::Add(i) | Op::Update(i) => {
                fake.add(pod("ns", &name(i)));
            }
            Op::Delete(i) => {
                fake.delete(&pod("ns", &name(i)));
            }
            Op::DropWatches => fake.drop_watches(),
            Op::ExpireWatches => fake.expire_watches(),
            Op::CloseWatches => fake.close_watches(),
            Op::Compact => fake.compact(),
            Op::FailNextList => {
                fake.fail_next_list_with_status(Status::failure(500, "InternalError", "boom"));
            }
            Op::FailNextWatch => {
                fake.fail_next_watch_with_status(Status::failure(500, "InternalError", "boom"));
            }
            Op::Bookmark => fake.bookmark(),
            Op::Subscribe => logs.push(record(inf.subscribe().unwrap())),
            Op::Wait(ms) => tokio::time::sleep(Duration::from_millis(u64::from(ms))).await,
        }
    }
    // Quiescence: no more faults; wait (virtual time) until everyone agrees with the fake.
    let want = fake_state(&fake);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3600);
    loop {
        let agreed =
            cache_state(&inf) == want && logs.iter().all(|l| replay(&l.lock().unwrap()) == want);
        if agreed {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{queue:?}: no convergence; cache {:?}, fake {want:?}",
            cache_state(&inf)
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    cancel.cancel();
    run.await.unwrap().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        rng_seed: RngSeed::Fixed(0x696e_666f_726d),
        ..ProptestConfig::default()
    })]

    #[test]
    fn cache_and_handler_logs_converge_under_faults(
        delta_fifo in any::<bool>(),
        initial in 0..6u8,
        ops in prop::collection::vec(op(), 1..40),
    ) {
        let queue = if delta_fifo { QueueKind::DeltaFifo } else { QueueKind::RealFifo };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(scenario::<DynamicObject>(queue, initial, ops.clone()));
        rt.block_on(scenario::<Compact<DynamicObject>>(queue, initial, ops));
    }
}
