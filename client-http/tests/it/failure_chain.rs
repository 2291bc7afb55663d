//! A failure reaches the reflector's hook (and its log line, which prints the same chain) with
//! its cause, not only as `transport error`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kcache_client_http::{Client, HttpListerWatcher};
use kcache_reflector::{ErrorChain, Reflector};
use kcache_store::{Cache, DynamicObject};
use tokio_util::sync::CancellationToken;

use crate::support::{config, pods, server};

/// Runs a reflector over `client` until its watch-error hook has been called; the chain of the
/// first error.
async fn first_failure(client: Client) -> String {
    let lw = Arc::new(HttpListerWatcher::<DynamicObject>::builder(client, pods()).build());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let reflector = Reflector::builder(lw, Arc::new(Cache::new()))
        .watch_error_handler(move |e| s.lock().unwrap().push(ErrorChain(e).to_string()))
        .build();
    let cancel = CancellationToken::new();
    tokio::join!(reflector.run(cancel.clone()), async {
        kcache_testing::wait_until(Duration::from_secs(10), || !seen.lock().unwrap().is_empty())
            .await;
        cancel.cancel();
    });
    let first = seen.lock().unwrap().first().cloned();
    first.expect("the hook was called")
}

#[tokio::test]
async fn a_tls_verification_failure_names_its_cause() {
    let server = server(true, 1).await;
    let mut untrusted = config(&server);
    untrusted.root_certificates = None;
    let chain = first_failure(Client::new(untrusted).unwrap()).await;
    assert!(chain.starts_with("transport error: "), "{chain}");
    assert!(
        chain.contains("invalid peer certificate") && chain.contains("UnknownIssuer"),
        "{chain}"
    );
}
