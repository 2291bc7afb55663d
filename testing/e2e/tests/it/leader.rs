//! Leader election over HTTP: candidates with `HttpLeaseLock` against the fake API server's
//! Leases (real time, short durations). One leader at a time; a leader that releases is
//! replaced at once, one that does not once its lease has expired.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kcache_client_http::{Client, Config, HttpLeaseLock};
use kcache_informer::LeaderElector;
use kcache_testing_server::FakeApiServer;
use tokio_util::sync::CancellationToken;

type Terms = Arc<Mutex<Vec<(String, Instant, Option<Instant>)>>>;

fn stand(
    url: &str,
    identity: &'static str,
    release: bool,
    terms: &Terms,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let client = Client::new(Config::new(url.parse().unwrap())).unwrap();
    let lock = Arc::new(HttpLeaseLock::new(client, "default", "controller"));
    let elector = LeaderElector::builder(lock, identity)
        .lease_duration(Duration::from_millis(1500))
        .renew_deadline(Duration::from_secs(1))
        .retry_period(Duration::from_millis(200))
        .release_on_cancel(release)
        .build()
        .unwrap();
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (cancel, terms) = (cancel.clone(), Arc::clone(terms));
        async move {
            while !cancel.is_cancelled() {
                let terms = Arc::clone(&terms);
                elector
                    .run(cancel.clone(), move |leading| {
                        let term = {
                            let mut t = terms.lock().unwrap();
                            t.push((identity.to_owned(), Instant::now(), None));
                            t.len() - 1
                        };
                        async move {
                            leading.cancelled().await;
                            terms.lock().unwrap()[term].2 = Some(Instant::now());
                        }
                    })
                    .await;
            }
        }
    });
    (cancel, task)
}

async fn leader(terms: &Terms, not: &[&str]) -> (String, Instant) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some((id, at, None)) = terms.lock().unwrap().last().cloned()
            && !not.contains(&id.as_str())
        {
            return (id, at);
        }
        assert!(
            Instant::now() < deadline,
            "no new leader: {:?}",
            terms.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn candidates_over_http_keep_one_leader_and_hand_over() {
    // Leases are among the kinds the fake server serves by default.
    let server = FakeApiServer::start().await.unwrap();
    let terms: Terms = Arc::default();
    let mut candidates = vec![
        ("a", stand(server.url(), "a", true, &terms)),
        ("b", stand(server.url(), "b", false, &terms)),
        ("c", stand(server.url(), "c", false, &terms)),
    ];
    let (first, _) = leader(&terms, &[]).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The first leader goes. `a` releases: replaced at once; the others: once the lease expires.
    let i = candidates.iter().position(|(id, _)| *id == first).unwrap();
    let (_, (cancel, task)) = candidates.remove(i);
    cancel.cancel();
    task.await.unwrap();
    let gone = Instant::now();
    let (second, started) = leader(&terms, &[&first]).await;
    if first == "a" {
        assert!(
            started - gone < Duration::from_secs(1),
            "released: taken at once"
        );
    } else {
        assert!(
            started - gone >= Duration::from_millis(400),
            "not before the lease expired"
        );
    }
    let i = candidates.iter().position(|(id, _)| *id == second).unwrap();
    let (_, (cancel, task)) = candidates.remove(i);
    cancel.cancel();
    task.await.unwrap();
    let (third, _) = leader(&terms, &[&first, &second]).await;
    for (_, (cancel, task)) in candidates {
        cancel.cancel();
        task.await.unwrap();
    }
    let terms = terms.lock().unwrap().clone();
    let ids: Vec<&str> = terms.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(ids, [first.as_str(), second.as_str(), third.as_str()]);
    for pair in terms.windows(2) {
        assert!(
            pair[1].1 > pair[0].2.unwrap(),
            "two leaders at once: {pair:?}"
        );
    }
}
