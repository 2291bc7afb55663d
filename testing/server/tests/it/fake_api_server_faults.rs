//! Fault injection tests for the fake API server (api-protocol.md 7.2).

use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use kcache_store::DynamicObject;
use kcache_testing_server::fake_api_server::{
    FakeApiServer, Fault, FaultKind, ServedResource, Verb,
};

use crate::fake_api_server::{create_pods, page};
use crate::fake_api_server_client::{Client, End, Watch, summary};

/// How long a test waits for a watch line or the end of a stream.
const WAIT: Duration = Duration::from_secs(5);

async fn server_with_pods(n: usize) -> FakeApiServer {
    let server = FakeApiServer::start().await.unwrap();
    create_pods(&server, "ns", (0..n).map(|i| format!("p{i}")));
    server
}

/// Injects `fault`, then opens a watch of all pods.
async fn watch_after(server: &FakeApiServer, fault: Fault) -> Watch {
    server.inject(fault);
    Client::new(server).watch("/api/v1/pods?watch=1").await
}

/// The next line, which must not be JSON.
async fn next_line_not_json(watch: &mut Watch) -> Bytes {
    let line = watch.next_line(WAIT).await.unwrap();
    assert!(serde_json::from_slice::<serde_json::Value>(&line).is_err());
    line
}

#[tokio::test]
async fn list_errors_with_status_and_retry_after_then_success() {
    let server = server_with_pods(1).await;
    let client = Client::new(&server);
    server.inject(Fault::status(Verb::List, 500, "InternalError", "boom").times(2));
    server.inject(Fault::too_many_requests(Verb::List, 3).on(&ServedResource::pods()));
    for _ in 0..2 {
        let reply = client.get("/api/v1/pods").await;
        assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(reply.json()["message"], "boom");
    }
    let reply = client.get("/api/v1/pods").await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(reply.headers["retry-after"], "3");
    assert_eq!(reply.json()["details"]["retryAfterSeconds"], 3);
    assert_eq!(client.get("/api/v1/pods").await.status, StatusCode::OK);
    // APF-style text 429; only on pods, so nodes are unaffected.
    server.inject(
        Fault::new(
            Verb::List,
            FaultKind::Text {
                code: 429,
                body: "Too many requests, please try again later.\n".into(),
                retry_after: Some(1),
            },
        )
        .on(&ServedResource::pods()),
    );
    assert_eq!(client.get("/api/v1/nodes").await.status, StatusCode::OK);
    let text = client.get("/api/v1/pods").await;
    assert_eq!(text.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(
        text.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
}

#[tokio::test]
async fn watch_open_errors_429_and_direct_410() {
    let server = server_with_pods(1).await;
    let client = Client::new(&server);
    server.inject(Fault::too_many_requests(Verb::Watch, 2));
    server.inject(Fault::status(Verb::Watch, 410, "Gone", "gone"));
    let reply = client.get("/api/v1/pods?watch=1").await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(reply.headers["retry-after"], "2");
    let reply = client.get("/api/v1/pods?watch=1").await;
    assert_eq!(reply.status, StatusCode::GONE);
    // Lists were not affected.
    assert_eq!(client.get("/api/v1/pods").await.status, StatusCode::OK);
}

#[tokio::test]
async fn drop_the_connection_after_n_events() {
    let server = server_with_pods(3).await;
    let mut watch = watch_after(&server, Fault::watch(FaultKind::DropAfter(2))).await;
    watch.next().await;
    watch.next().await;
    assert_eq!(watch.next_line(WAIT).await.unwrap_err(), End::Aborted);
}

#[tokio::test]
async fn truncated_line_then_eof() {
    let server = server_with_pods(2).await;
    let mut watch = watch_after(&server, Fault::watch(FaultKind::TruncateAfter(1))).await;
    watch.next().await;
    let partial = next_line_not_json(&mut watch).await;
    assert!(!partial.ends_with(b"\n"));
    assert_eq!(watch.end(WAIT).await, End::Clean);
}

#[tokio::test]
async fn corrupt_line_and_unknown_type_mid_stream() {
    let server = server_with_pods(2).await;
    let mut watch = watch_after(&server, Fault::watch(FaultKind::CorruptAfter(1))).await;
    watch.next().await;
    next_line_not_json(&mut watch).await;
    assert_eq!(
        summary(&watch.next().await).1,
        "p1",
        "the stream carries on"
    );

    let mut watch = watch_after(&server, Fault::watch(FaultKind::UnknownTypeAfter(0))).await;
    assert_eq!(watch.next().await["type"], "BOGUS");
    assert_eq!(summary(&watch.next().await).0, "ADDED");
}

#[tokio::test]
async fn expired_error_event_at_start_and_mid_stream() {
    let server = server_with_pods(3).await;
    let mut watch = watch_after(&server, Fault::expired_event(0)).await;
    let error = watch.next().await;
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["object"]["reason"], "Expired");
    assert_eq!(error["object"]["code"], 410);
    assert_eq!(watch.end(WAIT).await, End::Clean);

    let mut watch = watch_after(&server, Fault::expired_event(2)).await;
    watch.next().await;
    watch.next().await;
    assert_eq!(watch.next().await["type"], "ERROR");
    assert_eq!(watch.end(WAIT).await, End::Clean);
}

#[tokio::test]
async fn early_clean_close() {
    let server = server_with_pods(3).await;
    let client = Client::new(&server);
    server.inject(Fault::watch(FaultKind::CloseAfter(1)));
    let mut watch = client
        .watch("/api/v1/pods?watch=1&timeoutSeconds=600")
        .await;
    watch.next().await;
    assert_eq!(watch.end(WAIT).await, End::Clean);
}

#[tokio::test]
async fn stalled_stream_sends_nothing_and_stays_open() {
    let server = FakeApiServer::builder()
        .bookmark_interval(Duration::from_millis(50))
        .start()
        .await
        .unwrap();
    create_pods(&server, "ns", ["a"]);
    let client = Client::new(&server);
    server.inject(Fault::watch(FaultKind::Stall));
    let mut watch = client
        .watch("/api/v1/pods?watch=1&allowWatchBookmarks=true")
        .await;
    assert_eq!(
        watch
            .next_line(Duration::from_millis(400))
            .await
            .unwrap_err(),
        End::Timeout
    );
}

#[tokio::test]
async fn slow_stream_delays_each_event() {
    let server = server_with_pods(3).await;
    let client = Client::new(&server);
    server.inject(Fault::watch(FaultKind::Slow(Duration::from_millis(100))));
    let started = std::time::Instant::now();
    let mut watch = client.watch("/api/v1/pods?watch=1").await;
    for _ in 0..3 {
        watch.next().await;
    }
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn compaction_expires_resumes_exact_lists_and_tokens() {
    let server = server_with_pods(3).await;
    let client = Client::new(&server);
    let first = client.get("/api/v1/pods?limit=1").await.json();
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    create_pods(&server, "ns", ["late"]);
    server.compact();
    let mut watch = client.watch("/api/v1/pods?watch=1&resourceVersion=2").await;
    assert_eq!(watch.next().await["object"]["code"], 410);
    assert_eq!(page(&client, 1, &token).await.status, StatusCode::GONE);
    assert_eq!(
        client
            .get("/api/v1/pods?resourceVersion=3&resourceVersionMatch=Exact")
            .await
            .status,
        StatusCode::GONE
    );
}

#[tokio::test]
async fn undecodable_events_break_only_the_wire() {
    let server = server_with_pods(2).await;
    let pods = ServedResource::pods();
    let rv = server.resource_version();
    server.inject(Fault::watch(FaultKind::UndecodableModifiedAfter(0)));
    let client = Client::new(&server);
    let mut watch = client
        .watch(&format!("/api/v1/pods?watch=1&resourceVersion={rv}"))
        .await;
    // A create goes through; the first MODIFIED is broken, the next one is not.
    create_pods(&server, "ns", ["new"]);
    assert_eq!(summary(&watch.next().await).0, "ADDED");
    for i in 0..2 {
        let mut changed = (*server.get(&pods, Some("ns"), "p0").unwrap()).clone();
        changed.metadata.labels = Some([("step".to_owned(), i.to_string())].into());
        server.update(&pods, changed).unwrap();
    }
    let broken = watch.next().await;
    let (kind, name, broken_rv) = summary(&broken);
    assert_eq!((kind.as_str(), name.as_str()), ("MODIFIED", "p0"));
    assert_eq!(broken["object"]["apiVersion"], 7);
    assert!(serde_json::from_value::<kcache_reflector::WatchEvent<DynamicObject>>(broken).is_err());
    let next = watch.next().await;
    assert_eq!(next["object"]["apiVersion"], "v1");
    assert_eq!(summary(&next).0, "MODIFIED");
    // The stored object is untouched; the broken event is on record.
    let stored = server.get(&pods, Some("ns"), "p0").unwrap();
    assert_eq!(stored.api_version.as_deref(), Some("v1"));
    let sent = server.undecodable_events();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (
            sent[0].event_type,
            sent[0].name.as_str(),
            sent[0].resource_version.as_str()
        ),
        ("MODIFIED", "p0", broken_rv.as_str())
    );

    server.inject(Fault::watch(FaultKind::UndecodableDeletedAfter(0)));
    let mut watch = client
        .watch(&format!(
            "/api/v1/pods?watch=1&resourceVersion={}",
            server.resource_version()
        ))
        .await;
    server.delete(&pods, Some("ns"), "p1").unwrap();
    let deleted = watch.next().await;
    assert_eq!(summary(&deleted).0, "DELETED");
    assert_eq!(deleted["object"]["apiVersion"], 7);
    assert_eq!(server.undecodable_events()[1].event_type, "DELETED");
}

#[tokio::test]
async fn repeated_continue_token_waits_for_a_page_with_a_token() {
    let server = server_with_pods(3).await;
    let client = Client::new(&server);
    server.inject(Fault::new(Verb::List, FaultKind::RepeatContinue));
    // A first page has no token to repeat: the fault waits.
    let first = client.get("/api/v1/pods?limit=1").await.json();
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    let second = page(&client, 1, &token).await.json();
    assert_eq!(second["metadata"]["continue"], token.as_str());
    // Once.
    let again = page(&client, 1, &token).await.json();
    assert_ne!(again["metadata"]["continue"], token.as_str());
}

#[tokio::test]
async fn streaming_list_without_its_initial_events_bookmark() {
    let server = server_with_pods(2).await;
    let client = Client::new(&server);
    let path = "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan\
                &allowWatchBookmarks=true";
    // A plain watch does not take the fault.
    server.inject(Fault::watch(FaultKind::NoInitialEventsEndThenClose));
    server.inject(Fault::watch(FaultKind::NoInitialEventsEndThenStall));
    let mut plain = client.watch("/api/v1/pods?watch=1").await;
    assert_eq!(summary(&plain.next().await).0, "ADDED");

    let mut closed = client.watch(path).await;
    assert_eq!(summary(&closed.next().await).1, "p0");
    assert_eq!(summary(&closed.next().await).1, "p1");
    assert_eq!(closed.end(WAIT).await, End::Clean);

    let mut stalled = client.watch(path).await;
    stalled.next().await;
    stalled.next().await;
    assert_eq!(
        stalled
            .next_line(Duration::from_millis(300))
            .await
            .unwrap_err(),
        End::Timeout
    );
}
