//! `cargo xtask bench`: kcache and kube-rs against the same fake API server and workload, in one
//! run, with bare `serde_json` decoding of the same pods as the floor.
//!
//! kcache-bench [--pods N] [--updates N] [--seed S]
//!
//! The fake server runs in a child process (`kcache-bench serve ...`) so that only the client's
//! allocations and CPU are measured, and each client runs in a child of its own
//! (`kcache-bench client KEY ...`) so that each starts from a fresh heap: a client run after
//! another in the same process finds memory already paged in. Memory comes from a counting
//! allocator.

mod alloc;
mod clients;
mod floor;
mod server;

use clients::{Figures, Which};

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

struct Args {
    serve: bool,
    /// `client KEY`: run that one client (a child of the bench).
    client: Option<String>,
    url: String,
    pods: usize,
    updates: usize,
    seed: u64,
    /// Which rows to run (all when empty).
    only: Vec<String>,
    /// Rounds of every row; the table gives medians.
    runs: usize,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        serve: false,
        client: None,
        url: String::new(),
        pods: 20_000,
        updates: 100_000,
        seed: 7,
        only: Vec::new(),
        runs: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "serve" => args.serve = true,
            "client" => args.client = Some(value("client")?),
            "--url" => args.url = value("--url")?,
            "--pods" => {
                args.pods = value("--pods")?
                    .parse()
                    .map_err(|e| format!("--pods: {e}"))?
            }
            "--updates" => {
                args.updates = value("--updates")?
                    .parse()
                    .map_err(|e| format!("--updates: {e}"))?
            }
            "--seed" => {
                args.seed = value("--seed")?
                    .parse()
                    .map_err(|e| format!("--seed: {e}"))?
            }
            "--runs" => {
                args.runs = value("--runs")?
                    .parse::<usize>()
                    .map_err(|e| format!("--runs: {e}"))?
                    .max(1)
            }
            "--only" => {
                args.only = value("--only")?.split(',').map(str::to_owned).collect();
            }
            "-h" | "--help" => {
                return Err(
                    "usage: kcache-bench [--pods N (20000)] [--updates N (100000)] [--seed S] [--only ROWS] [--runs N (1)]\n\
                     ROWS: comma-separated among kube-rs, kube-rs-thread, kcache, kcache-thread, skipped,\n\
                     skipped-thread, exact-thread, lean-thread (default: all)\n\
                     --runs N: N rounds of every row, in turn; the table gives each row's median and range"
                        .into(),
                );
            }
            other => return Err(format!("unknown argument {other:?}; try --help")),
        }
    }
    Ok(args)
}

/// The range of a row's sync times and event rates over its runs, printed after the median
/// (empty for one run).
struct Spread {
    sync: String,
    events: String,
}

impl Spread {
    fn of(runs: &[Figures]) -> Self {
        if runs.len() < 2 {
            return Self {
                sync: String::new(),
                events: String::new(),
            };
        }
        let (mut s_lo, mut s_hi) = (f64::MAX, 0.0_f64);
        let (mut e_lo, mut e_hi) = (f64::MAX, 0.0_f64);
        for f in runs {
            s_lo = s_lo.min(f.sync.as_secs_f64());
            s_hi = s_hi.max(f.sync.as_secs_f64());
            e_lo = e_lo.min(f.events_per_sec);
            e_hi = e_hi.max(f.events_per_sec);
        }
        Self {
            sync: format!(" [{s_lo:.2}-{s_hi:.2}]"),
            events: format!(" [{e_lo:.0}-{e_hi:.0}]"),
        }
    }
}

fn mb(bytes: usize) -> f64 {
    bytes as f64 / 1e6
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
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

/// `client KEY` mode: one client against the server at `--url`, driven by the parent.
async fn client(key: &str, args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let which = Which::all()
        .find(|w| w.key() == key)
        .ok_or_else(|| format!("unknown client {key:?}"))?;
    let mut coordinator = clients::Coordinator::new();
    let figures = clients::run(which, &args.url, args.pods, args.updates, &mut coordinator).await?;
    coordinator.done(&figures).await?;
    Ok(())
}

async fn bench(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    eprintln!("decode floor: serde_json into k8s-openapi Pod, one core ...");
    let floor = floor::decode_floor(args.seed, args.pods.min(20_000))?;
    let (floor_pods, floor_mb) = (floor.pods_per_sec, floor.mb_per_sec);
    let chosen: Vec<Which> = Which::all()
        .filter(|w| args.only.is_empty() || args.only.iter().any(|o| o == w.key()))
        .collect();
    // Rounds of every row in turn, so that a noisy spell of the machine hits all rows alike.
    let mut runs: Vec<Vec<Figures>> = vec![Vec::new(); chosen.len()];
    for round in 1..=args.runs {
        for (which, done) in chosen.iter().zip(&mut runs) {
            eprintln!(
                "{} (round {round} of {}): {} pods, then {} updates ...",
                which.label(),
                args.runs,
                args.pods,
                args.updates
            );
            // A fresh server per client: same seed, same workload, same resource versions.
            let mut server = server::Server::spawn(args.pods, args.updates, args.seed).await?;
            let figures =
                clients::run_in_child(*which, &mut server, args.pods, args.updates).await?;
            server.quit().await;
            done.push(figures);
        }
    }
    let rows: Vec<(Which, Figures, Spread)> = chosen
        .into_iter()
        .zip(runs)
        .map(|(w, r)| (w, clients::median(&r), Spread::of(&r)))
        .collect();
    // Ratios are against kube-rs when it ran, else against the first row.
    let kube = rows
        .iter()
        .find(|(w, _, _)| *w == Which::KubeRs { own_thread: false })
        .or_else(|| rows.first())
        .map(|(_, f, _)| *f)
        .ok_or("no client ran")?;

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
        "decode floor (bare serde_json, one core): {floor_pods:.0} pods/s, {floor_mb:.0} MB/s"
    );
    println!(
        "a decoded Pod (serde_json::from_slice, in an Arc) holds {:.1} KB; {:.1} KB when decoded with exact Vec capacities (via serde_json::Value)",
        floor.decoded_bytes_per_pod / 1e3,
        floor.exact_bytes_per_pod / 1e3
    );
    println!(
        "decoding into a cache of {} pods, replacing versions: {:.0} pods/s with the old ones freed on the same thread, {:.0} pods/s freed on another thread ({:.2}x)",
        args.pods.min(20_000),
        floor.cache_pods_per_sec,
        floor.cache_cross_thread_pods_per_sec,
        floor.cache_cross_thread_pods_per_sec / floor.cache_pods_per_sec
    );
    println!();
    println!(
        "| client | initial sync | vs kube-rs | sync peak MB | vs kube-rs | steady KB/pod | watch events/s | vs kube-rs | vs floor |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (which, f, spread) in &rows {
        println!(
            "| {} | {:.2} s{} | {:.2}x | {:.0} | {:.2}x | {:.1} | {:.0}{} | {:.2}x | {:.2}x |",
            which.label(),
            f.sync.as_secs_f64(),
            spread.sync,
            f.sync.as_secs_f64() / kube.sync.as_secs_f64(),
            mb(f.sync_peak_bytes),
            f.sync_peak_bytes as f64 / kube.sync_peak_bytes as f64,
            f.steady_bytes as f64 / f.cached as f64 / 1e3,
            f.events_per_sec,
            spread.events,
            f.events_per_sec / kube.events_per_sec,
            f.events_per_sec / floor_pods,
        );
    }
    println!();
    println!("Time and memory ratios below 1 favour the client; events/s ratios above 1 do.");
    Ok(())
}
