//! Informers on threads of their own sharing one client (one HTTP/2 connection over TLS): a
//! connection opened from one informer's thread is served by it, so when that informer stops,
//! the others reconnect and their caches still follow the server.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kcache_client_http::{Client, HttpListerWatcher};
use kcache_informer::{RunMode, SharedIndexInformer};
use kcache_reflector::BackoffConfig;
use kcache_store::DynamicObject;
use kcache_testing_server::FakeApiServer;
use tokio_util::sync::CancellationToken;

use crate::support::{config, fake_pods, names, pods};

fn informer(client: &Client, namespace: &str) -> SharedIndexInformer<DynamicObject> {
    let lw = HttpListerWatcher::<DynamicObject>::builder(client.clone(), pods())
        .namespace(namespace)
        .build();
    SharedIndexInformer::builder(Arc::new(lw))
        .run_mode(RunMode::OwnThread)
        .reflector_options(|b| {
            b.backoff(BackoffConfig {
                initial: Duration::from_millis(5),
                cap: Duration::from_millis(100),
                ..BackoffConfig::default()
            })
        })
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informers_on_own_threads_survive_one_of_them_stopping() {
    let server = FakeApiServer::builder().tls(true).start().await.unwrap();
    for ns in ["a", "b"] {
        server
            .create(&fake_pods(), DynamicObject::new(Some(ns), "first"))
            .unwrap();
    }
    let client = Client::new(config(&server)).unwrap();
    let (a, b) = (informer(&client, "a"), informer(&client, "b"));
    let (stop_a, stop_b) = (CancellationToken::new(), CancellationToken::new());
    let sync = async |informer: &SharedIndexInformer<DynamicObject>| {
        let synced = tokio::time::timeout(Duration::from_secs(10), informer.synced()).await;
        assert!(synced.unwrap());
    };
    // `a` first: its thread opens the one HTTP/2 connection, which `b` then shares.
    let run_a = tokio::spawn({
        let (a, stop) = (a.clone(), stop_a.clone());
        async move { a.run(stop).await }
    });
    sync(&a).await;
    let run_b = tokio::spawn({
        let (b, stop) = (b.clone(), stop_b.clone());
        async move { b.run(stop).await }
    });
    sync(&b).await;
    let requests = server.requests();
    assert!(
        requests.iter().all(|r| r.version == "HTTP/2.0"),
        "{requests:?}"
    );

    // Stop `a` (and its thread's runtime with whatever connections it served).
    stop_a.cancel();
    run_a.await.unwrap().unwrap();
    assert!(a.is_stopped());

    for i in 0..20 {
        server
            .create(
                &fake_pods(),
                DynamicObject::new(Some("b"), &format!("p{i}")),
            )
            .unwrap();
    }
    let want: BTreeSet<String> = std::iter::once("first".to_owned())
        .chain((0..20).map(|i| format!("p{i}")))
        .collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while names(&b) != want {
        assert!(
            tokio::time::Instant::now() < deadline,
            "b never caught up: {:?}",
            names(&b)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(names(&a), BTreeSet::from(["first".to_owned()]), "a stopped");
    // `b` lost the connection `a`'s thread served and watched again.
    let watches_b = server
        .requests()
        .iter()
        .filter(|r| r.path.contains("/namespaces/b/") && r.param("watch").is_some())
        .count();
    assert!(watches_b >= 2, "b watched {watches_b} time(s)");
    stop_b.cancel();
    run_b.await.unwrap().unwrap();
}
