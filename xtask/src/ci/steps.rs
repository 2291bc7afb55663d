//! The steps of `cargo xtask ci`, built from the workspace's metadata.
//!
//! Each package is built as its users build it: linted and checked alone (`cargo clippy -p`,
//! which is `cargo check` plus the lints) with all its features and with its defaults, tested
//! with every feature (the workspace at once) and alone with its defaults when it has features,
//! and documented with its defaults and with docs.rs's features. The README's "Use it" program
//! is built from its own Cargo.toml lines ([`readme`]). The workspace is checked on the
//! declared `rust-version` (MSRV),
//! and the two separate workspaces, the fuzz targets and the bench program, are checked too,
//! in the shared target directory. Every publishable crate is packaged, verified and its
//! publication dry-run ([`package`]).

use std::path::Path;

use super::job::Job;
use crate::workspace::Workspace;
use crate::{Failure, deps, package, readme, tidy};

/// The fuzz targets' workspace (cargo-fuzz), relative to the root.
pub(crate) const FUZZ_DIR: &str = "client-http/fuzz";

/// The bench program's workspace (kcache against kube-rs), relative to the root.
pub(crate) const BENCH_DIR: &str = "xtask/bench";

/// One step of the CI run.
#[derive(Debug)]
pub(crate) enum Step {
    /// Commands run in order.
    Jobs {
        /// The commands.
        jobs: Vec<Job>,
        /// What to do when one fails, beyond reading its output.
        hint: Option<String>,
    },
    /// A check run inside this process.
    InProcess(fn(&Path) -> Result<(), Failure>),
}

impl Step {
    /// A step of `jobs` with no hint.
    fn jobs(jobs: Vec<Job>) -> Self {
        Self::Jobs { jobs, hint: None }
    }
}

/// Which workspaces have a `Cargo.lock`: their builds pass `--locked` (CI must not resolve
/// dependencies anew).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Locks {
    /// The main workspace.
    pub(crate) workspace: bool,
    /// The fuzz targets ([`FUZZ_DIR`]).
    pub(crate) fuzz: bool,
    /// The bench program ([`BENCH_DIR`]).
    pub(crate) bench: bool,
}

impl Locks {
    /// The lock files present under `root`.
    pub(crate) fn find(root: &Path) -> Self {
        let has_lock = |dir: &Path| dir.join("Cargo.lock").is_file();
        Self {
            workspace: has_lock(root),
            fuzz: has_lock(&root.join(FUZZ_DIR)),
            bench: has_lock(&root.join(BENCH_DIR)),
        }
    }
}

/// `--locked` when `locked`, nothing otherwise.
fn locked(locked: bool) -> &'static [&'static str] {
    if locked { &["--locked"] } else { &[] }
}

/// A separate workspace's check, in the main workspace's target directory so that the
/// dependencies they share are built once.
fn separate_workspace(
    root: &Path,
    workspace: &Workspace,
    dir: &str,
    is_locked: bool,
    extra: &[&str],
) -> Step {
    let manifest = root.join(dir).join("Cargo.toml");
    let target_dir = workspace.target_directory.display().to_string();
    let job = Job::cargo(&["check", "--manifest-path"])
        .args(&[manifest.display().to_string()])
        .args(&["--all-targets"])
        .args(extra)
        .args(&["--target-dir", &target_dir])
        .args(locked(is_locked));
    let hint = is_locked.then(|| {
        format!(
            "if {dir}/Cargo.lock is out of date (a dependency of the crates it builds changed), \
             run `cargo update --workspace --manifest-path {dir}/Cargo.toml` and commit it"
        )
    });
    Step::Jobs {
        jobs: vec![job],
        hint,
    }
}

/// The steps of `cargo xtask ci` for the workspace at `root`, in order, each with a short name.
pub(crate) fn steps(
    root: &Path,
    workspace: &Workspace,
    locks: Locks,
) -> Result<Vec<(&'static str, Step)>, Failure> {
    // Each package alone, as a user builds it (features unify only within what it pulls in),
    // with all its features and, where it has some, with its defaults. Clippy is `cargo check`
    // plus the lints, and its `-D warnings` reaches only the workspace's crates, so a warning
    // that only one set of features shows (an import unused without a feature) fails the run
    // while the dependencies' builds stay shared.
    let mut clippy = Vec::new();
    for package in &workspace.packages {
        let alone = |features: &[&str]| {
            Job::cargo(&["clippy", "--all-targets", "-p", &package.name])
                .args(features)
                .args(locked(locks.workspace))
                .args(&["--", "-D", "warnings"])
        };
        clippy.push(alone(&["--all-features"]));
        if package.has_features {
            clippy.push(alone(&[]));
        }
    }

    // `cargo test -p <package>` with default features, for the packages where that differs
    // from the workspace run with every feature.
    let mut test_default = vec!["test".to_owned()];
    for package in workspace.with_features() {
        test_default.extend(["-p".to_owned(), package.name.clone()]);
    }

    // Docs as a user builds them (`cargo doc -p <package>`) and as docs.rs does (`--lib`,
    // the features of `[package.metadata.docs.rs]`).
    let mut doc = Vec::new();
    for package in &workspace.packages {
        let doc_job = |args: &[&str]| {
            Job::cargo(&["doc", "--no-deps", "-p", &package.name])
                .args(args)
                .env("RUSTDOCFLAGS", "-D warnings")
        };
        doc.push(doc_job(&[]));
        if let Some(docs_rs) = &package.docs_rs {
            doc.push(doc_job(&["--lib"]).args(&docs_rs.cargo_args()));
        }
    }

    let msrv = workspace.rust_version()?;
    let msrv = vec![
        Job::InstallToolchain(msrv.to_owned()),
        Job::cargo_on(
            msrv,
            &["check", "--workspace", "--all-targets", "--all-features"],
        )
        .args(locked(locks.workspace)),
    ];

    let mut steps = vec![
        (
            "fmt",
            Step::jobs(vec![Job::cargo(&["fmt", "--all", "--", "--check"])]),
        ),
        ("clippy", Step::jobs(clippy)),
        (
            "test",
            Step::jobs(vec![Job::cargo(&["test", "--workspace", "--all-features"])]),
        ),
    ];
    if test_default.len() > 1 {
        steps.push(("test-default", Step::jobs(vec![Job::cargo(&test_default)])));
    }
    steps.extend([
        ("doc", Step::jobs(doc)),
        ("readme", Step::InProcess(readme::run)),
        ("msrv", Step::jobs(msrv)),
        (
            "fuzz",
            separate_workspace(root, workspace, FUZZ_DIR, locks.fuzz, &[]),
        ),
        (
            "bench",
            separate_workspace(root, workspace, BENCH_DIR, locks.bench, &["--all-features"]),
        ),
        ("package", Step::InProcess(package::run)),
        ("deps", Step::InProcess(deps::run)),
        ("tidy", Step::InProcess(tidy::run)),
    ]);
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::workspace::{DocsRs, Package};

    fn package(name: &str, has_features: bool, docs_rs: Option<DocsRs>) -> Package {
        Package {
            name: name.to_owned(),
            version: "0.1.0".to_owned(),
            publishable: true,
            has_features,
            rust_version: Some("1.88".to_owned()),
            docs_rs,
        }
    }

    fn workspace() -> Workspace {
        Workspace {
            packages: vec![
                package(
                    "featured",
                    true,
                    Some(DocsRs {
                        features: vec!["k8s-openapi/latest".into()],
                        all_features: true,
                        no_default_features: false,
                    }),
                ),
                package("plain", false, None),
            ],
            target_directory: PathBuf::from("/t"),
        }
    }

    const ALL_LOCKED: Locks = Locks {
        workspace: true,
        fuzz: true,
        bench: true,
    };

    const NONE_LOCKED: Locks = Locks {
        workspace: false,
        fuzz: false,
        bench: false,
    };

    fn jobs(locks: Locks, wanted: &str) -> Vec<Job> {
        steps(Path::new("/r"), &workspace(), locks)
            .unwrap()
            .into_iter()
            .find_map(|(name, step)| match step {
                Step::Jobs { jobs, .. } if name == wanted => Some(jobs),
                _ => None,
            })
            .expect("step exists")
    }

    fn shown(locks: Locks, wanted: &str) -> Vec<String> {
        jobs(locks, wanted).iter().map(Job::to_string).collect()
    }

    #[test]
    fn steps_run_in_the_documented_order() {
        let names: Vec<_> = steps(Path::new("/r"), &workspace(), NONE_LOCKED)
            .unwrap()
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert_eq!(
            names,
            [
                "fmt",
                "clippy",
                "test",
                "test-default",
                "doc",
                "readme",
                "msrv",
                "fuzz",
                "bench",
                "package",
                "deps",
                "tidy"
            ]
        );
    }

    #[test]
    fn clippy_is_locked_only_with_a_lock_file() {
        for job in jobs(NONE_LOCKED, "clippy") {
            assert!(!job.arguments().contains(&"--locked".to_owned()));
        }
        for job in jobs(ALL_LOCKED, "clippy") {
            let args = job.arguments();
            let position = args.iter().position(|arg| arg == "--locked").unwrap();
            let separator = args.iter().position(|arg| arg == "--").unwrap();
            assert!(
                position < separator,
                "--locked must go to cargo, not to clippy-driver"
            );
        }
    }

    #[test]
    fn each_package_is_linted_alone_with_all_and_default_features() {
        assert_eq!(
            shown(NONE_LOCKED, "clippy"),
            [
                "cargo clippy --all-targets -p featured --all-features -- -D warnings",
                "cargo clippy --all-targets -p featured -- -D warnings",
                "cargo clippy --all-targets -p plain --all-features -- -D warnings",
            ]
        );
        assert_eq!(
            shown(NONE_LOCKED, "test-default"),
            ["cargo test -p featured"]
        );
    }

    #[test]
    fn docs_build_with_default_features_and_with_docs_rs_features() {
        assert_eq!(
            shown(NONE_LOCKED, "doc"),
            [
                "RUSTDOCFLAGS='-D warnings' cargo doc --no-deps -p featured",
                "RUSTDOCFLAGS='-D warnings' cargo doc --no-deps -p featured --lib --features \
                 k8s-openapi/latest --all-features",
                "RUSTDOCFLAGS='-D warnings' cargo doc --no-deps -p plain",
            ]
        );
    }

    #[test]
    fn msrv_installs_and_checks_on_the_declared_rust_version() {
        let msrv = jobs(ALL_LOCKED, "msrv");
        assert_eq!(msrv[0], Job::InstallToolchain("1.88".into()));
        assert_eq!(
            msrv[1].to_string(),
            "cargo +1.88 check --workspace --all-targets --all-features --locked"
        );
    }

    #[test]
    fn separate_workspaces_share_the_target_directory() {
        assert_eq!(
            shown(ALL_LOCKED, "fuzz"),
            [
                "cargo check --manifest-path /r/client-http/fuzz/Cargo.toml --all-targets \
              --target-dir /t --locked"
            ]
        );
        assert_eq!(
            shown(NONE_LOCKED, "bench"),
            [
                "cargo check --manifest-path /r/xtask/bench/Cargo.toml --all-targets \
              --all-features --target-dir /t"
            ]
        );
    }

    #[test]
    fn without_packages_with_features_there_is_no_default_feature_test_run() {
        let mut ws = workspace();
        ws.packages.remove(0);
        let steps = steps(Path::new("/r"), &ws, NONE_LOCKED).unwrap();
        assert!(steps.iter().all(|(name, _)| *name != "test-default"));
    }

    #[test]
    fn the_real_fuzz_and_bench_workspaces_are_where_the_steps_look() {
        let root = crate::workspace_root();
        for dir in [FUZZ_DIR, BENCH_DIR] {
            let manifest = std::fs::read_to_string(root.join(dir).join("Cargo.toml")).unwrap();
            assert!(
                manifest.contains("\n[workspace]"),
                "{dir} is its own workspace"
            );
            assert!(
                root.join(dir).join("Cargo.lock").is_file(),
                "{dir} has a lock file"
            );
        }
    }
}
