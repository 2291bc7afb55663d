//! The main job: a `SharedIndexInformer` over HTTP doing real work, with live progress.
//!
//! By default it starts the embedded fake API server (TLS, HTTP/2) with realistic pods and
//! churn, caches them with an index and a handler, prints progress every second (objects
//! cached, events/s, lag, relists), ends by checking that the cache equals the server, and
//! prints the `kcache_*` metrics the informer recorded (through a minimal in-process recorder
//! for the `metrics` facade, `recorder.rs`).
//!
//! ```text
//! cargo run --release -p kcache-testing-job
//! cargo run --release -p kcache-testing-job -- --pods 20000 --churn 2000
//! cargo run --release -p kcache-testing-job -- --kubeconfig ~/.kube/config \
//!     --context kind-kind --resource apps/v1/deployments --namespace default
//! ```
//!
//! With `--kubeconfig`, `--context` or `--in-cluster` it watches a real cluster read-only
//! instead, until Ctrl-C or `--seconds`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use clap::Parser;
use kcache_client_http::{ApiResource, Client, Config, HttpListerWatcher, KubeconfigOptions};
use kcache_informer::{HandlerFuncs, QueueKind, SharedIndexInformer};
use kcache_reflector::{ListOptions, ListerWatcher, ObjectList, WatchStream};
use kcache_store::{DynamicObject, NAMESPACE_INDEX, Object, Selector};
use kcache_testing::workload;
use kcache_testing_server::Churn;
use kcache_testing_server::FakeApiServer;
use tokio_util::sync::CancellationToken;

mod recorder;

use recorder::Collector;

/// Watch Kubernetes objects with a kcache informer and report what it does.
#[derive(Debug, Parser)]
#[command(name = "informer", version)]
#[expect(clippy::struct_excessive_bools, reason = "command-line switches")]
struct Args {
    /// Pods the embedded fake API server starts with.
    #[arg(long, default_value_t = 2_000)]
    pods: usize,
    /// Changes per second the embedded server makes (adds, updates, deletes).
    #[arg(long, default_value_t = 200)]
    churn: u32,
    /// How long to run: the churn lasts this long on the embedded server; against a cluster,
    /// the default is until Ctrl-C.
    #[arg(long)]
    seconds: Option<u64>,
    /// Seed of the embedded workload.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Serve the embedded server over plain HTTP/1.1 instead of TLS with HTTP/2.
    #[arg(long)]
    plain_http: bool,
    /// Watch the cluster of this kubeconfig instead of the embedded server.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (implies a cluster; default: its current context).
    #[arg(long)]
    context: Option<String>,
    /// Use the pod's service account (in-cluster config).
    #[arg(long, conflicts_with_all = ["kubeconfig", "context"])]
    in_cluster: bool,
    /// The resource to watch, as `[group/]version/plural`.
    #[arg(long, default_value = "v1/pods", value_parser = parse_resource)]
    resource: ApiResource,
    /// The resource is cluster-scoped (nodes, namespaces, ...).
    #[arg(long)]
    cluster_scoped: bool,
    /// Only this namespace (default: all).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// Only objects matching this label selector, e.g. `app=web,tier!=cache`.
    #[arg(long, short = 'l', value_parser = parse_selector)]
    selector: Option<Selector>,
    /// Keep `metadata.managedFields` (by default they are skipped while parsing).
    #[arg(long)]
    keep_managed_fields: bool,
    /// Use the classic `DeltaFifo` instead of `RealFifo`.
    #[arg(long)]
    delta_fifo: bool,
}

fn parse_resource(s: &str) -> Result<ApiResource, String> {
    let parts: Vec<&str> = s.split('/').collect();
    match parts[..] {
        [version, plural] if !version.is_empty() && !plural.is_empty() => {
            Ok(ApiResource::new("", version, plural, true))
        }
        [group, version, plural]
            if !group.is_empty() && !version.is_empty() && !plural.is_empty() =>
        {
            Ok(ApiResource::new(group, version, plural, true))
        }
        _ => Err(format!(
            "expected [group/]version/plural, such as v1/pods or apps/v1/deployments, not {s:?}"
        )),
    }
}

fn parse_selector(s: &str) -> Result<Selector, String> {
    Selector::parse(s).map_err(|e| e.to_string())
}

/// Counts full syncs (lists, or streaming lists) and watches: wraps any `ListerWatcher`, which
/// is all the informer sees.
struct Counting<L> {
    inner: L,
    syncs: AtomicU64,
    watches: AtomicU64,
}

#[async_trait]
impl<L: ListerWatcher<DynamicObject>> ListerWatcher<DynamicObject> for Counting<L> {
    async fn list(
        &self,
        opts: &ListOptions,
    ) -> Result<ObjectList<DynamicObject>, kcache_reflector::Error> {
        // A continued page belongs to the same list.
        if opts.continue_token.is_empty() {
            self.syncs.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.list(opts).await
    }
    async fn watch(
        &self,
        opts: &ListOptions,
    ) -> Result<WatchStream<DynamicObject>, kcache_reflector::Error> {
        if opts.send_initial_events == Some(true) {
            self.syncs.fetch_add(1, Ordering::Relaxed);
        }
        self.watches.fetch_add(1, Ordering::Relaxed);
        self.inner.watch(opts).await
    }
    fn resource(&self) -> Option<String> {
        self.inner.resource()
    }
    fn supports_streaming_lists(&self) -> bool {
        self.inner.supports_streaming_lists()
    }
}

#[derive(Default)]
struct Events {
    added: AtomicU64,
    updated: AtomicU64,
    deleted: AtomicU64,
}

impl Events {
    fn total(&self) -> u64 {
        self.added.load(Ordering::Relaxed)
            + self.updated.load(Ordering::Relaxed)
            + self.deleted.load(Ordering::Relaxed)
    }
}

type Failure = Box<dyn std::error::Error>;

#[tokio::main]
async fn main() {
    let args = Args::parse();
    // Installed first: kcache registers its metrics as informers start and handlers are added.
    let collector = Arc::new(Collector::default());
    if metrics::set_global_recorder(Arc::clone(&collector)).is_err() {
        eprintln!("warning: a metrics recorder was already installed; no metrics are printed");
    }
    if let Err(e) = run(args, &collector).await {
        eprintln!("error: {e}");
        let mut source = e.source();
        while let Some(s) = source {
            eprintln!("  caused by: {s}");
            source = s.source();
        }
        std::process::exit(1);
    }
}

async fn run(mut args: Args, metrics: &Collector) -> Result<(), Failure> {
    if args.cluster_scoped {
        args.resource = ApiResource::new(
            &args.resource.group,
            &args.resource.version,
            &args.resource.plural,
            false,
        );
    }
    let cluster = args.kubeconfig.is_some() || args.context.is_some() || args.in_cluster;
    if cluster {
        let config = if args.in_cluster {
            Config::in_cluster()?
        } else {
            Config::from_kubeconfig(&KubeconfigOptions {
                context: args.context.clone(),
                paths: args.kubeconfig.clone().map(|p| vec![p]),
                ..KubeconfigOptions::default()
            })?
        };
        eprintln!(
            "watching {} on {}",
            args.resource.collection_path(args.namespace.as_deref()),
            config.cluster_url
        );
        return watch(&args, config, None, metrics).await;
    }

    let server = FakeApiServer::builder()
        .tls(!args.plain_http)
        .seed(args.seed)
        .start()
        .await?;
    let pods = kcache_testing_server::ServedResource::pods();
    for pod in workload::pods(args.seed, args.pods, 10) {
        server.create(&pods, pod)?;
    }
    let mut config = Config::new(server.url().parse()?);
    if let Some(ca) = server.ca_pem() {
        config = config.with_root_certificates_pem(ca.as_bytes())?;
    }
    eprintln!(
        "embedded fake API server at {} with {} pods; churn {} changes/s for {} s",
        server.url(),
        args.pods,
        args.churn,
        args.seconds.unwrap_or(10)
    );
    watch(&args, config, Some(&server), metrics).await
}

/// The informer and what is attached to it.
struct Watched {
    informer: SharedIndexInformer<DynamicObject>,
    lw: Arc<Counting<HttpListerWatcher<DynamicObject>>>,
    events: Arc<Events>,
    errors: Arc<AtomicU64>,
    registration: kcache_informer::Registration<DynamicObject>,
}

fn build(args: &Args, config: Config) -> Result<Watched, Failure> {
    let client = Client::new(config)?;
    let mut builder = HttpListerWatcher::<DynamicObject>::builder(client, args.resource.clone())
        .skip_managed_fields(!args.keep_managed_fields);
    if let Some(ns) = &args.namespace {
        builder = builder.namespace(ns.clone());
    }
    let lw = Arc::new(Counting {
        inner: builder.build(),
        syncs: AtomicU64::new(0),
        watches: AtomicU64::new(0),
    });
    let errors = Arc::new(AtomicU64::new(0));
    let errs = Arc::clone(&errors);
    let mut informer =
        SharedIndexInformer::builder(Arc::clone(&lw) as Arc<dyn ListerWatcher<DynamicObject>>)
            .on_watch_error(move |e| {
                errs.fetch_add(1, Ordering::Relaxed);
                eprintln!("  watch error (retrying): {e}");
            });
    if args.delta_fifo {
        informer = informer.queue(QueueKind::DeltaFifo);
    }
    if let Some(selector) = &args.selector {
        informer =
            informer.list_options(ListOptions::default().with_label_selector(selector.to_string()));
    }
    let informer = informer.build();
    let events = Arc::new(Events::default());
    let (a, u, d) = (
        Arc::clone(&events),
        Arc::clone(&events),
        Arc::clone(&events),
    );
    let registration = informer.add_event_handler(
        HandlerFuncs::new()
            .named("count-events")
            .on_added(move |_: &Arc<DynamicObject>, _| {
                a.added.fetch_add(1, Ordering::Relaxed);
            })
            .on_updated(move |_: &Arc<DynamicObject>, _: &Arc<DynamicObject>| {
                u.updated.fetch_add(1, Ordering::Relaxed);
            })
            .on_deleted(move |_| {
                d.deleted.fetch_add(1, Ordering::Relaxed);
            }),
    )?;
    Ok(Watched {
        informer,
        lw,
        events,
        errors,
        registration,
    })
}

/// This process's resident memory in MB (`VmRSS` of `/proc/self/status`), where the system has
/// one.
#[expect(clippy::cast_precision_loss, reason = "a memory size for display")]
fn resident_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb as f64 / 1024.0)
}

/// Prints a progress line every second until `seconds` pass or `cancel` fires.
#[expect(clippy::cast_precision_loss, reason = "an event rate for display")]
async fn progress(
    w: &Watched,
    server: Option<&FakeApiServer>,
    seconds: Option<u64>,
    cancel: &CancellationToken,
) {
    let mut last = (Instant::now(), w.events.total());
    let deadline = seconds.map(|s| Instant::now() + Duration::from_secs(s));
    loop {
        tokio::select! {
            () = cancel.cancelled() => break,
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        let now = Instant::now();
        let total = w.events.total();
        let rate = (total - last.1) as f64 / (now - last.0).as_secs_f64();
        last = (now, total);
        let lag = match (server, w.informer.last_sync_resource_version()) {
            (Some(s), Some(rv)) => rv.parse::<u64>().map_or_else(
                |_| "?".to_owned(),
                |rv| s.resource_version().saturating_sub(rv).to_string(),
            ),
            _ => "-".to_owned(),
        };
        eprintln!(
            "cached {:>7} | {:>8.0} events/s | lag {:>5} RVs | buffered {:>5} | relists {} | watches {} | errors {} | namespaces {} | RSS {} MB",
            w.informer.indexer().len(),
            rate,
            lag,
            w.registration.buffer_depth(),
            w.lw.syncs.load(Ordering::Relaxed).saturating_sub(1),
            w.lw.watches.load(Ordering::Relaxed),
            w.errors.load(Ordering::Relaxed),
            w.informer
                .indexer()
                .list_index_func_values(NAMESPACE_INDEX)
                .len(),
            resident_mb().map_or_else(|| "-".to_owned(), |mb| format!("{mb:.0}")),
        );
        if deadline.is_some_and(|d| now >= d) {
            break;
        }
    }
}

async fn watch(
    args: &Args,
    config: Config,
    server: Option<&FakeApiServer>,
    metrics: &Collector,
) -> Result<(), Failure> {
    let w = build(args, config)?;
    let cancel = CancellationToken::new();
    let started = Instant::now();
    // On this multi-threaded runtime `run` takes a thread of its own: objects are decoded and
    // freed on one thread (see `RunMode`).
    let run = tokio::spawn({
        let (informer, cancel) = (w.informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    let ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            ctrl_c.cancel();
        }
    });
    if !w.registration.synced().await {
        return Err("stopped before the cache synced".into());
    }
    eprintln!(
        "synced {} objects in {:.0} ms (handler saw {} adds)",
        w.informer.indexer().len(),
        started.elapsed().as_secs_f64() * 1e3,
        w.events.added.load(Ordering::Relaxed)
    );

    let seconds = args.seconds.or(server.map(|_| 10));
    match server {
        Some(s) => {
            let ops = u64::from(args.churn) * seconds.unwrap_or(10);
            let churn = Churn::new(args.seed, ops).rate(args.churn);
            let (stats, ()) = tokio::join!(churn.run(s), progress(&w, server, seconds, &cancel));
            eprintln!(
                "churn done: {} added, {} updated, {} deleted",
                stats.added, stats.updated, stats.deleted
            );
        }
        None => progress(&w, server, seconds, &cancel).await,
    }

    let outcome = match server {
        Some(s) => check(&w.informer, s, &cancel).await,
        None => Ok(()),
    };
    if let (Some(mb), Some(_)) = (resident_mb(), server) {
        eprintln!(
            "resident memory: {mb:.0} MB for {} cached objects, with the embedded fake API server in this \
             process (it keeps every object as a JSON value and its encoding, and its last events); \
             `cargo xtask bench --soak` measures an informer alone",
            w.informer.indexer().len()
        );
    }
    eprintln!(
        "events: {} adds, {} updates, {} deletes",
        w.events.added.load(Ordering::Relaxed),
        w.events.updated.load(Ordering::Relaxed),
        w.events.deleted.load(Ordering::Relaxed)
    );
    cancel.cancel();
    run.await??;
    eprintln!("metrics (kcache_informer::metrics lists them):");
    for line in metrics.lines("kcache_") {
        eprintln!("  {line}");
    }
    outcome
}

/// The verdict goes to standard output; progress went to standard error.
#[expect(clippy::print_stdout, reason = "the program's result")]
fn report(line: std::fmt::Arguments<'_>) {
    println!("{line}");
}

/// Waits (up to 30 s) for the cache to equal the server: same keys, same resource versions.
async fn check(
    informer: &SharedIndexInformer<DynamicObject>,
    server: &FakeApiServer,
    cancel: &CancellationToken,
) -> Result<(), Failure> {
    let rv = |o: &DynamicObject| o.resource_version().unwrap_or_default().to_owned();
    let key = |o: &DynamicObject| kcache_store::meta_namespace_key(o).map(|k| k.to_string());
    let want: BTreeMap<String, String> = server
        .list(&kcache_testing_server::ServedResource::pods())
        .iter()
        .map(|o| Ok((key(o)?, rv(o))))
        .collect::<Result<_, kcache_store::KeyError>>()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let have: BTreeMap<String, String> = informer
            .indexer()
            .list()
            .iter()
            .map(|o| Ok((key(o)?, rv(o))))
            .collect::<Result<_, kcache_store::KeyError>>()?;
        if have == want {
            report(format_args!(
                "cache equals server: {} objects at resource version {}",
                have.len(),
                server.resource_version()
            ));
            return Ok(());
        }
        if Instant::now() > deadline || cancel.is_cancelled() {
            let missing = want.keys().filter(|k| !have.contains_key(*k)).count();
            let extra = have.keys().filter(|k| !want.contains_key(*k)).count();
            let stale = want
                .iter()
                .filter(|(k, v)| have.get(*k).is_some_and(|h| h != *v))
                .count();
            return Err(format!(
                "cache diverged from the server: {missing} missing, {extra} extra, {stale} stale"
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
