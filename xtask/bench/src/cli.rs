//! The command line shared by the bench's programs: the parent's options and the words of its
//! children (`serve`, `client KEY`, `floor-speeds`, `floor-bytes`, `soak-serve`,
//! `soak-client KEY`).

use std::path::PathBuf;

use kcache_testing::workload::PodShape;

use crate::clients::{DEFAULT_ROWS, ROWS};
use crate::setup::{Frames, Scenario, Transport};
use crate::soak_client::{DEFAULT_SOAK_ROWS, SOAK_ROWS, SoakRow};

/// What a program of the bench was asked to do.
#[derive(Debug, Clone)]
pub struct Args {
    /// `serve`: be the fake API server (a child of the bench).
    pub serve: bool,
    /// `client KEY`: run that one row's client (a child of the bench).
    pub client: Option<String>,
    /// `floor-speeds`: time bare decoding of pods (a plain child).
    pub floor_speeds: bool,
    /// `floor-bytes`: weigh decoded pods (the counting child).
    pub floor_bytes: bool,
    /// `--soak MINUTES`: the soak instead of the tables (see `soak.rs`).
    pub soak: Option<f64>,
    /// `soak-serve`: be the soak's fake API server (a child).
    pub soak_serve: bool,
    /// `soak-client KEY`: run that soak row's client (a child).
    pub soak_client: Option<String>,
    /// The soak's changes per second.
    pub rate: u32,
    /// The soak's share of heavy pods, in percent.
    pub heavy_percent: u32,
    /// Seconds between a soak client's samples.
    pub interval: f64,
    /// Where the soak writes its plot and samples.
    pub out: Option<PathBuf>,
    pub url: String,
    /// The kubeconfig (written by the server child) a client over HTTPS takes its CA from.
    pub kubeconfig: Option<PathBuf>,
    pub pods: usize,
    pub updates: usize,
    /// `--heavy-updates`: the updates of the heavy shape's tables (default: a fifth of
    /// `updates`).
    pub heavy_updates: Option<usize>,
    pub seed: u64,
    /// Which rows to run ([`DEFAULT_ROWS`] when empty, every row with `all_rows`).
    pub only: Vec<String>,
    /// `--all-rows` or `--only all`: every row.
    pub all_rows: bool,
    /// Rounds of every row; the table gives medians.
    pub runs: usize,
    /// The scenarios, one table each per shape (a child takes the first).
    pub scenarios: Vec<Scenario>,
    /// The pods' shapes (a child takes the first).
    pub shapes: Vec<PodShape>,
    pub frames: Frames,
    pub transport: Transport,
}

/// The usage text.
pub fn usage() -> String {
    let keys: Vec<&str> = ROWS.iter().map(|r| r.key).collect();
    format!(
        "usage: kcache-bench [--pods N (20000)] [--updates N (100000)] [--heavy-updates N (updates/5)]\n\
         \x20                   [--seed S (7)] [--runs N (1)] [--only ROWS | --all-rows] [--scenario LIST (quiet,backlog)]\n\
         \x20                   [--shape LIST (light,heavy)] [--frames F (lines)] [--transport T (http)]\n\
         \n\
         One table per scenario and shape. In each, every row runs against a fresh fake API server:\n\
         first in a process with a counting allocator (heap bytes per cached object at sync), then\n\
         in a plain process (sync time and CPU, peak and steady RSS, watch events/s and their CPU).\n\
         Ratios are against the first row (kube-rs's default when it runs); a summary of kcache's\n\
         rows against kube-rs, with the targets met or missed, ends the run.\n\
         \n\
         --only ROWS       comma-separated among {} ('all': every row);\n\
         \x20                 default: {}\n\
         --all-rows        every row\n\
         --runs N          N rounds of every row, in turn; the table gives each row's median and range\n\
         --scenario LIST   quiet: the updates are held back until the client synced, then released\n\
         \x20                 as one burst; backlog: they are queued behind the initial state (the list\n\
         \x20                 is served as of the version before them) and pour in as the client syncs,\n\
         \x20                 timed until the last one is seen\n\
         --shape LIST      light (about 5 KB of JSON a pod), heavy (about 18 KB: more managedFields,\n\
         \x20                 containers and status); pods and updates are of the shape\n\
         --heavy-updates N the updates of the heavy tables (default: a fifth of --updates). The fake\n\
         \x20                 server keeps every update until it is sent, about 70 KB each for light\n\
         \x20                 pods and 230 KB for heavy ones (100,000 heavy updates: over 20 GB); it\n\
         \x20                 refuses to start when they would take most of the memory available\n\
         --frames F        how the server cuts watch streams: lines (64 KiB of whole lines, its\n\
         \x20                 default), lines:N, event (one event per write), split:N (N-byte writes\n\
         \x20                 cutting lines anywhere)\n\
         --transport T     http (plain HTTP/1.1), https (HTTP/2 offered: kcache's own client takes\n\
         \x20                 it, kube-rs stays on HTTP/1.1), https-h1 (HTTPS, only HTTP/1.1 offered)\n\
         \n\
         --soak MINUTES    instead of the tables: memory over time. One server keeps --pods pods\n\
         \x20                 (--heavy-percent P of them heavy, default 20) and makes --rate N changes/s\n\
         \x20                 (default 1000; adds and deletes balanced) while every row's client watches\n\
         \x20                 it, sampled every --interval S seconds (default 5); prints a summary and\n\
         \x20                 a table per minute, writes soak.svg and soak.csv to --out DIR (default\n\
         \x20                 target/soak). Rows (--only): {}; default: {}\n\
         \n\
         Lister costs (get and list, kcache against kube-rs's store) are a criterion bench:\n\
         cargo bench --manifest-path xtask/bench/Cargo.toml --bench lister",
        keys.join(", "),
        DEFAULT_ROWS.join(", "),
        SOAK_ROWS
            .iter()
            .map(|r| r.key)
            .collect::<Vec<_>>()
            .join(", "),
        DEFAULT_SOAK_ROWS.join(", ")
    )
}

/// The comma-separated `text` of option `name`, each word parsed by `parse`.
fn list<T>(name: &str, text: &str, parse: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, String> {
    let items = text
        .split(',')
        .map(|w| parse(w).ok_or_else(|| format!("{name}: unknown {w:?}; try --help")))
        .collect::<Result<Vec<T>, String>>()?;
    if items.is_empty() {
        return Err(format!("{name} needs at least one value"));
    }
    Ok(items)
}

/// Parses `std::env::args`; `Err` holds the message to print (the usage for `--help`).
pub fn parse() -> Result<Args, String> {
    let mut args = Args {
        serve: false,
        client: None,
        floor_speeds: false,
        floor_bytes: false,
        soak: None,
        soak_serve: false,
        soak_client: None,
        rate: 1000,
        heavy_percent: 20,
        interval: 5.0,
        out: None,
        url: String::new(),
        kubeconfig: None,
        pods: 20_000,
        updates: 100_000,
        heavy_updates: None,
        seed: 7,
        only: Vec::new(),
        all_rows: false,
        runs: 1,
        scenarios: vec![Scenario::Quiet, Scenario::Backlog],
        shapes: vec![PodShape::Light, PodShape::Heavy],
        frames: Frames::default(),
        transport: Transport::default(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "serve" => args.serve = true,
            "client" => args.client = Some(value("client")?),
            "floor-speeds" => args.floor_speeds = true,
            "floor-bytes" => args.floor_bytes = true,
            "soak-serve" => args.soak_serve = true,
            "soak-client" => args.soak_client = Some(value("soak-client")?),
            "--soak" => {
                let minutes: f64 = number("--soak", value("--soak")?)?;
                if !(minutes > 0.0 && minutes.is_finite()) {
                    return Err("--soak needs a positive number of minutes".to_owned());
                }
                args.soak = Some(minutes);
            }
            "--rate" => args.rate = number("--rate", value("--rate")?)?,
            "--heavy-percent" => {
                args.heavy_percent = number::<u32>("--heavy-percent", value("--heavy-percent")?)?;
                if args.heavy_percent > 100 {
                    return Err("--heavy-percent is at most 100".to_owned());
                }
            }
            "--interval" => {
                args.interval = number("--interval", value("--interval")?)?;
                if !(args.interval >= 0.1 && args.interval.is_finite()) {
                    return Err("--interval needs at least 0.1 seconds".to_owned());
                }
            }
            "--out" => args.out = Some(value("--out")?.into()),
            "--url" => args.url = value("--url")?,
            "--kubeconfig" => args.kubeconfig = Some(value("--kubeconfig")?.into()),
            "--pods" => args.pods = number("--pods", value("--pods")?)?,
            "--updates" => args.updates = number("--updates", value("--updates")?)?,
            "--heavy-updates" => {
                args.heavy_updates = Some(number("--heavy-updates", value("--heavy-updates")?)?);
            }
            "--seed" => args.seed = number("--seed", value("--seed")?)?,
            "--runs" => args.runs = number::<usize>("--runs", value("--runs")?)?.max(1),
            "--all-rows" => args.all_rows = true,
            "--only" => {
                let keys: Vec<String> = value("--only")?.split(',').map(str::to_owned).collect();
                if keys.iter().any(|k| k == "all") {
                    args.all_rows = true;
                } else if let Some(bad) = keys.iter().find(|k| {
                    !ROWS.iter().any(|r| r.key == *k) && !SOAK_ROWS.iter().any(|r| r.key == *k)
                }) {
                    return Err(format!("--only: unknown row {bad:?}\n\n{}", usage()));
                } else {
                    args.only = keys;
                }
            }
            "--scenario" => {
                args.scenarios = list("--scenario", &value("--scenario")?, Scenario::parse)?
            }
            "--shape" => args.shapes = list("--shape", &value("--shape")?, PodShape::parse)?,
            "--frames" => {
                let text = value("--frames")?;
                args.frames = Frames::parse(&text)
                    .ok_or_else(|| format!("--frames: unknown {text:?}; try --help"))?;
            }
            "--transport" => {
                let text = value("--transport")?;
                args.transport = Transport::parse(&text)
                    .ok_or_else(|| format!("--transport: unknown {text:?}; try --help"))?;
            }
            "-h" | "--help" => return Err(usage()),
            other => return Err(format!("unknown argument {other:?}; try --help")),
        }
    }
    Ok(args)
}

impl Args {
    /// The scenario a child runs: the first given.
    pub fn scenario(&self) -> Scenario {
        self.scenarios.first().copied().unwrap_or(Scenario::Quiet)
    }

    /// The shape a child serves: the first given.
    pub fn shape(&self) -> PodShape {
        self.shapes.first().copied().unwrap_or_default()
    }

    /// The updates of the tables of `shape`: `--updates`, or for heavy pods `--heavy-updates`
    /// (default a fifth of `--updates`).
    pub fn updates_of(&self, shape: PodShape) -> usize {
        if shape == PodShape::Heavy {
            self.heavy_updates.unwrap_or(self.updates / 5)
        } else {
            self.updates
        }
    }

    /// The soak's rows: those of `--only` (each must be a soak row), or the default ones.
    pub fn soak_rows(&self) -> Result<Vec<&'static SoakRow>, String> {
        let keys: Vec<&str> = if self.only.is_empty() || self.all_rows {
            DEFAULT_SOAK_ROWS.to_vec()
        } else {
            self.only.iter().map(String::as_str).collect()
        };
        keys.iter()
            .map(|k| {
                SOAK_ROWS
                    .iter()
                    .find(|r| r.key == *k)
                    .ok_or_else(|| format!("--only: {k:?} is not a soak row; try --help"))
            })
            .collect()
    }

    /// Whether the row `key` runs: among `--only`, or the default rows without it.
    pub fn runs_row(&self, key: &str) -> bool {
        if self.all_rows {
            true
        } else if self.only.is_empty() {
            DEFAULT_ROWS.contains(&key)
        } else {
            self.only.iter().any(|o| o == key)
        }
    }
}

/// The number `text` given for option `name`.
fn number<N: std::str::FromStr>(name: &str, text: String) -> Result<N, String>
where
    N::Err: std::fmt::Display,
{
    text.parse().map_err(|e| format!("{name}: {e}"))
}

/// [`parse`], or the message on stderr and exit code 2.
pub fn parse_or_exit() -> Args {
    parse().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    })
}
