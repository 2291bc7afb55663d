//! `cargo xtask package`: every publishable crate packaged as crates.io would receive it.
//!
//! The publishable members are the libraries (`cargo xtask tidy` checks that every other member
//! says `publish = false`). They are not on crates.io yet and depend on each other, so they are
//! packaged together, as `cargo publish` would publish them:
//!
//! 1. `cargo package -p <each> --locked --allow-dirty`: each crate packaged in dependency order
//!    against a local registry that overlays crates.io with the crates packaged before it, then
//!    verified: its `.crate` is unpacked and built alone (default features), against that
//!    registry, so a file missing from the package or a dependency that only resolves inside the
//!    workspace fails here. `--allow-dirty` packages the working tree as it is, so the gate runs
//!    before a commit as it does on a clean clone.
//! 2. `cargo publish -p <each> --dry-run --no-verify --locked --allow-dirty`: what `cargo
//!    publish` checks before an upload (the registry each crate may go to, the dependencies'
//!    registries and versions, the metadata it sends), stopping short of the upload. Its
//!    verification would build the same `.crate`s a second time (40 s on two cores, for
//!    nothing), hence `--no-verify`: step 1 verified them.
//! 3. The size of each `.crate`, printed, and held under [`MAX_CRATE_BYTES`].
//!
//! Both commands need crates.io's index (the dependencies' versions), as any build of a fresh
//! clone does.

use std::fs;
use std::path::Path;

use crate::Failure;
use crate::ci::job::Job;
use crate::workspace::{Package, Workspace};

/// The largest `.crate` accepted: a tenth of crates.io's 10 MB limit, several times the largest
/// one today (`kcache-testing-server`, with the Kubernetes schemas it serves, about 360 KiB).
/// Test data kept out of a package (`exclude`) stays out.
pub(crate) const MAX_CRATE_BYTES: u64 = 1024 * 1024;

/// What to check when the packaging fails.
const HINT: &str = "a dev-dependency on a crate that depends back on the package (kcache-testing \
                    from queue or reflector) must be by `path` alone, without `version`, so \
                    that cargo drops it from the published manifest; a file the build reads \
                    must not be in `exclude`";

/// The commands of steps 1 and 2 for `packages`: `--locked` when the workspace has a lock file,
/// building in `target_dir`.
pub(crate) fn jobs<'p>(
    packages: impl IntoIterator<Item = &'p Package>,
    locked: bool,
    target_dir: &str,
) -> Vec<Job> {
    let mut selected = Vec::new();
    for package in packages {
        selected.push("-p".to_owned());
        selected.push(package.name.clone());
    }
    let mut common = vec!["--target-dir", target_dir];
    if locked {
        common.push("--locked");
    }
    common.push("--allow-dirty");
    vec![
        Job::cargo(&["package"]).args(&selected).args(&common),
        Job::cargo(&["publish"])
            .args(&selected)
            .args(&["--dry-run", "--no-verify"])
            .args(&common),
    ]
}

/// `65.7 KiB`.
fn kibibytes(bytes: u64) -> String {
    #[expect(
        clippy::cast_precision_loss,
        reason = "a package's size is far below f64's exact range"
    )]
    let kib = bytes as f64 / 1024.0;
    format!("{kib:.1} KiB")
}

/// Checks the size of each `.crate` in `sizes` (file name, bytes): every one at most
/// [`MAX_CRATE_BYTES`]. `Err` names each that is larger.
pub(crate) fn check_sizes(sizes: &[(String, u64)]) -> Result<(), Failure> {
    let too_large: Vec<String> = sizes
        .iter()
        .filter(|(_, bytes)| *bytes > MAX_CRATE_BYTES)
        .map(|(file, bytes)| format!("{file} ({})", kibibytes(*bytes)))
        .collect();
    if too_large.is_empty() {
        return Ok(());
    }
    Err(Failure::new(format!(
        "{} larger than {}: keep test data and generated files the crate does not need out of \
         the package (`exclude` in its Cargo.toml; `cargo package --list -p <crate>` shows \
         what goes in)",
        too_large.join(", "),
        kibibytes(MAX_CRATE_BYTES)
    )))
}

/// Removes what an earlier verification built of the kcache crates in `target` (the
/// dependencies from crates.io stay built).
fn forget_built(target: &Path) {
    for kind in ["debug/.fingerprint", "debug/deps", "debug/build"] {
        let Ok(entries) = fs::read_dir(target.join(kind)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !(name.starts_with("kcache-") || name.contains("kcache_")) {
                continue;
            }
            let path = entry.path();
            let removed = if path.is_dir() {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path)
            };
            if let Err(e) = removed {
                eprintln!("    cannot remove {}: {e}", path.display());
            }
        }
    }
}

/// Removes the sources cargo unpacked from the local registry of an earlier packaging
/// (`$CARGO_HOME/registry/src/-<hash>/<crate>-<version>`, the registries named after a path).
/// Cargo unpacks a crate of a given version once and reuses the directory, so after a change
/// that keeps the version the verification would build the next crate against the old sources
/// of the ones packaged before it.
fn forget_unpacked(packages: &[&Package]) {
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
    let Some(home) = home else { return };
    let Ok(registries) = fs::read_dir(home.join("registry").join("src")) else {
        return;
    };
    for registry in registries.flatten() {
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue; // crates.io's and other index registries: not ours
        }
        for package in packages {
            let unpacked = registry
                .path()
                .join(format!("{}-{}", package.name, package.version));
            if unpacked.is_dir()
                && let Err(e) = fs::remove_dir_all(&unpacked)
            {
                eprintln!("    cannot remove {}: {e}", unpacked.display());
            }
        }
    }
}

/// Packages, verifies and dry-runs the publication of every publishable member of the
/// workspace at `root`, then checks the size of each `.crate`.
pub(crate) fn run(root: &Path) -> Result<(), Failure> {
    let workspace = Workspace::load(root)?;
    let packages: Vec<&Package> = workspace.publishable().collect();
    if packages.is_empty() {
        return Err(Failure::new("the workspace has no publishable package"));
    }
    // The verification builds the packaged crates as registry crates, which cargo never builds
    // again at the same version: a target directory of its own, where every kcache crate is
    // one of those, lets them be removed before each run.
    let target = workspace.target_directory.join("package-check");
    forget_built(&target);
    forget_unpacked(&packages);
    let target_dir = target.to_str().ok_or_else(|| {
        Failure::new(format!(
            "the target directory is not UTF-8: {}",
            target.display()
        ))
    })?;
    // CI must not resolve dependencies anew: `--locked` wherever the workspace has a lock file.
    let locked = root.join("Cargo.lock").is_file();
    for job in jobs(packages.iter().copied(), locked, target_dir) {
        eprintln!("==> package: {job}");
        job.run(root)
            .map_err(|Failure(message)| Failure::new(format!("{message}; {HINT}")))?;
    }
    let dir = target.join("package");
    let mut sizes = Vec::new();
    for package in &packages {
        let file = format!("{}-{}.crate", package.name, package.version);
        let bytes = fs::metadata(dir.join(&file))
            .map_err(|e| Failure::new(format!("cannot read {}: {e}", dir.join(&file).display())))?
            .len();
        eprintln!("    {file:<40} {:>12}", kibibytes(bytes));
        sizes.push((file, bytes));
    }
    check_sizes(&sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(name: &str) -> Package {
        Package {
            name: name.to_owned(),
            version: "0.1.0".to_owned(),
            publishable: true,
            has_features: false,
            rust_version: None,
            docs_rs: None,
        }
    }

    #[test]
    fn every_package_is_packaged_then_dry_run_without_a_second_verification() {
        let packages = [package("kcache-store"), package("kcache-queue")];
        let shown: Vec<String> = jobs(&packages, true, "/t/package-check")
            .iter()
            .map(Job::to_string)
            .collect();
        assert_eq!(
            shown,
            [
                "cargo package -p kcache-store -p kcache-queue --target-dir /t/package-check \
                 --locked --allow-dirty",
                "cargo publish -p kcache-store -p kcache-queue --dry-run --no-verify \
                 --target-dir /t/package-check --locked --allow-dirty",
            ]
        );
        let unlocked = jobs(&packages, false, "/t/package-check");
        assert!(
            unlocked
                .iter()
                .all(|job| !job.arguments().contains(&"--locked".to_owned()))
        );
    }

    #[test]
    fn crates_over_the_limit_fail_by_name() {
        assert!(check_sizes(&[("a-0.1.0.crate".into(), MAX_CRATE_BYTES)]).is_ok());
        let error = check_sizes(&[
            ("a-0.1.0.crate".into(), 1000),
            ("b-0.1.0.crate".into(), MAX_CRATE_BYTES + 1),
        ])
        .unwrap_err();
        assert!(
            error.0.starts_with("b-0.1.0.crate (1024.0 KiB)"),
            "{}",
            error.0
        );
        assert!(!error.0.contains("a-0.1.0"), "{}", error.0);
    }

    #[test]
    fn sizes_read_in_kibibytes() {
        assert_eq!(kibibytes(67_277), "65.7 KiB");
        assert_eq!(kibibytes(0), "0.0 KiB");
    }

    #[test]
    fn the_real_workspace_publishes_exactly_its_libraries() {
        let workspace = Workspace::load(&crate::workspace_root()).unwrap();
        let mut publishable: Vec<&str> = workspace.publishable().map(|p| p.name.as_str()).collect();
        publishable.sort_unstable();
        let mut libraries = crate::deps::LIBRARIES.to_vec();
        libraries.sort_unstable();
        assert_eq!(publishable, libraries);
    }
}
