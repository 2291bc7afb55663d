//! Exec credential plugins are bounded: stdout up to a limit, stderr kept up to a limit, a run
//! time limit; a plugin that overruns is killed together with the processes it started.
//!
//! Real child processes cannot run on paused time, so these use short real timeouts.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kcache_client_http::{Auth, Config, ExecApiVersion, ExecConfig, Secret};
use kcache_testing_server::FakeApiServer;

use crate::support::{list_names, server, temp_dir, write};

const CREDENTIAL: &str = r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t"}}"#;

/// An executable shell script `dir/name` running `body`, with `$DIR` set to `dir` when run.
fn plugin(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt as _;
    let script = write(dir, name, &format!("#!/bin/sh\n{body}\n"));
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script.display().to_string()
}

/// A config for `server` authenticating with the plugin `command`, with this run timeout.
fn config(server: &FakeApiServer, dir: &Path, command: &str, timeout: Duration) -> Config {
    let mut exec = ExecConfig::new(ExecApiVersion::V1, command);
    exec.env = vec![("DIR".to_owned(), Secret::new(dir.display().to_string()))];
    exec.timeout = timeout;
    Config::new(server.url().parse().unwrap()).with_auth(Auth::Exec(Box::new(exec)))
}

/// The pid written to `path` by a plugin.
fn pid(path: &PathBuf) -> u32 {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.trim().parse().unwrap()
}

/// Whether process `pid` is gone: no `/proc/<pid>`, or only its zombie (dead, waiting for a
/// parent that may never reap it).
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // `pid (comm) S ...`: the state follows the last `)`.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// Waits up to 5 s for every process of `pids` to be dead.
async fn assert_dead(pids: &[u32]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !pids.iter().all(|&p| dead(p)) {
        assert!(Instant::now() < deadline, "still running: {pids:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A plugin that records its pid and its child's (`sleep 1000`, which holds stdout open too),
/// then never finishes.
const HANGS: &str = r#"echo $$ > "$DIR/plugin.pid"
sleep 1000 &
echo $! > "$DIR/child.pid"
wait"#;

#[tokio::test]
async fn a_plugin_printing_too_much_is_stopped_at_the_limit() {
    let server = server(false, 1).await;
    let dir = temp_dir();
    // 10 MiB through a pipeline (two more processes of the plugin's group).
    let command = plugin(
        dir.path(),
        "flood.sh",
        "echo $$ > \"$DIR/plugin.pid\"\nyes xxxxxxxxxxxxxxx | head -c 10485760\nsleep 1000",
    );
    let started = Instant::now();
    let chain = list_names(config(
        &server,
        dir.path(),
        &command,
        Duration::from_secs(60),
    ))
    .await
    .unwrap_err();
    assert!(
        chain.contains(&format!(
            "exec plugin `{command}` printed more than 1048576 bytes on stdout"
        )),
        "{chain}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the limit ends the run, not the timeout"
    );
    assert_dead(&[pid(&dir.path().join("plugin.pid"))]).await;
}

#[tokio::test]
async fn the_stdout_limit_is_configurable() {
    let server = server(false, 1).await;
    let dir = temp_dir();
    let command = plugin(dir.path(), "ok.sh", &format!("printf '%s' '{CREDENTIAL}'"));
    let mut config = config(&server, dir.path(), &command, Duration::from_secs(60));
    assert_eq!(list_names(config.clone()).await.unwrap(), ["p0"]);
    if let Auth::Exec(exec) = &mut config.auth {
        assert_eq!(exec.max_stdout, ExecConfig::DEFAULT_MAX_STDOUT);
        assert_eq!(exec.max_stderr, ExecConfig::DEFAULT_MAX_STDERR);
        exec.max_stdout = 50;
    }
    let chain = list_names(config).await.unwrap_err();
    assert!(
        chain.contains("printed more than 50 bytes on stdout"),
        "{chain}"
    );
}

#[tokio::test]
async fn a_chatty_stderr_is_kept_short_and_is_no_error() {
    let server = server(false, 1).await;
    let dir = temp_dir();
    // 4 MiB of log lines, then the credential.
    let command = plugin(
        dir.path(),
        "chatty.sh",
        &format!("yes 'debug: still working' | head -c 4194304 >&2\nprintf '%s' '{CREDENTIAL}'"),
    );
    let ok = config(&server, dir.path(), &command, Duration::from_secs(60));
    assert_eq!(list_names(ok).await.unwrap(), ["p0"]);
    // A failing one: the error quotes the start of its stderr, briefly.
    let command = plugin(
        dir.path(),
        "failing.sh",
        "echo 'error: token expired' >&2\nyes 'more noise' | head -c 4194304 >&2\nexit 2",
    );
    let chain = list_names(config(
        &server,
        dir.path(),
        &command,
        Duration::from_secs(60),
    ))
    .await
    .unwrap_err();
    assert!(
        chain.contains("exit status: 2; stderr: error: token expired | more noise"),
        "{chain}"
    );
    assert!(chain.len() < 2000, "{chain}");
}

#[tokio::test]
async fn a_plugin_that_never_finishes_is_killed_with_its_children() {
    let server = server(false, 1).await;
    let dir = temp_dir();
    let command = plugin(dir.path(), "hang.sh", HANGS);
    let started = Instant::now();
    let chain = list_names(config(
        &server,
        dir.path(),
        &command,
        Duration::from_millis(800),
    ))
    .await
    .unwrap_err();
    assert!(
        chain.contains(&format!(
            "exec plugin `{command}` did not finish within 800ms"
        )),
        "{chain}"
    );
    assert!(!chain.contains("request timed out"), "{chain}");
    // Even with a list timeout shorter than the plugin's: the plugin's own timeout names it.
    let mut short = config(&server, dir.path(), &command, Duration::from_millis(800));
    short.list_timeout = Duration::from_millis(300);
    let chain = list_names(short).await.unwrap_err();
    assert!(chain.contains("did not finish within 800ms"), "{chain}");
    assert!(started.elapsed() < Duration::from_secs(20));
    let plugin_pid = pid(&dir.path().join("plugin.pid"));
    let child_pid = pid(&dir.path().join("child.pid"));
    assert_dead(&[plugin_pid, child_pid]).await;
}

#[tokio::test]
async fn an_abandoned_run_kills_the_plugin_and_its_children() {
    let server = server(false, 1).await;
    let dir = temp_dir();
    let command = plugin(dir.path(), "hang.sh", HANGS);
    // The caller gives up first: the run is dropped, not timed out.
    let config = config(&server, dir.path(), &command, Duration::from_secs(60));
    let gave_up = tokio::time::timeout(Duration::from_millis(800), list_names(config)).await;
    assert!(gave_up.is_err(), "{gave_up:?}");
    let plugin_pid = pid(&dir.path().join("plugin.pid"));
    let child_pid = pid(&dir.path().join("child.pid"));
    assert_dead(&[plugin_pid, child_pid]).await;
}
