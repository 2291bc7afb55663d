//! How much memory a list that never ends can take: an informer with its defaults against a
//! server whose list (and streaming list) sends small pods for ever. The lister-watcher stops
//! each at `max_list_objects` decoded items; this prints the process's peak resident memory
//! when the informer has reported both endless lists, or gives up at `--give-up-gib`.
//!
//! ```sh
//! cargo run --release -p kcache-testing-e2e --example endless_list -- typed
//! cargo run --release -p kcache-testing-e2e --example endless_list -- compact
//! ```
#![allow(
    clippy::print_stdout,
    reason = "an example program says what it measured"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{StreamExt, stream};
use k8s_openapi::api::core::v1::Pod;
use kcache_client_http::{ApiResource, Client, Config, HttpListerWatcher};
use kcache_informer::SharedIndexInformer;
use kcache_reflector::{Error, ListerWatcher};
use kcache_store::{Compact, CompactCodec, Object};
use kcache_testing_server::scripted_server::{Reply, ScriptedServer, watch_line};
use serde_json::json;

/// A small pod, about 200 bytes of JSON, numbered so that every key differs.
fn pod(i: usize) -> serde_json::Value {
    json!({"metadata": {"name": format!("p-{i}"), "namespace": "ns", "resourceVersion": "10",
           "uid": format!("00000000-0000-0000-0000-{i:012}")},
           "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}]}})
}

/// The process's peak resident memory, in MiB (`VmHWM`).
fn peak_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

async fn run<T: Object + serde::de::DeserializeOwned>(
    lw: Arc<dyn ListerWatcher<T>>,
    give_up_mib: u64,
) {
    let limits = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&limits);
    let informer = SharedIndexInformer::builder(lw)
        .on_watch_error(move |e| {
            if matches!(e, Error::Limit(_)) {
                eprintln!("reported: {e}");
                seen.fetch_add(1, Ordering::SeqCst);
            }
        })
        .build();
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    let start = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let peak = peak_rss_mib();
        if limits.load(Ordering::SeqCst) >= 2 {
            println!(
                "both endless lists stopped: peak RSS {peak} MiB after {:.1} s",
                start.elapsed().as_secs_f64()
            );
            break;
        }
        if peak >= give_up_mib {
            println!(
                "gave up: peak RSS {peak} MiB after {:.1} s, no list stopped yet",
                start.elapsed().as_secs_f64()
            );
            break;
        }
    }
    cancel.cancel();
    let _ = task.await;
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let form = args.get(1).map_or("typed", String::as_str).to_owned();
    let give_up_mib = args
        .iter()
        .position(|a| a == "--give-up-gib")
        .and_then(|i| args.get(i + 1))
        .and_then(|g| g.parse::<u64>().ok())
        .unwrap_or(12)
        * 1024;
    let server = ScriptedServer::start(|req| {
        if req.is_streaming_list() {
            let lines = stream::iter(0..).map(|i: usize| watch_line("ADDED", &pod(i)));
            return Reply::stream(200, lines);
        }
        if !req.is_list() {
            return Reply::stream(200, stream::pending());
        }
        let head = Bytes::from_static(
            br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":["#,
        );
        let items = stream::iter(0..).map(|i: usize| {
            let mut item = pod(i).to_string();
            item.push(',');
            Bytes::from(item)
        });
        Reply::stream(200, stream::iter([head]).chain(items))
    })
    .await
    .expect("the server starts");
    let client = Client::new(Config::new(server.url().parse().expect("a URL"))).expect("a client");
    let pods = ApiResource::new("", "v1", "pods", true);
    if form == "compact" {
        let lw = HttpListerWatcher::<Compact<Pod>>::builder(client, pods)
            .kind("Pod")
            .codec(CompactCodec::new())
            .build();
        run::<Compact<Pod>>(Arc::new(lw), give_up_mib).await;
    } else {
        let lw = HttpListerWatcher::<Pod>::builder(client, pods)
            .kind("Pod")
            .build();
        run::<Pod>(Arc::new(lw), give_up_mib).await;
    }
}
