//! `cargo xtask chaos [--seeds N | --seed S]`: the full-stack chaos suite for many seeds.
//!
//! It runs the `chaos` tests of `kcache-testing-e2e` (an informer, and a reconcile runner, over
//! client-http against the fake API server with random faults; sharded replicas killed,
//! restarted and cut off from their Leases under the same faults) in release mode with `KCACHE_CHAOS_SEEDS=N`, or
//! `KCACHE_CHAOS_SEED=S` to replay one seed. The test prints the seed of any failure. The test
//! command runs the same test with a few seeds.

use std::ffi::OsString;
use std::path::Path;

use crate::{Failure, cargo};

/// Seeds run when `--seeds` is not given.
pub(crate) const DEFAULT_SEEDS: u64 = 20;

/// Which seeds to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seeds {
    /// Seeds 1 to N.
    Count(u64),
    /// One seed, to replay a failure.
    One(u64),
}

impl Default for Seeds {
    fn default() -> Self {
        Self::Count(DEFAULT_SEEDS)
    }
}

/// Parses the arguments after `chaos`.
pub(crate) fn parse(args: &[OsString]) -> Result<Seeds, String> {
    let number = |v: &OsString| {
        v.to_str()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                format!(
                    "expected a positive whole number, got {:?}",
                    v.to_string_lossy()
                )
            })
    };
    match args {
        [] => Ok(Seeds::default()),
        [flag, value] if flag == "--seeds" => number(value).map(Seeds::Count),
        [flag, value] if flag == "--seed" => number(value).map(Seeds::One),
        _ => Err("`chaos` takes `--seeds N` or `--seed S`".to_owned()),
    }
}

/// Runs the chaos test for `seeds`.
pub(crate) fn run(root: &Path, seeds: Seeds) -> Result<(), Failure> {
    let mut command = cargo(root);
    command.args([
        "test",
        "--release",
        "-p",
        "kcache-testing-e2e",
        "--test",
        "it",
        "chaos",
        "--",
        "--nocapture",
    ]);
    match seeds {
        Seeds::Count(n) => command.env("KCACHE_CHAOS_SEEDS", n.to_string()),
        Seeds::One(s) => command.env("KCACHE_CHAOS_SEED", s.to_string()),
    };
    eprintln!("==> chaos: {seeds:?}");
    let status = command
        .status()
        .map_err(|e| Failure::new(format!("could not run cargo test: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(Failure::new(format!(
            "the chaos suite failed ({status}); the seed is printed above"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_seeds() {
        let a = |s: &[&str]| s.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(parse(&a(&[])), Ok(Seeds::Count(DEFAULT_SEEDS)));
        assert_eq!(parse(&a(&["--seeds", "200"])), Ok(Seeds::Count(200)));
        assert_eq!(parse(&a(&["--seed", "17"])), Ok(Seeds::One(17)));
        assert!(parse(&a(&["--seeds", "0"])).is_err());
        assert!(parse(&a(&["--seeds"])).is_err());
        assert!(parse(&a(&["--bogus", "1"])).is_err());
    }
}
