//! The command line shared by the bench's programs: the parent's options and the words of its
//! children (`serve`, `client KEY`, `floor-bytes`).

use crate::clients::ROWS;

/// What a program of the bench was asked to do.
#[derive(Debug, Clone)]
pub struct Args {
    /// `serve`: be the fake API server (a child of the bench).
    pub serve: bool,
    /// `client KEY`: run that one row's client (a child of the bench).
    pub client: Option<String>,
    /// `floor-bytes`: weigh decoded pods (the counting child).
    pub floor_bytes: bool,
    pub url: String,
    pub pods: usize,
    pub updates: usize,
    pub seed: u64,
    /// Which rows to run (all when empty).
    pub only: Vec<String>,
    /// Rounds of every row; the table gives medians.
    pub runs: usize,
}

/// The usage text.
pub fn usage() -> String {
    let keys: Vec<&str> = ROWS.iter().map(|r| r.key).collect();
    format!(
        "usage: kcache-bench [--pods N (20000)] [--updates N (100000)] [--seed S (7)] [--only ROWS] [--runs N (1)]\n\
         \n\
         Every row runs against a fresh fake API server: first in a process with a counting allocator\n\
         (heap bytes per cached object), then in a plain process (initial sync, peak and steady RSS,\n\
         watch events/s). Ratios are against the first row that ran.\n\
         \n\
         --only ROWS  comma-separated among {} (default: all)\n\
         --runs N     N rounds of every row, in turn; the table gives each row's median and range\n\
         \n\
         Lister costs (get and list, kcache against kube-rs's store) are a criterion bench:\n\
         cargo bench --manifest-path xtask/bench/Cargo.toml --bench lister",
        keys.join(", ")
    )
}

/// Parses `std::env::args`; `Err` holds the message to print (the usage for `--help`).
pub fn parse() -> Result<Args, String> {
    let mut args = Args {
        serve: false,
        client: None,
        floor_bytes: false,
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
            "floor-bytes" => args.floor_bytes = true,
            "--url" => args.url = value("--url")?,
            "--pods" => args.pods = number("--pods", value("--pods")?)?,
            "--updates" => args.updates = number("--updates", value("--updates")?)?,
            "--seed" => args.seed = number("--seed", value("--seed")?)?,
            "--runs" => args.runs = number::<usize>("--runs", value("--runs")?)?.max(1),
            "--only" => {
                args.only = value("--only")?.split(',').map(str::to_owned).collect();
                if let Some(bad) = args.only.iter().find(|k| !ROWS.iter().any(|r| r.key == *k)) {
                    return Err(format!("--only: unknown row {bad:?}\n\n{}", usage()));
                }
            }
            "-h" | "--help" => return Err(usage()),
            other => return Err(format!("unknown argument {other:?}; try --help")),
        }
    }
    Ok(args)
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
