//! `cargo xtask ci`: every check CI runs, in order, stopping at the first that fails.
//!
//! The steps are formatting, clippy, the tests (unit, integration and doc), the docs, the
//! README's "Use it" program built from its own Cargo.toml lines ([`readme`]), then the
//! in-process [`deps`] and [`tidy`] checks. Each step is announced on
//! stderr as it starts; a failure names the step.

use std::path::Path;

use crate::{Failure, cargo, deps, readme, tidy};

/// One step of the CI run.
#[derive(Debug)]
enum Step {
    /// A cargo command: its arguments and extra environment variables.
    Cargo {
        /// Cargo's arguments, subcommand first.
        args: Vec<&'static str>,
        /// Extra environment for the command.
        env: &'static [(&'static str, &'static str)],
        /// Environment for the command, where the caller's environment does not set it already.
        defaults: &'static [(&'static str, &'static str)],
    },
    /// A check run inside this process.
    InProcess(fn(&Path) -> Result<(), Failure>),
}

/// The variable that tells k8s-openapi's build script which Kubernetes version to support.
const K8S_OPENAPI_VERSION_VAR: &str = "K8S_OPENAPI_ENABLED_VERSION";

/// The steps of `cargo xtask ci`, in order, each with a short name.
///
/// `locked` adds `--locked` to clippy (only meaningful once a `Cargo.lock` exists).
fn steps(locked: bool) -> Vec<(&'static str, Step)> {
    let mut clippy = vec!["clippy", "--workspace", "--all-targets", "--all-features"];
    if locked {
        clippy.push("--locked");
    }
    clippy.extend(["--", "-D", "warnings"]);
    vec![
        (
            "fmt",
            Step::Cargo {
                args: vec!["fmt", "--all", "--", "--check"],
                env: &[],
                defaults: &[],
            },
        ),
        (
            "clippy",
            Step::Cargo {
                args: clippy,
                env: &[],
                defaults: &[],
            },
        ),
        (
            "test",
            Step::Cargo {
                args: vec!["test", "--workspace", "--all-features"],
                env: &[],
                defaults: &[],
            },
        ),
        (
            "doc",
            Step::Cargo {
                args: vec!["doc", "--workspace", "--no-deps", "--all-features"],
                env: &[("RUSTDOCFLAGS", "-D warnings")],
                // `kcache-store`'s optional `k8s-openapi` feature builds k8s-openapi, whose build
                // script requires a Kubernetes version; libraries pick it only in their
                // dev-dependencies, which `cargo doc` does not build. This is the version that
                // k8s-openapi 0.29's `latest` feature selects.
                defaults: &[(K8S_OPENAPI_VERSION_VAR, "1.37")],
            },
        ),
        ("readme", Step::InProcess(readme::run)),
        ("deps", Step::InProcess(deps::run)),
        ("tidy", Step::InProcess(tidy::run)),
    ]
}

/// Runs every step against the workspace at `root`, stopping at the first failure.
pub(crate) fn run(root: &Path) -> Result<(), Failure> {
    let steps = steps(root.join("Cargo.lock").is_file());
    let total = steps.len();
    for (index, (name, step)) in steps.into_iter().enumerate() {
        let number = index + 1;
        match step {
            Step::Cargo {
                args,
                env,
                defaults,
            } => {
                let unset = defaults
                    .iter()
                    .filter(|(key, _)| std::env::var_os(key).is_none());
                let env: Vec<(&str, &str)> = env.iter().chain(unset).copied().collect();
                let shown: Vec<String> = env
                    .iter()
                    .map(|(key, value)| format!("{key}='{value}' "))
                    .collect();
                let shown = shown.concat();
                eprintln!(
                    "==> ci [{number}/{total}] {name}: {shown}cargo {}",
                    args.join(" ")
                );
                let status = cargo(root)
                    .args(&args)
                    .envs(env)
                    .status()
                    .map_err(|error| {
                        Failure::new(format!("ci step `{name}` could not start cargo: {error}"))
                    })?;
                if !status.success() {
                    return Err(Failure::new(format!("ci step `{name}` failed ({status})")));
                }
            }
            Step::InProcess(check) => {
                eprintln!("==> ci [{number}/{total}] {name}: cargo xtask {name}");
                check(root).map_err(|Failure(message)| {
                    Failure::new(format!("ci step `{name}` failed: {message}"))
                })?;
            }
        }
    }
    eprintln!("==> ci: all {total} steps passed");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(locked: bool) -> Vec<&'static str> {
        steps(locked).into_iter().map(|(name, _)| name).collect()
    }

    fn cargo_args(locked: bool, wanted: &str) -> Vec<&'static str> {
        steps(locked)
            .into_iter()
            .find_map(|(name, step)| match step {
                Step::Cargo { args, .. } if name == wanted => Some(args),
                _ => None,
            })
            .expect("step exists")
    }

    #[test]
    fn steps_run_in_the_documented_order() {
        assert_eq!(
            names(false),
            ["fmt", "clippy", "test", "doc", "readme", "deps", "tidy"]
        );
    }

    #[test]
    fn clippy_is_locked_only_with_a_lock_file() {
        assert!(!cargo_args(false, "clippy").contains(&"--locked"));
        let locked = cargo_args(true, "clippy");
        let position = locked
            .iter()
            .position(|arg| *arg == "--locked")
            .expect("--locked");
        let separator = locked.iter().position(|arg| *arg == "--").expect("--");
        assert!(
            position < separator,
            "--locked must go to cargo, not to clippy-driver"
        );
    }

    #[test]
    fn doc_step_denies_rustdoc_warnings() {
        let doc = steps(false)
            .into_iter()
            .find(|(name, _)| *name == "doc")
            .expect("doc step");
        let Step::Cargo { env, defaults, .. } = doc.1 else {
            panic!("doc is a cargo step")
        };
        assert!(env.contains(&("RUSTDOCFLAGS", "-D warnings")));
        assert!(
            defaults
                .iter()
                .any(|(key, _)| *key == K8S_OPENAPI_VERSION_VAR)
        );
    }
}
