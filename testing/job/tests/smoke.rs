//! The main job's program, run as a user runs it, small: an embedded server over plain HTTP
//! with a few pods and a second of churn. It must end well (exit 0), say on its standard output
//! that the cache equals the server, and print the informer's `kcache_` metrics.

use std::process::Command;

#[test]
fn the_job_syncs_churns_and_ends_with_the_cache_equal_to_the_server() {
    let output = Command::new(env!("CARGO_BIN_EXE_informer"))
        .args([
            "--pods",
            "50",
            "--churn",
            "20",
            "--seconds",
            "1",
            "--plain-http",
        ])
        .output()
        .expect("the informer program starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("cache equals server: ")
                && l.contains(" objects at resource version ")),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.trim_start().starts_with("kcache_")),
        "no kcache_ metrics line\nstderr:\n{stderr}"
    );
}
