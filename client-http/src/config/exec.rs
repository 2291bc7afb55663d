//! Exec credential plugins (`client.authentication.k8s.io/v1` and `v1beta1` `ExecCredential`).
//!
//! A run is bounded: by [`ExecConfig::timeout`] (start to exit, output included) and by
//! [`ExecConfig::max_stdout`]. A plugin that overruns either is killed, together with every
//! process it started: on Unix it runs in a process group of its own, and the whole group gets
//! `SIGKILL`. The same happens when the run is abandoned (the request waiting for it is
//! dropped).

use std::process::Stdio;
use std::time::{Duration, SystemTime};

use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt as _};

use crate::{Error, Identity, Result, Secret};

/// The `ExecCredential` API version spoken with a plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExecApiVersion {
    /// `client.authentication.k8s.io/v1`.
    V1,
    /// `client.authentication.k8s.io/v1beta1`.
    V1Beta1,
}

impl ExecApiVersion {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V1 => "client.authentication.k8s.io/v1",
            Self::V1Beta1 => "client.authentication.k8s.io/v1beta1",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "client.authentication.k8s.io/v1" => Some(Self::V1),
            "client.authentication.k8s.io/v1beta1" => Some(Self::V1Beta1),
            _ => None,
        }
    }
}

/// A credential plugin: the command to run and what to tell it.
///
/// It is run without a terminal (`spec.interactive: false`, stdin closed), with
/// `KUBERNETES_EXEC_INFO` set and [`env`](Self::env) added to the inherited environment, and
/// bounded in time and output (see [`timeout`](Self::timeout), [`max_stdout`](Self::max_stdout),
/// [`max_stderr`](Self::max_stderr)).
///
/// `Debug` shows how many [`args`](Self::args) there are, not what they are (they may carry a
/// credential); [`env`](Self::env) values are [`Secret`]s.
///
/// ```
/// use std::time::Duration;
/// use kcache_client_http::{Auth, Config, ExecApiVersion, ExecConfig};
///
/// let mut exec = ExecConfig::new(ExecApiVersion::V1, "/usr/local/bin/my-plugin");
/// exec.timeout = Duration::from_secs(20);
/// exec.max_stdout = 256 * 1024;
/// let config = Config::new("https://10.0.0.1:6443".parse()?).with_auth(Auth::Exec(Box::new(exec)));
/// # drop(config);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ExecConfig {
    /// The `ExecCredential` version.
    pub api_version: ExecApiVersion,
    /// The command (a path, or a name looked up in `PATH`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to its environment.
    pub env: Vec<(String, Secret)>,
    /// Shown when the command cannot be started.
    pub install_hint: Option<String>,
    /// How long one run may take, from its start until it has exited and its output has been
    /// read (default 60 s). A plugin still running then is killed with its children, and the
    /// run fails with [`Error::ExecTimeout`].
    pub timeout: Duration,
    /// The most a run may print on stdout, in bytes (default
    /// [`DEFAULT_MAX_STDOUT`](Self::DEFAULT_MAX_STDOUT), 1 MiB; an `ExecCredential` is a few
    /// KiB). A plugin printing more is killed with its children, and the run fails with
    /// [`Error::ExecOutputTooLarge`].
    pub max_stdout: usize,
    /// How much of a run's stderr is kept, in bytes (default
    /// [`DEFAULT_MAX_STDERR`](Self::DEFAULT_MAX_STDERR), 64 KiB): its first lines go into the
    /// error of a failed run. More is read and thrown away, not an error (plugins may log).
    pub max_stderr: usize,
    /// `spec.cluster` of `KUBERNETES_EXEC_INFO` when `provideClusterInfo` is set.
    pub(crate) cluster_info: Option<serde_json::Value>,
}

/// `Debug` of a list of arguments: only how many.
pub(super) struct RedactedArgs(pub(super) usize);

impl std::fmt::Debug for RedactedArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{} redacted]", self.0)
    }
}

impl std::fmt::Debug for ExecConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecConfig")
            .field("api_version", &self.api_version)
            .field("command", &self.command)
            .field("args", &RedactedArgs(self.args.len()))
            .field("env", &self.env)
            .field("install_hint", &self.install_hint)
            .field("timeout", &self.timeout)
            .field("max_stdout", &self.max_stdout)
            .field("max_stderr", &self.max_stderr)
            .field("cluster_info", &self.cluster_info.is_some())
            .finish()
    }
}

impl ExecConfig {
    /// The default of [`max_stdout`](Self::max_stdout): 1 MiB.
    pub const DEFAULT_MAX_STDOUT: usize = 1024 * 1024;
    /// The default of [`max_stderr`](Self::max_stderr): 64 KiB.
    pub const DEFAULT_MAX_STDERR: usize = 64 * 1024;

    /// A plugin `command` speaking `api_version`, with no arguments, the default timeout
    /// (60 s) and output limits.
    pub fn new(api_version: ExecApiVersion, command: impl Into<String>) -> Self {
        Self {
            api_version,
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
            install_hint: None,
            timeout: Duration::from_secs(60),
            max_stdout: Self::DEFAULT_MAX_STDOUT,
            max_stderr: Self::DEFAULT_MAX_STDERR,
            cluster_info: None,
        }
    }
}

/// What a plugin run gave.
#[derive(Debug)]
pub(crate) struct ExecOutput {
    pub(crate) token: Option<Secret>,
    pub(crate) identity: Option<Identity>,
    pub(crate) expires: Option<SystemTime>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredential {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    status: Option<ExecStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecStatus {
    #[serde(default)]
    token: Option<Secret>,
    #[serde(default)]
    client_certificate_data: Option<String>,
    #[serde(default)]
    client_key_data: Option<Secret>,
    #[serde(default)]
    expiration_timestamp: Option<String>,
}

/// At most this much of a failed plugin's stderr goes into the error.
const STDERR_SUMMARY: usize = 512;

fn summarize_stderr(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let mut out: String = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(5)
        .collect::<Vec<_>>()
        .join(" | ");
    if out.len() > STDERR_SUMMARY {
        let mut cut = STDERR_SUMMARY;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str("...");
    }
    if out.is_empty() {
        "(no stderr)".to_owned()
    } else {
        format!("stderr: {out}")
    }
}

/// Runs the plugin once.
pub(crate) async fn run(config: &ExecConfig) -> Result<ExecOutput> {
    let mut spec = serde_json::json!({"interactive": false});
    if let Some(cluster) = &config.cluster_info {
        spec["cluster"] = cluster.clone();
    }
    let info = serde_json::json!({
        "apiVersion": config.api_version.as_str(),
        "kind": "ExecCredential",
        "spec": spec,
    });
    let failed = |summary: String| Error::ExecFailed {
        command: config.command.clone(),
        summary,
    };
    let mut command = tokio::process::Command::new(&config.command);
    command
        .args(&config.args)
        .envs(config.env.iter().map(|(k, v)| (k, v.expose())))
        .env("KUBERNETES_EXEC_INFO", info.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command.spawn().map_err(|e| {
        let hint = config
            .install_hint
            .as_deref()
            .map(|h| format!("; {}", h.trim()))
            .unwrap_or_default();
        failed(format!("could not start it: {e}{hint}"))
    })?;
    // Declared after `child`, so dropped before it: the group is killed while the plugin is
    // not yet reaped, so its id cannot name another group.
    let mut group = ProcessGroup::of(&child);
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(failed("its output could not be captured".to_owned()));
    };
    let work = async {
        let (stdout, stderr, status) = tokio::try_join!(
            read_stdout(stdout, config.max_stdout),
            read_stderr(stderr, config.max_stderr),
            async { child.wait().await.map_err(Overrun::Io) },
        )?;
        Ok::<_, Overrun>((stdout, stderr, status))
    };
    let outcome = tokio::time::timeout(config.timeout, work).await;
    let (stdout, stderr, status) = match outcome {
        Ok(Ok(done)) => {
            // Exited and reaped: the group is no longer the plugin's to kill.
            group.disarm();
            done
        }
        Ok(Err(overrun)) => {
            group.kill();
            reap(&mut child).await;
            return Err(match overrun {
                Overrun::Stdout => Error::ExecOutputTooLarge {
                    command: config.command.clone(),
                    limit: config.max_stdout,
                },
                Overrun::Io(e) => failed(format!("could not read its output: {e}")),
            });
        }
        Err(_) => {
            group.kill();
            reap(&mut child).await;
            return Err(Error::ExecTimeout {
                command: config.command.clone(),
                timeout: config.timeout,
            });
        }
    };
    if !status.success() {
        return Err(failed(format!("{status}; {}", summarize_stderr(&stderr))));
    }
    parse_credential(config, &stdout)
}

/// Why a run was cut short before the plugin exited.
enum Overrun {
    /// Stdout went past the limit.
    Stdout,
    /// Reading its output or waiting for it failed.
    Io(std::io::Error),
}

/// All of stdout, or [`Overrun::Stdout`] as soon as it is longer than `limit`.
async fn read_stdout(stdout: impl AsyncRead + Unpin, limit: usize) -> Result<Vec<u8>, Overrun> {
    let mut out = Vec::new();
    let max = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    stdout
        .take(max)
        .read_to_end(&mut out)
        .await
        .map_err(Overrun::Io)?;
    if out.len() > limit {
        return Err(Overrun::Stdout);
    }
    Ok(out)
}

/// The first `limit` bytes of stderr; the rest is read (so the plugin never blocks on a full
/// pipe) and dropped.
async fn read_stderr(mut stderr: impl AsyncRead + Unpin, limit: usize) -> Result<Vec<u8>, Overrun> {
    let mut out = Vec::new();
    let max = u64::try_from(limit).unwrap_or(u64::MAX);
    (&mut stderr)
        .take(max)
        .read_to_end(&mut out)
        .await
        .map_err(Overrun::Io)?;
    tokio::io::copy(&mut stderr, &mut tokio::io::sink())
        .await
        .map_err(Overrun::Io)?;
    Ok(out)
}

/// Waits a little for a killed plugin to exit, so it is reaped now rather than by the
/// runtime's orphan queue later (`SIGKILL` cannot be ignored; the bound is for a process stuck
/// in the kernel).
async fn reap(child: &mut tokio::process::Child) {
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(1), child.wait()).await;
}

/// The process group of a running plugin (its own: it is the group leader), killed with
/// `SIGKILL` when dropped unless [`disarm`](Self::disarm)ed.
struct ProcessGroup {
    #[cfg(unix)]
    leader: Option<rustix::process::Pid>,
}

impl ProcessGroup {
    fn of(child: &tokio::process::Child) -> Self {
        #[cfg(not(unix))]
        let _ = child;
        Self {
            // Never the init process: kill(-1) would signal every process.
            #[cfg(unix)]
            leader: child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .filter(|&id| id > 1)
                .and_then(rustix::process::Pid::from_raw),
        }
    }

    /// The plugin has exited and been reaped: leave whatever it left running alone.
    fn disarm(&mut self) {
        #[cfg(unix)]
        {
            self.leader = None;
        }
    }

    /// `SIGKILL` to every process of the group (once).
    fn kill(&mut self) {
        #[cfg(unix)]
        if let Some(leader) = self.leader.take() {
            // Fails only when the group is already gone.
            let _ = rustix::process::kill_process_group(leader, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

fn parse_credential(config: &ExecConfig, stdout: &[u8]) -> Result<ExecOutput> {
    let invalid = |reason: String| Error::ExecCredential {
        command: config.command.clone(),
        reason,
    };
    // The parser's message could quote a credential: keep only where it failed.
    let cred: ExecCredential = serde_json::from_slice(stdout).map_err(|e| {
        invalid(format!(
            "not a JSON ExecCredential (line {}, column {})",
            e.line(),
            e.column()
        ))
    })?;
    let version = cred.api_version.unwrap_or_default();
    if version != config.api_version.as_str() {
        return Err(invalid(format!(
            "apiVersion `{version}`, expected `{}`",
            config.api_version.as_str()
        )));
    }
    let status = cred
        .status
        .ok_or_else(|| invalid("it has no status".to_owned()))?;
    let expires = match status.expiration_timestamp.as_deref() {
        None | Some("") => None,
        Some(ts) => Some(
            parse_rfc3339(ts)
                .ok_or_else(|| invalid(format!("expirationTimestamp `{ts}` is not RFC 3339")))?,
        ),
    };
    let identity = match (status.client_certificate_data, status.client_key_data) {
        (Some(cert), Some(key)) if !cert.is_empty() && !key.expose().is_empty() => Some(
            Identity::from_pem(cert.as_bytes(), key.expose().as_bytes())?,
        ),
        (None, None) => None,
        _ => {
            return Err(invalid(
                "clientCertificateData and clientKeyData must be set together".to_owned(),
            ));
        }
    };
    let token = status.token.filter(|t| !t.expose().is_empty());
    if token.is_none() && identity.is_none() {
        return Err(invalid(
            "status has neither a token nor a client certificate".to_owned(),
        ));
    }
    Ok(ExecOutput {
        token,
        identity,
        expires,
    })
}

/// Parses an RFC 3339 timestamp (`2026-07-24T10:00:00Z`, fractions and offsets allowed), with
/// jiff's full validation (day of the month included).
pub(crate) fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    s.parse::<jiff::Timestamp>().ok().map(SystemTime::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_forms() {
        let t = |s| parse_rfc3339(s).map(|t| t.duration_since(SystemTime::UNIX_EPOCH).unwrap());
        assert_eq!(t("1970-01-01T00:00:00Z"), Some(Duration::ZERO));
        assert_eq!(
            t("2026-07-24T10:00:00Z"),
            Some(Duration::from_secs(1_784_887_200))
        );
        assert_eq!(
            t("2026-07-24T12:00:00+02:00"),
            Some(Duration::from_secs(1_784_887_200))
        );
        assert_eq!(
            t("1970-01-01T00:00:01.5Z"),
            Some(Duration::from_millis(1500))
        );
        for bad in [
            "",
            "2026-07-24",
            "2026-13-01T00:00:00Z",
            "2026-07-24T10:00:00",
            "x026-07-24T10:00:00Z",
            "2026-07-24T10:00:00.Z",
            "2026-02-31T10:00:00Z",
            "2026-04-31T10:00:00Z",
        ] {
            assert_eq!(t(bad), None, "{bad}");
        }
    }

    #[test]
    fn credential_checks() {
        let c = ExecConfig::new(ExecApiVersion::V1, "p");
        let ok = br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t","expirationTimestamp":"2030-01-01T00:00:00Z"}}"#;
        let out = parse_credential(&c, ok).unwrap();
        assert_eq!(out.token.unwrap().expose(), "t");
        assert!(out.expires.is_some());
        let cases: [(&[u8], &str); 4] = [
            (
                br#"{"apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"t"}}"#,
                "apiVersion",
            ),
            (
                br#"{"apiVersion":"client.authentication.k8s.io/v1"}"#,
                "no status",
            ),
            (
                br#"{"apiVersion":"client.authentication.k8s.io/v1","status":{}}"#,
                "neither",
            ),
            (b"secret-looking garbage", "line 1"),
        ];
        for (text, want) in cases {
            let e = parse_credential(&c, text).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
            assert!(!e.contains("secret-looking"), "{e}");
        }
    }

    #[test]
    fn stderr_is_summarized() {
        assert_eq!(summarize_stderr(b"\n"), "(no stderr)");
        assert_eq!(summarize_stderr(b"a\n\nb\n"), "stderr: a | b");
        assert!(summarize_stderr(&[b'x'; 2000]).len() < 600);
    }
}
