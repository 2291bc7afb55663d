//! Watch decode throughput: the incremental [`WatchDecoder`] over randomly chunked bytes next to
//! bare `serde_json` on each line of the same bytes (`from_slice`, and `from_str` after one UTF-8
//! check), with and without skipping `managedFields`, for `DynamicObject` and the typed
//! k8s-openapi `Pod`, and into compact pods (`Compact<Pod>`: metadata decoded, the rest
//! compressed).
//!
//! The stream is 2,000 `MODIFIED` events of realistic pods (`kcache_testing::workload`, light
//! pods of about 5 KB with managedFields; group `watch_decode_heavy`: heavy ones of about 18 KB,
//! over a third of it managedFields), built in memory. The chunks are zero-copy slices of
//! random sizes (1 B to 16 KiB), as hyper hands them out. Throughput is reported in bytes;
//! events/s = bytes/s / the mean event size printed at start.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use kcache_client_http::{SkipManagedFields, WatchDecoder};
use kcache_reflector::WatchEvent;
use kcache_store::{Compact, CompactCodec, DynamicObject};
use kcache_testing::workload::PodShape;
use serde::de::DeserializeOwned;

const EVENTS: usize = 2000;

struct Stream {
    bytes: Bytes,
    chunks: Vec<Bytes>,
    lines: Vec<(usize, usize)>,
}

fn stream(shape: PodShape) -> Stream {
    let mut text = Vec::new();
    for pod in kcache_testing::workload::shaped_pods(shape, 7, EVENTS, 8) {
        serde_json::to_writer(&mut text, &WatchEvent::Modified(pod)).expect("encodes");
        text.push(b'\n');
    }
    let bytes = Bytes::from(text);
    let mut chunks = Vec::new();
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut at = 0;
    while at < bytes.len() {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let size = usize::try_from(rng % 16_384).expect("small") + 1;
        let end = (at + size).min(bytes.len());
        chunks.push(bytes.slice(at..end));
        at = end;
    }
    let mut lines = Vec::with_capacity(EVENTS);
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', &bytes) {
        lines.push((start, end));
        start = end + 1;
    }
    Stream {
        bytes,
        chunks,
        lines,
    }
}

fn bare<T: DeserializeOwned>(s: &Stream) -> usize {
    let mut n = 0;
    for &(a, b) in &s.lines {
        let ev: WatchEvent<T> = serde_json::from_slice(&s.bytes[a..b]).expect("decodes");
        black_box(&ev);
        n += 1;
    }
    n
}

/// Bare `serde_json` the fast way: one UTF-8 check per line, then `from_str`.
fn bare_str<T: DeserializeOwned>(s: &Stream) -> usize {
    let mut n = 0;
    for &(a, b) in &s.lines {
        let text = std::str::from_utf8(&s.bytes[a..b]).expect("UTF-8");
        let ev: WatchEvent<T> = serde_json::from_str(text).expect("decodes");
        black_box(&ev);
        n += 1;
    }
    n
}

fn incremental<T: DeserializeOwned>(s: &Stream, skip: bool) -> usize {
    incremental_with::<T>(s, skip, false)
}

fn incremental_with<T: DeserializeOwned>(s: &Stream, skip: bool, exact: bool) -> usize {
    drain(
        s,
        WatchDecoder::<T>::new()
            .skip_managed_fields(skip)
            .exact_capacities(exact),
    )
}

/// Feeds the stream's chunks to `d` and takes every event.
fn drain<T: DeserializeOwned>(s: &Stream, mut d: WatchDecoder<T>) -> usize {
    let mut n = 0;
    for chunk in &s.chunks {
        d.push(chunk.clone());
        while let Some(ev) = d.next_event() {
            black_box(&ev.expect("decodes"));
            n += 1;
        }
    }
    assert!(d.finish().is_none());
    n
}

/// The compact decoder: only metadata decoded, the rest compressed against a shared dictionary.
fn compact(s: &Stream) -> usize {
    drain(
        s,
        WatchDecoder::<Compact<Pod>>::compact(CompactCodec::new()),
    )
}

fn decode(c: &mut Criterion) {
    let s = stream(PodShape::Light);
    eprintln!(
        "watch stream: {} events, {} bytes, {} bytes/event, {} chunks",
        s.lines.len(),
        s.bytes.len(),
        s.bytes.len() / s.lines.len(),
        s.chunks.len()
    );
    assert_eq!(incremental::<DynamicObject>(&s, false), EVENTS);
    let mut g = c.benchmark_group("watch_decode");
    g.throughput(Throughput::Bytes(s.bytes.len() as u64));
    g.sample_size(10);
    g.bench_function("dynamic/bare_serde_json", |b| {
        b.iter(|| bare::<DynamicObject>(&s));
    });
    g.bench_function("dynamic/watch_decoder", |b| {
        b.iter(|| incremental::<DynamicObject>(&s, false));
    });
    g.bench_function("dynamic/bare_serde_json_skip_mf", |b| {
        b.iter(|| bare::<SkipManagedFields<DynamicObject>>(&s));
    });
    g.bench_function("dynamic/watch_decoder_skip_mf", |b| {
        b.iter(|| incremental::<DynamicObject>(&s, true));
    });
    g.bench_function("pod/bare_serde_json", |b| b.iter(|| bare::<Pod>(&s)));
    g.bench_function("pod/bare_serde_json_from_str", |b| {
        b.iter(|| bare_str::<Pod>(&s));
    });
    g.bench_function("pod/watch_decoder", |b| {
        b.iter(|| incremental::<Pod>(&s, false));
    });
    g.bench_function("pod/watch_decoder_skip_mf", |b| {
        b.iter(|| incremental::<Pod>(&s, true));
    });
    g.bench_function("pod/watch_decoder_exact", |b| {
        b.iter(|| incremental_with::<Pod>(&s, false, true));
    });
    g.bench_function("pod/watch_decoder_exact_skip_mf", |b| {
        b.iter(|| incremental_with::<Pod>(&s, true, true));
    });
    assert_eq!(compact(&s), EVENTS);
    g.bench_function("pod/watch_decoder_compact", |b| b.iter(|| compact(&s)));
    g.finish();
}

/// A list body of the same pods, as the API server sends a list (`{"kind":"PodList",...,
/// "items":[...]}`).
fn list_body() -> Vec<u8> {
    let items: Vec<DynamicObject> = kcache_testing::workload::pods(7, EVENTS, 8);
    serde_json::to_vec(&serde_json::json!({
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "12345"},
        "items": items,
    }))
    .expect("encodes")
}

/// The whole list with bare `serde_json` (managedFields skipped, as `decode_list` is asked to).
#[derive(serde::Deserialize)]
struct BareList {
    items: Vec<SkipManagedFields<Pod>>,
}

/// `decode_list` (client-http's list decoding: items cut out by one scan and decoded one by
/// one as the body arrives) next to one `serde_json::from_slice` of the whole list.
fn list(c: &mut Criterion) {
    let body = list_body();
    let decoded = kcache_client_http::decode_list::<Pod>(&body, true).expect("decodes");
    assert_eq!(decoded.items.len(), EVENTS);
    let mut g = c.benchmark_group("list_decode");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("pod/bare_serde_json_skip_mf", |b| {
        b.iter(|| {
            black_box(
                serde_json::from_slice::<BareList>(&body)
                    .expect("decodes")
                    .items
                    .len(),
            )
        });
    });
    g.bench_function("pod/decode_list_skip_mf", |b| {
        b.iter(|| {
            black_box(
                kcache_client_http::decode_list::<Pod>(&body, true)
                    .expect("decodes")
                    .items
                    .len(),
            )
        });
    });
    g.finish();
}

/// The default decoders of typed pods on heavy pods, next to bare `serde_json`.
fn heavy(c: &mut Criterion) {
    let s = stream(PodShape::Heavy);
    eprintln!(
        "heavy watch stream: {} events, {} bytes/event",
        s.lines.len(),
        s.bytes.len() / s.lines.len()
    );
    let mut g = c.benchmark_group("watch_decode_heavy");
    g.throughput(Throughput::Bytes(s.bytes.len() as u64));
    g.bench_function("pod/bare_serde_json", |b| b.iter(|| bare::<Pod>(&s)));
    g.bench_function("pod/watch_decoder_skip_mf", |b| {
        b.iter(|| incremental::<Pod>(&s, true));
    });
    g.bench_function("pod/watch_decoder_exact_skip_mf", |b| {
        b.iter(|| incremental_with::<Pod>(&s, true, true));
    });
    g.bench_function("pod/watch_decoder_compact", |b| b.iter(|| compact(&s)));
    g.finish();
}

criterion_group!(benches, decode, list, heavy);
criterion_main!(benches);
