//! Done when: an informer built from `Config::infer()` works against the fake API server over
//! TLS with a kubeconfig written by the test, on both backends: client-http's own client
//! (`kcache_client_http::Config::infer()`) and kube-rs's (`kube::Config::infer()`, with
//! `KubeListerWatcher`).
//!
//! `Config::infer()` reads `KUBECONFIG`, and changing the environment of this (multi-threaded)
//! test process would be unsound, so the parent test runs this binary again with the variable
//! set, selecting the child test by name.

use std::sync::Arc;
use std::time::Duration;

use kcache_client_http::{Client, Config, Error, HttpListerWatcher, KubeListerWatcher};
use kcache_informer::{HandlerFuncs, SharedIndexInformer};
use kcache_reflector::ListerWatcher;
use kcache_store::DynamicObject;
use kcache_testing_server::FakeApiServer;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::support::{BACKENDS, Backend, fake_pods, pods, temp_dir};

/// Set for the child process; the value is the scenario.
const CHILD: &str = "KCACHE_CLIENT_HTTP_INFER_CHILD";

/// Runs `child_scenarios` in a new process with `KUBECONFIG` set and no in-cluster variables.
fn run_child(scenario: &str, kubeconfig: &std::path::Path) {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "informer::child_scenarios",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD, scenario)
        .env("KUBECONFIG", kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "child {scenario} failed:\n{text}");
    assert!(text.contains("1 passed"), "the child ran its test:\n{text}");
}

#[test]
fn informer_from_infer_over_tls() {
    for backend in BACKENDS {
        let dir = temp_dir();
        run_child(&format!("informer-{backend}"), &dir.path().join("config"));
    }
}

#[test]
fn infer_without_kubeconfig_or_cluster_names_both_reasons() {
    let dir = temp_dir();
    run_child("none", &dir.path().join("missing"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_scenarios() {
    let scenario = std::env::var(CHILD).unwrap_or_default();
    if let Some(backend) = scenario.strip_prefix("informer-") {
        return informer_scenario(Backend::named(backend).unwrap()).await;
    }
    if scenario == "none" {
        let e = Config::infer().unwrap_err();
        let Error::Infer {
            kubeconfig,
            in_cluster,
        } = &e
        else {
            panic!("{e}")
        };
        assert!(
            kubeconfig.starts_with("no kubeconfig file found"),
            "{kubeconfig}"
        );
        assert!(
            in_cluster.starts_with("not running in a cluster"),
            "{in_cluster}"
        );
    }
    // Otherwise run directly by the test harness: nothing to do.
}

/// Pods of the kubeconfig's namespace over `backend`, configured by its `Config::infer()`, and
/// the HTTP version its requests use (client-http negotiates HTTP/2; kube-rs speaks HTTP/1.1).
async fn infer_lister_watcher(
    backend: Backend,
) -> (Arc<dyn ListerWatcher<DynamicObject>>, &'static str) {
    match backend {
        Backend::Http => {
            let config = Config::infer().unwrap();
            assert_eq!(config.default_namespace, "default");
            let client = Client::new(config).unwrap();
            let lw = HttpListerWatcher::<DynamicObject>::builder(client.clone(), pods())
                .namespace(client.default_namespace())
                .skip_managed_fields(true)
                .build();
            (Arc::new(lw), "HTTP/2.0")
        }
        Backend::Kube => {
            let mut config = kube_client::Config::infer().await.unwrap();
            assert_eq!(config.default_namespace, "default");
            config.default_retry = false;
            let client = kube_client::Client::try_from(config).unwrap();
            let api: kube_client::Api<k8s_openapi::api::core::v1::Pod> =
                kube_client::Api::default_namespaced(client);
            let lw = KubeListerWatcher::<DynamicObject>::builder(api)
                .skip_managed_fields(true)
                .build();
            (Arc::new(lw), "HTTP/1.1")
        }
    }
}

/// The one place this file builds an informer.
fn informer(lw: Arc<dyn ListerWatcher<DynamicObject>>) -> SharedIndexInformer<DynamicObject> {
    SharedIndexInformer::builder(lw).build()
}

async fn informer_scenario(backend: Backend) {
    let server = FakeApiServer::builder().tls(true).start().await.unwrap();
    server
        .create(&fake_pods(), DynamicObject::new(Some("default"), "before"))
        .unwrap();
    let path = std::env::var_os("KUBECONFIG").unwrap();
    server
        .write_kubeconfig(std::path::Path::new(&path))
        .unwrap();

    let (lw, http_version) = infer_lister_watcher(backend).await;
    let informer = informer(lw);
    let (tx, mut events) = mpsc::unbounded_channel::<String>();
    let (added, deleted) = (tx.clone(), tx);
    informer
        .add_event_handler(
            HandlerFuncs::new()
                .on_added(move |o: &Arc<DynamicObject>, _| {
                    let _ = added.send(format!("added {}", o.metadata.name.clone().unwrap()));
                })
                .on_deleted(move |_| {
                    let _ = deleted.send("deleted".to_owned());
                }),
        )
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    let synced = tokio::time::timeout(Duration::from_secs(10), informer.synced())
        .await
        .unwrap();
    assert!(synced);
    assert!(informer.indexer().get_by_key("default/before").is_some());
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .unwrap()
            .unwrap()
    };
    assert_eq!(next().await, "added before");
    server
        .create(&fake_pods(), DynamicObject::new(Some("default"), "after"))
        .unwrap();
    assert_eq!(next().await, "added after");
    server
        .delete(&fake_pods(), Some("default"), "before")
        .unwrap();
    assert_eq!(next().await, "deleted");
    assert!(informer.indexer().get_by_key("default/before").is_none());
    let requests = server.requests();
    assert!(
        requests.iter().all(|r| r.version == http_version),
        "{backend}: {requests:?}"
    );
    // The informer's streaming list and watches, in the kubeconfig's namespace.
    assert!(
        requests
            .iter()
            .all(|r| r.path == "/api/v1/namespaces/default/pods"),
        "{requests:?}"
    );
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
