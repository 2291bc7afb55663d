//! `cargo xtask bench --soak MINUTES`: memory over time under steady churn.
//!
//! One fake API server (`soak-serve`, a child) holds `--pods` pods (a fifth heavy by default)
//! and changes them at `--rate` changes per second, adds and deletes balanced, for the whole
//! run. Every row's client runs in a plain process (resident memory) and, for the rows that
//! have one, in a counting process too (`kcache-bench-counted`: live heap bytes); all of them
//! watch the same server at the same time, and each prints a sample every `--interval` seconds
//! (see `soak_client.rs`). When the time is up the churn stops, every client must hold exactly
//! the server's pods, and the run prints:
//!
//! - a summary per row: resident memory and heap after the warm-up (the first five minutes, or
//!   a third of a shorter run) and at the end, their growth, per cached pod, RSS over heap (how
//!   much the allocator holds beyond what is live), the ratio to the first row, CPU and the
//!   events the handler saw per second;
//! - a table of every row's RSS and heap each minute, with the server's RSS;
//! - `soak.svg` (RSS solid, heap dashed, cached objects below) and `soak.csv` (every sample)
//!   in `--out` (default `target/soak` of the bench's workspace).
//!
//! Each figure at a point in time is the median of the samples of the minute before it, so that
//! one sample taken between a burst of allocations and their frees does not decide it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use crate::child::Child;
use crate::plot::{self, Chart, Line};
use crate::procfs::Resident;
use crate::server::Server;
use crate::setup::Transport;
use crate::soak_client::{SoakClient, SoakRow};
use crate::soak_serve::Churn;

type BoxError = Box<dyn std::error::Error>;

/// What the soak runs.
#[derive(Debug, Clone)]
pub struct Options {
    pub minutes: f64,
    pub churn: Churn,
    pub interval: Duration,
    pub transport: Transport,
    pub rows: Vec<&'static SoakRow>,
    pub out: PathBuf,
}

/// One sample of one process, at `t` seconds after the churn started.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    t: f64,
    cached: usize,
    seen: usize,
    rss: usize,
    heap: usize,
    cpu: f64,
    queued: usize,
    resident: Resident,
}

impl Sample {
    fn parse(t: f64, line: &str) -> Result<Self, BoxError> {
        let f = crate::child::fields(line, "sample ", 10)?;
        Ok(Self {
            t,
            cached: f[0].parse()?,
            seen: f[1].parse()?,
            rss: f[2].parse()?,
            heap: f[3].parse()?,
            cpu: f[4].parse()?,
            queued: f[5].parse()?,
            resident: Resident::parse(&f[6..])?,
        })
    }
}

/// One process of a row: plain or counting, and what it sampled.
struct Process {
    row: &'static SoakRow,
    counted: bool,
    samples: Vec<Sample>,
    /// Set when its output ended before the parent asked it to quit.
    exited: bool,
    /// Resident memory and live heap before its client started (its program and runtime).
    rss_before: usize,
    heap_before: usize,
    resident_before: Resident,
}

/// The median of `values` (0 for none).
fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        f64::midpoint(values[n / 2 - 1], values[n / 2])
    }
}

/// The median of `field` over the samples in the minute up to `t` (the last sample before `t`
/// when none falls in it).
fn at(samples: &[Sample], t: f64, field: impl Fn(&Sample) -> f64) -> f64 {
    let window: Vec<f64> = samples
        .iter()
        .filter(|s| s.t <= t + 1e-9 && s.t > t - 60.0)
        .map(&field)
        .collect();
    if window.is_empty() {
        samples.iter().rev().find(|s| s.t <= t).map_or(0.0, field)
    } else {
        median(window)
    }
}

/// `part / whole - 1` as a signed percentage.
fn growth(before: f64, after: f64) -> String {
    if before <= 0.0 {
        "-".to_owned()
    } else {
        format!("{:+.1}%", (after / before - 1.0) * 100.0)
    }
}

const MB: f64 = 1_048_576.0;

/// Runs the soak: `counted_program` is the counting program beside this one.
pub async fn run(options: &Options, counted_program: &Path) -> Result<(), BoxError> {
    let churn = options.churn;
    let (pods, rate, heavy, seed, interval) = (
        churn.pods.to_string(),
        churn.rate.to_string(),
        churn.heavy_percent.to_string(),
        churn.seed.to_string(),
        options.interval.as_secs_f64().to_string(),
    );
    eprintln!(
        "soak: {} pods ({}% heavy), {} changes/s for {} min, {}, a sample every {} s",
        churn.pods,
        churn.heavy_percent,
        churn.rate,
        options.minutes,
        options.transport.describe(),
        options.interval.as_secs_f64()
    );
    // The server is not under test: two malloc arenas keep its own fragmentation (it encodes
    // and frees every change on several threads) from taking the memory the clients are
    // measured in.
    let mut server = Server::attach(Child::spawn_program(
        &std::env::current_exe()?,
        &[
            "soak-serve",
            "--pods",
            &pods,
            "--rate",
            &rate,
            "--heavy-percent",
            &heavy,
            "--seed",
            &seed,
            "--transport",
            options.transport.name(),
        ],
        &[("MALLOC_ARENA_MAX", "2")],
    )?)
    .await?;
    let this = std::env::current_exe()?;
    let mut processes = Vec::new();
    let mut children = Vec::new();
    for &row in &options.rows {
        for counted in [false, true] {
            if counted && !row.counted {
                continue;
            }
            let program = if counted {
                counted_program
            } else {
                this.as_path()
            };
            let mut args = vec!["soak-client", row.key, "--interval", &interval];
            args.extend(server.client_args());
            let mut child = Child::spawn_program(program, &args, row.env)?;
            let line = child.expect("synced ").await?;
            let f = crate::child::fields(&line, "synced ", 7)?;
            let (secs, rss_before, heap_before): (f64, usize, usize) =
                (f[0].parse()?, f[1].parse()?, f[2].parse()?);
            let resident_before = Resident::parse(&f[3..])?;
            eprintln!(
                "  {} ({}): synced in {secs:.2} s",
                row.label,
                if counted { "counting" } else { "plain" },
            );
            processes.push(Process {
                row,
                counted,
                samples: Vec::new(),
                exited: false,
                rss_before,
                heap_before,
                resident_before,
            });
            children.push(child);
        }
    }
    let server_rss_start = rss_of(&mut server).await?;
    let reply = server.command("churn").await?;
    if reply != "churning" {
        return Err(format!("the soak server answered {reply:?} to churn").into());
    }
    let t0 = Instant::now();
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, f64, Option<String>)>();
    let mut quits = Vec::new();
    let mut readers = Vec::new();
    for (i, mut child) in children.into_iter().enumerate() {
        let (quit, mut quit_rx) = oneshot::channel::<()>();
        quits.push(quit);
        let tx = tx.clone();
        readers.push(tokio::spawn(async move {
            loop {
                let next = tokio::select! {
                    line = child.line() => Some(line.ok()),
                    _ = &mut quit_rx => None,
                };
                let Some(line) = next else {
                    child.finish(Some("quit")).await;
                    return;
                };
                match line {
                    Some(line) => {
                        let _ = tx.send((i, t0.elapsed().as_secs_f64(), Some(line)));
                    }
                    None => {
                        let _ = tx.send((i, t0.elapsed().as_secs_f64(), None));
                        let _ = quit_rx.await;
                        return;
                    }
                }
            }
        }));
    }
    drop(tx);
    let run_for = Duration::from_secs_f64(options.minutes * 60.0);
    let mut server_rss: Vec<(f64, usize)> = Vec::new();
    let mut next_report = 60.0;
    let deadline = tokio::time::Instant::from_std(t0 + run_for);
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => break,
            msg = rx.recv() => match msg {
                Some(msg) => record(&mut processes, msg)?,
                None => return Err("every soak client exited".into()),
            },
        }
        let t = t0.elapsed().as_secs_f64();
        if t >= next_report {
            let rss = rss_of(&mut server).await?;
            server_rss.push((t, rss));
            progress(&processes, t);
            eprintln!("    the soak's server: RSS {:.0} MB", rss as f64 / MB);
            next_report += 60.0;
            // A run must not get the kernel's OOM killer to pick a process of a shared machine.
            let available = crate::procfs::mem_available()?;
            if available < 2 << 30 {
                return Err(format!(
                    "soak stopped after {:.0} s: the machine has {:.1} GB available (the server holds {:.1} GB)",
                    t,
                    available as f64 / 1e9,
                    rss as f64 / 1e9
                )
                .into());
            }
        }
    }
    let stopped = server.command("stop").await?;
    let f = crate::child::fields(&stopped, "stopped ", 3)?;
    let (changes, churn_secs, server_pods): (u64, f64, usize) =
        (f[0].parse()?, f[1].parse()?, f[2].parse()?);
    eprintln!(
        "soak: the server made {changes} changes in {churn_secs:.0} s ({:.0}/s) and holds {server_pods} pods; settling",
        changes as f64 / churn_secs.max(1e-9)
    );
    // Three more samples of each process, the churn over: every cache must equal the server.
    let settle = tokio::time::Instant::now() + options.interval * 3 + Duration::from_secs(1);
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(settle) => break,
            msg = rx.recv() => match msg {
                Some(msg) => record(&mut processes, msg)?,
                None => break,
            },
        }
    }
    let server_rss_end = rss_of(&mut server).await?;
    for quit in quits {
        let _ = quit.send(());
    }
    for reader in readers {
        let _ = reader.await;
    }
    server.quit().await;

    let mut report = String::new();
    summary(&mut report, options, &processes, churn_secs, server_pods)?;
    split(&mut report, &processes, churn_secs);
    let _ = writeln!(
        report,
        "\nThe soak's server: {:.0} MB resident before the churn, {:.0} MB after it; {changes} changes in {churn_secs:.0} s.",
        server_rss_start as f64 / MB,
        server_rss_end as f64 / MB
    );
    over_time(&mut report, &processes, &server_rss, churn_secs);
    println!("{report}");
    std::fs::create_dir_all(&options.out)?;
    let svg = options.out.join("soak.svg");
    std::fs::write(&svg, plot::render(&charts(&processes, churn_secs)))?;
    let csv = options.out.join("soak.csv");
    std::fs::write(&csv, samples_csv(&processes))?;
    println!("Plot: {}\nSamples: {}", svg.display(), csv.display());
    let diverged: Vec<String> = processes
        .iter()
        .filter_map(|p| {
            let last = p.samples.last().copied().unwrap_or_default();
            let problem = if p.exited {
                "exited during the soak".to_owned()
            } else if last.cached != server_pods {
                format!(
                    "caches {} pods, the server holds {server_pods}",
                    last.cached
                )
            } else if last.queued != 0 {
                format!(
                    "{} keys still in its work queue after the churn",
                    last.queued
                )
            } else {
                return None;
            };
            Some(format!("{} ({}): {problem}", p.row.label, kind(p)))
        })
        .collect();
    if diverged.is_empty() {
        Ok(())
    } else {
        Err(format!("soak: {}", diverged.join("; ")).into())
    }
}

async fn rss_of(server: &mut Server) -> Result<usize, BoxError> {
    let reply = server.command("rss").await?;
    Ok(crate::child::fields(&reply, "rss ", 1)?[0].parse()?)
}

fn kind(p: &Process) -> &'static str {
    if p.counted { "counting" } else { "plain" }
}

/// Files one line from process `i`.
fn record(
    processes: &mut [Process],
    (i, t, line): (usize, f64, Option<String>),
) -> Result<(), BoxError> {
    let p = processes.get_mut(i).ok_or("a sample from no process")?;
    match line {
        Some(line) => p.samples.push(Sample::parse(t, &line)?),
        None => {
            if !p.exited {
                eprintln!("  {} ({}): exited", p.row.label, kind(p));
            }
            p.exited = true;
        }
    }
    Ok(())
}

/// One line per process on stderr: where it stands at `t`.
fn progress(processes: &[Process], t: f64) {
    eprintln!("  {:.0} min:", t / 60.0);
    for p in processes {
        if let Some(s) = p.samples.last() {
            eprintln!(
                "    {:<58} {:>8} cached, RSS {:>6.0} MB, heap {:>6.0} MB, CPU {:>7.1} s",
                format!("{} ({})", p.row.label, kind(p)),
                s.cached,
                s.rss as f64 / MB,
                s.heap as f64 / MB,
                s.cpu
            );
        }
    }
}

/// The warm-up: the first five minutes, or a third of a shorter run.
fn warm_up(churn_secs: f64) -> f64 {
    (churn_secs / 3.0).min(300.0)
}

/// The samples of the counting process of a row running `client` (its heap), if there is one.
fn heap_source(processes: &[Process], client: SoakClient) -> Option<&Process> {
    processes
        .iter()
        .find(|p| p.counted && p.row.client == client && p.row.env.is_empty() && !p.row.trim)
}

/// What the summary holds for one row.
struct Figures {
    rss_warm: f64,
    rss_end: f64,
    heap_warm: f64,
    heap_end: f64,
    cached: f64,
    /// Resident memory and heap of the processes before their clients started.
    rss_before: f64,
    heap_before: f64,
}

impl Figures {
    /// What the client holds resident at the end, beyond its process before it started.
    fn client_rss(&self) -> f64 {
        (self.rss_end - self.rss_before).max(1.0)
    }

    /// What the client holds on the heap at the end, beyond its process before it started.
    fn client_heap(&self) -> f64 {
        (self.heap_end - self.heap_before).max(1.0)
    }
}

/// Minutes, with a decimal under ten.
fn minutes(secs: f64) -> String {
    let m = secs / 60.0;
    if m < 10.0 {
        format!("{m:.1}")
    } else {
        format!("{m:.0}")
    }
}

fn figures(processes: &[Process], plain: &Process, churn_secs: f64) -> Figures {
    let warm = warm_up(churn_secs);
    let heap = heap_source(processes, plain.row.client);
    let heap_at = |t: f64| heap.map_or(0.0, |h| at(&h.samples, t, |s| s.heap as f64));
    Figures {
        rss_warm: at(&plain.samples, warm, |s| s.rss as f64),
        rss_end: at(&plain.samples, churn_secs, |s| s.rss as f64),
        heap_warm: heap_at(warm),
        heap_end: heap_at(churn_secs),
        cached: at(&plain.samples, churn_secs, |s| s.cached as f64),
        rss_before: plain.rss_before as f64,
        heap_before: heap.map_or(0.0, |h| h.heap_before as f64),
    }
}

/// The range of the plain processes' resident memory before their clients started.
fn baselines(processes: &[Process]) -> String {
    let rss: Vec<f64> = processes
        .iter()
        .filter(|p| !p.counted)
        .map(|p| p.rss_before as f64 / MB)
        .collect();
    let lo = rss.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = rss.iter().copied().fold(0.0, f64::max);
    if rss.is_empty() {
        "none ran".to_owned()
    } else {
        format!("{lo:.0}-{hi:.0} MB resident")
    }
}

/// The summary table and the targets of the default rows.
fn summary(
    out: &mut String,
    options: &Options,
    processes: &[Process],
    churn_secs: f64,
    server_pods: usize,
) -> Result<(), BoxError> {
    let churn = options.churn;
    let warm = warm_up(churn_secs);
    let _ = writeln!(
        out,
        "Soak: {} pods ({}% heavy), {} changes/s (about 82% updates, 9% deletes, 9% creates), {:.0} min, {}. RSS from plain processes, heap from counting ones; each figure is the median of the minute before it. Per pod and RSS / heap: the process at the end less the process before its client started (its program and runtime: {}).\n",
        churn.pods,
        churn.heavy_percent,
        churn.rate,
        churn_secs / 60.0,
        options.transport.describe(),
        baselines(processes)
    );
    let _ = writeln!(
        out,
        "| client | cached at end | RSS at {} min MB | RSS at end MB | RSS growth | heap at {} min MB | heap at end MB | heap growth | RSS KB/pod | heap KB/pod | RSS / heap | RSS vs first | CPU, % of a core | handler events/s |",
        minutes(warm),
        minutes(warm)
    );
    let _ = writeln!(
        out,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    let plains: Vec<&Process> = processes.iter().filter(|p| !p.counted).collect();
    let first_rss = plains
        .first()
        .map_or(0.0, |p| figures(processes, p, churn_secs).rss_end);
    let mut checks = Vec::new();
    for p in &plains {
        let f = figures(processes, p, churn_secs);
        let start = p.samples.first().copied().unwrap_or_default();
        let end = p
            .samples
            .iter()
            .rev()
            .find(|s| s.t <= churn_secs)
            .copied()
            .unwrap_or_default();
        let span = (end.t - start.t).max(1e-9);
        let cpu = (end.cpu - start.cpu) / span * 100.0;
        let events = (end.seen.saturating_sub(start.seen)) as f64 / span;
        let per_pod = |bytes: f64| bytes / f.cached.max(1.0) / 1e3;
        let has_heap = f.heap_end > 0.0;
        let heap_cell = |v: f64| {
            if has_heap {
                format!("{:.0}", v / MB)
            } else {
                "-".to_owned()
            }
        };
        let ratio = if has_heap {
            format!("{:.2}", f.client_rss() / f.client_heap())
        } else {
            "-".to_owned()
        };
        let _ = writeln!(
            out,
            "| {} | {:.0} | {:.0} | {:.0} | {} | {} | {} | {} | {:.1} | {} | {} | {:.2}x | {:.0}% | {:.0} |",
            p.row.label,
            f.cached,
            f.rss_warm / MB,
            f.rss_end / MB,
            growth(f.rss_warm, f.rss_end),
            heap_cell(f.heap_warm),
            heap_cell(f.heap_end),
            if has_heap {
                growth(f.heap_warm, f.heap_end)
            } else {
                "-".to_owned()
            },
            per_pod(f.client_rss()),
            if has_heap {
                format!("{:.1}", per_pod(f.client_heap()))
            } else {
                "-".to_owned()
            },
            ratio,
            f.rss_end / first_rss.max(1.0),
            cpu,
            events
        );
        if matches!(p.row.key, "kcache" | "compact" | "runner") {
            checks.push((p.row, f));
        }
    }
    let kube_rss = plains
        .iter()
        .find(|p| p.row.key == "kube-rs")
        .map(|p| figures(processes, p, churn_secs).rss_end);
    let _ = writeln!(
        out,
        "\nAgainst the targets (RSS after the warm-up grows <= 10%, heap <= 2%, RSS / heap <= 1.3; kcache's defaults <= 0.65x kube-rs's RSS at the end):"
    );
    let mark = |ok: bool| if ok { "✓" } else { "✗" };
    for (row, f) in checks {
        let rss_growth = f.rss_end / f.rss_warm.max(1.0) - 1.0;
        let heap_growth = f.heap_end / f.heap_warm.max(1.0) - 1.0;
        let ratio = f.client_rss() / f.client_heap();
        let mut line = format!(
            "- {}: RSS growth {:+.1}% {}, heap growth {:+.1}% {}, RSS / heap {:.2} {}",
            row.label,
            rss_growth * 100.0,
            mark(rss_growth <= 0.10),
            heap_growth * 100.0,
            mark(heap_growth <= 0.02),
            ratio,
            mark(ratio <= 1.3)
        );
        if row.key == "kcache"
            && let Some(kube) = kube_rss
        {
            let vs = f.rss_end / kube.max(1.0);
            let _ = write!(line, ", RSS {vs:.2}x kube-rs's {}", mark(vs <= 0.65));
        }
        let _ = writeln!(out, "{line}");
    }
    if processes
        .iter()
        .any(|p| p.samples.last().map_or(0, |s| s.cached) != server_pods)
    {
        let _ = writeln!(
            out,
            "\nSome cache does not hold the server's {server_pods} pods after the churn (see the error below)."
        );
    }
    Ok(())
}

/// What each plain process's client added to its resident memory by the end, and where it is:
/// the program's and libraries' pages it touched, malloc's chunks in use (against the live heap
/// its counting process saw, the rest is malloc's header and rounding on each block) and the
/// free memory malloc keeps in its arenas. What anonymous memory lies outside malloc is not
/// derived: the free figure is an upper bound of what of it is resident, so the difference can
/// read below zero.
fn split(out: &mut String, processes: &[Process], churn_secs: f64) {
    let _ = writeln!(
        out,
        "\nWhere each client's resident memory is at the end (the process at the end less the process before its client started; MB, medians of the last minute; malloc's figures from glibc's `mallinfo2`, free memory an upper bound of what of it is resident):\n\n| client | RSS | file-backed (program) | anonymous | malloc in use | of which heap | malloc's header and rounding, bytes a pod | malloc free | RSS / heap | anonymous / heap | malloc in use / heap |\n|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for p in processes.iter().filter(|p| !p.counted) {
        let end = |field: fn(&Sample) -> usize| at(&p.samples, churn_secs, |s| field(s) as f64);
        let before = p.resident_before;
        let rss = end(|s| s.rss) - p.rss_before as f64;
        let file = end(|s| s.resident.file) - before.file as f64;
        let anon = end(|s| s.resident.anon) - before.anon as f64;
        let in_use = end(|s| s.resident.malloc_in_use) - before.malloc_in_use as f64;
        let free = end(|s| s.resident.malloc_free) - before.malloc_free as f64;
        let counted = heap_source(processes, p.row.client);
        let heap = counted.map(|h| {
            (
                at(&h.samples, churn_secs, |s| s.heap as f64) - h.heap_before as f64,
                at(&h.samples, churn_secs, |s| s.resident.malloc_in_use as f64)
                    - h.resident_before.malloc_in_use as f64,
            )
        });
        let cell = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"));
        let ratio =
            |v: f64| heap.map_or_else(|| "-".to_owned(), |(h, _)| format!("{:.2}", v / h.max(1.0)));
        // The counting process's malloc holds the same blocks its counter counts: what its
        // chunks hold beyond the bytes asked for is glibc's header and rounding.
        let overhead = counted.zip(heap).map(|(h, (live, in_use))| {
            let blocks = at(&h.samples, churn_secs, |s| s.cached as f64).max(1.0);
            (in_use - live) / blocks
        });
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} | {:.1} | {} | {} | {} |",
            p.row.label,
            rss / MB,
            file / MB,
            anon / MB,
            in_use / MB,
            cell(heap.map(|(h, _)| h / MB)),
            overhead.map_or_else(|| "-".to_owned(), |o| format!("{o:.0}")),
            free / MB,
            ratio(rss),
            ratio(anon),
            ratio(in_use),
        );
    }
}

/// Every row's RSS (and heap, for counting processes) at the end of each minute.
fn over_time(
    out: &mut String,
    processes: &[Process],
    server_rss: &[(f64, usize)],
    churn_secs: f64,
) {
    let mut header = String::from("| minute | server RSS MB |");
    let mut rule = String::from("|---|---|");
    for p in processes {
        let what = if p.counted { "heap" } else { "RSS" };
        let _ = write!(header, " {} {what} MB |", p.row.key);
        rule.push_str("---|");
    }
    let _ = writeln!(
        out,
        "\nOver time (medians of each minute):\n\n{header}\n{rule}"
    );
    let minutes = (churn_secs / 60.0).floor() as usize;
    for m in 1..=minutes.max(1) {
        let t = (m as f64 * 60.0).min(churn_secs);
        let server = server_rss
            .iter()
            .rev()
            .find(|(at, _)| *at <= t + 1.0)
            .map_or_else(
                || "-".to_owned(),
                |(_, rss)| format!("{:.0}", *rss as f64 / MB),
            );
        let mut line = format!("| {m} | {server} |");
        for p in processes {
            let v = at(&p.samples, t, |s| {
                (if p.counted { s.heap } else { s.rss }) as f64
            });
            let _ = write!(line, " {:.0} |", v / MB);
        }
        let _ = writeln!(out, "{line}");
    }
}

/// The plot: RSS (plain processes, solid) and heap (counting ones, dashed) in MB, and cached
/// objects, over minutes.
fn charts(processes: &[Process], churn_secs: f64) -> Vec<Chart> {
    let mut memory = Vec::new();
    let mut cached = Vec::new();
    let mut colors: Vec<&'static str> = Vec::new();
    let mut keys: Vec<&str> = Vec::new();
    for p in processes {
        let i = keys
            .iter()
            .position(|k| *k == p.row.key)
            .unwrap_or_else(|| {
                keys.push(p.row.key);
                colors.push(plot::COLORS[(keys.len() - 1) % plot::COLORS.len()]);
                keys.len() - 1
            });
        let color = colors[i];
        let points = |f: &dyn Fn(&Sample) -> f64| -> Vec<(f64, f64)> {
            p.samples
                .iter()
                .filter(|s| s.t <= churn_secs)
                .map(|s| (s.t / 60.0, f(s)))
                .collect()
        };
        if p.counted {
            memory.push(Line {
                label: format!("{} heap", p.row.key),
                color,
                dashed: true,
                points: points(&|s| s.heap as f64 / MB),
            });
        } else {
            memory.push(Line {
                label: format!("{} RSS", p.row.key),
                color,
                dashed: false,
                points: points(&|s| s.rss as f64 / MB),
            });
            cached.push(Line {
                label: p.row.key.to_owned(),
                color,
                dashed: false,
                points: points(&|s| s.cached as f64),
            });
        }
    }
    vec![
        Chart {
            title: "Resident memory (solid) and live heap (dashed) under churn".into(),
            x_label: "minutes since the churn started".into(),
            y_label: "MB".into(),
            lines: memory,
        },
        Chart {
            title: "Objects cached".into(),
            x_label: "minutes since the churn started".into(),
            y_label: "pods".into(),
            lines: cached,
        },
    ]
}

/// Every sample as CSV.
fn samples_csv(processes: &[Process]) -> String {
    let mut out = String::from(
        "seconds,row,process,cached,seen,rss_bytes,heap_bytes,cpu_seconds,queued,anon_bytes,file_bytes,malloc_in_use_bytes,malloc_free_bytes\n",
    );
    for p in processes {
        for s in &p.samples {
            let _ = writeln!(
                out,
                "{:.1},{},{},{},{},{},{},{:.2},{},{},{},{},{}",
                s.t,
                p.row.key,
                kind(p),
                s.cached,
                s.seen,
                s.rss,
                s.heap,
                s.cpu,
                s.queued,
                s.resident.anon,
                s.resident.file,
                s.resident.malloc_in_use,
                s.resident.malloc_free
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t: f64, rss: usize) -> Sample {
        Sample {
            t,
            rss,
            ..Sample::default()
        }
    }

    #[test]
    fn a_point_in_time_is_the_median_of_the_minute_before_it() {
        let samples: Vec<Sample> = (0..=24)
            .map(|i| sample(f64::from(i) * 5.0, i as usize))
            .collect();
        // Samples 13..=24 (65 s to 120 s) fall in the minute before 120 s.
        assert_eq!(at(&samples, 120.0, |s| s.rss as f64), 18.5);
        // Before any full minute: what there is.
        assert_eq!(at(&samples, 10.0, |s| s.rss as f64), 1.0);
    }

    #[test]
    fn growth_is_signed_and_empty_without_a_start() {
        assert_eq!(growth(100.0, 110.0), "+10.0%");
        assert_eq!(growth(100.0, 95.0), "-5.0%");
        assert_eq!(growth(0.0, 5.0), "-");
    }
}
