//! The official Kubernetes Python client (`kubernetes` from the Python package index) against the fake API server,
//! over HTTPS: dry run, the `status` and `scale` subresources, server-side apply, custom
//! resource definitions and custom objects,
//! `deletecollection`, DELETE answers, defaults, namespace deletion and access reviews, each
//! checked by `tests/python/client_writes.py` as the client sees them; and sharded lists and
//! watches (`shardSelector`) through the client's `call_api`, checked by
//! `tests/python/shard_selector.py` against its own FNV-1a.
//!
//! The test needs `python3` with the `kubernetes` package (`.ci/run` installs it). Without it
//! the test prints that it did not run and passes, unless `KCACHE_REQUIRE_PYTHON_CLIENT` is set
//! (CI sets it when the install worked), in which case it fails.

use std::time::Duration;

use tokio::process::Command;

use crate::fake_api_server_kubectl::env;

/// Whether `python3` can import the client; without it the test says loudly that it did not
/// run (and fails when `KCACHE_REQUIRE_PYTHON_CLIENT` is set).
async fn python_client_available() -> bool {
    let imported = Command::new("python3")
        .args(["-c", "import kubernetes"])
        .output()
        .await
        .is_ok_and(|out| out.status.success());
    if imported {
        return true;
    }
    let message = "fake_api_server_python: NOT RUN: python3 cannot import the `kubernetes` \
                   package. Install it (`pip install kubernetes`) to run this test.";
    assert!(
        std::env::var_os("KCACHE_REQUIRE_PYTHON_CLIENT").is_none(),
        "{message}"
    );
    eprintln!("{message}");
    false
}

/// Runs `tests/python/<script>` against a fresh HTTPS server; asserts that it ends in "ok".
async fn run_script(script: &str) {
    let env = env(true).await;
    let script = format!("{}/tests/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new("python3")
            .arg(&script)
            .arg(&env.kubeconfig)
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the Python client within 60 s")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("ok"),
        "the Python client's checks ({script}) failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn the_python_client_writes_as_against_kube_apiserver() {
    if python_client_available().await {
        run_script("client_writes.py").await;
    }
}

/// Shards asked for through the client's `call_api`, checked against the script's own FNV-1a.
#[tokio::test]
async fn the_python_client_lists_and_watches_shards() {
    if python_client_available().await {
        run_script("shard_selector.py").await;
    }
}
