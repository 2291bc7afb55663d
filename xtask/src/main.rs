//! `cargo xtask`: the project's own automation, written in Rust so it runs wherever cargo does.
//!
//! Run `cargo xtask help` for the list of tasks. Each task lives in its own module:
//! [`ci`] runs every check CI runs, [`deps`] enforces the crate layering of `ARCHITECTURE.md`,
//! [`tidy`] enforces the repository's file conventions, [`package`] packages every publishable
//! crate as crates.io would receive it, [`fuzz`] runs the fuzz targets briefly,
//! [`chaos`] runs the full-stack chaos suite for many seeds and [`bench`](mod@bench) compares kcache with
//! kube-rs (none of these three is part of `ci`, which only checks that the fuzz targets and
//! the bench program compile). [`openapi_data`] refreshes the fake API server's vendored
//! Kubernetes schemas and [`proto_data`] the protobuf field table. [`workspace`] reads the packages `ci` builds from `cargo metadata`.
//!
//! The only dependency is `serde_json` (to read `cargo metadata`), so that `cargo xtask` compiles
//! in seconds.

mod bench;
mod chaos;
mod ci;
mod deps;
mod fuzz;
mod openapi_data;
mod package;
mod proto_data;
mod readme;
mod tidy;
mod workspace;

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The usage text printed by `cargo xtask help`.
const USAGE: &str = "\
Usage: cargo xtask <TASK>

Tasks:
  ci      run every CI check in order: fmt, clippy (each package alone, all and default
          features), test, test-default, doc (defaults and docs.rs features), readme, msrv,
          fuzz and bench (checked), package, deps, tidy
  deps    check every dependency edge against the layering table (ARCHITECTURE.md)
  tidy    check file headers, package names, manifests and publishing metadata
  readme  build the README's 'Use it' dependencies and program as a user would
  package package and verify every publishable crate, dry-run their publication
          (`cargo publish --dry-run`, nothing is uploaded) and check each .crate's size
  fuzz    run each client-http fuzz target briefly (nightly; `--seconds N`, default 30)
  chaos   the full stack against the fake API server with random faults (`--seeds N`, default
          20, or `--seed S` to replay one); prints the seed of any failure
  bench   kcache and kube-rs side by side on the same fake server and workload; arguments go
          to the bench program (`--pods N`, `--updates N`, `--seed S`, `--runs N`, `--only ROWS`,
          `--scenario quiet,backlog`, `--shape light,heavy`, `--frames lines|event|split:N`,
          `--transport http|https|https-h1`; `cargo xtask bench --help` lists them)
  openapi-data
          refresh the fake API server's Kubernetes schemas from PyPI's kubernetes-validate
          (`--version V`, default 1.37.0; needs pip and python3)
  proto-data
          regenerate kcache-protobuf's field table from crates.io's k8s-pb and PyPI's
          kubernetes-validate (needs pip and python3)
  help    print this text
";

/// A task named on the command line.
///
/// New tasks get a variant here, a name in [`Task::parse`] and an arm in [`Task::run`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Task {
    /// `cargo xtask ci`.
    Ci,
    /// `cargo xtask deps`.
    Deps,
    /// `cargo xtask tidy`.
    Tidy,
    /// `cargo xtask readme`.
    Readme,
    /// `cargo xtask package`.
    Package,
    /// `cargo xtask fuzz [--seconds N]`: seconds per target.
    Fuzz(u64),
    /// `cargo xtask chaos [--seeds N | --seed S]`.
    Chaos(chaos::Seeds),
    /// `cargo xtask bench [ARGS...]`: arguments for the bench program.
    Bench(Vec<OsString>),
    /// `cargo xtask openapi-data [--version V]`: the Kubernetes version to vendor.
    OpenapiData(String),
    /// `cargo xtask proto-data`.
    ProtoData,
    /// `cargo xtask help`, `-h`, `--help`, or no task at all.
    Help,
}

impl Task {
    /// Maps a task name to its task, or `None` if no task has that name.
    fn parse(name: &str) -> Option<Self> {
        match name {
            "ci" => Some(Self::Ci),
            "deps" => Some(Self::Deps),
            "tidy" => Some(Self::Tidy),
            "readme" => Some(Self::Readme),
            "package" => Some(Self::Package),
            "fuzz" => Some(Self::Fuzz(fuzz::DEFAULT_SECONDS)),
            "chaos" => Some(Self::Chaos(chaos::Seeds::default())),
            "bench" => Some(Self::Bench(Vec::new())),
            "openapi-data" => Some(Self::OpenapiData(openapi_data::DEFAULT_VERSION.to_owned())),
            "proto-data" => Some(Self::ProtoData),
            "help" | "-h" | "--help" => Some(Self::Help),
            _ => None,
        }
    }

    /// Runs the task against the workspace at `root`.
    fn run(self, root: &Path) -> Result<(), Failure> {
        match self {
            Self::Ci => ci::run(root),
            Self::Deps => deps::run(root),
            Self::Tidy => tidy::run(root),
            Self::Readme => readme::run(root),
            Self::Package => package::run(root),
            Self::Fuzz(seconds) => fuzz::run(root, seconds),
            Self::Chaos(seeds) => chaos::run(root, seeds),
            Self::Bench(args) => bench::run(root, &args),
            Self::OpenapiData(version) => openapi_data::run(root, &version),
            Self::ProtoData => proto_data::run(root),
            Self::Help => {
                print_usage();
                Ok(())
            }
        }
    }
}

/// Why a task failed; its message is printed as `error: <message>`.
#[derive(Debug)]
struct Failure(String);

impl Failure {
    /// A failure with the given message.
    fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
enum Invocation {
    /// Run this task.
    Run(Task),
    /// The command line is wrong; the message says how.
    Usage(String),
}

/// Parses the arguments after the program name.
fn parse_args(args: &[OsString]) -> Invocation {
    let Some(first) = args.first() else {
        return Invocation::Run(Task::Help);
    };
    let Some(name) = first.to_str() else {
        return Invocation::Usage(format!("task name is not UTF-8: {}", first.display()));
    };
    let Some(task) = Task::parse(name) else {
        return Invocation::Usage(format!("unknown task `{name}`"));
    };
    match task {
        Task::Chaos(_) => {
            return match chaos::parse(&args[1..]) {
                Ok(seeds) => Invocation::Run(Task::Chaos(seeds)),
                Err(message) => Invocation::Usage(message),
            };
        }
        Task::Bench(_) => return Invocation::Run(Task::Bench(args[1..].to_vec())),
        Task::OpenapiData(_) => {
            return match openapi_data::parse(&args[1..]) {
                Ok(version) => Invocation::Run(Task::OpenapiData(version)),
                Err(message) => Invocation::Usage(message),
            };
        }
        _ => {}
    }
    if let Task::Fuzz(_) = task {
        return match fuzz::parse_seconds(&args[1..]) {
            Ok(seconds) => Invocation::Run(Task::Fuzz(seconds)),
            Err(message) => Invocation::Usage(message),
        };
    }
    if let Some(extra) = args.get(1) {
        return Invocation::Usage(format!(
            "`{name}` takes no arguments, got {:?}",
            extra.to_string_lossy()
        ));
    }
    Invocation::Run(task)
}

/// Prints the usage text to stdout (it was asked for).
#[expect(
    clippy::print_stdout,
    reason = "usage text that the user asked for belongs on stdout"
)]
fn print_usage() {
    print!("{USAGE}");
}

/// The root of the workspace: the parent of this crate's folder.
fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// A `Command` for the cargo that runs us (the `CARGO` variable), run from the workspace root.
fn cargo(root: &Path) -> Command {
    let program = env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(program);
    command.current_dir(root);
    command
}

/// A `cargo` command through the rustup proxy on `PATH` (so `+nightly` and `+1.88` work), not
/// the toolchain's own cargo that runs xtask, run from `dir`.
fn rustup_cargo(dir: &Path) -> Command {
    let mut command = Command::new("cargo");
    command
        .current_dir(dir)
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC");
    command
}

/// Runs `command` to its end, naming `program` (how it is shown, `cargo install cargo-fuzz`) in
/// the error if it cannot start or fails.
fn status(command: &mut Command, program: &str) -> Result<(), Failure> {
    let status = command
        .status()
        .map_err(|error| Failure::new(format!("could not start {program}: {error}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(Failure::new(format!("{program} failed ({status})")))
    }
}

/// Runs `cargo metadata --format-version 1 --no-deps` and parses its output.
fn metadata(root: &Path) -> Result<serde_json::Value, Failure> {
    let output = cargo(root)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .map_err(|error| Failure::new(format!("could not run cargo metadata: {error}")))?;
    if !output.status.success() {
        return Err(Failure::new(format!(
            "cargo metadata failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim_end()
        )));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|error| Failure::new(format!("cargo metadata printed invalid JSON: {error}")))
}

fn main() -> ExitCode {
    let args: Vec<OsString> = env::args_os().skip(1).collect();
    match parse_args(&args) {
        Invocation::Usage(message) => {
            eprintln!("error: {message}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Invocation::Run(task) => match task.run(&workspace_root()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(Failure(message)) => {
                eprintln!("error: {message}");
                ExitCode::FAILURE
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn no_arguments_means_help() {
        assert_eq!(parse_args(&[]), Invocation::Run(Task::Help));
        assert_eq!(parse_args(&args(&["--help"])), Invocation::Run(Task::Help));
    }

    #[test]
    fn known_tasks_parse() {
        assert_eq!(parse_args(&args(&["ci"])), Invocation::Run(Task::Ci));
        assert_eq!(parse_args(&args(&["deps"])), Invocation::Run(Task::Deps));
        assert_eq!(parse_args(&args(&["tidy"])), Invocation::Run(Task::Tidy));
        assert_eq!(
            parse_args(&args(&["fuzz", "--seconds", "3"])),
            Invocation::Run(Task::Fuzz(3))
        );
        assert!(matches!(
            parse_args(&args(&["fuzz", "--x"])),
            Invocation::Usage(_)
        ));
    }

    #[test]
    fn unknown_task_and_extra_arguments_are_usage_errors() {
        assert!(matches!(
            parse_args(&args(&["bogus"])),
            Invocation::Usage(_)
        ));
        assert!(matches!(
            parse_args(&args(&["deps", "--x"])),
            Invocation::Usage(_)
        ));
    }

    #[test]
    fn workspace_root_holds_the_workspace_manifest() {
        assert!(workspace_root().join("Cargo.toml").is_file());
        assert!(workspace_root().join("xtask").is_dir());
    }
}
