//! The clients under test: kcache's informer over client-http, and kube-rs's watcher + store.
//! Each is started against the server, timed to its initial sync, then fed updates.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kcache_client_http::{Client, Config, HttpListerWatcher};
use kcache_informer::{HandlerFuncs, SharedIndexInformer};
use tokio_util::sync::CancellationToken;

use crate::alloc;
use crate::server::Server;

type BoxError = Box<dyn std::error::Error>;

/// What one client run measured.
#[derive(Debug, Clone, Copy)]
pub struct Figures {
    pub sync: Duration,
    pub sync_peak_bytes: usize,
    pub steady_bytes: usize,
    pub cached: usize,
    pub events_per_sec: f64,
}

/// Which client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// kcache; `two_tasks` polls the informer's two halves on two tasks (`run_parts`).
    Kcache {
        skip_managed_fields: bool,
        two_tasks: bool,
    },
    KubeRs,
}

impl Which {
    /// The row's name for `--only`.
    pub fn key(self) -> &'static str {
        match self {
            Which::KubeRs => "kube-rs",
            Which::Kcache {
                skip_managed_fields: false,
                two_tasks: false,
            } => "kcache",
            Which::Kcache {
                skip_managed_fields: true,
                two_tasks: false,
            } => "skipped",
            Which::Kcache {
                two_tasks: true, ..
            } => "two-tasks",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Which::Kcache {
                skip_managed_fields: false,
                two_tasks: false,
            } => "kcache",
            Which::Kcache {
                skip_managed_fields: true,
                two_tasks: false,
            } => "kcache, managedFields skipped",
            Which::Kcache {
                skip_managed_fields: false,
                two_tasks: true,
            } => "kcache, two tasks",
            Which::Kcache {
                skip_managed_fields: true,
                two_tasks: true,
            } => "kcache, skipped, two tasks",
            Which::KubeRs => "kube-rs",
        }
    }
}

async fn wait_for(what: &str, limit: Duration, cond: impl Fn() -> bool) -> Result<(), BoxError> {
    let deadline = Instant::now() + limit;
    while !cond() {
        if Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}").into());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(())
}

/// Runs one client: initial sync of every pod, then `updates` watch events.
pub async fn run(
    which: Which,
    server: &mut Server,
    pods: usize,
    updates: usize,
) -> Result<Figures, BoxError> {
    alloc::set_counting(true);
    let baseline = alloc::current();
    alloc::reset_peak();
    let seen = Arc::new(AtomicUsize::new(0));
    let cancel = CancellationToken::new();
    let start = Instant::now();
    let (cached, task): (
        Box<dyn Fn() -> usize + Send + Sync>,
        tokio::task::JoinHandle<()>,
    ) = match which {
        Which::Kcache {
            skip_managed_fields,
            two_tasks,
        } => {
            let client = Client::new(Config::new(server.url.parse()?))?;
            let lw = HttpListerWatcher::<Pod>::typed(client)
                .all_namespaces()
                .skip_managed_fields(skip_managed_fields)
                .build();
            let informer = SharedIndexInformer::new(Arc::new(lw), Duration::ZERO);
            let count = Arc::clone(&seen);
            informer.add_event_handler(HandlerFuncs::new().on_updated(
                move |_: &Arc<Pod>, _: &Arc<Pod>| {
                    count.fetch_add(1, Ordering::Relaxed);
                },
            ))?;
            let task = if two_tasks {
                let (reflect, process) = informer.run_parts(cancel.clone())?;
                let reflect = tokio::spawn(reflect);
                tokio::spawn(async move {
                    process.await;
                    let _ = reflect.await;
                })
            } else {
                let runner = informer.clone();
                let stop = cancel.clone();
                tokio::spawn(async move {
                    let _ = runner.run(stop).await;
                })
            };
            let synced = informer.clone();
            wait_for("kcache sync", Duration::from_secs(600), move || {
                synced.has_synced()
            })
            .await?;
            (Box::new(move || informer.indexer().len()), task)
        }
        Which::KubeRs => {
            let client = kube::Client::try_from(kube::Config::new(server.url.parse()?))?;
            let api: kube::Api<Pod> = kube::Api::all(client);
            let (reader, writer) = kube::runtime::reflector::store();
            let stream = kube::runtime::reflector(
                writer,
                kube::runtime::watcher(api, kube::runtime::watcher::Config::default()),
            );
            let count = Arc::clone(&seen);
            let stop = cancel.clone();
            let task = tokio::spawn(async move {
                let mut stream = std::pin::pin!(stream);
                loop {
                    tokio::select! {
                        () = stop.cancelled() => break,
                        ev = stream.next() => match ev {
                            Some(Ok(kube::runtime::watcher::Event::Apply(_))) => {
                                count.fetch_add(1, Ordering::Relaxed);
                            }
                            Some(_) => {}
                            None => break,
                        },
                    }
                }
            });
            reader.wait_until_ready().await?;
            (Box::new(move || reader.state().len()), task)
        }
    };
    let sync = start.elapsed();
    let sync_peak_bytes = usize::try_from(alloc::peak() - baseline).unwrap_or(0);
    let steady_bytes = usize::try_from(alloc::current() - baseline).unwrap_or(0);
    alloc::set_counting(false);
    let n = cached();
    if n != pods {
        return Err(format!("{}: cached {n} pods, expected {pods}", which.label()).into());
    }

    server.prepare(updates).await?;
    let before = seen.load(Ordering::Relaxed);
    let start = Instant::now();
    server.release().await?;
    wait_for("watch events", Duration::from_secs(900), || {
        seen.load(Ordering::Relaxed) >= before + updates
    })
    .await?;
    let elapsed = start.elapsed().as_secs_f64();
    let events_per_sec = updates as f64 / elapsed;
    eprintln!("  client: {updates} watch events taken in {elapsed:.2} s");
    cancel.cancel();
    task.await?;
    Ok(Figures {
        sync,
        sync_peak_bytes,
        steady_bytes,
        cached: n,
        events_per_sec,
    })
}
