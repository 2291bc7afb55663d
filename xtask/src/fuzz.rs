//! `cargo xtask fuzz [--seconds N]`: runs each cargo-fuzz target of `client-http/fuzz` briefly.
//!
//! It installs `cargo-fuzz` when `cargo fuzz` is missing (`cargo install cargo-fuzz --locked`),
//! then runs `cargo +nightly fuzz run <target> -- -max_total_time=N` for every target in
//! [`TARGETS`]. libFuzzer needs a nightly toolchain and sanitizer flags, which is why the fuzz
//! crate is its own workspace and this task is not part of `cargo xtask ci`.

use std::ffi::OsString;
use std::path::Path;

use crate::{Failure, rustup_cargo, status};

/// The fuzz targets, as named in `client-http/fuzz/Cargo.toml`.
pub(crate) const TARGETS: &[&str] = &["watch_decoder", "kubeconfig"];

/// Seconds per target when `--seconds` is not given.
pub(crate) const DEFAULT_SECONDS: u64 = 30;

/// Parses the arguments after `fuzz`: nothing, or `--seconds N` (N > 0).
pub(crate) fn parse_seconds(args: &[OsString]) -> Result<u64, String> {
    match args {
        [] => Ok(DEFAULT_SECONDS),
        [flag, value] if flag == "--seconds" => value
            .to_str()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&s| s > 0)
            .ok_or_else(|| {
                format!(
                    "`--seconds` needs a positive whole number, got {:?}",
                    value.to_string_lossy()
                )
            }),
        _ => Err("`fuzz` takes only `--seconds N`".to_owned()),
    }
}

/// Installs cargo-fuzz if needed, then fuzzes every target for `seconds`.
pub(crate) fn run(root: &Path, seconds: u64) -> Result<(), Failure> {
    let crate_dir = root.join("client-http");
    let has_cargo_fuzz = rustup_cargo(&crate_dir)
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_cargo_fuzz {
        eprintln!("xtask fuzz: installing cargo-fuzz");
        status(
            rustup_cargo(root).args(["install", "cargo-fuzz", "--locked"]),
            "cargo install cargo-fuzz --locked",
        )?;
    }
    for target in TARGETS {
        eprintln!("xtask fuzz: {target} for {seconds} s");
        status(
            rustup_cargo(&crate_dir).args([
                "+nightly",
                "fuzz",
                "run",
                "--fuzz-dir",
                "fuzz",
                target,
                "--",
                &format!("-max_total_time={seconds}"),
            ]),
            &format!("cargo +nightly fuzz run {target}"),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn seconds_default_and_flag() {
        assert_eq!(parse_seconds(&[]), Ok(DEFAULT_SECONDS));
        assert_eq!(parse_seconds(&args(&["--seconds", "5"])), Ok(5));
        assert!(parse_seconds(&args(&["--seconds", "0"])).is_err());
        assert!(parse_seconds(&args(&["--seconds"])).is_err());
        assert!(parse_seconds(&args(&["--minutes", "1"])).is_err());
    }

    #[test]
    fn targets_exist_in_the_fuzz_crate() {
        let manifest =
            std::fs::read_to_string(crate::workspace_root().join("client-http/fuzz/Cargo.toml"))
                .expect("fuzz manifest");
        assert!(manifest.contains("\n[workspace]"), "own workspace");
        for target in TARGETS {
            assert!(
                manifest.contains(&format!("name = \"{target}\"")),
                "{target}"
            );
        }
    }
}
