//! `cargo xtask bench`: kcache and kube-rs against the same fake API server and workload, each
//! in each of its list modes, with bare `serde_json` decoding of the same pods as the floor.
//!
//! kcache-bench [--pods N] [--updates N] [--heavy-updates N] [--seed S] [--runs N]
//!              [--only ROWS | --all-rows] [--scenario quiet,backlog] [--shape light,heavy]
//!              [--frames F] [--transport T]
//! kcache-bench --soak MINUTES [--pods N] [--rate N] [--heavy-percent P] [--interval S]
//!              [--only ROWS] [--transport T] [--out DIR]
//!
//! # What is run
//!
//! One table per scenario × shape, all under the run's one framing and transport, each titled
//! with all four; then a summary of kcache's main rows against kube-rs's default in every table,
//! each figure marked ✓ or ✗ against the targets.
//!
//! - Scenario (`--scenario`, default both): `quiet` holds the updates back until the client has
//!   synced, then releases them as one burst (sync and watch throughput apart); `backlog` queues
//!   them all behind the initial state (the server lists the state before them and replays them
//!   right after it: after the initial-events bookmark of a streaming list, from the list's
//!   resource version on the watch after a paginated one), so the client syncs while they pour
//!   in, and is timed until it has seen the last one ("caught up").
//! - Shape (`--shape`, default both): `light` pods, about 5 KB of JSON each, or `heavy` ones,
//!   about 18 KB (more managedFields, four containers, a fuller status); the updates are of the
//!   same shape. The heavy tables send `--heavy-updates` updates (default a fifth of
//!   `--updates`): the fake server keeps every update, as an object and its encoding, until it
//!   is sent, about 70 KB each for light pods and 230 KB for heavy ones, so 100,000 heavy
//!   updates would take it over 20 GB. It measures what its pods took and refuses to make
//!   updates that would take more than three quarters of the memory available.
//! - Frames (`--frames`, default `lines`): how the server cuts its watch streams: batches of
//!   whole lines up to 64 KiB (`lines`, `lines:N`), one event per write (`event`, as
//!   kube-apiserver writes them), or writes of exactly N bytes cutting lines anywhere
//!   (`split:N`, as a re-framing proxy does).
//! - Transport (`--transport`, default `http`): plain HTTP/1.1; `https` with HTTP/2 offered
//!   (kcache's own client takes it; kube-rs, and so the rows over kube-rs's `Client`, speak
//!   HTTP/1.1 in every case); `https-h1` with only HTTP/1.1 offered. Over HTTPS every client
//!   takes its config from the kubeconfig the server child writes (its URL and CA, and a token).
//! - Rows: `--only ROWS`, else a default subset (`clients::DEFAULT_ROWS`: kube-rs in both list
//!   modes, kcache's typed and compact caches in both, kcache over kube-rs's `Client` in
//!   kube-rs's default mode); `--all-rows` (or `--only all`) runs every row. kube-rs's default
//!   comes first, and each table's ratios are against its first row.
//!
//! `--soak MINUTES` runs the soak instead of the tables: memory over time under steady churn,
//! every soak row against one server at once (`soak.rs` has the method, `soak_serve.rs` the
//! churn, `soak_client.rs` the rows).
//!
//! # How the figures are taken
//!
//! - The fake server runs in a child process (`kcache-bench serve`), so that its allocations and
//!   CPU are not the client's. It makes its pods and every update it will send before it prints
//!   its URL; while a client syncs it only serves (the parent reads the server's CPU time around
//!   every sync and prints it). Quiet: the updates are written after the sync with the watches
//!   paused, then released as one burst. Backlog: they are written before the URL is printed,
//!   and the server then serves the latest state as of the version before them.
//! - Time and resident memory come from plain processes: each timed client runs in a child of
//!   its own (`kcache-bench client KEY`) whose global allocator is the system's (or mimalloc with
//!   `--features mimalloc`), never the counting one. Right before the client starts, the child
//!   reads its `VmRSS` (the runtime's baseline) and resets `VmHWM` (`echo 5 >
//!   /proc/self/clear_refs`); sync peak = `VmHWM` at sync less the baseline; steady = `VmRSS`
//!   less the baseline once synced and idle (quiet, right before the burst) or once caught up
//!   (backlog). Both clients run in the same binary and runtime, so the baseline is the same for
//!   both.
//! - CPU is the timed child's user + system time (`/proc/self/stat`, 10 ms ticks): during the
//!   sync, and quiet, during the burst; backlog, from the start until caught up.
//! - Watch events/s: quiet, updates over the burst's time (release to the last update seen);
//!   backlog, updates over the time from the sync to the last update seen (the updates that
//!   arrived during the sync are counted too: the figure is how fast the client caught up).
//! - The decode floor of each shape (bare `serde_json` into k8s-openapi `Pod`s on one core) is
//!   timed in a plain child of its own (`kcache-bench floor-speeds`) and weighed in the counting
//!   program, so that the pods it decodes never stay in the parent's memory.
//! - Heap bytes per cached object come from a separate run of the same row, before the timed
//!   one, in `kcache-bench-counted`, whose global allocator counts every allocation: live bytes
//!   right at sync divided by the objects cached (backlog: with updates arriving behind).
//! - Each row of each round gets a fresh server with the same seed: same pods, same resource
//!   versions, same updates.
//! - The rows over kube-rs's `Client` (kube-rs's own and kcache's `KubeListerWatcher` over it)
//!   build it from one `kube::Config`, kube-rs's default (its retry layer on; see
//!   `clients::kube_config`), and each of kube-rs's list modes has a kcache row over the same
//!   client: `kcache-kube` (streaming) and `kcache-kube-paged` (paginated, kube-rs's default).
//!
//! # Why kube-rs synced in 3.11 s here and in about 1.4 s as a plain process
//!
//! The earlier bench ran the clients under its counting allocator and took kube-rs's sync of
//! 20,000 pods at 3.11 s, while a plain program syncing kube-rs against the same server took
//! about 1.4 s. Measured on this project's 2-core VMs (user and system time of the client
//! process during the sync, from `/proc/self/stat`):
//!
//! - The counting allocator is not the cause: a kube-rs sync with it counting took 0.84-0.91 s
//!   of user time, without it 0.72-0.82 s (about 0.1 s, some 10%), and the same number of page
//!   faults (about 185,700 for 20,000 pods: 740 MB touched).
//! - Neither is the runtime (a current-thread runtime synced in 1.04-1.30 s, the multi-threaded
//!   one in 1.06-1.36 s), nor the parent's stdin/stdout protocol (the child reads nothing while
//!   it syncs), nor the server (0.07 s of CPU during a 2.6 s sync, all of it serving).
//! - The cause is the cost of first touching memory in the VM. The slow syncs spent 1.5-1.9 s in
//!   the kernel for those same 185,700 minor faults, the fast ones 0.28-0.35 s: the user time
//!   was the same (0.75-0.95 s). Whether a fresh process gets memory the hypervisor has backed
//!   or not depends on what the machine did just before: the earlier bench started each client
//!   right after a fresh server had taken 7.5 GB for its prepared updates and both clients paid
//!   it (2.8-3.0 s in five runs in a row), while a program run by hand right after another one
//!   reused the memory that one had just freed (1.1-1.2 s). The same bench later ran kube-rs in
//!   1.12-1.18 s; the plain program, as the first client after a fresh server, in 2.6-2.8 s.
//!
//! So the bench now runs every timed client right after the counting run of the same row has
//! synced and exited (both clients start on memory the VM has just used), prints each timed
//! run's user and system time, and gives medians and ranges over `--runs N`: a row whose range
//! is wide met the VM's first-touch cost in some of its runs.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use kcache_bench::child::Child;
use kcache_bench::clients::{self, Counted, ROWS, Row, Target, Timed};
use kcache_bench::setup::{Scenario, Setup};
use kcache_bench::{alloc, cli, floor, server, soak, soak_client, soak_serve};
use kcache_testing::workload::PodShape;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

type BoxError = Box<dyn std::error::Error>;

fn main() {
    let args = cli::parse_or_exit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build();
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let result = runtime.block_on(async {
        if args.serve {
            let setup = Setup {
                scenario: args.scenario(),
                shape: args.shape(),
                frames: args.frames,
                transport: args.transport,
            };
            server::serve(args.pods, args.updates, args.seed, setup).await
        } else if args.floor_speeds {
            let speeds = floor::speeds(args.shape(), args.seed, args.pods)?;
            println!("{}", speeds.to_line());
            Ok(())
        } else if let Some(key) = &args.client {
            client(key, &args).await
        } else if args.soak_serve {
            soak_serve::serve(churn(&args), args.transport).await
        } else if let Some(key) = &args.soak_client {
            let target = Target {
                url: args.url.clone(),
                kubeconfig: args.kubeconfig.clone(),
            };
            soak_client::run(
                soak_client::soak_row_of(key)?,
                &target,
                Duration::from_secs_f64(args.interval),
                alloc::current,
            )
            .await
        } else if let Some(minutes) = args.soak {
            let out = match &args.out {
                Some(dir) => dir.clone(),
                None => Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("target")
                    .join("soak"),
            };
            let options = soak::Options {
                minutes,
                churn: churn(&args),
                interval: Duration::from_secs_f64(args.interval),
                transport: args.transport,
                rows: args.soak_rows()?,
                out,
            };
            soak::run(&options, &counted_program()?).await
        } else {
            bench(&args).await
        }
    });
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// The soak's churn, from the command line.
fn churn(args: &cli::Args) -> soak_serve::Churn {
    soak_serve::Churn {
        pods: args.pods,
        rate: args.rate,
        heavy_percent: args.heavy_percent,
        seed: args.seed,
    }
}

/// `client KEY` mode: one timed client against the server at `--url` (with `--kubeconfig` over
/// HTTPS), in the first `--scenario`, driven by the parent.
async fn client(key: &str, args: &cli::Args) -> Result<(), BoxError> {
    let row = clients::row_of(key)?;
    let mut parent = clients::Parent::new();
    let target = Target {
        url: args.url.clone(),
        kubeconfig: args.kubeconfig.clone(),
    };
    let timed = clients::timed(
        row,
        &target,
        args.pods,
        args.updates,
        args.scenario(),
        &mut parent,
    )
    .await?;
    parent.say(&timed.to_line()).await
}

/// The counting program, next to this one. `cargo run` builds only the program it runs, so when
/// run by cargo this builds the counting one too (a no-op when it is up to date).
fn counted_program() -> Result<PathBuf, BoxError> {
    let exe = std::env::current_exe()?;
    let counted = exe.with_file_name(format!(
        "kcache-bench-counted{}",
        std::env::consts::EXE_SUFFIX
    ));
    if let Some(cargo) = std::env::var_os("CARGO") {
        let profile_dir = exe.parent().ok_or("no directory above the program")?;
        let target_dir = profile_dir.parent().ok_or("no target directory")?;
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        let mut build = std::process::Command::new(cargo);
        build
            .args(["build", "--quiet", "--bin", "kcache-bench-counted"])
            .arg("--manifest-path")
            .arg(&manifest)
            .arg("--target-dir")
            .arg(target_dir);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        if cfg!(feature = "mimalloc") {
            build.args(["--features", "mimalloc"]);
        }
        let status = build.status()?;
        if !status.success() {
            return Err(format!("building kcache-bench-counted failed ({status})").into());
        }
    }
    if counted.exists() {
        Ok(counted)
    } else {
        Err(format!(
            "{} is missing: build it with `cargo build --release --bins --manifest-path xtask/bench/Cargo.toml`",
            counted.display()
        )
        .into())
    }
}

/// Runs `program` (the counting one, or this one for a floor) to its end and returns its last
/// line.
async fn last_line_of(program: &Path, args: &[&str]) -> Result<String, BoxError> {
    // Not `output()`, which would capture the child's progress lines on stderr too.
    let out = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?
        .wait_with_output()
        .await?;
    if !out.status.success() {
        return Err(format!("{} {args:?} failed ({})", program.display(), out.status).into());
    }
    let text = String::from_utf8(out.stdout)?;
    Ok(text.lines().last().unwrap_or_default().to_owned())
}

/// What one round of one row gave.
#[derive(Debug, Clone)]
struct Run {
    timed: Timed,
    counted: Counted,
    /// The server's CPU time while the timed client synced.
    server_cpu: Duration,
    /// The HTTP versions of the timed client's requests, as the server saw them.
    versions: String,
}

/// Runs the timed client of `row` in a child process (`current_exe client KEY ...`) against
/// `server` in `scenario`: quiet, drives the burst between it and the server; backlog, waits
/// for its figures. Also returns the server's CPU during the sync and the HTTP versions the
/// client's requests came in. The client expects `pods` pods and `client_updates` of the
/// server's `updates` (fewer than all for a row caching one shard).
async fn timed_child(
    row: &Row,
    server: &mut server::Server,
    (pods, client_updates): (usize, usize),
    updates: usize,
    scenario: Scenario,
) -> Result<(Timed, Duration, String), BoxError> {
    // Clears the server's request log: what follows is the timed client's.
    server.versions().await?;
    let cpu_before = server.cpu().await?;
    let (pods, updates_text) = (pods.to_string(), client_updates.to_string());
    let mut args = vec!["client", row.key];
    args.extend(server.client_args());
    args.extend([
        "--pods",
        &pods,
        "--updates",
        &updates_text,
        "--scenario",
        scenario.name(),
    ]);
    let mut child = Child::spawn(&args)?;
    let labelled = |e: BoxError| -> BoxError { format!("{}: {e}", row.label).into() };
    child.expect("synced").await.map_err(labelled)?;
    let server_cpu = server.cpu().await?.saturating_sub(cpu_before);
    eprintln!(
        "  server: {:.2} s of CPU while the client synced",
        server_cpu.as_secs_f64()
    );
    if scenario == Scenario::Quiet {
        server.prepare(updates).await?;
        child.say("go").await?;
        child.expect("started").await.map_err(labelled)?;
        server.release().await?;
    }
    let timed = Timed::parse(&child.expect("done").await.map_err(labelled)?)?;
    child.finish(None).await;
    let versions = server.versions().await?;
    Ok((timed, server_cpu, versions))
}

/// The median of `v` (the mean of the middle two for an even count).
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// ` [lo-hi]` with `digits` decimals, empty for one value.
fn range(v: &[f64], digits: usize) -> String {
    if v.len() < 2 {
        return String::new();
    }
    let lo = v.iter().copied().fold(f64::MAX, f64::min);
    let hi = v.iter().copied().fold(f64::MIN, f64::max);
    format!(" [{lo:.digits$}-{hi:.digits$}]")
}

/// One figure of a row over its runs: the median and the range.
struct Figure {
    median: f64,
    range: String,
}

/// Two cells of a table: `figure`'s median with `digits` decimals, its unit and range, then its
/// ratio to `base`'s median.
fn cell(figure: &Figure, base: &Figure, digits: usize, unit: &str) -> String {
    format!(
        "{:.digits$}{unit}{} | {:.2}x",
        figure.median,
        figure.range,
        figure.median / base.median
    )
}

impl Figure {
    fn of(runs: &[Run], digits: usize, f: impl Fn(&Run) -> f64) -> Self {
        let v: Vec<f64> = runs.iter().map(f).collect();
        Self {
            median: median(&v),
            range: range(&v, digits),
        }
    }
}

/// A row's figures over its runs.
struct Summary {
    sync: Figure,
    /// The client process's CPU time (user + system) during the sync: steadier than the wall
    /// time, which on these VMs follows the kernel's cost of first touching memory.
    sync_cpu: Figure,
    peak: Figure,
    steady: Figure,
    kb_per_object: Figure,
    /// Bytes the client read during the sync, per cached object.
    wire: Figure,
    /// Bytes the client read during the sync, in MB: the server's egress to it.
    wire_total: Figure,
    /// Objects cached at the sync.
    cached: Figure,
    events: Figure,
    /// Quiet: CPU during the burst; backlog: CPU from the start until caught up.
    events_cpu: Figure,
    /// Backlog: start to the last update seen.
    caught_up: Figure,
}

impl Summary {
    fn of(runs: &[Run]) -> Self {
        Self {
            sync: Figure::of(runs, 2, |r| r.timed.sync.as_secs_f64()),
            sync_cpu: Figure::of(runs, 2, |r| {
                r.timed.user.as_secs_f64() + r.timed.system.as_secs_f64()
            }),
            peak: Figure::of(runs, 0, |r| r.timed.sync_peak_rss as f64 / 1e6),
            steady: Figure::of(runs, 0, |r| r.timed.steady_rss as f64 / 1e6),
            kb_per_object: Figure::of(runs, 1, |r| {
                r.counted.live as f64 / r.counted.cached.max(1) as f64 / 1e3
            }),
            wire: Figure::of(runs, 0, |r| {
                r.timed.sync_read_bytes as f64 / r.timed.cached.max(1) as f64
            }),
            wire_total: Figure::of(runs, 1, |r| r.timed.sync_read_bytes as f64 / 1e6),
            cached: Figure::of(runs, 0, |r| r.timed.cached as f64),
            events: Figure::of(runs, 0, |r| r.timed.events_per_sec),
            events_cpu: Figure::of(runs, 2, |r| r.timed.events_cpu.as_secs_f64()),
            caught_up: Figure::of(runs, 2, |r| r.timed.caught_up.as_secs_f64()),
        }
    }
}

/// The floor of one shape: bare serde_json's speeds (timed in a plain child) and a decoded
/// pod's weight (counted in the counting program).
struct Floor {
    speeds: floor::Speeds,
    weights: floor::Bytes,
}

/// Measures the floor of `shape` on `pods` pods.
async fn floor_of(
    counted: &Path,
    shape: PodShape,
    seed: u64,
    pods: usize,
) -> Result<Floor, BoxError> {
    eprintln!(
        "decode floor: serde_json into k8s-openapi Pod, one core, {} pods ...",
        shape.name()
    );
    let (seed, pods) = (seed.to_string(), pods.to_string());
    let args = ["--seed", &seed, "--pods", &pods, "--shape", shape.name()];
    let plain = std::env::current_exe()?;
    let speeds = floor::Speeds::parse(
        &last_line_of(&plain, &[&["floor-speeds"], &args[..]].concat()).await?,
    )?;
    let weights = floor::Bytes::parse(
        &last_line_of(counted, &[&["floor-bytes"], &args[..]].concat()).await?,
    )?;
    Ok(Floor { speeds, weights })
}

/// One table's results: its setting and every row's figures.
struct Table<'a> {
    setup: Setup,
    pods: usize,
    updates: usize,
    rows: Vec<(&'a Row, Summary)>,
}

async fn bench(args: &cli::Args) -> Result<(), BoxError> {
    let counted = counted_program()?;
    let chosen: Vec<&Row> = ROWS.iter().filter(|r| args.runs_row(r.key)).collect();
    if chosen.is_empty() {
        return Err("no row chosen".into());
    }
    let floor_pods = args.pods.min(20_000);
    let mut floors = Vec::new();
    for &shape in &args.shapes {
        floors.push((
            shape,
            floor_of(&counted, shape, args.seed, floor_pods).await?,
        ));
    }

    println!();
    let shapes_updates: Vec<String> = args
        .shapes
        .iter()
        .map(|&s| format!("{} for {} pods", args.updates_of(s), s.name()))
        .collect();
    println!(
        "{} pods, updates: {}; seed {}; {}; {}; {}",
        args.pods,
        shapes_updates.join(", "),
        args.seed,
        if args.runs > 1 {
            format!("median of {} runs per row (range in brackets)", args.runs)
        } else {
            "one run per row".to_owned()
        },
        args.frames.describe(),
        args.transport.describe(),
    );
    println!(
        "timed in plain processes ({} allocator); KB/object from a separate run with a counting allocator, taken at sync",
        if cfg!(feature = "mimalloc") {
            "mimalloc"
        } else {
            "system"
        }
    );
    for (shape, floor) in &floors {
        let (speeds, weights) = (&floor.speeds, &floor.weights);
        println!(
            "{} pods, {:.1} KB of JSON each: decode floor (bare serde_json, one core) {:.0} pods/s, {:.0} MB/s; \
             a decoded Pod (serde_json::from_slice, in an Arc) holds {:.1} KB, {:.1} KB with exact Vec capacities; \
             decoding into a cache of {floor_pods} pods, replacing versions: {:.0} pods/s freeing on the same thread, {:.0} pods/s on another ({:.2}x)",
            shape.name(),
            speeds.mb_per_sec / speeds.pods_per_sec * 1e3,
            speeds.pods_per_sec,
            speeds.mb_per_sec,
            weights.decoded_per_pod / 1e3,
            weights.exact_per_pod / 1e3,
            speeds.cache_pods_per_sec,
            speeds.cache_cross_thread_pods_per_sec,
            speeds.cache_cross_thread_pods_per_sec / speeds.cache_pods_per_sec
        );
    }

    let mut tables = Vec::new();
    for &scenario in &args.scenarios {
        for (shape, floor) in &floors {
            let setup = Setup {
                scenario,
                shape: *shape,
                frames: args.frames,
                transport: args.transport,
            };
            let updates = args.updates_of(*shape);
            let runs = run_table(args, &counted, &setup, updates, &chosen).await?;
            let table = Table {
                setup,
                pods: args.pods,
                updates,
                rows: chosen
                    .iter()
                    .copied()
                    .zip(&runs)
                    .map(|(row, r)| (row, Summary::of(r)))
                    .collect(),
            };
            print_table(&table, &runs, floor.speeds.pods_per_sec)?;
            tables.push(table);
        }
    }
    print_summary(&tables);
    print_shard_summary(&tables);
    println!();
    println!(
        "The rows over kube-rs's Client (kube-rs*, kcache-kube*, compact-kube) share one kube::Config: kube-rs's default, retry layer on."
    );
    println!(
        "Lister get/list costs: cargo bench --manifest-path xtask/bench/Cargo.toml --bench lister"
    );
    Ok(())
}

/// Runs `--runs` rounds of every chosen row under `setup` with `updates` updates; each row's
/// runs.
async fn run_table(
    args: &cli::Args,
    counted: &Path,
    setup: &Setup,
    updates: usize,
    chosen: &[&Row],
) -> Result<Vec<Vec<Run>>, BoxError> {
    // Rounds of every row in turn, so that a noisy spell of the machine hits all rows alike.
    let mut runs: Vec<Vec<Run>> = (0..chosen.len()).map(|_| Vec::new()).collect();
    for round in 1..=args.runs {
        for (row, done) in chosen.iter().zip(&mut runs) {
            eprintln!(
                "{} [{} scenario, {} pods] (round {round} of {}): {} pods, {} updates ...",
                row.label,
                setup.scenario.name(),
                setup.shape.name(),
                args.runs,
                args.pods,
                updates
            );
            // A fresh server per row: same seed, same workload, same resource versions.
            let mut server = server::Server::spawn(args.pods, updates, args.seed, setup).await?;
            // A row caching one shard expects that shard's pods and updates only.
            let (client_pods, client_updates) = match row.which.shard() {
                Some((shard, shards)) => {
                    let (pods, shard_updates) = server.shard(shard, shards).await?;
                    eprintln!(
                        "  server: uid shard {shard} of {shards} holds {pods} of {} pods and {shard_updates} of {updates} updates",
                        args.pods
                    );
                    (pods, shard_updates)
                }
                None => (args.pods, updates),
            };
            let pods = client_pods.to_string();
            let mut counting_args = vec!["client", row.key];
            counting_args.extend(server.client_args());
            counting_args.extend(["--pods", &pods]);
            let bytes = Counted::parse(&last_line_of(counted, &counting_args).await?)?;
            // The counting client's watch must be gone before the timed client's is waited for.
            if !server.wait_no_watchers(Duration::from_secs(10)).await? {
                return Err("the counting client's watch is still open on the server".into());
            }
            let (timed, server_cpu, versions) = timed_child(
                row,
                &mut server,
                (client_pods, client_updates),
                updates,
                setup.scenario,
            )
            .await?;
            server.quit().await;
            done.push(Run {
                timed,
                counted: bytes,
                server_cpu,
                versions,
            });
        }
    }
    Ok(runs)
}

/// Prints one setting's table (ratios against its first row) and its notes; `floor` is bare
/// serde_json's pods/s on this shape.
fn print_table(table: &Table<'_>, runs: &[Vec<Run>], floor: f64) -> Result<(), BoxError> {
    let (base_row, base) = table.rows.first().ok_or("no client ran")?;
    let all: Vec<&Run> = runs.iter().flatten().collect();
    let baseline_rss = median(
        &all.iter()
            .map(|r| r.timed.baseline_rss as f64 / 1e6)
            .collect::<Vec<_>>(),
    );
    let server_cpu = all
        .iter()
        .map(|r| r.server_cpu.as_secs_f64())
        .fold(0.0, f64::max);
    let vs = "vs first";
    println!();
    println!("### {}", table.setup.title(table.pods, table.updates));
    println!();
    match table.setup.scenario {
        Scenario::Quiet => {
            println!(
                "| client | initial sync | {vs} | sync CPU | {vs} | sync peak RSS MB | {vs} | steady RSS MB | heap KB/object | sync bytes/object | {vs} | watch events/s | {vs} | events CPU | {vs} | vs floor |"
            );
            println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
            for (row, s) in &table.rows {
                println!(
                    "| {} | {} | {} | {} | {:.0} | {:.1} | {} | {} | {} | {:.2}x |",
                    row.label,
                    cell(&s.sync, &base.sync, 2, " s"),
                    cell(&s.sync_cpu, &base.sync_cpu, 2, " s"),
                    cell(&s.peak, &base.peak, 0, ""),
                    s.steady.median,
                    s.kb_per_object.median,
                    cell(&s.wire, &base.wire, 0, ""),
                    cell(&s.events, &base.events, 0, ""),
                    cell(&s.events_cpu, &base.events_cpu, 2, " s"),
                    s.events.median / floor,
                );
            }
            println!();
            println!(
                "Initial sync: start to every pod cached, with no update pending; sync CPU: the client process's user + system time during it. \
                 Sync peak RSS: the most resident memory up to the sync; steady: once synced and idle. \
                 Then the updates, written while the watches were paused, are released as one burst: \
                 watch events/s = updates / (release to the last one seen), events CPU = the client's CPU over that time."
            );
        }
        Scenario::Backlog => {
            println!(
                "| client | initial sync | {vs} | sync CPU | {vs} | sync peak RSS MB | {vs} | caught up | {vs} | CPU to caught up | {vs} | RSS caught up MB | heap KB/object | sync bytes/object | {vs} | events/s after sync | {vs} | vs floor |"
            );
            println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
            for (row, s) in &table.rows {
                println!(
                    "| {} | {} | {} | {} | {} | {} | {:.0} | {:.1} | {} | {} | {:.2}x |",
                    row.label,
                    cell(&s.sync, &base.sync, 2, " s"),
                    cell(&s.sync_cpu, &base.sync_cpu, 2, " s"),
                    cell(&s.peak, &base.peak, 0, ""),
                    cell(&s.caught_up, &base.caught_up, 2, " s"),
                    cell(&s.events_cpu, &base.events_cpu, 2, " s"),
                    s.steady.median,
                    s.kb_per_object.median,
                    cell(&s.wire, &base.wire, 0, ""),
                    cell(&s.events, &base.events, 0, ""),
                    s.events.median / floor,
                );
            }
            println!();
            println!(
                "Every update is queued behind the initial state before the client starts: the list is the state before them, and they follow it at once. \
                 Initial sync: start to every pod cached (the informer synced, kube-rs's store ready), with updates already arriving; \
                 sync CPU and sync peak RSS: up to then. \
                 Caught up: start to the last update seen; CPU to caught up: the client's user + system time over that whole time, the sync's included; \
                 RSS caught up: resident memory then. Events/s after sync = updates / (caught up - initial sync)."
            );
        }
    }
    println!(
        "Ratios are against \"{}\"; time, CPU and memory ratios below 1 favour the row, events/s ratios above 1 do. \
         RSS is less the client process's {baseline_rss:.0} MB before its start; KB/object is live heap at sync over the pods cached; \
         sync bytes/object: the bytes received on the loopback interface during the sync (the server's answers, over HTTPS its TLS records) over the pods cached. \
         vs floor: events/s against bare serde_json's decoding of this shape on one core. \
         The server used at most {server_cpu:.2} s of CPU between a client's start and its sync.",
        base_row.label
    );
    if table.setup.transport.tls() {
        let seen: Vec<String> = table
            .rows
            .iter()
            .zip(runs)
            .map(|((row, _), r)| {
                let mut v: Vec<&str> = r.iter().map(|r| r.versions.as_str()).collect();
                v.dedup();
                format!("{} {}", row.key, v.join(" / "))
            })
            .collect();
        println!(
            "HTTP versions of each row's timed requests, as the server saw them: {}.",
            seen.join("; ")
        );
    }
    Ok(())
}

/// The targets for kcache against kube-rs's default: the default row's sync, peak RSS
/// and events/s, the compact row's sync, and streaming no slower to sync than paginated.
const SYNC_TARGET: f64 = 0.7;
const PEAK_TARGET: f64 = 0.65;
const EVENTS_TARGET: f64 = 2.0;
const COMPACT_SYNC_TARGET: f64 = 0.4;
const STREAMING_TARGET: f64 = 1.0;

/// `0.62x ✓` (met), `0.81x ✗` (missed) or `0.81x` (no target); `at_most`: the target is an
/// upper bound.
fn judged(
    value: f64,
    target: Option<(f64, bool)>,
    misses: &mut usize,
    count: &mut usize,
) -> String {
    match target {
        None => format!("{value:.2}x"),
        Some((limit, at_most)) => {
            *count += 1;
            let met = if at_most {
                value <= limit
            } else {
                value >= limit
            };
            if met {
                format!("{value:.2}x ✓")
            } else {
                *misses += 1;
                format!("{value:.2}x ✗")
            }
        }
    }
}

/// The figures of row `key` in `table`, if it ran.
fn figure<'t>(table: &'t Table<'_>, key: &str) -> Option<&'t Summary> {
    table
        .rows
        .iter()
        .find(|(row, _)| row.key == key)
        .map(|(_, s)| s)
}

/// Prints kcache's main rows against kube-rs's default in every setting, each figure marked
/// against its target.
fn print_summary(tables: &[Table<'_>]) {
    println!();
    println!("### Summary: kcache against kube-rs's default (paginated)");
    println!();
    let (mut misses, mut count) = (0, 0);
    let mut lines = Vec::new();
    for table in tables {
        let Some(base) = figure(table, "kube-rs") else {
            continue;
        };
        for (key, paged) in [
            ("kcache", Some("kcache-paged")),
            ("kcache-paged", None),
            ("kcache-home", Some("kcache-paged-home")),
            ("kcache-paged-home", None),
            ("compact", Some("compact-paged")),
            ("compact-paged", None),
        ] {
            let Some(s) = figure(table, key) else {
                continue;
            };
            let defaults = key == "kcache";
            let sync_target = match key {
                "kcache" => Some((SYNC_TARGET, true)),
                "compact" => Some((COMPACT_SYNC_TARGET, true)),
                _ => None,
            };
            let streaming = match paged.and_then(|p| figure(table, p)) {
                Some(p) => judged(
                    s.sync.median / p.sync.median,
                    Some((STREAMING_TARGET, true)),
                    &mut misses,
                    &mut count,
                ),
                None => "-".to_owned(),
            };
            lines.push(format!(
                "| {} | {} | {key} | {} | {} | {} | {streaming} |",
                table.setup.scenario.name(),
                table.setup.shape.name(),
                judged(
                    s.sync.median / base.sync.median,
                    sync_target,
                    &mut misses,
                    &mut count
                ),
                judged(
                    s.peak.median / base.peak.median,
                    defaults.then_some((PEAK_TARGET, true)),
                    &mut misses,
                    &mut count
                ),
                judged(
                    s.events.median / base.events.median,
                    defaults.then_some((EVENTS_TARGET, false)),
                    &mut misses,
                    &mut count
                ),
            ));
        }
    }
    if lines.is_empty() {
        println!(
            "(needs the kube-rs row and at least one of kcache, kcache-paged, compact, compact-paged)"
        );
        return;
    }
    println!(
        "| scenario | shape | client | sync vs kube-rs | sync peak RSS vs kube-rs | events/s vs kube-rs | streaming / paginated sync |"
    );
    println!("|---|---|---|---|---|---|---|");
    for line in lines {
        println!("{line}");
    }
    println!();
    println!(
        "Targets (✓ met, ✗ missed, unmarked: none): kcache's defaults sync <= {SYNC_TARGET}x kube-rs, sync peak RSS <= {PEAK_TARGET}x, \
         events/s >= {EVENTS_TARGET}x; compact sync <= {COMPACT_SYNC_TARGET}x; streaming sync <= paginated sync (kcache/kcache-paged, compact/compact-paged). \
         Events/s: the burst's in the quiet scenario, after the sync in the backlog one."
    );
    println!(
        "{} of {count} targets missed; the frames and transport of every table: as in its title.",
        if misses == 0 {
            "none".to_owned()
        } else {
            misses.to_string()
        }
    );
}

/// The sharded rows' target: each replica of four at most this share of one unsharded replica's
/// sync CPU, sync peak RSS and sync egress.
const SHARD_TARGET: f64 = 0.3;

/// Prints every `kcache-shard*` row against kcache's unsharded default in the same setting:
/// the pods it held, its sync, sync CPU, sync peak RSS and the bytes it was sent during the
/// sync, each share marked against [`SHARD_TARGET`].
fn print_shard_summary(tables: &[Table<'_>]) {
    let (mut misses, mut count) = (0, 0);
    let mut lines = Vec::new();
    for table in tables {
        let Some(base) = figure(table, "kcache") else {
            continue;
        };
        for (row, s) in table.rows.iter().filter(|(r, _)| r.which.shard().is_some()) {
            let mut share = |of: &Figure, to: &Figure, target: bool| {
                judged(
                    of.median / to.median,
                    target.then_some((SHARD_TARGET, true)),
                    &mut misses,
                    &mut count,
                )
            };
            lines.push(format!(
                "| {} | {} | {} | {:.0} of {:.0} | {} | {} | {} | {:.1} MB of {:.1} MB: {} |",
                table.setup.scenario.name(),
                table.setup.shape.name(),
                row.key,
                s.cached.median,
                base.cached.median,
                share(&s.sync, &base.sync, false),
                share(&s.sync_cpu, &base.sync_cpu, true),
                share(&s.peak, &base.peak, true),
                s.wire_total.median,
                base.wire_total.median,
                share(&s.wire_total, &base.wire_total, true),
            ));
        }
    }
    if lines.is_empty() {
        return;
    }
    println!();
    println!("### Sharded replicas against one unsharded replica (kcache's defaults)");
    println!();
    println!(
        "| scenario | shape | replica | pods cached | sync | sync CPU | sync peak RSS | sync egress to it |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for line in lines {
        println!("{line}");
    }
    println!();
    println!(
        "Medians; each share is the row's over the \"kcache\" row's in the same table. Targets: sync CPU, sync peak RSS and \
         sync egress (bytes the server sent the client until its sync) <= {SHARD_TARGET}x. {} of {count} missed.",
        if misses == 0 {
            "none".to_owned()
        } else {
            misses.to_string()
        }
    );
}
