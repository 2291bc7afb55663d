//! The default transport against servers that limit HTTP/2 streams: a server allowing none
//! fails requests at once with a clear error (and a warning), one allowing fewer streams than a
//! client's watches gets more connections, a full pool waits for a stream and then fails
//! clearly, a TLS server answering ALPN with `http/1.1` is spoken to in HTTP/1.1, and a
//! connection opened from an informer thread's runtime outlives that runtime when the config
//! asks for connections on the client's runtime (HTTP/2 and HTTP/1.1).
//!
//! Upper bounds on time prove only that nothing hangs (a list would otherwise wait for its
//! whole timeout, here set far beyond them); durations are printed, never asserted.

use std::time::{Duration, Instant};

use kcache_client_http::{Client, Config, Error as ClientError, HttpListerWatcher};
use kcache_reflector::{Error, ListOptions, ListerWatcher, WatchEvent};
use kcache_store::DynamicObject;
use kcache_testing::LogCapture;
use kcache_testing_server::FakeApiServer;

use crate::support::{config, describe, fake_pods, next, pods, server_from};
use crate::support_chain;

/// Far beyond the bounds below: a request that hangs is caught by those, not by this.
const LIST_TIMEOUT: Duration = Duration::from_secs(600);

/// The most a failing or waiting request may take before the test calls it a hang.
const NO_HANG: Duration = Duration::from_secs(30);

/// A TLS server whose HTTP/2 connections allow `streams` streams each, with `pods` pods.
async fn server(streams: u32, pods: usize) -> FakeApiServer {
    let builder = FakeApiServer::builder()
        .tls(true)
        .http2_max_concurrent_streams(streams);
    server_from(builder, pods).await
}

/// The server's config with lists bounded far beyond [`NO_HANG`].
fn patient_config(server: &FakeApiServer) -> Config {
    let mut config = config(server);
    config.list_timeout = LIST_TIMEOUT;
    config
}

fn lw(client: &Client) -> HttpListerWatcher<DynamicObject> {
    HttpListerWatcher::dynamic(client.clone(), pods())
}

/// The client-http error behind a request's transport error.
fn client_error(e: &Error) -> &ClientError {
    let Error::Transport(source) = e else {
        panic!("expected a transport error, got {e}");
    };
    source
        .downcast_ref::<ClientError>()
        .unwrap_or_else(|| panic!("expected a client-http error, got {}", support_chain(e)))
}

#[tokio::test]
async fn a_server_allowing_no_stream_fails_requests_at_once_with_a_clear_error() {
    let server = server(0, 1).await;
    let lw = lw(&Client::new(patient_config(&server)).unwrap());
    let (logs, _guard) = LogCapture::capture();
    let started = Instant::now();
    let list = tokio::time::timeout(NO_HANG, lw.list(&ListOptions::default()))
        .await
        .expect("the list fails instead of hanging")
        .unwrap_err();
    let watch = tokio::time::timeout(NO_HANG, lw.watch(&ListOptions::default()))
        .await
        .expect("the watch fails instead of hanging")
        .err()
        .expect("the watch fails");
    println!(
        "no-stream server: a list and a watch failed in {:?}",
        started.elapsed()
    );
    for e in [&list, &watch] {
        assert!(
            matches!(client_error(e), ClientError::NoHttp2Streams { server: s } if *s == server.url()),
            "{}",
            support_chain(e)
        );
        assert!(
            support_chain(e).contains("allows no HTTP/2 streams on this connection"),
            "{}",
            support_chain(e)
        );
    }
    let warnings = logs.warnings("allows no stream");
    assert_eq!(warnings.len(), 2, "{:?}", logs.all());
    assert!(
        warnings[0].contains("SETTINGS_MAX_CONCURRENT_STREAMS is 0"),
        "{warnings:?}"
    );
    assert!(
        server.requests().is_empty(),
        "no request reached the server"
    );
}

#[tokio::test]
async fn five_watches_over_connections_of_two_streams_all_get_their_events() {
    // Three connections carry five watches; the server takes no fourth, so a client that
    // opened one per request, or more than the limit calls for, would fail here.
    let builder = FakeApiServer::builder()
        .tls(true)
        .http2_max_concurrent_streams(2)
        .max_connections(3);
    let server = server_from(builder, 0).await;
    let client = Client::new(patient_config(&server)).unwrap();
    let started = Instant::now();
    let watches = (0..5).map(|_| {
        let lw = lw(&client);
        async move { lw.watch(&ListOptions::default()).await }
    });
    let watches = tokio::time::timeout(NO_HANG, futures_util::future::join_all(watches))
        .await
        .expect("every watch gets its response");
    let mut streams: Vec<_> = watches.into_iter().map(Result::unwrap).collect();
    server
        .create(&fake_pods(), DynamicObject::new(Some("ns"), "late"))
        .unwrap();
    for stream in &mut streams {
        let event = next(stream).await.unwrap().unwrap();
        assert!(
            matches!(&event, WatchEvent::Added(o) if o.metadata.name.as_deref() == Some("late")),
            "{}",
            describe(&event)
        );
    }
    // The sixth stream is free for a list.
    let page = tokio::time::timeout(NO_HANG, lw(&client).list(&ListOptions::default()))
        .await
        .expect("the list gets the free stream")
        .unwrap();
    assert_eq!(page.items.len(), 1);
    println!(
        "2-stream server: 5 watches got their events and a list its page in {:?}",
        started.elapsed()
    );
    assert!(server.requests().iter().all(|r| r.version == "HTTP/2.0"));
}

#[tokio::test]
async fn a_full_pool_waits_for_a_stream_and_fails_clearly_when_none_frees_up() {
    let server = server(2, 1).await;
    let mut config = patient_config(&server);
    config.http2_max_connections = 1;
    config.http2_stream_wait = Duration::from_millis(200);
    let impatient = Client::new(config.clone()).unwrap();
    let watch_a = lw(&impatient).watch(&ListOptions::default()).await.unwrap();
    let _watch_b = lw(&impatient).watch(&ListOptions::default()).await.unwrap();
    let e = tokio::time::timeout(NO_HANG, lw(&impatient).list(&ListOptions::default()))
        .await
        .expect("the list fails instead of hanging")
        .unwrap_err();
    match client_error(&e) {
        ClientError::Http2StreamWait {
            connections,
            streams,
            waited,
            ..
        } => {
            assert_eq!((*connections, *streams), (1, 2));
            assert!(*waited >= Duration::from_millis(200), "{waited:?}");
        }
        other => panic!("expected Http2StreamWait, got {other}"),
    }
    assert!(
        support_chain(&e).contains("carry 2 streams, as many as the server allows"),
        "{}",
        support_chain(&e)
    );
    // A dropped watch gives its stream back.
    drop(watch_a);
    let page = tokio::time::timeout(NO_HANG, lw(&impatient).list(&ListOptions::default()))
        .await
        .expect("the list gets the freed stream")
        .unwrap();
    assert_eq!(page.items.len(), 1);

    // A request waiting for a stream gets it as soon as one frees up.
    config.http2_stream_wait = NO_HANG * 2;
    let patient = Client::new(config).unwrap();
    let watch_a = lw(&patient).watch(&ListOptions::default()).await.unwrap();
    let _watch_b = lw(&patient).watch(&ListOptions::default()).await.unwrap();
    let waiting = lw(&patient);
    let options = ListOptions::default();
    let list = waiting.list(&options);
    let free = async {
        // Until the list has waited a little (not asserted: only its outcome is).
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(watch_a);
    };
    let (page, ()) = tokio::time::timeout(NO_HANG, async { tokio::join!(list, free) })
        .await
        .expect("the waiting list gets the freed stream");
    assert_eq!(page.unwrap().items.len(), 1);
}

#[tokio::test]
async fn a_tls_server_without_http2_is_spoken_to_in_http1() {
    let server = server_from(FakeApiServer::builder().tls(true).http2(false), 1).await;
    let client = Client::new(patient_config(&server)).unwrap();
    let mut watches = Vec::new();
    for _ in 0..3 {
        watches.push(lw(&client).watch(&ListOptions::default()).await.unwrap());
    }
    let page = lw(&client).list(&ListOptions::default()).await.unwrap();
    assert_eq!(page.items.len(), 1);
    let versions: Vec<_> = server.requests().into_iter().map(|r| r.version).collect();
    assert_eq!(versions, ["HTTP/1.1"; 4]);
}

/// Requests that find a connection being opened wait for it; when it cannot be opened, each
/// of them is told why (the refused connection), never that it waited for a stream.
#[tokio::test]
async fn requests_waiting_for_a_connection_that_fails_are_told_its_cause() {
    let refusing = kcache_testing_server::RefusingPort::new().unwrap();
    let mut config = Config::new(
        format!("https://127.0.0.1:{}", refusing.port())
            .parse()
            .unwrap(),
    );
    config.list_timeout = LIST_TIMEOUT;
    let lw = HttpListerWatcher::<DynamicObject>::dynamic(Client::new(config).unwrap(), pods());
    let opts = ListOptions::default();
    let started = Instant::now();
    let lists = (0..5).map(|_| lw.list(&opts));
    let errors: Vec<Error> = futures_util::future::join_all(lists)
        .await
        .into_iter()
        .map(Result::unwrap_err)
        .collect();
    assert!(started.elapsed() < NO_HANG, "{:?}", started.elapsed());
    let errors: Vec<(bool, String)> = errors
        .iter()
        .map(|e| (e.is_connection_refused(), support_chain(e)))
        .collect();
    for (refused, e) in &errors {
        assert!(*refused && e.contains("refused"), "{errors:?}");
        assert!(!e.contains("allows"), "not a stream wait: {errors:?}");
    }
}

/// Runs `lw`'s list on a thread of its own with a current-thread runtime, as an informer in
/// its default run mode does, and ends that runtime with it.
fn list_on_own_runtime(lw: HttpListerWatcher<DynamicObject>) -> usize {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // The timer is made inside `block_on`, where the runtime is current.
        let page = runtime
            .block_on(async {
                tokio::time::timeout(NO_HANG, lw.list(&ListOptions::default())).await
            })
            .expect("the list gets its page")
            .unwrap();
        page.items.len()
    })
    .join()
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2_connection_outlives_the_runtime_that_opened_it() {
    // The client is made on this multi-threaded runtime; two informer-like threads list in
    // turn, the first one's runtime ending before the second starts. The connection the first
    // opened runs on this runtime, so the second lists over it: one connection in all.
    let server = server(100, 3).await;
    let mut config = patient_config(&server);
    config.connections_on_client_runtime = true;
    let client = Client::new(config).unwrap();
    assert_eq!(list_on_own_runtime(lw(&client)), 3);
    assert_eq!(list_on_own_runtime(lw(&client)), 3);
    let page = tokio::time::timeout(NO_HANG, lw(&client).list(&ListOptions::default()))
        .await
        .expect("the list gets its page")
        .unwrap();
    assert_eq!(page.items.len(), 3);
    assert_eq!(server.connections_accepted(), 1);
    assert!(server.requests().iter().all(|r| r.version == "HTTP/2.0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http1_connection_outlives_the_runtime_that_opened_it() {
    // The same over plain HTTP/1.1, whose idle connection returns to the pool.
    let server = server_from(FakeApiServer::builder(), 3).await;
    let mut config = patient_config(&server);
    config.connections_on_client_runtime = true;
    let client = Client::new(config).unwrap();
    assert_eq!(list_on_own_runtime(lw(&client)), 3);
    assert_eq!(list_on_own_runtime(lw(&client)), 3);
    assert_eq!(server.connections_accepted(), 1);
    assert!(server.requests().iter().all(|r| r.version == "HTTP/1.1"));
}
