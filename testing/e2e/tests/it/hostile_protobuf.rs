//! Hostile servers in protobuf: the informer of typed pods, asking for protobuf, against a
//! [`ScriptedServer`] that answers in protobuf frames and misbehaves: an object whose body does
//! not decode (left out with its identity, brought back by its next good version), a frame
//! over the event size limit and a frame that is not a `WatchEvent` (each healed by a relist),
//! and a server that refuses protobuf with a 406 (reported with its cause, retried). On both
//! backends, as the JSON scenarios of `hostile.rs` are.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::{StreamExt, stream};
use kcache_protobuf::envelope::encode_object;
use kcache_protobuf::frames::write_event;
use kcache_testing::LogCapture;
use kcache_testing_server::scripted_server::{Feed, FeedStream, Reply, ScriptedServer, feed};
use serde_json::{Value, json};

use crate::hostile::{HEAL, assert_warned};
use crate::hostile_support::{Limits, Running, broken_pod, pod, quick, state};
use crate::support::Backend;

/// Each scenario on both backends (see `hostile.rs`).
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            async fn http() {
                super::$name(super::Backend::Http).await;
            }
            #[tokio::test]
            async fn kube() {
                super::$name(super::Backend::Kube).await;
            }
        }
    )*};
}

/// The protobuf watch frame of an event of `event_type` whose object is `object`.
fn frame(event_type: &str, object: &Value) -> Bytes {
    let mut out = Vec::new();
    write_event(event_type, &encode_object(object).unwrap(), &mut out);
    Bytes::from(out)
}

/// The bookmark that ends a streaming list's initial events, at `rv`.
fn initial_events_end(rv: &str) -> Bytes {
    frame(
        "BOOKMARK",
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"resourceVersion": rv,
            "annotations": {"k8s.io/initial-events-end": "true"}}}),
    )
}

/// Protobuf limits: the defaults, asking for protobuf.
fn protobuf() -> Limits {
    Limits {
        protobuf: true,
        ..Limits::default()
    }
}

/// A server whose every streaming list sends `objects` at `rv` in protobuf frames, the first
/// one followed by what the returned [`Feed`] sends; it counts the streaming lists.
async fn protobuf_server(
    objects: Vec<Value>,
    rv: &'static str,
    lists: Arc<AtomicUsize>,
) -> (ScriptedServer, Feed) {
    let (feed, rest) = feed();
    let rest: Mutex<Option<FeedStream>> = Mutex::new(Some(rest));
    let server = ScriptedServer::start(move |req| {
        if !req.is_streaming_list() {
            return Reply::status(500, "InternalError", "the script has no answer for this");
        }
        lists.fetch_add(1, Ordering::SeqCst);
        let initial: Vec<Bytes> = objects
            .iter()
            .map(|o| frame("ADDED", o))
            .chain([initial_events_end(rv)])
            .collect();
        match rest.lock().unwrap().take() {
            Some(rest) => Reply::protobuf_stream(200, stream::iter(initial).chain(rest)),
            None => Reply::protobuf_stream(200, stream::iter(initial).chain(stream::pending())),
        }
    })
    .await
    .unwrap();
    (server, feed)
}

async fn an_undecodable_object_is_left_out_and_its_next_version_brings_it_back(backend: Backend) {
    let (logs, _guard) = LogCapture::capture();
    let lists = Arc::new(AtomicUsize::new(0));
    let (server, feed) = protobuf_server(
        vec![pod("a", "10", "v1"), pod("b", "10", "v1")],
        "10",
        lists,
    )
    .await;
    let run = Running::start(backend, server.url(), protobuf(), quick);
    run.converge(HEAL, &state(&[("ns/a", "10", "v1"), ("ns/b", "10", "v1")]))
        .await;
    // A restart policy the typed pod has no variant for: the body does not decode, the
    // identity in its metadata does.
    let spec =
        json!({"containers": [{"name": "main", "image": "v2"}], "restartPolicy": "Sometimes"});
    feed.send(frame("MODIFIED", &broken_pod("a", "11", spec)));
    run.converge(HEAL, &state(&[("ns/b", "10", "v1")])).await;
    assert!(run.heard.events().contains(&"delete ns/a".to_owned()));
    assert_warned(
        &logs,
        &["leaving an undecodable object out of the cache", "ns/a"],
    );
    feed.send(frame("MODIFIED", &pod("a", "12", "v3")));
    run.converge(HEAL, &state(&[("ns/a", "12", "v3"), ("ns/b", "10", "v1")]))
        .await;
    assert_eq!(run.informer.decode_errors(), 1);
    // Every request asked for protobuf first.
    for request in server.requests() {
        let accept = request.accept.unwrap_or_default();
        assert!(
            accept.starts_with("application/vnd.kubernetes.protobuf"),
            "{accept}"
        );
    }
    run.stop().await;
}

async fn an_oversized_or_corrupt_frame_is_healed_by_a_relist(backend: Backend) {
    // A frame announcing 1 MiB (refused before it is read), then a frame that is not a
    // `WatchEvent`: each ends the watch, and a relist brings the cache back.
    let mut oversized = (1u32 << 20).to_be_bytes().to_vec();
    oversized.extend_from_slice(&[0; 64]);
    let corrupt = vec![0, 0, 0, 4, 0x0a, 0x7f, b'M', b'O'];
    for (bad, warned) in [(oversized, "4096"), (corrupt, "watch")] {
        let (logs, _guard) = LogCapture::capture();
        let lists = Arc::new(AtomicUsize::new(0));
        let (server, feed) = protobuf_server(vec![pod("a", "10", "v1")], "10", lists.clone()).await;
        let limits = Limits {
            max_event_size: Some(4096),
            ..protobuf()
        };
        let run = Running::start(backend, server.url(), limits, quick);
        run.converge(HEAL, &state(&[("ns/a", "10", "v1")])).await;
        assert_eq!(lists.load(Ordering::SeqCst), 1);
        feed.send(bad);
        crate::hostile::eventually(HEAL, "a relist", || lists.load(Ordering::SeqCst) > 1).await;
        run.converge(HEAL, &state(&[("ns/a", "10", "v1")])).await;
        assert_warned(&logs, &[warned]);
        run.stop().await;
    }
}

async fn a_server_refusing_protobuf_is_reported_and_retried(backend: Backend) {
    let (logs, _guard) = LogCapture::capture();
    let answered = Arc::new(AtomicUsize::new(0));
    let count = answered.clone();
    let server = ScriptedServer::start(move |_| {
        count.fetch_add(1, Ordering::SeqCst);
        Reply::status(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/yaml",
        )
    })
    .await
    .unwrap();
    let run = Running::start(backend, server.url(), protobuf(), quick);
    crate::hostile::eventually(HEAL, "three attempts", || {
        answered.load(Ordering::SeqCst) >= 3
    })
    .await;
    assert!(!run.informer.has_synced());
    assert!(run.cache().is_empty());
    assert!(
        run.reported()
            .iter()
            .any(|r| r.chain.contains("only the following media types")),
        "{:?}",
        run.reported()
    );
    assert_warned(&logs, &["only the following media types"]);
    run.stop().await;
}

on_both_backends!(
    an_undecodable_object_is_left_out_and_its_next_version_brings_it_back,
    an_oversized_or_corrupt_frame_is_healed_by_a_relist,
    a_server_refusing_protobuf_is_reported_and_retried,
);
