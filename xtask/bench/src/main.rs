//! `cargo xtask bench`: kcache and kube-rs against the same fake API server and workload, each
//! in each of its list modes, with bare `serde_json` decoding of the same pods as the floor.
//!
//! kcache-bench [--pods N] [--updates N] [--seed S] [--only ROWS] [--runs N]
//!
//! # How the figures are taken
//!
//! - The fake server runs in a child process (`kcache-bench serve`), so that its allocations and
//!   CPU are not the client's. It makes every update it will send before it prints its URL; while
//!   a client syncs it only serves (the parent reads the server's CPU time around every sync and
//!   prints it: a few hundredths of a second for 20,000 pods). The updates are written after the
//!   sync with the watches paused, then released as one burst.
//! - Time and resident memory come from plain processes: each timed client runs in a child of
//!   its own (`kcache-bench client KEY`) whose global allocator is the system's (or mimalloc with
//!   `--features mimalloc`), never the counting one. Right before the client starts, the child
//!   reads its `VmRSS` (the runtime's baseline) and resets `VmHWM` (`echo 5 >
//!   /proc/self/clear_refs`); sync peak = `VmHWM` at sync less the baseline, steady = `VmRSS`
//!   once synced and idle (right before the burst) less the baseline. Both clients run in the
//!   same binary and runtime, so the baseline is the same for both.
//! - Heap bytes per cached object come from a separate run of the same row, before the timed
//!   one, in `kcache-bench-counted`, whose global allocator counts every allocation: live bytes
//!   after sync divided by the objects cached.
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
use kcache_bench::clients::{self, Counted, ROWS, Row, Timed};
use kcache_bench::{cli, floor, server};

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
            server::serve(args.pods, args.updates, args.seed).await
        } else if let Some(key) = &args.client {
            client(key, &args).await
        } else {
            bench(&args).await
        }
    });
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// `client KEY` mode: one timed client against the server at `--url`, driven by the parent.
async fn client(key: &str, args: &cli::Args) -> Result<(), BoxError> {
    let row = clients::row_of(key)?;
    let mut parent = clients::Parent::new();
    let timed = clients::timed(row, &args.url, args.pods, args.updates, &mut parent).await?;
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

/// Runs a counting child to its end and returns its last line.
async fn counting_child(program: &Path, args: &[&str]) -> Result<String, BoxError> {
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
        return Err(format!("kcache-bench-counted {args:?} failed ({})", out.status).into());
    }
    let text = String::from_utf8(out.stdout)?;
    Ok(text.lines().last().unwrap_or_default().to_owned())
}

/// What one round of one row gave.
#[derive(Debug, Clone, Copy)]
struct Run {
    timed: Timed,
    counted: Counted,
    /// The server's CPU time while the timed client synced.
    server_cpu: Duration,
}

/// Runs the timed client of `row` in a child process (`current_exe client KEY ...`) and drives
/// the burst between it and the server.
async fn timed_child(
    row: &Row,
    server: &mut server::Server,
    pods: usize,
    updates: usize,
) -> Result<(Timed, Duration), BoxError> {
    let cpu_before = server.cpu().await?;
    let (pods, updates_text) = (pods.to_string(), updates.to_string());
    let mut child = Child::spawn(&[
        "client",
        row.key,
        "--url",
        &server.url,
        "--pods",
        &pods,
        "--updates",
        &updates_text,
    ])?;
    let labelled = |e: BoxError| -> BoxError { format!("{}: {e}", row.label).into() };
    child.expect("synced").await.map_err(labelled)?;
    let server_cpu = server.cpu().await?.saturating_sub(cpu_before);
    eprintln!(
        "  server: {:.2} s of CPU while the client synced",
        server_cpu.as_secs_f64()
    );
    server.prepare(updates).await?;
    child.say("go").await?;
    child.expect("started").await.map_err(labelled)?;
    server.release().await?;
    let timed = Timed::parse(&child.expect("done").await.map_err(labelled)?)?;
    child.finish(None).await;
    Ok((timed, server_cpu))
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
    events: Figure,
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
            events: Figure::of(runs, 0, |r| r.timed.events_per_sec),
        }
    }
}

async fn bench(args: &cli::Args) -> Result<(), BoxError> {
    let counted = counted_program()?;
    let floor_pods = args.pods.min(20_000);
    eprintln!("decode floor: serde_json into k8s-openapi Pod, one core ...");
    let speeds = floor::speeds(args.seed, floor_pods)?;
    let weights = floor::Bytes::parse(
        &counting_child(
            &counted,
            &[
                "floor-bytes",
                "--seed",
                &args.seed.to_string(),
                "--pods",
                &floor_pods.to_string(),
            ],
        )
        .await?,
    )?;
    let chosen: Vec<&Row> = ROWS
        .iter()
        .filter(|r| args.only.is_empty() || args.only.iter().any(|o| o == r.key))
        .collect();
    // Rounds of every row in turn, so that a noisy spell of the machine hits all rows alike.
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); chosen.len()];
    for round in 1..=args.runs {
        for (row, done) in chosen.iter().zip(&mut runs) {
            eprintln!(
                "{} (round {round} of {}): {} pods, then {} updates ...",
                row.label, args.runs, args.pods, args.updates
            );
            // A fresh server per row: same seed, same workload, same resource versions.
            let mut server = server::Server::spawn(args.pods, args.updates, args.seed).await?;
            let bytes = Counted::parse(
                &counting_child(
                    &counted,
                    &[
                        "client",
                        row.key,
                        "--url",
                        &server.url,
                        "--pods",
                        &args.pods.to_string(),
                    ],
                )
                .await?,
            )?;
            // The counting client's watch must be gone before the timed client's is waited for.
            if !server.wait_no_watchers(Duration::from_secs(10)).await? {
                return Err("the counting client's watch is still open on the server".into());
            }
            let (timed, server_cpu) =
                timed_child(row, &mut server, args.pods, args.updates).await?;
            server.quit().await;
            done.push(Run {
                timed,
                counted: bytes,
                server_cpu,
            });
        }
    }
    let rows: Vec<(&Row, Summary)> = chosen
        .iter()
        .copied()
        .zip(&runs)
        .map(|(row, r)| (row, Summary::of(r)))
        .collect();
    let (base_row, base) = rows.first().ok_or("no client ran")?;
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

    println!();
    println!(
        "{} realistic pods, {} updates, seed {}; {}",
        args.pods,
        args.updates,
        args.seed,
        if args.runs > 1 {
            format!("median of {} runs per row (range in brackets)", args.runs)
        } else {
            "one run per row".to_owned()
        }
    );
    println!(
        "timed in plain processes ({} allocator); RSS less the client process's {baseline_rss:.0} MB before its start; \
         KB/object from a separate run with a counting allocator; the server used at most {server_cpu:.2} s of CPU during a sync",
        if cfg!(feature = "mimalloc") {
            "mimalloc"
        } else {
            "system"
        }
    );
    println!(
        "decode floor (bare serde_json, one core): {:.0} pods/s, {:.0} MB/s",
        speeds.pods_per_sec, speeds.mb_per_sec
    );
    println!(
        "a decoded Pod (serde_json::from_slice, in an Arc) holds {:.1} KB; {:.1} KB when decoded with exact Vec capacities (via serde_json::Value)",
        weights.decoded_per_pod / 1e3,
        weights.exact_per_pod / 1e3
    );
    println!(
        "decoding into a cache of {floor_pods} pods, replacing versions: {:.0} pods/s with the old ones freed on the same thread, {:.0} pods/s freed on another thread ({:.2}x)",
        speeds.cache_pods_per_sec,
        speeds.cache_cross_thread_pods_per_sec,
        speeds.cache_cross_thread_pods_per_sec / speeds.cache_pods_per_sec
    );
    println!();
    let vs = "vs first";
    println!(
        "| client | initial sync | {vs} | sync CPU | {vs} | sync peak RSS MB | {vs} | steady RSS MB | heap KB/object | watch events/s | {vs} | vs floor |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (row, s) in &rows {
        println!(
            "| {} | {:.2} s{} | {:.2}x | {:.2} s{} | {:.2}x | {:.0}{} | {:.2}x | {:.0} | {:.1} | {:.0}{} | {:.2}x | {:.2}x |",
            row.label,
            s.sync.median,
            s.sync.range,
            s.sync.median / base.sync.median,
            s.sync_cpu.median,
            s.sync_cpu.range,
            s.sync_cpu.median / base.sync_cpu.median,
            s.peak.median,
            s.peak.range,
            s.peak.median / base.peak.median,
            s.steady.median,
            s.kb_per_object.median,
            s.events.median,
            s.events.range,
            s.events.median / base.events.median,
            s.events.median / speeds.pods_per_sec,
        );
    }
    println!();
    println!(
        "Ratios are against \"{}\". Time and memory ratios below 1 favour the row; events/s ratios above 1 do.",
        base_row.label
    );
    println!(
        "The rows over kube-rs's Client (kube-rs, kcache-kube, kcache-kube-paged, compact-kube) share one kube::Config: kube-rs's default, retry layer on."
    );
    println!(
        "Lister get/list costs: cargo bench --manifest-path xtask/bench/Cargo.toml --bench lister"
    );
    Ok(())
}
