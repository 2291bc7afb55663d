//! Watch decode, JSON against protobuf: the same 2,000 realistic pods (`kcache_testing::workload`,
//! light and heavy shapes) as `MODIFIED` events, decoded into k8s-openapi's `Pod` by the JSON
//! default (`WatchDecoder`, managedFields skipped, exact capacities) and from protobuf frames
//! (`kcache-protobuf`'s field table, managedFields skipped), each over the whole stream.
//! Throughput is in events (elements); the printed sizes are bytes per event of each encoding.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use kcache_client_http::{SkipManagedFields, WatchDecoder};
use kcache_protobuf::envelope;
use kcache_protobuf::frames::{FrameReader, parse_event, write_event};
use kcache_reflector::WatchEvent;
use kcache_testing::workload::PodShape;

const EVENTS: usize = 2000;

fn json_stream(shape: PodShape) -> Bytes {
    let mut text = Vec::new();
    for pod in kcache_testing::workload::shaped_pods(shape, 7, EVENTS, 8) {
        serde_json::to_writer(&mut text, &WatchEvent::Modified(pod)).expect("encodes");
        text.push(b'\n');
    }
    Bytes::from(text)
}

fn protobuf_stream(shape: PodShape) -> Bytes {
    let mut out = Vec::new();
    for pod in kcache_testing::workload::shaped_pods(shape, 7, EVENTS, 8) {
        let value = serde_json::to_value(&pod).expect("encodes");
        let object = envelope::encode_object(&value).expect("a pod");
        write_event("MODIFIED", &object, &mut out);
    }
    Bytes::from(out)
}

fn json_decode(stream: &Bytes) -> usize {
    let mut d = WatchDecoder::<Pod>::new()
        .skip_managed_fields(true)
        .exact_capacities(true);
    let mut n = 0;
    for chunk in stream.chunks(16 * 1024) {
        d.push(stream.slice_ref(chunk));
        while let Some(e) = d.next_event() {
            n += usize::from(e.is_ok());
        }
    }
    n
}

fn protobuf_decode(stream: &Bytes) -> usize {
    let mut frames = FrameReader::new(16 << 20);
    let mut n = 0;
    for chunk in stream.chunks(16 * 1024) {
        frames.push(chunk);
        while let Some(payload) = frames.next_frame().expect("frames") {
            let event = parse_event(payload).expect("an event");
            let env = envelope::parse(event.object).expect("an envelope");
            let pod: SkipManagedFields<Pod> = kcache_protobuf::from_message(
                env.raw,
                env.message().expect("a kind"),
                Some(env.type_meta()),
            )
            .expect("a pod");
            black_box(&pod);
            n += 1;
        }
    }
    n
}

fn bench(c: &mut Criterion) {
    for shape in [PodShape::Light, PodShape::Heavy] {
        let json = json_stream(shape);
        let proto = protobuf_stream(shape);
        eprintln!(
            "{} pods: {} bytes/event in JSON, {} in protobuf",
            shape.name(),
            json.len() / EVENTS,
            proto.len() / EVENTS
        );
        assert_eq!(json_decode(&json), EVENTS);
        assert_eq!(protobuf_decode(&proto), EVENTS);
        let mut g = c.benchmark_group(format!("protobuf_{}", shape.name()));
        g.throughput(Throughput::Elements(EVENTS as u64));
        g.bench_function("pod/json_default", |b| b.iter(|| json_decode(&json)));
        g.bench_function("pod/protobuf", |b| b.iter(|| protobuf_decode(&proto)));
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
