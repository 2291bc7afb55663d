//! The real kubectl against the fake API server: `get pods -A`, `get pods -w` showing a change,
//! `get --raw` with limit/continue, and the kubeconfig's client certificate presented to a
//! server requiring one.
//!
//! These tests need `/usr/bin/kubectl` (Debian: `apt install kubernetes-client`). Without it they
//! print that they did not run and pass, unless `KCACHE_REQUIRE_KUBECTL` is set (CI sets it), in
//! which case they fail.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use kcache_testing_server::fake_api_server::{FakeApiServer, FakeApiServerBuilder, ServedResource};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::fake_api_server::pod;

/// Where the kubectl tests expect kubectl.
pub(crate) const KUBECTL: &str = "/usr/bin/kubectl";

/// Whether kubectl is installed; without it a test says loudly that it did not run (and fails
/// when `KCACHE_REQUIRE_KUBECTL` is set).
pub(crate) fn kubectl_available(test: &str) -> bool {
    if Path::new(KUBECTL).exists() {
        return true;
    }
    let message = format!(
        "{test}: NOT RUN: {KUBECTL} is missing. Install kubectl (Debian: `apt install \
         kubernetes-client`) to run the kubectl tests."
    );
    assert!(
        std::env::var_os("KCACHE_REQUIRE_KUBECTL").is_none(),
        "{message}"
    );
    eprintln!("{message}");
    false
}

/// A server and a kubeconfig file for it, removed on drop.
pub(crate) struct Env {
    pub(crate) server: FakeApiServer,
    pub(crate) kubeconfig: PathBuf,
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.kubeconfig);
        let _ = std::fs::remove_dir_all(self.cache_dir());
    }
}

impl Env {
    /// kubectl's discovery cache for this server alone: kubectl keys its cache by host and
    /// port and keeps it for hours, and a later server on the same port (another test, another
    /// run) serves other kinds.
    pub(crate) fn cache_dir(&self) -> std::path::PathBuf {
        self.kubeconfig.with_extension("cache")
    }
}

pub(crate) async fn env(tls: bool) -> Env {
    env_of(FakeApiServer::builder().tls(tls)).await
}

async fn env_of(builder: FakeApiServerBuilder) -> Env {
    let server = builder.start().await.unwrap();
    let kubeconfig = std::env::temp_dir().join(format!(
        "kcache-it-{}-{}.kubeconfig",
        std::process::id(),
        server.addr().port()
    ));
    server.write_kubeconfig(&kubeconfig).unwrap();
    Env { server, kubeconfig }
}

pub(crate) fn kubectl(env: &Env, args: &[&str]) -> Command {
    let mut cmd = Command::new(KUBECTL);
    cmd.args(args)
        .arg("--request-timeout=10s")
        .arg(format!("--cache-dir={}", env.cache_dir().display()))
        .env("KUBECONFIG", &env.kubeconfig)
        .env("HOME", std::env::temp_dir())
        .env_remove("HTTPS_PROXY")
        .env_remove("HTTP_PROXY")
        .env_remove("https_proxy")
        .env_remove("http_proxy")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// A manifest written next to the kubeconfig, removed on drop.
pub(crate) struct Manifest(PathBuf);

impl Manifest {
    /// Writes `yaml` as manifest `name`.
    pub(crate) fn new(env: &Env, name: &str, yaml: &str) -> Self {
        let path = env.kubeconfig.with_extension(format!("{name}.yaml"));
        std::fs::write(&path, yaml).unwrap();
        Self(path)
    }

    /// Its path, for `-f`.
    pub(crate) fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Manifest {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs kubectl to the end (20 s at most), whether it succeeds or not.
pub(crate) async fn output(env: &Env, args: &[&str]) -> std::process::Output {
    tokio::time::timeout(Duration::from_secs(20), kubectl(env, args).output())
        .await
        .expect("kubectl within 20 s")
        .unwrap()
}

/// Runs kubectl expecting it to fail; its stderr.
pub(crate) async fn fails(env: &Env, args: &[&str]) -> String {
    let out = output(env, args).await;
    assert!(!out.status.success(), "kubectl {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs kubectl to the end (20 s at most); its stdout, asserting that it succeeded.
pub(crate) async fn run(env: &Env, args: &[&str]) -> String {
    let out = output(env, args).await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "kubectl {args:?} failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[tokio::test]
async fn kubectl_get_pods_all_namespaces() {
    if !kubectl_available("kubectl_get_pods_all_namespaces") {
        return;
    }
    for tls in [false, true] {
        let env = env(tls).await;
        let pods = ServedResource::pods();
        env.server
            .create(&pods, pod("alpha", "web-1", "web"))
            .unwrap();
        env.server.create(&pods, pod("beta", "db-1", "db")).unwrap();
        let out = run(&env, &["get", "pods", "-A"]).await;
        eprintln!("kubectl get pods -A (tls={tls}):\n{out}");
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].starts_with("NAMESPACE") && lines[0].contains("NAME"),
            "{out}"
        );
        assert!(
            lines[1].starts_with("alpha") && lines[1].contains("web-1"),
            "{out}"
        );
        assert!(
            lines[2].starts_with("beta") && lines[2].contains("db-1"),
            "{out}"
        );
        let names = run(&env, &["get", "pods", "-n", "alpha", "-o", "name"]).await;
        assert_eq!(names.trim(), "pod/web-1");
    }
}

#[tokio::test]
async fn kubectl_presents_the_kubeconfigs_client_certificate() {
    if !kubectl_available("kubectl_presents_the_kubeconfigs_client_certificate") {
        return;
    }
    let env = env_of(FakeApiServer::builder().tls(true).client_auth(true)).await;
    env.server
        .create(&ServedResource::pods(), pod("default", "web-1", "web"))
        .unwrap();
    let names = run(&env, &["get", "pods", "-o", "name"]).await;
    assert_eq!(names.trim(), "pod/web-1");

    // Without the certificate the TLS handshake fails.
    let mut kc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&env.kubeconfig).unwrap()).unwrap();
    let user = kc["users"][0]["user"].as_object_mut().unwrap();
    assert!(user.remove("client-certificate-data").is_some());
    assert!(user.remove("client-key-data").is_some());
    std::fs::write(&env.kubeconfig, kc.to_string()).unwrap();
    let served = env.server.requests().len();
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        kubectl(&env, &["get", "pods", "-o", "name"]).output(),
    )
    .await
    .expect("kubectl within 20 s")
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("kubectl without a client certificate: {stderr}");
    assert!(!out.status.success());
    assert_eq!(
        env.server.requests().len(),
        served,
        "no request got through"
    );
    // With TLS 1.3 the client learns of the refusal after its side of the handshake: as the
    // server's "certificate required" alert, or, when its request write races the alert, as
    // a broken or reset connection.
    assert!(
        ["certificate", "broken pipe", "connection reset", "EOF"]
            .iter()
            .any(|s| stderr.contains(s)),
        "{stderr}"
    );
}

#[tokio::test]
async fn kubectl_get_raw_with_limit_and_continue() {
    if !kubectl_available("kubectl_get_raw_with_limit_and_continue") {
        return;
    }
    let env = env(false).await;
    for i in 0..3 {
        env.server
            .create(&ServedResource::pods(), pod("ns", &format!("p{i}"), "web"))
            .unwrap();
    }
    let first: serde_json::Value =
        serde_json::from_str(&run(&env, &["get", "--raw", "/api/v1/pods?limit=2"]).await).unwrap();
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    let token = first["metadata"]["continue"].as_str().unwrap();
    let path = format!("/api/v1/pods?limit=2&continue={token}");
    let second: serde_json::Value =
        serde_json::from_str(&run(&env, &["get", "--raw", &path]).await).unwrap();
    assert_eq!(second["items"][0]["metadata"]["name"], "p2");
    assert!(second["metadata"].get("continue").is_none());
    // kubectl's own chunked listing (--chunk-size) follows the tokens too.
    let out = run(
        &env,
        &["get", "pods", "-n", "ns", "--chunk-size=1", "-o", "name"],
    )
    .await;
    assert_eq!(out.lines().count(), 3, "{out}");
}

#[tokio::test]
async fn kubectl_get_pods_watch_shows_a_change() {
    if !kubectl_available("kubectl_get_pods_watch_shows_a_change") {
        return;
    }
    let env = env(false).await;
    let pods = ServedResource::pods();
    env.server
        .create(&pods, pod("ns", "before", "web"))
        .unwrap();
    let mut child = kubectl(&env, &["get", "pods", "-n", "ns", "-w"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let read = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            seen.push(line.clone());
            if line.contains("before") && !seen.iter().any(|l| l.contains("after")) {
                // The initial list is printed and the watch is (about to be) open: make a change.
                let server = &env.server;
                let wait = async {
                    while server.watcher_count(&pods) == 0 {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                };
                tokio::time::timeout(Duration::from_secs(10), wait)
                    .await
                    .unwrap();
                server.create(&pods, pod("ns", "after", "web")).unwrap();
            }
            if line.contains("after") {
                return;
            }
        }
    };
    let finished = tokio::time::timeout(Duration::from_secs(20), read).await;
    let _ = child.start_kill();
    let _ = child.wait().await;
    eprintln!("kubectl get pods -w:\n{}", seen.join("\n"));
    assert!(
        finished.is_ok(),
        "kubectl -w did not show the change: {seen:?}"
    );
}
