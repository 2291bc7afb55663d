//! Informers over one client against a server that allows few HTTP/2 streams per connection:
//! five informers, each with a watch that holds its stream as long as it runs, share one
//! client-http `Client` against a TLS `FakeApiServer` allowing 2 streams per connection. The
//! transport opens the connections they need, so every informer syncs and follows the server,
//! and no list or watch fails on the way (one pinned connection would leave three of them
//! waiting for a stream until their list timed out, and again after every retry).
//!
//! The time to sync is printed, not asserted: the bound only proves nothing hangs.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kcache_client_http::{Client, HttpListerWatcher};
use kcache_informer::SharedIndexInformer;
use kcache_store::DynamicObject;
use kcache_testing::LogCapture;
use kcache_testing_server::FakeApiServer;
use tokio_util::sync::CancellationToken;

use crate::support::{config, fake_pods, names, pods};

/// The informers, one per namespace.
const INFORMERS: usize = 5;

/// Far beyond what syncing takes: reached only if a request hangs.
const NO_HANG: Duration = Duration::from_secs(60);

#[tokio::test]
async fn five_informers_sync_over_connections_of_two_streams() {
    let server = FakeApiServer::builder()
        .tls(true)
        .http2_max_concurrent_streams(2)
        .start()
        .await
        .unwrap();
    let namespaces: Vec<String> = (0..INFORMERS).map(|i| format!("ns{i}")).collect();
    for ns in &namespaces {
        server
            .create(&fake_pods(), DynamicObject::new(Some(ns), "first"))
            .unwrap();
    }
    let mut config = config(&server);
    // Longer than the bound below, so a stream that never comes is a failure, not a retry.
    config.list_timeout = NO_HANG * 2;
    let client = Client::new(config).unwrap();
    // Reflector failures are logged as warnings; the informers run on this thread.
    let (logs, _guard) = LogCapture::capture();
    let stop = CancellationToken::new();
    let started = Instant::now();
    let informers: Vec<_> = namespaces
        .iter()
        .map(|ns| {
            let lw = HttpListerWatcher::<DynamicObject>::builder(client.clone(), pods())
                .namespace(ns)
                .build();
            let informer = SharedIndexInformer::builder(Arc::new(lw)).build();
            let run = tokio::spawn({
                let (informer, stop) = (informer.clone(), stop.clone());
                async move { informer.run(stop).await }
            });
            (informer, run)
        })
        .collect();
    for (informer, _) in &informers {
        let synced = tokio::time::timeout(NO_HANG, informer.synced()).await;
        assert_eq!(synced, Ok(true), "every informer syncs");
    }
    let synced_in = started.elapsed();

    // Their watches run: each sees a change in its namespace.
    for ns in &namespaces {
        server
            .create(&fake_pods(), DynamicObject::new(Some(ns), "second"))
            .unwrap();
    }
    let want = BTreeSet::from(["first".to_owned(), "second".to_owned()]);
    let deadline = tokio::time::Instant::now() + NO_HANG;
    for (i, (informer, _)) in informers.iter().enumerate() {
        while names(informer) != want {
            assert!(
                tokio::time::Instant::now() < deadline,
                "informer {i} never saw its change: {:?}",
                names(informer)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    println!(
        "{INFORMERS} informers over 2-stream connections: synced in {synced_in:?}, followed a change in {:?} in all",
        started.elapsed()
    );
    let watches = server
        .requests()
        .iter()
        .filter(|r| r.param("watch").is_some())
        .count();
    assert!(watches >= INFORMERS, "{watches} watches");
    assert!(
        server.requests().iter().all(|r| r.version == "HTTP/2.0"),
        "{:?}",
        server.requests()
    );
    let warnings = logs.warnings("");
    assert!(warnings.is_empty(), "no list or watch failed: {warnings:?}");

    stop.cancel();
    for (informer, run) in informers {
        run.await.unwrap().unwrap();
        assert!(informer.is_stopped());
    }
}
