//! A soak client (`kcache-bench soak-client KEY`, or the same words to
//! `kcache-bench-counted`): one client synced against the soak's server, then a sample line
//! every `--interval` seconds until the parent says `quit`.
//!
//! A sample is `sample <cached> <seen> <rss> <heap> <cpu> <queued> <anon> <file> <malloc in
//! use> <malloc free>`: objects in the cache, events the handler saw (updates; for the reconcile
//! runner, reconciles), resident memory, live heap bytes (counted only in
//! `kcache-bench-counted`; zero in the plain program), the process's CPU seconds so far, for the
//! reconcile runner the keys in its work queue (waiting or being reconciled; zero for the other
//! rows), then where the resident memory is ([`procfs::Resident`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kcache_client_http::{ApiResource, Client, HttpListerWatcher};
use kcache_informer::{Action, BoxError as InformerError, ReconcileRunner, SharedIndexInformer};
use kcache_store::{DynamicObject, ObjectKey};
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;

use crate::clients::{self, ListMode, Running, Target};
use crate::procfs;

type BoxError = Box<dyn std::error::Error>;

/// What a soak row runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SoakClient {
    /// A row of the bench's table (`clients::ROWS`), by key.
    Row(&'static str),
    /// kcache's informer of `DynamicObject` pods (JSON values, as the main job caches them), its
    /// defaults.
    Dynamic,
    /// kcache's typed informer with its defaults, and a reconcile runner (two workers, a work
    /// queue) reconciling every key it changes: a reconcile reads the key from the cache.
    Runner,
}

/// One row of the soak: its key, its label, what it runs, the environment its processes get,
/// whether `malloc_trim(0)` runs after every sample, and whether a counting process runs it too
/// (for its heap).
#[derive(Debug, Clone, Copy)]
pub struct SoakRow {
    pub key: &'static str,
    pub label: &'static str,
    pub client: SoakClient,
    pub env: &'static [(&'static str, &'static str)],
    pub trim: bool,
    pub counted: bool,
}

const fn soak_row(key: &'static str, label: &'static str, client: SoakClient) -> SoakRow {
    SoakRow {
        key,
        label,
        client,
        env: &[],
        trim: false,
        counted: true,
    }
}

/// Every soak row; the first is the one ratios are taken against.
pub const SOAK_ROWS: &[SoakRow] = &[
    soak_row(
        "kube-rs",
        "kube-rs, paginated (its default)",
        SoakClient::Row("kube-rs"),
    ),
    soak_row("kcache", "kcache Pod, defaults", SoakClient::Row("kcache")),
    soak_row(
        "compact",
        "kcache Compact<Pod>, defaults",
        SoakClient::Row("compact"),
    ),
    soak_row(
        "runner",
        "kcache Pod + reconcile runner (work queue, 2 workers)",
        SoakClient::Runner,
    ),
    soak_row(
        "dynamic",
        "kcache DynamicObject, defaults",
        SoakClient::Dynamic,
    ),
    SoakRow {
        key: "kcache-arena2",
        label: "kcache Pod, defaults, MALLOC_ARENA_MAX=2",
        client: SoakClient::Row("kcache"),
        env: &[("MALLOC_ARENA_MAX", "2")],
        trim: false,
        counted: false,
    },
    SoakRow {
        key: "kcache-trim",
        label: "kcache Pod, defaults, malloc_trim(0) every sample",
        client: SoakClient::Row("kcache"),
        env: &[],
        trim: true,
        counted: false,
    },
    SoakRow {
        key: "compact-trim",
        label: "kcache Compact<Pod>, defaults, malloc_trim(0) every sample",
        client: SoakClient::Row("compact"),
        env: &[],
        trim: true,
        counted: false,
    },
    SoakRow {
        key: "kube-rs-arena2",
        label: "kube-rs, paginated, MALLOC_ARENA_MAX=2",
        client: SoakClient::Row("kube-rs"),
        env: &[("MALLOC_ARENA_MAX", "2")],
        trim: false,
        counted: false,
    },
];

/// The soak rows run when `--only` is not given.
pub const DEFAULT_SOAK_ROWS: &[&str] = &["kube-rs", "kcache", "compact", "runner"];

/// The soak row named `key`.
pub fn soak_row_of(key: &str) -> Result<&'static SoakRow, BoxError> {
    SOAK_ROWS
        .iter()
        .find(|r| r.key == key)
        .ok_or_else(|| format!("unknown soak row {key:?}; try --help").into())
}

/// Returns freed memory at the top of glibc's heaps and in whole free pages inside them to the
/// kernel (`malloc_trim(0)`); nothing where glibc is not the C library.
fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: glibc's malloc_trim takes any pad and only releases free memory.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// Starts the runner row: kcache's typed informer with its defaults over client-http and a
/// reconcile runner on it; `seen` counts reconciles.
async fn start_runner(
    target: &Target,
) -> Result<(Running, Arc<dyn Fn() -> usize + Send + Sync>), BoxError> {
    let lw = HttpListerWatcher::<Pod>::typed(Client::new(target.kcache_config()?)?)
        .all_namespaces()
        .build();
    let informer = SharedIndexInformer::builder(Arc::new(lw)).build();
    let runner = ReconcileRunner::builder(&informer)
        .name("soak")
        .workers(2)
        .build()?;
    let queue = runner.queue().clone();
    let seen = Arc::new(AtomicUsize::new(0));
    let cancel = CancellationToken::new();
    let lister = informer.lister();
    let count = Arc::clone(&seen);
    let run_runner = runner.run(
        Arc::new(()),
        move |key: ObjectKey, _: Arc<()>| {
            // A reconcile reads its object from the cache, as every reconcile does first.
            let _ = lister.get_by_key(key.as_str()).is_some();
            count.fetch_add(1, Ordering::Relaxed);
            async { Ok::<_, InformerError>(Action::Done) }
        },
        cancel.clone(),
    );
    let (running_informer, stop) = (informer.clone(), cancel.clone());
    let task = tokio::spawn(async move {
        let (informer, runner) = tokio::join!(running_informer.run(stop), run_runner);
        if let Err(e) = informer {
            eprintln!("soak runner's informer: {e}");
        }
        if let Err(e) = runner {
            eprintln!("soak runner: {e}");
        }
    });
    clients::wait_synced(&informer, "the runner's informer").await?;
    let cached = informer.indexer();
    let waiting: Arc<dyn Fn() -> usize + Send + Sync> =
        Arc::new(move || queue.len() + queue.processing_len());
    Ok((
        Running::new(Box::new(move || cached.len()), seen, cancel, task),
        waiting,
    ))
}

/// Starts the dynamic row: kcache's informer of `DynamicObject` pods over client-http with its
/// defaults, as the bench's typed rows start theirs; `seen` counts updates.
async fn start_dynamic(target: &Target) -> Result<Running, BoxError> {
    let lw = HttpListerWatcher::<DynamicObject>::builder(
        Client::new(target.kcache_config()?)?,
        ApiResource::new("", "v1", "pods", true),
    )
    .build();
    clients::start_kcache(
        Arc::new(lw),
        ListMode::Streaming,
        false,
        Arc::new(AtomicUsize::new(0)),
        CancellationToken::new(),
    )
    .await
}

/// `soak-client KEY` mode: starts `row`'s client against `target`, prints `synced <seconds>
/// <rss before> <heap before> <resident before>` (the process before the client started: its
/// program, runtime and allocator; the last is [`procfs::Resident`]'s four fields), then a
/// sample every `interval` until stdin says `quit` or closes. `heap` reads the live heap
/// (the counting allocator's level; zero in the plain program).
pub async fn run(
    row: &SoakRow,
    target: &Target,
    interval: Duration,
    heap: fn() -> isize,
) -> Result<(), BoxError> {
    let (rss_before, heap_before) = (procfs::rss()?, heap().max(0));
    let resident_before = procfs::Resident::now()?;
    let start = Instant::now();
    let (running, queued) = match row.client {
        SoakClient::Row(key) => {
            let which = clients::row_of(key)?.which;
            (clients::start(which, target).await?, None)
        }
        SoakClient::Dynamic => (start_dynamic(target).await?, None),
        SoakClient::Runner => {
            let (running, queued) = start_runner(target).await?;
            (running, Some(queued))
        }
    };
    let mut parent = clients::Parent::new();
    parent
        .say(&format!(
            "synced {} {rss_before} {heap_before} {}",
            start.elapsed().as_secs_f64(),
            resident_before.fields()
        ))
        .await?;
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            line = lines.next_line() => match line?.as_deref() {
                Some("quit") | None => break,
                Some(other) => return Err(format!("unknown command {other:?}").into()),
            },
            _ = tick.tick() => {
                if row.trim {
                    trim();
                }
                let cpu = procfs::Cpu::now()?;
                parent
                    .say(&format!(
                        "sample {} {} {} {} {} {} {}",
                        running.cached(),
                        running.seen.load(Ordering::Relaxed),
                        procfs::rss()?,
                        heap().max(0),
                        (cpu.user + cpu.system).as_secs_f64(),
                        queued.as_ref().map_or(0, |q| q()),
                        procfs::Resident::now()?.fields(),
                    ))
                    .await?;
            }
        }
    }
    running.stop().await
}
