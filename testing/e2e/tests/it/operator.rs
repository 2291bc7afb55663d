//! The operator example (`testing/e2e/examples/operator.rs`) against the fake API server: its
//! definition installed through the API, a widget's config map, registry entry, status and
//! events, its finalizer's cleanup and the garbage collection of what it owned; once on a quiet
//! server and once with the chaos suite's faults (dropped, cut and expired watches, failing
//! lists and watches) while the widget changes.

#[allow(dead_code, reason = "the example's main is not the test's")]
#[path = "../../examples/operator.rs"]
mod example;

use kcache_testing_server::FakeApiServer;
use kcache_testing_server::fake_api_server::{Fault, FaultKind, Verb};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_example_runs_its_widgets_through_their_lifecycle() {
    let server = FakeApiServer::start().await.unwrap();
    example::check_operator(&server, |_| {}).await.unwrap();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_example_converges_under_faults() {
    let server = FakeApiServer::start().await.unwrap();
    example::check_operator(&server, |server| {
        server.inject(Fault::watch(FaultKind::DropAfter(1)));
        server.inject(Fault::expired_event(2));
        server.inject(Fault::watch(FaultKind::TruncateAfter(1)));
        server.inject(Fault::status(Verb::List, 500, "InternalError", "chaos"));
        server.inject(Fault::too_many_requests(Verb::Watch, 1));
        server.inject(Fault::watch(FaultKind::CloseAfter(0)));
    })
    .await
    .unwrap();
    server.shutdown().await;
}
