//! The operator example (`testing/e2e/examples/operator.rs`) against the fake API server: its
//! definition installed through the API, a widget's config map applied and kept in line, and
//! collected when the widget goes.

#[allow(dead_code, reason = "the example's main is not the test's")]
#[path = "../../examples/operator.rs"]
mod example;

use kcache_testing_server::FakeApiServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_example_reconciles_widgets_into_configmaps() {
    let server = FakeApiServer::start().await.unwrap();
    example::check_operator(&server).await.unwrap();
    server.shutdown().await;
}
