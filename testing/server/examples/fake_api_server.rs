//! Standalone fake Kubernetes API server, for kubectl and any other client.
//!
//! ```text
//! cargo run -p kcache-testing-server --example fake_api_server -- [--pods N] [--seed S] [--kubeconfig PATH] [--tls] [--churn OPS_PER_SEC]
//! ```
//!
//! Prints the URL and the kubeconfig path, then runs until Ctrl-C.
#![allow(clippy::print_stdout, reason = "a command-line tool reports on stdout")]

use std::path::PathBuf;

use kcache_testing::workload::pods;
use kcache_testing_server::Churn;
use kcache_testing_server::fake_api_server::{FakeApiServer, ServedResource};

struct Args {
    pods: usize,
    seed: u64,
    kubeconfig: Option<PathBuf>,
    tls: bool,
    churn: u32,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        pods: 0,
        seed: 1,
        kubeconfig: None,
        tls: false,
        churn: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--pods" => {
                args.pods = value("--pods")?
                    .parse()
                    .map_err(|e| format!("--pods: {e}"))?;
            }
            "--seed" => {
                args.seed = value("--seed")?
                    .parse()
                    .map_err(|e| format!("--seed: {e}"))?;
            }
            "--kubeconfig" => args.kubeconfig = Some(PathBuf::from(value("--kubeconfig")?)),
            "--churn" => {
                args.churn = value("--churn")?
                    .parse()
                    .map_err(|e| format!("--churn: {e}"))?;
            }
            "--tls" => args.tls = true,
            "-h" | "--help" => {
                return Err(
                    "usage: fake_api_server [--pods N] [--seed S] [--kubeconfig PATH] \
                            [--tls] [--churn OPS_PER_SEC]"
                        .into(),
                );
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
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
