//! The workload generators against a running server: churn is bounded, seeded and counted.

use kcache_testing::workload;
use kcache_testing_server::Churn;
use kcache_testing_server::FakeApiServer;
use kcache_testing_server::fake_api_server::ServedResource;

#[tokio::test]
async fn churn_does_what_it_reports() {
    let server = FakeApiServer::start().await.unwrap();
    let pods = ServedResource::pods();
    for pod in workload::pods(3, 10, 2) {
        server.create(&pods, pod).unwrap();
    }
    let rv_before = server.resource_version();
    let stats = Churn::new(11, 200).run(&server).await;
    assert_eq!(
        stats.added + stats.updated + stats.deleted,
        200,
        "{stats:?}"
    );
    assert!(
        stats.added > 0 && stats.updated > 0 && stats.deleted > 0,
        "{stats:?}"
    );
    let expected = 10 + stats.added - stats.deleted;
    assert_eq!(server.list(&pods).len() as u64, expected);
    // Every operation is one write: one resource version each.
    assert_eq!(server.resource_version() - rv_before, 200);

    // Same seed, same server state: the driver is deterministic.
    let again = FakeApiServer::start().await.unwrap();
    for pod in workload::pods(3, 10, 2) {
        again.create(&pods, pod).unwrap();
    }
    let stats2 = Churn::new(11, 200).run(&again).await;
    assert_eq!(format!("{stats:?}"), format!("{stats2:?}"));
    let names = |s: &FakeApiServer| {
        s.list(&pods)
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&server), names(&again));
}
