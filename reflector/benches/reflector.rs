//! Criterion benchmark of the reflector's own cost: events per second from an in-memory
//! `ListerWatcher` into a `Cache`, without HTTP or decoding. Run with
//! `cargo bench -p kcache-reflector`.

use std::hint::black_box;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use kcache_reflector::{
    Bookmark, Error, ListOptions, ListerWatcher, ObjectList, Reflector, WatchEvent, WatchStream,
};
use kcache_store::{Cache, DynamicObject, Store};
use tokio_util::sync::CancellationToken;

const OBJECTS: usize = 1_000;
const EVENTS: usize = 100_000;

type Events = Vec<Result<WatchEvent<DynamicObject>, Error>>;

/// Lists nothing, then serves one prepared watch stream, then cancels the run.
struct InMemory {
    events: Mutex<Option<Events>>,
    cancel: CancellationToken,
}

#[async_trait]
impl ListerWatcher<DynamicObject> for InMemory {
    async fn list(&self, _: &ListOptions) -> Result<ObjectList<DynamicObject>, Error> {
        Ok(ObjectList::new(Vec::new(), "1"))
    }
    async fn watch(&self, _: &ListOptions) -> Result<WatchStream<DynamicObject>, Error> {
        let events = self
            .events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(events) = events {
            Ok(Box::pin(futures_util::stream::iter(events)))
        } else {
            self.cancel.cancel();
            Ok(Box::pin(futures_util::stream::pending()))
        }
    }
}

fn events() -> Events {
    (0..EVENTS)
        .map(|i| {
            let mut o = DynamicObject::new(Some("ns"), &format!("pod-{}", i % OBJECTS));
            o.metadata.resource_version = Some((i + 2).to_string());
            Ok(match i % 10 {
                9 => WatchEvent::Bookmark(Bookmark::new((i + 2).to_string())),
                _ if i < OBJECTS => WatchEvent::Added(o),
                _ => WatchEvent::Modified(o),
            })
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let mut g = c.benchmark_group("reflector");
    g.throughput(Throughput::Elements(EVENTS as u64));
    g.sample_size(20);
    g.bench_function("watch_events_into_cache", |b| {
        b.iter_batched(
            || {
                let cancel = CancellationToken::new();
                let lw = InMemory {
                    events: Mutex::new(Some(events())),
                    cancel: cancel.clone(),
                };
                let cache = Arc::new(Cache::<DynamicObject>::new());
                let r = Reflector::builder(Arc::new(lw), cache.clone())
                    .use_watch_list(false)
                    .seed(1)
                    .build();
                (r, cache, cancel)
            },
            |(r, cache, cancel)| {
                rt.block_on(r.run(cancel));
                black_box(cache.len())
            },
            BatchSize::LargeInput,
        );
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
