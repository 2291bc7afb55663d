//! Lists and watch streams read as they arrive, in any chunking, within their limits.

use kcache_protobuf::envelope;
use kcache_protobuf::frames::{FrameReader, parse_event, write_event};
use kcache_protobuf::list::{ListPart, ListReader};
use kcache_protobuf::{Error, TypeMeta, from_message, table};
use serde_json::{Value, json};

use crate::generate::{Rng, object};

fn pod_list(count: usize) -> (Value, Vec<u8>) {
    let mut rng = Rng::new(7);
    let items: Vec<Value> = (0..count)
        .map(|_| {
            let mut pod = object(&mut rng, "v1", "Pod");
            let o = pod.as_object_mut().unwrap();
            o.remove("apiVersion");
            o.remove("kind");
            pod
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "PodList",
        "metadata": {"resourceVersion": "42", "continue": "next"}, "items": items});
    (list.clone(), envelope::encode_object(&list).unwrap())
}

/// A [`ListPart`] kept past the next push.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    TypeMeta { api_version: String, kind: String },
    Metadata(Vec<u8>),
    Item(Vec<u8>),
}

impl From<ListPart<'_>> for Part {
    fn from(part: ListPart<'_>) -> Self {
        match part {
            ListPart::TypeMeta { api_version, kind } => Self::TypeMeta {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
            },
            ListPart::Metadata(b) => Self::Metadata(b.to_vec()),
            ListPart::Item(b) => Self::Item(b.to_vec()),
        }
    }
}

fn read_list(body: &[u8], chunk: usize) -> (Vec<Part>, usize) {
    let mut reader = ListReader::new(1 << 20);
    let mut parts = Vec::new();
    let mut most = 0;
    for piece in body.chunks(chunk) {
        reader.push(piece);
        most = most.max(reader.buffered());
        while let Some(part) = reader.next_part().unwrap() {
            parts.push(Part::from(part));
        }
    }
    assert!(reader.at_end());
    (parts, most)
}

#[test]
fn lists_are_read_item_by_item_in_any_chunking() {
    let (list, body) = pod_list(40);
    let (whole, _) = read_list(&body, body.len());
    for chunk in [1, 2, 3, 7, 64, 1000] {
        let (parts, most) = read_list(&body, chunk);
        assert_eq!(parts, whole, "chunk {chunk}");
        let largest_item = parts
            .iter()
            .map(|p| if let Part::Item(b) = p { b.len() } else { 0 })
            .max()
            .unwrap();
        assert!(
            most <= largest_item + chunk + 16,
            "chunk {chunk}: held {most} bytes"
        );
    }
    assert_eq!(
        whole[0],
        Part::TypeMeta {
            api_version: "v1".to_owned(),
            kind: "PodList".to_owned()
        }
    );
    let pod = table::message_for_kind("v1", "Pod").unwrap();
    let items: Vec<Value> = whole
        .iter()
        .filter_map(|p| {
            if let Part::Item(b) = p {
                Some(from_message(b, pod, None).unwrap())
            } else {
                None
            }
        })
        .collect();
    assert_eq!(Value::Array(items), list["items"]);
    let meta = table::message_named("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta").unwrap();
    let Part::Metadata(m) = &whole[1] else {
        panic!("{:?}", whole[1])
    };
    let meta: Value = from_message(m, meta, None).unwrap();
    assert_eq!(meta, json!({"resourceVersion": "42", "continue": "next"}));
}

#[test]
fn list_limits_and_bad_bodies_are_errors() {
    let (_, body) = pod_list(3);
    let mut reader = ListReader::new(64);
    reader.push(&body);
    let mut result = Ok(None);
    for _ in 0..8 {
        result = reader.next_part();
        if result.is_err() {
            break;
        }
    }
    assert!(
        matches!(result, Err(Error::FrameTooLarge { limit: 64, .. })),
        "{result:?}"
    );
    let mut reader = ListReader::new(1 << 20);
    reader.push(b"{\"kind\":\"PodList\"}");
    assert!(matches!(reader.next_part(), Err(Error::NoMagic)));
    let mut reader = ListReader::new(1 << 20);
    reader.push(&body[..body.len() - 1]);
    while let Ok(Some(_)) = reader.next_part() {}
    assert!(!reader.at_end(), "a cut body is not a whole list");
}

#[test]
fn watch_frames_are_read_in_any_chunking() {
    let mut rng = Rng::new(3);
    let pods: Vec<Value> = (0..20).map(|_| object(&mut rng, "v1", "Pod")).collect();
    let mut stream = Vec::new();
    for (i, pod) in pods.iter().enumerate() {
        let kind = ["ADDED", "MODIFIED", "DELETED"][i % 3];
        write_event(kind, &envelope::encode_object(pod).unwrap(), &mut stream);
    }
    for chunk in [1, 5, 100, stream.len()] {
        let mut reader = FrameReader::new(1 << 20);
        let mut got = Vec::new();
        for piece in stream.chunks(chunk) {
            reader.push(piece);
            while let Some(frame) = reader.next_frame().unwrap() {
                let event = parse_event(frame).unwrap();
                let env = envelope::parse(event.object).unwrap();
                let tm = TypeMeta {
                    api_version: env.api_version,
                    kind: env.kind,
                };
                let v: Value = from_message(env.raw, env.message().unwrap(), Some(tm)).unwrap();
                got.push((event.event_type.to_owned(), v));
            }
        }
        assert_eq!(got.len(), pods.len(), "chunk {chunk}");
        for (i, (kind, v)) in got.iter().enumerate() {
            assert_eq!(kind, ["ADDED", "MODIFIED", "DELETED"][i % 3]);
            assert_eq!(v, &pods[i]);
        }
        assert_eq!(reader.buffered(), 0);
    }
    let mut reader = FrameReader::new(10);
    reader.push(&stream);
    assert!(matches!(
        reader.next_frame(),
        Err(Error::FrameTooLarge { limit: 10, .. })
    ));
}
