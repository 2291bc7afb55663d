//! The soak's fake API server (`kcache-bench soak-serve`), in a child process: a steady number
//! of pods of mixed shapes, changed at a fixed rate for as long as the parent asks.
//!
//! Nine operations in ten update a pod (a new status and annotation, as a kubelet or a
//! controller writes, made from the pod as it was created so that pods do not grow over time),
//! and one in ten replaces one: a delete of a random pod and the create of a new one, two
//! changes (of all changes, about 82% updates, 9% deletes and 9% creates). The number of pods is the same after every replacement, so a client's cache should
//! stay the same size for the whole run while every one of its objects is freed and made again.
//! A share of the pods (`--heavy-percent`, default 20) is of the heavy shape, the rest light.

use std::time::{Duration, Instant};

use kcache_store::DynamicObject;
use kcache_testing::workload::{PodGenerator, PodShape};
use kcache_testing_server::FakeApiServer;
use kcache_testing_server::fake_api_server::ServedResource;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::server::{NAMESPACES, announce};
use crate::setup::Transport;

type BoxError = Box<dyn std::error::Error>;

/// What the soak's server is asked to keep up.
#[derive(Debug, Clone, Copy)]
pub struct Churn {
    /// Pods at all times.
    pub pods: usize,
    /// Changes per second.
    pub rate: u32,
    /// Percentage of pods (at the start and among the ones created later) of the heavy shape.
    pub heavy_percent: u32,
    pub seed: u64,
}

/// The pods of the run and how new ones and their updates are made.
struct Pods {
    /// Every pod now on the server, as it was created.
    live: Vec<DynamicObject>,
    light: PodGenerator,
    heavy: PodGenerator,
    mutator: PodGenerator,
    rng: fastrand::Rng,
    heavy_percent: u32,
}

impl Pods {
    fn new(churn: Churn) -> Self {
        Self {
            live: Vec::with_capacity(churn.pods),
            light: PodGenerator::with_shape(churn.seed, NAMESPACES, PodShape::Light),
            heavy: PodGenerator::with_shape(churn.seed ^ 0x4ea7, NAMESPACES, PodShape::Heavy),
            mutator: PodGenerator::with_shape(churn.seed ^ 0x5eed, NAMESPACES, PodShape::Light),
            rng: fastrand::Rng::with_seed(churn.seed ^ 0x50a6),
            heavy_percent: churn.heavy_percent.min(100),
        }
    }

    /// Creates one new pod of a shape drawn by the heavy share.
    fn add(&mut self, server: &FakeApiServer, resource: &ServedResource) -> Result<(), BoxError> {
        let pod = if self.rng.u32(0..100) < self.heavy_percent {
            self.heavy.next_pod()
        } else {
            self.light.next_pod()
        };
        server.create(resource, pod.clone())?;
        self.live.push(pod);
        Ok(())
    }

    /// One change: an update, or (one in ten) the delete of a pod; the caller follows a delete
    /// with an add. Returns whether it deleted.
    fn change(
        &mut self,
        server: &FakeApiServer,
        resource: &ServedResource,
    ) -> Result<bool, BoxError> {
        if self.live.is_empty() {
            return Err("the soak needs at least one pod".into());
        }
        let i = self.rng.usize(0..self.live.len());
        if self.rng.u32(0..10) == 0 {
            let gone = self.live.swap_remove(i);
            let name = gone.metadata.name.as_deref().unwrap_or_default();
            server.delete(resource, gone.metadata.namespace.as_deref(), name)?;
            Ok(true)
        } else {
            let changed = self.mutator.mutate(&self.live[i]);
            server.update(resource, changed)?;
            Ok(false)
        }
    }
}

/// `soak-serve` mode: creates the pods, prints `url URL` and `kubeconfig PATH`, then obeys
/// `churn` (start the changes; answered with `churning`), `stop` (stop them; answered with
/// `stopped <changes> <seconds> <pods>`), `rss` (answered with `rss <bytes>`) and `quit`.
pub async fn serve(churn: Churn, transport: Transport) -> Result<(), BoxError> {
    let rate = usize::try_from(churn.rate).unwrap_or(usize::MAX);
    let server = FakeApiServer::builder()
        // Three seconds of changes to resume a watch from; a client further behind relists.
        // The server keeps each event's object and encoding, so a longer history would take
        // gigabytes at 1,000 changes/s.
        .history_limit(rate.saturating_mul(3).max(1000))
        // A minute of changes queued for a slow watcher before it is cut off.
        .watcher_buffer(rate.saturating_mul(60).max(churn.pods) + 1000)
        .tls(transport.tls())
        .http2(transport != Transport::HttpsH1)
        .seed(churn.seed)
        .start()
        .await?;
    let resource = ServedResource::pods();
    let mut pods = Pods::new(churn);
    for _ in 0..churn.pods {
        pods.add(&server, &resource)?;
    }
    let kubeconfig = announce(&server, transport.tls()).await?;
    let mut out = tokio::io::stdout();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut running: Option<(
        CancellationToken,
        tokio::task::JoinHandle<Result<ChurnEnd, String>>,
    )> = None;
    let server = std::sync::Arc::new(server);
    let mut pods = Some(pods);
    while let Some(line) = lines.next_line().await? {
        let reply = match line.trim() {
            "churn" => {
                let stop = CancellationToken::new();
                let p = pods.take().ok_or("the churn ran already")?;
                let task = tokio::spawn(run_churn(
                    std::sync::Arc::clone(&server),
                    resource.clone(),
                    p,
                    churn.rate,
                    stop.clone(),
                ));
                running = Some((stop, task));
                "churning".to_owned()
            }
            "stop" => {
                let (stop, task) = running.take().ok_or("the churn is not running")?;
                stop.cancel();
                let end = task.await??;
                format!(
                    "stopped {} {} {}",
                    end.changes,
                    end.elapsed.as_secs_f64(),
                    server.list(&resource).len()
                )
            }
            "rss" => format!("rss {}", crate::procfs::rss()?),
            "quit" | "" => break,
            other => return Err(format!("unknown command {other:?}").into()),
        };
        out.write_all(format!("{reply}\n").as_bytes()).await?;
        out.flush().await?;
    }
    if let Some((stop, task)) = running {
        stop.cancel();
        let _ = task.await;
    }
    drop(kubeconfig);
    Ok(())
}

/// What a churn did: changes made, over how long.
struct ChurnEnd {
    changes: u64,
    elapsed: Duration,
}

/// Makes `rate` changes per second until `stop` fires, catching up after a late tick (at most
/// a tenth of a second's changes at once).
async fn run_churn(
    server: std::sync::Arc<FakeApiServer>,
    resource: ServedResource,
    mut pods: Pods,
    rate: u32,
    stop: CancellationToken,
) -> Result<ChurnEnd, String> {
    let start = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut changes: u64 = 0;
    let burst = u64::from(rate / 10).max(1);
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            _ = tick.tick() => {
                let due = (start.elapsed().as_secs_f64() * f64::from(rate)) as u64;
                let mut now = 0;
                while changes < due && now < burst {
                    let deleted = pods.change(&server, &resource).map_err(|e| e.to_string())?;
                    changes += 1;
                    if deleted {
                        pods.add(&server, &resource).map_err(|e| e.to_string())?;
                        changes += 1;
                    }
                    now += 1;
                }
            }
        }
    }
    Ok(ChurnEnd {
        changes,
        elapsed: start.elapsed(),
    })
}
