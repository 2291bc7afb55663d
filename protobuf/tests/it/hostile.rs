//! Hostile input: every truncation and random corruption of a valid body is an error or a
//! value, never a panic; wrong wire types and bad UTF-8 name the field.

use kcache_protobuf::wire::{put_bytes, put_nested, put_varint_field};
use kcache_protobuf::{Error, envelope};
use proptest::prelude::*;
use serde_json::Value;

use crate::generate::{Rng, object};

#[test]
fn every_truncation_is_an_error_or_a_value() {
    let pod = object(&mut Rng::new(11), "v1", "Pod");
    let body = envelope::encode_object(&pod).unwrap();
    for cut in 0..body.len() {
        let _ = envelope::decode::<Value>(&body[..cut]);
        let _ = envelope::decode::<k8s_openapi::api::core::v1::Pod>(&body[..cut]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn corrupted_bodies_never_panic(seed in any::<u64>(), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let pod = object(&mut Rng::new(seed), "v1", "Pod");
        let mut body = envelope::encode_object(&pod).unwrap();
        for (at, byte) in flips {
            let i = 4 + at % (body.len() - 4);
            body[i] = byte;
        }
        let _ = envelope::decode::<Value>(&body);
        let _ = envelope::decode::<k8s_openapi::api::core::v1::Pod>(&body);
    }
}

/// An enveloped pod whose metadata (field 1) is what `metadata` writes.
fn pod_with_metadata(metadata: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut pod = Vec::new();
    put_nested(&mut pod, 1, |m| {
        metadata(m);
        Ok(())
    })
    .unwrap();
    let mut body = Vec::new();
    envelope::write("v1", "Pod", &pod, &mut body);
    body
}

#[test]
fn wrong_wire_types_and_bad_utf8_name_the_field() {
    // The name as a varint.
    let body = pod_with_metadata(|m| put_varint_field(m, 1, 5));
    let err = envelope::decode::<Value>(&body).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Mismatch {
                field: "name",
                wire_type: 0,
                ..
            }
        ),
        "{err}"
    );

    // The namespace not UTF-8.
    let body = pod_with_metadata(|m| put_bytes(m, 3, &[0xff, 0xfe]));
    let err = envelope::decode::<Value>(&body).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Utf8 {
                field: "namespace",
                ..
            }
        ),
        "{err}"
    );

    assert!(matches!(
        envelope::decode::<Value>(b"{}"),
        Err(Error::NoMagic)
    ));
    let mut body = Vec::new();
    envelope::write("example.com/v1", "Widget", b"", &mut body);
    assert!(matches!(
        envelope::decode::<Value>(&body),
        Err(Error::UnknownKind { .. })
    ));
}
