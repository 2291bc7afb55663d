//! The clients under test, kcache's informer over client-http (its own HTTP client, or kube-rs's
//! `Client` through `KubeListerWatcher`) and kube-rs's watcher + store, and the table's rows:
//! which client, in which list mode, with which options.
//!
//! A client is started and synced by [`start`]; [`timed`] (in a plain process) measures its
//! sync time and CPU, resident memory and watch throughput and CPU in the table's scenario,
//! [`counted`] (in the counting process) the heap bytes it keeps once synced.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kcache_client_http::{Client, Config, HttpListerWatcher, KubeListerWatcher};
use kcache_informer::{HandlerFuncs, RunMode, SharedIndexInformer};
use kcache_reflector::{ListerWatcher, ShardField, ShardSelector, ShardedListerWatcher};
use kcache_store::{Compact as CompactObject, CompactCodec, Object, PartialObjectMetadata};
use tokio_util::sync::CancellationToken;

use crate::procfs;
use crate::setup::Scenario;

type BoxError = Box<dyn std::error::Error>;

/// How a client makes its initial list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListMode {
    /// `GET` of pages of 500 objects, then a watch from the list's resource version.
    Paginated,
    /// One watch with `sendInitialEvents=true`: the objects arrive as events, then a bookmark.
    Streaming,
}

/// What kcache caches: decoded k8s-openapi `Pod`s, `Compact<Pod>`s (metadata decoded, the rest
/// compressed; the handler of the bench does not decode them), or, from a metadata-only
/// lister-watcher (the server sends each pod's metadata alone), `PartialObjectMetadata`s or
/// their compact form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Typed,
    /// Typed `Pod`s from a lister-watcher that asks for protobuf (`.protobuf()`).
    TypedProtobuf,
    Compact,
    /// `Compact<Pod>`s from a lister-watcher that asks for protobuf: kept compact in protobuf.
    CompactProtobuf,
    Metadata,
    /// `PartialObjectMetadata`s from a metadata-only lister-watcher that asks for protobuf.
    MetadataProtobuf,
    MetadataCompact,
}

/// Which HTTP client kcache's informer lists and watches through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// client-http's own client (hyper, `HttpListerWatcher`).
    Http,
    /// The same with `Config::connections_on_client_runtime`: connections opened and driven on
    /// the client process's multi-threaded runtime, not on the informer's own thread.
    HttpHome,
    /// kube-rs's `Client` as the transport, client-http's decoders (`KubeListerWatcher`).
    Kube,
}

/// Which client, and how it runs: on a task of the client process's multi-threaded runtime, or
/// on a thread of its own with a single-threaded runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// kcache's informer over client-http; `lean`: managedFields dropped and exact vector
    /// capacities (client-http's defaults; off is how kcache decoded before); `inline`:
    /// `RunMode::CallersTask` (on a task of the client's multi-threaded runtime) instead of the
    /// default `RunMode::Auto` (which there takes a thread of its own); `backend`: whose HTTP
    /// client.
    Kcache {
        form: Form,
        list: ListMode,
        lean: bool,
        inline: bool,
        backend: Backend,
    },
    /// kube-runtime's watcher + reflector store; `own_thread`: polled on a thread of its own.
    KubeRs { list: ListMode, own_thread: bool },
    /// kube-runtime's `metadata_watcher` + reflector store of `PartialObjectMeta<Pod>`.
    KubeRsMetadata { list: ListMode },
    /// kcache's informer with its defaults (typed pods, streaming list) caching one of `shards`
    /// equal shards by uid: the lister-watcher asks the server for `shard` alone
    /// (`shardSelector`), as one replica of `shards` does with `ShardedCaches`.
    KcacheShard { shard: u32, shards: u32 },
}

impl Which {
    /// `(shard, shards)` of a row caching one shard.
    pub fn shard(&self) -> Option<(u32, u32)> {
        match *self {
            Self::KcacheShard { shard, shards } => Some((shard, shards)),
            _ => None,
        }
    }
}

/// One row of the table: its `--only` key, its label and the client it runs.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub key: &'static str,
    pub label: &'static str,
    pub which: Which,
}

use Form::{
    Compact, CompactProtobuf, Metadata, MetadataCompact, MetadataProtobuf, Typed, TypedProtobuf,
};
use ListMode::{Paginated, Streaming};

const fn kube(list: ListMode, own_thread: bool) -> Which {
    Which::KubeRs { list, own_thread }
}

const fn kcache(form: Form, list: ListMode, lean: bool, inline: bool) -> Which {
    Which::Kcache {
        form,
        list,
        lean,
        inline,
        backend: Backend::Http,
    }
}

/// kcache's typed informer with its defaults, its connections on the client's runtime.
const fn kcache_home(list: ListMode) -> Which {
    Which::Kcache {
        form: Typed,
        list,
        lean: true,
        inline: false,
        backend: Backend::HttpHome,
    }
}

/// kcache's informer with its defaults over kube-rs's `Client`.
const fn kcache_on_kube(form: Form, list: ListMode) -> Which {
    Which::Kcache {
        form,
        list,
        lean: true,
        inline: false,
        backend: Backend::Kube,
    }
}

const fn row(key: &'static str, label: &'static str, which: Which) -> Row {
    Row { key, label, which }
}

/// Every row, in the table's order; the first is the one the ratios are taken against. One line
/// adds a row.
///
/// Every row over kube-rs's `Client` (`kube-rs*`, `kcache-kube*`, `compact-kube`) builds it from
/// the same [`kube_config`]: kube-rs's default, retry layer on, as kube-rs users run it. So the
/// kcache-over-kube rows differ from the kube-rs rows in what runs on the client only, and
/// `kcache-kube-paged` is the like-for-like row of kube-rs's default paginated mode.
#[rustfmt::skip]
pub const ROWS: &[Row] = &[
    row("kube-rs", "kube-rs, paginated (its default)", kube(Paginated, false)),
    row("kube-rs-stream", "kube-rs, streaming list", kube(Streaming, false)),
    row("kube-rs-thread", "kube-rs, paginated, own thread", kube(Paginated, true)),
    row("kube-rs-stream-thread", "kube-rs, streaming, own thread", kube(Streaming, true)),
    row("kcache", "kcache Pod, defaults (streaming, run)", kcache(Typed, Streaming, true, false)),
    row("kcache-paged", "kcache Pod, paginated", kcache(Typed, Paginated, true, false)),
    row("kcache-home", "kcache Pod, connections on the client's runtime (streaming, run)", kcache_home(Streaming)),
    row("kcache-paged-home", "kcache Pod, paginated, connections on the client's runtime", kcache_home(Paginated)),
    row("kcache-inline", "kcache Pod, on the caller's task", kcache(Typed, Streaming, true, true)),
    row("kcache-full", "kcache Pod, managedFields kept, grown capacities", kcache(Typed, Streaming, false, false)),
    row("compact", "kcache Compact<Pod> (streaming, run)", kcache(Compact, Streaming, true, false)),
    row("compact-paged", "kcache Compact<Pod>, paginated", kcache(Compact, Paginated, true, false)),
    row("compact-inline", "kcache Compact<Pod>, on the caller's task", kcache(Compact, Streaming, true, true)),
    row("kcache-kube", "kcache Pod over kube-rs's Client, same Config (streaming, run)", kcache_on_kube(Typed, Streaming)),
    row("kcache-kube-paged", "kcache Pod over kube-rs's Client, same Config, paginated", kcache_on_kube(Typed, Paginated)),
    row("compact-kube", "kcache Compact<Pod> over kube-rs's Client, same Config", kcache_on_kube(Compact, Streaming)),
    row("kube-rs-metadata", "kube-rs metadata_watcher, paginated", Which::KubeRsMetadata { list: Paginated }),
    row("metadata", "kcache PartialObjectMetadata (metadata only, streaming, run)", kcache(Metadata, Streaming, true, false)),
    row("metadata-paged", "kcache PartialObjectMetadata, paginated", kcache(Metadata, Paginated, true, false)),
    row("metadata-protobuf", "kcache PartialObjectMetadata over protobuf (streaming, run)", kcache(MetadataProtobuf, Streaming, true, false)),
    row("metadata-compact", "kcache Compact<PartialObjectMetadata> (metadata only, streaming, run)", kcache(MetadataCompact, Streaming, true, false)),
    row("protobuf", "kcache Pod over protobuf (streaming, run)", kcache(TypedProtobuf, Streaming, true, false)),
    row("compact-protobuf", "kcache Compact<Pod> over protobuf (streaming, run)", kcache(CompactProtobuf, Streaming, true, false)),
    row("kcache-shard0", "kcache Pod, defaults, replica 1 of 4: uid shard 0 of 4 (shardSelector)", Which::KcacheShard { shard: 0, shards: 4 }),
    row("kcache-shard1", "kcache Pod, defaults, replica 2 of 4: uid shard 1 of 4 (shardSelector)", Which::KcacheShard { shard: 1, shards: 4 }),
    row("kcache-shard2", "kcache Pod, defaults, replica 3 of 4: uid shard 2 of 4 (shardSelector)", Which::KcacheShard { shard: 2, shards: 4 }),
    row("kcache-shard3", "kcache Pod, defaults, replica 4 of 4: uid shard 3 of 4 (shardSelector)", Which::KcacheShard { shard: 3, shards: 4 }),
];

/// The rows run when `--only` is not given: kube-rs's two list modes, kcache's typed and compact
/// caches in both of theirs, and kcache over kube-rs's `Client` in kube-rs's default mode.
pub const DEFAULT_ROWS: &[&str] = &[
    "kube-rs",
    "kube-rs-stream",
    "kcache",
    "kcache-paged",
    "compact",
    "compact-paged",
    "kcache-kube-paged",
];

/// The row named `key`.
pub fn row_of(key: &str) -> Result<&'static Row, BoxError> {
    ROWS.iter()
        .find(|r| r.key == key)
        .ok_or_else(|| format!("unknown row {key:?}; try --help").into())
}

/// Runs `fut` on a new thread with a single-threaded runtime; the handle ends with it.
fn on_own_thread(
    fut: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<tokio::task::JoinHandle<()>, BoxError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("bench-client".into())
        .spawn(move || {
            runtime.block_on(fut);
            let _ = tx.send(());
        })?;
    Ok(tokio::spawn(async move {
        let _ = rx.await;
    }))
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

/// Where a client finds the server: its URL, and over HTTPS the kubeconfig the server wrote
/// (its URL and CA; every client builds its config from it).
#[derive(Debug, Clone)]
pub struct Target {
    pub url: String,
    pub kubeconfig: Option<PathBuf>,
}

impl Target {
    /// kcache's client config: `Config::new(url)`, or the kubeconfig's over HTTPS.
    pub fn kcache_config(&self) -> Result<Config, BoxError> {
        Ok(match &self.kubeconfig {
            Some(path) => Config::from_kubeconfig_path(path)?,
            None => Config::new(self.url.parse()?),
        })
    }

    /// [`kcache_config`](Self::kcache_config) for `backend`'s rows.
    pub fn kcache_config_for(&self, backend: Backend) -> Result<Config, BoxError> {
        let mut config = self.kcache_config()?;
        config.connections_on_client_runtime = backend == Backend::HttpHome;
        Ok(config)
    }
}

/// A synced client: how many objects it caches, how many updates it has seen, and how to stop it.
pub struct Running {
    cached: Box<dyn Fn() -> usize + Send + Sync>,
    pub seen: Arc<AtomicUsize>,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// A running client: `cached` counts its objects, `seen` what its handler saw, `cancel`
    /// stops `task`.
    pub fn new(
        cached: Box<dyn Fn() -> usize + Send + Sync>,
        seen: Arc<AtomicUsize>,
        cancel: CancellationToken,
        task: tokio::task::JoinHandle<()>,
    ) -> Self {
        Self {
            cached,
            seen,
            cancel,
            task,
        }
    }

    /// Objects in the client's cache.
    pub fn cached(&self) -> usize {
        (self.cached)()
    }

    /// Stops the client and waits for it.
    pub async fn stop(self) -> Result<(), BoxError> {
        self.cancel.cancel();
        self.task.await?;
        Ok(())
    }
}

/// Starts `which` against the server at `target` and returns once its initial list is cached.
pub async fn start(which: Which, target: &Target) -> Result<Running, BoxError> {
    let seen = Arc::new(AtomicUsize::new(0));
    let cancel = CancellationToken::new();
    match which {
        Which::Kcache {
            form,
            list,
            lean,
            inline,
            backend,
        } => match form {
            Typed | TypedProtobuf => {
                let lw: Arc<dyn ListerWatcher<Pod>> = match backend {
                    Backend::Http | Backend::HttpHome => {
                        let builder = HttpListerWatcher::<Pod>::typed(Client::new(
                            target.kcache_config_for(backend)?,
                        )?)
                        .all_namespaces()
                        .skip_managed_fields(lean)
                        .exact_capacities(lean);
                        let builder = if form == TypedProtobuf {
                            builder.protobuf()
                        } else {
                            builder
                        };
                        Arc::new(builder.build())
                    }
                    Backend::Kube => Arc::new(
                        KubeListerWatcher::<Pod>::builder(kube_pods(target).await?)
                            .skip_managed_fields(lean)
                            .exact_capacities(lean)
                            .build(),
                    ),
                };
                start_kcache(lw, list, inline, seen, cancel).await
            }
            Compact | CompactProtobuf => {
                let codec = CompactCodec::new().keep_managed_fields(!lean);
                let lw: Arc<dyn ListerWatcher<CompactObject<Pod>>> = match backend {
                    Backend::Http | Backend::HttpHome => {
                        let builder = HttpListerWatcher::<CompactObject<Pod>>::compact_typed(
                            Client::new(target.kcache_config_for(backend)?)?,
                        )
                        .all_namespaces()
                        .codec(codec);
                        let builder = if form == CompactProtobuf {
                            builder.protobuf()
                        } else {
                            builder
                        };
                        Arc::new(builder.build())
                    }
                    Backend::Kube => Arc::new(
                        KubeListerWatcher::<CompactObject<Pod>>::compact(kube_pods(target).await?)
                            .codec(codec)
                            .build(),
                    ),
                };
                start_kcache(lw, list, inline, seen, cancel).await
            }
            Metadata | MetadataProtobuf => {
                let lw: Arc<dyn ListerWatcher<PartialObjectMetadata>> = match backend {
                    Backend::Http | Backend::HttpHome => {
                        let builder =
                            HttpListerWatcher::<PartialObjectMetadata>::metadata_of::<Pod>(
                                Client::new(target.kcache_config_for(backend)?)?,
                            )
                            .all_namespaces();
                        let builder = if form == MetadataProtobuf {
                            builder.protobuf()
                        } else {
                            builder
                        };
                        Arc::new(builder.build())
                    }
                    Backend::Kube => Arc::new(
                        KubeListerWatcher::<PartialObjectMetadata>::metadata(
                            kube_pods(target).await?,
                        )
                        .build(),
                    ),
                };
                start_kcache(lw, list, inline, seen, cancel).await
            }
            MetadataCompact => {
                let lw: Arc<dyn ListerWatcher<CompactObject<PartialObjectMetadata>>> = match backend
                {
                    Backend::Http | Backend::HttpHome => Arc::new(
                        HttpListerWatcher::<CompactObject<PartialObjectMetadata>>::compact(
                            Client::new(target.kcache_config_for(backend)?)?,
                            kcache_client_http::ApiResource::new("", "v1", "pods", true),
                        )
                        .kind("Pod")
                        .metadata_only()
                        .all_namespaces()
                        .build(),
                    ),
                    Backend::Kube => Arc::new(
                        KubeListerWatcher::<CompactObject<PartialObjectMetadata>>::compact(
                            kube_pods(target).await?,
                        )
                        .metadata_only()
                        .build(),
                    ),
                };
                start_kcache(lw, list, inline, seen, cancel).await
            }
        },
        Which::KcacheShard { shard, shards } => {
            let lw = HttpListerWatcher::<Pod>::typed(Client::new(target.kcache_config()?)?)
                .all_namespaces()
                .build();
            let selector = ShardSelector::shard(ShardField::Uid, shard, shards);
            let lw: Arc<dyn ListerWatcher<Pod>> = Arc::new(ShardedListerWatcher::new(lw, selector));
            start_kcache(lw, Streaming, false, seen, cancel).await
        }
        Which::KubeRsMetadata { list } => {
            // An `Api` of `PartialObjectMeta<Pod>` makes kube-rs ask for metadata only.
            let api = kube::Api::<kube::core::PartialObjectMeta<Pod>>::all(kube::Client::try_from(
                kube_config(target).await?,
            )?);
            let (reader, writer) = kube::runtime::reflector::store();
            let config = match list {
                Paginated => kube::runtime::watcher::Config::default(),
                Streaming => kube::runtime::watcher::Config::default().streaming_lists(),
            };
            let stream = kube::runtime::reflector(writer, kube::runtime::watcher(api, config));
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
            Ok(Running {
                cached: Box::new(move || reader.state().len()),
                seen,
                cancel,
                task,
            })
        }
        Which::KubeRs { list, own_thread } => {
            let api = kube_pods(target).await?;
            let (reader, writer) = kube::runtime::reflector::store();
            let config = match list {
                Paginated => kube::runtime::watcher::Config::default(),
                Streaming => kube::runtime::watcher::Config::default().streaming_lists(),
            };
            let stream = kube::runtime::reflector(writer, kube::runtime::watcher(api, config));
            let count = Arc::clone(&seen);
            let stop = cancel.clone();
            let consume = async move {
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
            };
            let task = if own_thread {
                on_own_thread(consume)?
            } else {
                tokio::spawn(consume)
            };
            reader.wait_until_ready().await?;
            Ok(Running {
                cached: Box::new(move || reader.state().len()),
                seen,
                cancel,
                task,
            })
        }
    }
}

/// The `kube::Config` of every row over kube-rs's `Client`, kube-rs's own and kcache's over it
/// alike: kube-rs's default for the server at `target` (`default_retry` on: its retry layer
/// runs, though the bench's server, never answering 429, 503 or 504, gives it nothing to
/// retry), from its URL, or over HTTPS from the server's kubeconfig (as kcache's own client's
/// config then is). One config for both, so that no row pays for a layer the other goes
/// without.
pub async fn kube_config(target: &Target) -> Result<kube::Config, BoxError> {
    Ok(match &target.kubeconfig {
        Some(path) => {
            let text = std::fs::read_to_string(path)?;
            kube::Config::from_custom_kubeconfig(
                kube::config::Kubeconfig::from_yaml(&text)?,
                &kube::config::KubeConfigOptions::default(),
            )
            .await?
        }
        None => kube::Config::new(target.url.parse()?),
    })
}

/// kube-rs's `Api` of pods in every namespace of the server at `target`, over a client of
/// [`kube_config`].
async fn kube_pods(target: &Target) -> Result<kube::Api<Pod>, BoxError> {
    Ok(kube::Api::all(kube::Client::try_from(
        kube_config(target).await?,
    )?))
}

/// Waits (at most 10 minutes) until `informer` has synced; `what` names it in the error.
pub async fn wait_synced<T: Object>(
    informer: &SharedIndexInformer<T>,
    what: &str,
) -> Result<(), BoxError> {
    // As kube-rs's `wait_until_ready`: woken by the informer, not polled.
    match tokio::time::timeout(Duration::from_secs(600), informer.synced()).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!("{what} stopped before it synced").into()),
        Err(_) => Err(format!("timed out waiting for {what} to sync").into()),
    }
}

/// Starts kcache's informer over `lw` and returns once it has synced.
pub async fn start_kcache<T: Object + serde::de::DeserializeOwned>(
    lw: Arc<dyn ListerWatcher<T>>,
    list: ListMode,
    inline: bool,
    seen: Arc<AtomicUsize>,
    cancel: CancellationToken,
) -> Result<Running, BoxError> {
    let mode = if inline {
        RunMode::CallersTask
    } else {
        RunMode::Auto
    };
    let informer = SharedIndexInformer::builder(lw)
        .run_mode(mode)
        .reflector_options(move |b| b.use_watch_list(list == Streaming))
        .build();
    let count = Arc::clone(&seen);
    informer.add_event_handler(
        HandlerFuncs::new().on_updated(move |_: &Arc<T>, _: &Arc<T>| {
            count.fetch_add(1, Ordering::Relaxed);
        }),
    )?;
    let runner = informer.clone();
    let stop = cancel.clone();
    let task = tokio::spawn(async move {
        if let Err(e) = runner.run(stop).await {
            eprintln!("kcache informer: {e}");
        }
    });
    wait_synced(&informer, "the kcache informer").await?;
    Ok(Running {
        cached: Box::new(move || informer.indexer().len()),
        seen,
        cancel,
        task,
    })
}

/// What one timed run measured, in a plain process.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timed {
    /// Start to synced.
    pub sync: Duration,
    /// `VmHWM` at sync less `VmRSS` before the client started.
    pub sync_peak_rss: usize,
    /// `VmRSS` less `VmRSS` before the start: quiet, once synced and idle (right before the
    /// burst); backlog, once caught up.
    pub steady_rss: usize,
    /// `VmRSS` before the client started: the process and its runtime.
    pub baseline_rss: usize,
    pub cached: usize,
    /// Quiet: updates / the burst's time (release to the last one seen); backlog: updates /
    /// (caught up less sync).
    pub events_per_sec: f64,
    /// The client process's CPU during the sync (user, system).
    pub user: Duration,
    pub system: Duration,
    /// The client process's CPU (user + system): quiet, during the burst; backlog, from the
    /// start until caught up (the sync's included).
    pub events_cpu: Duration,
    /// Backlog: start to the last update seen (zero in the quiet scenario).
    pub caught_up: Duration,
    /// Bytes received on the loopback interface during the sync: the list or streaming list as
    /// it came off the wire (over HTTPS, its TLS records).
    pub sync_read_bytes: u64,
}

/// Starts `row`'s client against `target` and waits for its sync: the running client, the sync's
/// wall time and this process's CPU during it, both from `start` and `cpu`. Fails unless it cached
/// all `pods`.
async fn synced(
    row: &Row,
    target: &Target,
    pods: usize,
    (start_clock, start_cpu): (Instant, procfs::Cpu),
) -> Result<(Running, Duration, procfs::Cpu), BoxError> {
    let running = start(row.which, target).await?;
    let sync = start_clock.elapsed();
    let cpu = procfs::Cpu::now()?.since(start_cpu);
    let n = running.cached();
    if n != pods {
        return Err(format!("{}: cached {n} pods, expected {pods}", row.label).into());
    }
    Ok((running, sync, cpu))
}

/// This process's clock and CPU now: where a client's figures count from.
fn now() -> Result<(Instant, procfs::Cpu), BoxError> {
    let cpu = procfs::Cpu::now()?;
    Ok((Instant::now(), cpu))
}

/// Waits until `seen` reaches `want`, for at most a generous limit for `updates` events (the
/// slowest client here takes about 10 s for 100,000).
async fn wait_for_updates(
    row: &Row,
    seen: &AtomicUsize,
    want: usize,
    updates: usize,
) -> Result<(), BoxError> {
    let limit = Duration::from_secs(60 + (updates / 1000) as u64);
    if let Err(e) = wait_for("watch events", limit, || {
        seen.load(Ordering::Relaxed) >= want
    })
    .await
    {
        let got = updates.saturating_sub(want.saturating_sub(seen.load(Ordering::Relaxed)));
        return Err(format!("{}: {e}: {got} of {updates} arrived", row.label).into());
    }
    Ok(())
}

/// Runs `row` in this (plain) process: initial sync of every pod, then `updates` watch events,
/// as `scenario` has them come: quiet, in a burst the parent releases after the sync; backlog,
/// queued behind the initial state, timed until the last is seen.
pub async fn timed(
    row: &Row,
    target: &Target,
    pods: usize,
    updates: usize,
    scenario: Scenario,
    parent: &mut Parent,
) -> Result<Timed, BoxError> {
    let baseline_rss = procfs::rss()?;
    procfs::reset_peak_rss()?;
    let read_before = procfs::loopback_bytes()?;
    let (start_clock, start_cpu) = now()?;
    let (running, sync, cpu) = synced(row, target, pods, (start_clock, start_cpu)).await?;
    let sync_read_bytes = procfs::loopback_bytes()?.saturating_sub(read_before);
    let sync_peak_rss = procfs::peak_rss()?.saturating_sub(baseline_rss);
    eprintln!(
        "  client: synced in {:.2} s (user {:.2} s, system {:.2} s, {} minor faults)",
        sync.as_secs_f64(),
        cpu.user.as_secs_f64(),
        cpu.system.as_secs_f64(),
        cpu.minor_faults
    );
    let seen = Arc::clone(&running.seen);
    // What both scenarios know at the sync; each adds what came after it.
    let at_sync = Timed {
        sync,
        sync_peak_rss,
        baseline_rss,
        cached: pods,
        user: cpu.user,
        system: cpu.system,
        sync_read_bytes,
        ..Timed::default()
    };
    let timed = match scenario {
        Scenario::Quiet => {
            // The parent has the server write the updates while its watches are paused, then
            // releases them once this side's clock runs.
            parent.synced().await?;
            let steady_rss = procfs::rss()?.saturating_sub(baseline_rss);
            let before = seen.load(Ordering::Relaxed);
            let (burst, burst_cpu) = now()?;
            parent.started().await?;
            wait_for_updates(row, &seen, before + updates, updates).await?;
            let elapsed = burst.elapsed().as_secs_f64();
            let events_cpu = procfs::Cpu::now()?.since(burst_cpu);
            eprintln!(
                "  client: {updates} watch events taken in {elapsed:.2} s (user {:.2} s, system {:.2} s)",
                events_cpu.user.as_secs_f64(),
                events_cpu.system.as_secs_f64()
            );
            Timed {
                steady_rss,
                events_per_sec: updates as f64 / elapsed,
                events_cpu: events_cpu.user + events_cpu.system,
                ..at_sync
            }
        }
        Scenario::Backlog => {
            // The updates are already coming: the parent is told, nothing is waited for.
            parent.say("synced").await?;
            wait_for_updates(row, &seen, updates, updates).await?;
            let caught_up = start_clock.elapsed();
            let total_cpu = procfs::Cpu::now()?.since(start_cpu);
            let steady_rss = procfs::rss()?.saturating_sub(baseline_rss);
            let after_sync = caught_up.saturating_sub(sync).as_secs_f64();
            eprintln!(
                "  client: caught up with {updates} queued updates {:.2} s after its start, {after_sync:.2} s after its sync (user {:.2} s, system {:.2} s from the start)",
                caught_up.as_secs_f64(),
                total_cpu.user.as_secs_f64(),
                total_cpu.system.as_secs_f64()
            );
            Timed {
                steady_rss,
                events_per_sec: updates as f64 / after_sync.max(1e-6),
                events_cpu: total_cpu.user + total_cpu.system,
                caught_up,
                ..at_sync
            }
        }
    };
    running.stop().await?;
    Ok(timed)
}

/// What the counting run measured: heap bytes the client holds once synced, and at its peak.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counted {
    pub live: usize,
    pub peak: usize,
    pub cached: usize,
}

/// Runs `row` to its sync in the counting process (`kcache-bench-counted`) and returns the heap
/// bytes it holds.
pub async fn counted(row: &Row, target: &Target, pods: usize) -> Result<Counted, BoxError> {
    use crate::alloc;
    let (baseline, blocks) = (alloc::current(), alloc::blocks());
    alloc::reset_peak();
    let (running, sync, cpu) = synced(row, target, pods, now()?).await?;
    let live = usize::try_from(alloc::current() - baseline).unwrap_or(0);
    let peak = usize::try_from(alloc::peak() - baseline).unwrap_or(0);
    let blocks = alloc::blocks() - blocks;
    eprintln!(
        "  counting run: synced in {:.2} s (user {:.2} s, system {:.2} s), {:.1} KB per object, \
         {:.1} allocations per object",
        sync.as_secs_f64(),
        cpu.user.as_secs_f64(),
        cpu.system.as_secs_f64(),
        live as f64 / pods as f64 / 1e3,
        blocks as f64 / pods as f64
    );
    running.stop().await?;
    Ok(Counted {
        live,
        peak,
        cached: pods,
    })
}

/// The child's side of the parent's protocol: `synced` (quiet: then wait for `go`; backlog: go
/// on), `started` (quiet), and the figures as the last line.
pub struct Parent {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::io::Stdin>>,
}

impl Parent {
    pub fn new() -> Self {
        use tokio::io::AsyncBufReadExt;
        Self {
            lines: tokio::io::BufReader::new(tokio::io::stdin()).lines(),
        }
    }

    /// Writes one line to the parent.
    pub async fn say(&mut self, line: &str) -> Result<(), BoxError> {
        use tokio::io::AsyncWriteExt;
        let mut out = tokio::io::stdout();
        out.write_all(format!("{line}\n").as_bytes()).await?;
        out.flush().await?;
        Ok(())
    }

    /// Synced: waits until the parent has the updates ready.
    async fn synced(&mut self) -> Result<(), BoxError> {
        self.say("synced").await?;
        match self.lines.next_line().await?.as_deref() {
            Some("go") => Ok(()),
            other => Err(format!("expected go, got {other:?}").into()),
        }
    }

    /// The clock runs: the parent may release the updates.
    async fn started(&mut self) -> Result<(), BoxError> {
        self.say("started").await
    }
}

impl Default for Parent {
    fn default() -> Self {
        Self::new()
    }
}

impl Timed {
    /// The `done ...` line a timed child ends with.
    pub fn to_line(&self) -> String {
        format!(
            "done {} {} {} {} {} {} {} {} {} {} {}",
            self.sync.as_secs_f64(),
            self.sync_peak_rss,
            self.steady_rss,
            self.baseline_rss,
            self.cached,
            self.events_per_sec,
            self.user.as_secs_f64(),
            self.system.as_secs_f64(),
            self.events_cpu.as_secs_f64(),
            self.caught_up.as_secs_f64(),
            self.sync_read_bytes
        )
    }

    /// Parses a timed child's `done ...` line.
    pub fn parse(line: &str) -> Result<Self, BoxError> {
        let f = crate::child::fields(line, "done ", 11)?;
        Ok(Self {
            sync: Duration::from_secs_f64(f[0].parse()?),
            sync_peak_rss: f[1].parse()?,
            steady_rss: f[2].parse()?,
            baseline_rss: f[3].parse()?,
            cached: f[4].parse()?,
            events_per_sec: f[5].parse()?,
            user: Duration::from_secs_f64(f[6].parse()?),
            system: Duration::from_secs_f64(f[7].parse()?),
            events_cpu: Duration::from_secs_f64(f[8].parse()?),
            caught_up: Duration::from_secs_f64(f[9].parse()?),
            sync_read_bytes: f[10].parse()?,
        })
    }
}

impl Counted {
    /// The `counted ...` line a counting child ends with.
    pub fn to_line(&self) -> String {
        format!("counted {} {} {}", self.live, self.peak, self.cached)
    }

    /// Parses a counting child's `counted ...` line.
    pub fn parse(line: &str) -> Result<Self, BoxError> {
        let f = crate::child::fields(line, "counted ", 3)?;
        Ok(Self {
            live: f[0].parse()?,
            peak: f[1].parse()?,
            cached: f[2].parse()?,
        })
    }
}
