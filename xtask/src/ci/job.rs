//! [`Job`]: one command of a CI step, how it is shown, and how it runs.

use std::fmt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::{Failure, cargo, rustup_cargo, status};

/// Variables no job inherits. `K8S_OPENAPI_ENABLED_VERSION` would pick k8s-openapi's Kubernetes
/// version for builds that do not name one; every build of the gate names it through features
/// (dev-dependencies, docs.rs metadata), as users' builds and docs.rs's do, and a value that
/// differs from theirs would break the build or rebuild k8s-openapi between steps.
const REMOVED_ENV: &[&str] = &["K8S_OPENAPI_ENABLED_VERSION"];

/// What a job runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Program {
    /// The cargo that runs xtask (`CARGO`).
    Cargo,
    /// `cargo +<toolchain>` through rustup's proxy.
    CargoOn(String),
}

/// One command of a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Job {
    /// A cargo command.
    Run {
        /// Which cargo.
        program: Program,
        /// Its arguments, subcommand first.
        args: Vec<String>,
        /// Extra environment.
        env: Vec<(&'static str, String)>,
    },
    /// `rustup toolchain install <toolchain> --profile minimal`, unless `cargo +<toolchain>`
    /// already runs (so a machine that has it needs no network).
    InstallToolchain(String),
}

impl Job {
    /// `cargo <args>` on the toolchain that runs xtask.
    pub(crate) fn cargo<S: AsRef<str>>(args: &[S]) -> Self {
        Self::Run {
            program: Program::Cargo,
            args: args.iter().map(|arg| arg.as_ref().to_owned()).collect(),
            env: Vec::new(),
        }
    }

    /// `cargo +<toolchain> <args>`.
    pub(crate) fn cargo_on<S: AsRef<str>>(toolchain: &str, args: &[S]) -> Self {
        Self::Run {
            program: Program::CargoOn(toolchain.to_owned()),
            args: args.iter().map(|arg| arg.as_ref().to_owned()).collect(),
            env: Vec::new(),
        }
    }

    /// The job with `more` appended to its arguments.
    pub(crate) fn args<S: AsRef<str>>(mut self, more: &[S]) -> Self {
        if let Self::Run { args, .. } = &mut self {
            args.extend(more.iter().map(|arg| arg.as_ref().to_owned()));
        }
        self
    }

    /// The job with `key=value` in its environment.
    pub(crate) fn env(mut self, key: &'static str, value: &str) -> Self {
        if let Self::Run { env, .. } = &mut self {
            env.push((key, value.to_owned()));
        }
        self
    }

    /// The job's arguments (empty for a toolchain install).
    #[cfg(test)]
    pub(crate) fn arguments(&self) -> &[String] {
        match self {
            Self::Run { args, .. } => args,
            Self::InstallToolchain(_) => &[],
        }
    }

    /// Runs the job from `root`; `Err` describes a job that could not start or failed.
    pub(crate) fn run(&self, root: &Path) -> Result<(), Failure> {
        match self {
            Self::Run { program, args, env } => {
                let mut command = match program {
                    Program::Cargo => cargo(root),
                    Program::CargoOn(toolchain) => {
                        let mut command = rustup_cargo(root);
                        command.arg(format!("+{toolchain}"));
                        command
                    }
                };
                for key in REMOVED_ENV {
                    command.env_remove(key);
                }
                command.args(args);
                for (key, value) in env {
                    command.env(key, value);
                }
                status(&mut command, "cargo")
            }
            Self::InstallToolchain(toolchain) => {
                let present = rustup_cargo(root)
                    .arg(format!("+{toolchain}"))
                    .arg("--version")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|status| status.success());
                if present {
                    eprintln!("    toolchain {toolchain} is installed");
                    return Ok(());
                }
                status(
                    Command::new("rustup").current_dir(root).args([
                        "toolchain",
                        "install",
                        toolchain,
                        "--profile",
                        "minimal",
                    ]),
                    "rustup",
                )
            }
        }
    }
}

impl fmt::Display for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Run { program, args, env } => {
                for (key, value) in env {
                    write!(f, "{key}='{value}' ")?;
                }
                f.write_str("cargo")?;
                if let Program::CargoOn(toolchain) = program {
                    write!(f, " +{toolchain}")?;
                }
                for arg in args {
                    if arg.is_empty() || arg.contains(' ') {
                        write!(f, " '{arg}'")?;
                    } else {
                        write!(f, " {arg}")?;
                    }
                }
                Ok(())
            }
            Self::InstallToolchain(toolchain) => write!(
                f,
                "rustup toolchain install {toolchain} --profile minimal (if missing)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_show_as_a_shell_would_run_them() {
        let job = Job::cargo(&["doc", "--no-deps"])
            .args(&["--features", "a b/c"])
            .env("RUSTDOCFLAGS", "-D warnings");
        assert_eq!(
            job.to_string(),
            "RUSTDOCFLAGS='-D warnings' cargo doc --no-deps --features 'a b/c'"
        );
        assert_eq!(
            Job::cargo_on("1.88", &["check"]).to_string(),
            "cargo +1.88 check"
        );
        assert!(
            Job::InstallToolchain("1.88".into())
                .to_string()
                .starts_with("rustup toolchain install 1.88 --profile minimal")
        );
    }
}
