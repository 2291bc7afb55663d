//! Criterion benchmark of the reflector's own cost: events per second from an in-memory
//! `ListerWatcher` into a `Cache`, without HTTP or decoding: a watch of updates, and a
//! streaming list's initial events. Run with `cargo bench -p kcache-reflector`.

use std::hint::black_box;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use futures_util::StreamExt;
use kcache_reflector::{
    Bookmark, Error, ListOptions, ListerWatcher, ObjectList, Reflector, WatchEvent, WatchStream,
};
use kcache_store::{Cache, DynamicObject, Store};
use tokio_util::sync::CancellationToken;

const OBJECTS: usize = 1_000;
const EVENTS: usize = 100_000;

type Events = Vec<Result<WatchEvent<DynamicObject>, Error>>;

/// Lists nothing, then serves one prepared watch stream and cancels the run at its end.
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
            // The events, then the end of the run (the stream stays open: no re-watch, no
            // very-short-watch backoff in the figure).
            let cancel = self.cancel.clone();
            let end = futures_util::stream::poll_fn(move |_| {
                cancel.cancel();
                std::task::Poll::Pending
            });
            Ok(Box::pin(futures_util::stream::iter(events).chain(end)))
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

/// A streaming list of `OBJECTS * 20` objects ending with its initial-events bookmark.
fn initial_events() -> Events {
    let n = OBJECTS * 20;
    let mut events: Events = (0..n)
        .map(|i| {
            let mut o = DynamicObject::new(Some("ns"), &format!("pod-{i}"));
            o.metadata.resource_version = Some((i + 2).to_string());
            Ok(WatchEvent::Added(o))
        })
        .collect();
    let mut end = Bookmark::new((n + 2).to_string());
    end.initial_events_end = true;
    events.push(Ok(WatchEvent::Bookmark(end)));
    events
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
    g.throughput(Throughput::Elements((OBJECTS * 20) as u64));
    g.bench_function("streaming_list_into_cache", |b| {
        b.iter_batched(
            || {
                let cancel = CancellationToken::new();
                let lw = InMemory {
                    events: Mutex::new(Some(initial_events())),
                    cancel: cancel.clone(),
                };
                let cache = Arc::new(Cache::<DynamicObject>::new());
                let r = Reflector::builder(Arc::new(lw), cache.clone())
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
