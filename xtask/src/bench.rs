//! `cargo xtask bench [ARGS...]`: kcache and kube-rs side by side, then nothing else.
//!
//! The comparison program lives in `xtask/bench`, its own workspace, so that building kube-rs
//! never slows down `cargo xtask ci`. It is built in release mode and run with `ARGS`
//! (`--pods N`, `--updates N`, `--seed S`, `--runs N`, `--only ROWS`, `--scenario LIST`,
//! `--shape LIST`, `--frames F`, `--transport T`; `--help` describes them); it prints a table of
//! ratios per scenario and pod shape, then a summary against the targets. The criterion suites
//! are separate: `cargo bench -p kcache-<crate>`.

use std::ffi::OsString;
use std::path::Path;

use crate::{Failure, cargo};

/// Builds and runs the bench program with `args`.
pub(crate) fn run(root: &Path, args: &[OsString]) -> Result<(), Failure> {
    let manifest = root.join("xtask").join("bench").join("Cargo.toml");
    let mut command = cargo(root);
    command
        .arg("run")
        .arg("--release")
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--")
        .args(args);
    eprintln!("==> bench: kcache against kube-rs (the first build compiles kube-rs)");
    let status = command
        .status()
        .map_err(|e| Failure::new(format!("could not run cargo run: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(Failure::new(format!("the bench program failed ({status})")))
    }
}
