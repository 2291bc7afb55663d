//! Informers against a busy server: every update is already queued behind the initial state
//! (`FakeApiServer::set_latest_as_of`), and the watch stream is cut as servers and proxies cut
//! it (one event per write, fixed-size writes that split lines), over plain HTTP/1.1 and over
//! TLS with HTTP/2. In every case the informer syncs to the state the list described, then
//! catches up: its cache ends equal to the server's, every update seen once, in order.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kcache_client_http::{Client, HttpListerWatcher};
use kcache_informer::{HandlerFuncs, SharedIndexInformer};
use kcache_store::Object;
use kcache_testing::workload::{PodGenerator, PodShape};
use kcache_testing_server::{FakeApiServer, WatchFrames};
use tokio_util::sync::CancellationToken;

use crate::support::{config, fake_pods, pods};

const PODS: usize = 60;
const UPDATES: usize = 300;

/// Far beyond what this takes: reached only if something hangs.
const NO_HANG: Duration = Duration::from_secs(60);

/// A server of `PODS` heavy pods with `UPDATES` updates queued behind them; the resource
/// versions of every pod's last update.
async fn busy_server(tls: bool, frames: WatchFrames) -> (FakeApiServer, BTreeMap<String, String>) {
    let server = FakeApiServer::builder()
        .tls(tls)
        .watch_frames(frames)
        .history_limit(PODS + UPDATES + 100)
        .watcher_buffer(PODS + UPDATES + 100)
        .start()
        .await
        .unwrap();
    let mut generator = PodGenerator::with_shape(3, 4, PodShape::Heavy);
    let mut created = Vec::new();
    for _ in 0..PODS {
        created.push(server.create(&fake_pods(), generator.next_pod()).unwrap());
    }
    let before = server.resource_version();
    let mut last = BTreeMap::new();
    for i in 0..UPDATES {
        let current = &created[i % PODS];
        let latest = server
            .get(
                &fake_pods(),
                current.metadata.namespace.as_deref(),
                current.metadata.name.as_deref().unwrap(),
            )
            .unwrap();
        let updated = server
            .update(&fake_pods(), generator.mutate(&latest))
            .unwrap();
        last.insert(
            updated.metadata.name.clone().unwrap(),
            updated.metadata.resource_version.clone().unwrap(),
        );
    }
    server.set_latest_as_of(Some(before)).unwrap();
    (server, last)
}

#[tokio::test]
async fn informers_sync_then_catch_up_on_updates_queued_behind_the_list() {
    let cases = [
        (false, WatchFrames::default()),
        (false, WatchFrames::PerEvent),
        (false, WatchFrames::Split(1000)),
        (true, WatchFrames::Split(7000)),
    ];
    for (tls, frames) in cases {
        for streaming in [true, false] {
            let what = format!("tls {tls}, {frames:?}, streaming list {streaming}");
            let (server, last) = busy_server(tls, frames).await;
            let client = Client::new(config(&server)).unwrap();
            let lw = HttpListerWatcher::<Pod>::builder(client, pods())
                .kind("Pod")
                .build();
            let informer = SharedIndexInformer::builder(Arc::new(lw))
                .reflector_options(move |b| b.use_watch_list(streaming))
                .build();
            // Each pod's resource versions as the handler saw them.
            let seen: Arc<Mutex<BTreeMap<String, Vec<String>>>> = Arc::default();
            let record = Arc::clone(&seen);
            informer
                .add_event_handler(HandlerFuncs::new().on_updated(
                    move |_: &Arc<Pod>, new: &Arc<Pod>| {
                        record
                            .lock()
                            .unwrap()
                            .entry(new.name().unwrap_or_default().to_owned())
                            .or_default()
                            .push(new.resource_version().unwrap_or_default().to_owned());
                    },
                ))
                .unwrap();
            let stop = CancellationToken::new();
            let run = tokio::spawn({
                let (informer, stop) = (informer.clone(), stop.clone());
                async move { informer.run(stop).await }
            });
            let synced = tokio::time::timeout(NO_HANG, informer.synced()).await;
            assert_eq!(synced, Ok(true), "{what}");
            let caught_up = async {
                while seen.lock().unwrap().values().map(Vec::len).sum::<usize>() < UPDATES {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            };
            tokio::time::timeout(NO_HANG, caught_up)
                .await
                .unwrap_or_else(|_| panic!("{what}: never caught up"));
            let seen = seen.lock().unwrap().clone();
            for (name, versions) in &seen {
                let numbers: Vec<u64> = versions.iter().map(|v| v.parse().unwrap()).collect();
                assert!(
                    numbers.is_sorted(),
                    "{what}: {name} out of order: {versions:?}"
                );
                assert_eq!(versions.last(), last.get(name), "{what}: {name}");
            }
            assert_eq!(
                seen.values().map(Vec::len).sum::<usize>(),
                UPDATES,
                "{what}: each update once"
            );
            let cached: BTreeMap<String, String> = informer
                .indexer()
                .list()
                .iter()
                .map(|p| {
                    (
                        p.name().unwrap_or_default().to_owned(),
                        p.resource_version().unwrap_or_default().to_owned(),
                    )
                })
                .collect();
            assert_eq!(cached, last, "{what}: the cache equals the server");
            if tls {
                assert!(
                    server.requests().iter().all(|r| r.version == "HTTP/2.0"),
                    "{what}"
                );
            }
            stop.cancel();
            run.await.unwrap().unwrap();
            server.shutdown().await;
        }
    }
}
