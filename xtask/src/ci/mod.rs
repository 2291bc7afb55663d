//! `cargo xtask ci`: every check CI runs, in order, stopping at the first that fails.
//!
//! The steps ([`steps`]) are formatting, clippy on each package alone with all its features and
//! with its defaults, the tests (unit, integration and doc; every feature, then each
//! package with features on its defaults), the docs (each package with its defaults and with
//! its docs.rs features), the declared minimum Rust version, the fuzz targets and the bench
//! program, the packaging of every publishable crate ([`package`](crate::package)), then the
//! in-process [`deps`](crate::deps) and [`tidy`](crate::tidy) checks. Each
//! command is announced on stderr as it starts; a failure names the step, and the run ends with
//! the time each step took (CI gives the whole run 90 minutes on two cores).

pub(crate) mod job;
mod steps;

use std::path::Path;
use std::time::{Duration, Instant};

use self::steps::{Locks, Step};
use crate::Failure;
use crate::workspace::Workspace;

/// `1m05s`, or `7s` under a minute.
fn minutes(elapsed: Duration) -> String {
    let seconds = elapsed.as_secs();
    if seconds < 60 {
        format!("{seconds}s")
    } else {
        format!("{}m{:02}s", seconds / 60, seconds % 60)
    }
}

/// Runs every step against the workspace at `root`, stopping at the first failure.
pub(crate) fn run(root: &Path) -> Result<(), Failure> {
    let started = Instant::now();
    let workspace = Workspace::load(root)?;
    let steps = steps::steps(root, &workspace, Locks::find(root))?;
    let total = steps.len();
    let mut times = Vec::new();
    for (index, (name, step)) in steps.into_iter().enumerate() {
        let number = index + 1;
        let step_started = Instant::now();
        match step {
            Step::Jobs { jobs, hint } => {
                let count = jobs.len();
                for (index, job) in jobs.iter().enumerate() {
                    let part = if count > 1 {
                        format!(" ({}/{count})", index + 1)
                    } else {
                        String::new()
                    };
                    eprintln!("==> ci [{number}/{total}] {name}{part}: {job}");
                    job.run(root).map_err(|Failure(message)| {
                        let hint = hint.as_deref().map_or(String::new(), |h| format!("; {h}"));
                        Failure::new(format!("ci step `{name}` failed: {message}{hint}"))
                    })?;
                }
            }
            Step::InProcess(check) => {
                eprintln!("==> ci [{number}/{total}] {name}: cargo xtask {name}");
                check(root).map_err(|Failure(message)| {
                    Failure::new(format!("ci step `{name}` failed: {message}"))
                })?;
            }
        }
        times.push(format!("{name} {}", minutes(step_started.elapsed())));
    }
    eprintln!(
        "==> ci: all {total} steps passed in {} ({})",
        minutes(started.elapsed()),
        times.join(", ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_minutes_and_seconds() {
        assert_eq!(minutes(Duration::from_millis(7_900)), "7s");
        assert_eq!(minutes(Duration::from_secs(65)), "1m05s");
        assert_eq!(minutes(Duration::from_secs(3_600)), "60m00s");
    }
}
