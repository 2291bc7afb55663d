//! Standalone fake Kubernetes API server, for kubectl and any other client.
//!
//! ```text
//! cargo run -p kcache-testing-server --example fake_api_server -- [--pods N] [--seed S] [--kubeconfig PATH] [--tls] [--churn OPS_PER_SEC]
//! ```
//!
//! Prints the URL and the kubeconfig path, then runs until Ctrl-C.
#![allow(clippy::print_stdout, reason = "a command-line tool reports on stdout")]

use std::path::PathBuf;

use clap::Parser;
use kcache_testing::workload::pods;
use kcache_testing_server::Churn;
use kcache_testing_server::fake_api_server::{FakeApiServer, ServedResource};

/// Standalone fake Kubernetes API server: prints the URL and the kubeconfig path, then runs
/// until Ctrl-C.
#[derive(Parser)]
struct Args {
    /// Realistic pods to create at start.
    #[arg(long, default_value_t = 0)]
    pods: usize,
    /// Seed of the pods, the server's generated values and the churn.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write the kubeconfig (default: a file in the temporary directory).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Serve HTTPS with a generated CA (embedded in the kubeconfig).
    #[arg(long)]
    tls: bool,
    /// Adds, updates and deletes of pods per second (0: none).
    #[arg(long, value_name = "OPS_PER_SEC", default_value_t = 0)]
    churn: u32,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let server = FakeApiServer::builder()
        .tls(args.tls)
        .seed(args.seed)
        .start()
        .await?;
    let pod_resource = ServedResource::pods();
    for pod in pods(args.seed, args.pods, 4) {
        server.create(&pod_resource, pod)?;
    }
    let path = args.kubeconfig.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("kcache-fake-{}.kubeconfig", server.addr().port()))
    });
    server.write_kubeconfig(&path)?;
    println!("fake API server listening on {}", server.url());
    println!("kubeconfig written to {}", path.display());
    println!("try: KUBECONFIG={} kubectl get pods -A", path.display());
    let churn = async {
        if args.churn > 0 {
            let stats = Churn::new(args.seed, u64::MAX)
                .rate(args.churn)
                .run(&server)
                .await;
            println!("churn finished: {stats:?}");
        }
        std::future::pending::<()>().await;
    };
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        () = churn => {}
    }
    println!("shutting down");
    server.shutdown().await;
    Ok(())
}
