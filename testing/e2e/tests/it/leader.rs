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

/// A Lease on the fake API server reached through its in-process handle rather than HTTP, so
/// that a paused clock drives the election (the server's own store, resource versions and 409s;
/// a candidate's connection can be cut).
struct ServerLease {
    server: Arc<FakeApiServer>,
    identity: String,
    cut: Arc<Mutex<std::collections::HashSet<String>>>,
}

impl ServerLease {
    fn check(&self) -> Result<(), kcache_reflector::Error> {
        if self.cut.lock().unwrap().contains(&self.identity) {
            return Err(kcache_reflector::Error::transport(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "cut by the test",
            )));
        }
        Ok(())
    }
}

fn api_error(e: &kcache_testing_server::fake_api_server::FakeApiError) -> kcache_reflector::Error {
    kcache_reflector::Error::api(kcache_reflector::Status::failure(
        e.code, &e.reason, &e.message,
    ))
}

fn to_versioned(o: &kcache_store::DynamicObject) -> kcache_reflector::VersionedLease {
    let spec = o.data.get("spec").cloned().unwrap_or_default();
    let text = |k: &str| spec.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    let int = |k: &str| {
        spec.get(k)
            .and_then(serde_json::Value::as_i64)
            .and_then(|n| i32::try_from(n).ok())
    };
    let mut record = kcache_reflector::LeaseRecord::default();
    record.holder_identity = text("holderIdentity");
    record.lease_duration_seconds = int("leaseDurationSeconds");
    record.acquire_time = text("acquireTime");
    record.renew_time = text("renewTime");
    record.lease_transitions = int("leaseTransitions");
    kcache_reflector::VersionedLease {
        record,
        resource_version: o.metadata.resource_version.clone().unwrap_or_default(),
    }
}

fn to_object(
    record: &kcache_reflector::LeaseRecord,
    rv: Option<&str>,
) -> kcache_store::DynamicObject {
    let mut o = kcache_store::DynamicObject::new(Some("default"), "controller");
    o.metadata.resource_version = rv.map(str::to_owned);
    o.data.insert(
        "spec".to_owned(),
        serde_json::json!({
            "holderIdentity": record.holder_identity,
            "leaseDurationSeconds": record.lease_duration_seconds,
            "acquireTime": record.acquire_time,
            "renewTime": record.renew_time,
            "leaseTransitions": record.lease_transitions,
        }),
    );
    o
}

#[async_trait::async_trait]
impl kcache_reflector::LeaseLock for ServerLease {
    fn describe(&self) -> String {
        "default/controller".to_owned()
    }
    async fn get(
        &self,
    ) -> Result<Option<kcache_reflector::VersionedLease>, kcache_reflector::Error> {
        self.check()?;
        let leases = kcache_testing_server::fake_api_server::ServedResource::leases();
        Ok(self
            .server
            .get(&leases, Some("default"), "controller")
            .map(|o| to_versioned(&o)))
    }
    async fn create(
        &self,
        record: &kcache_reflector::LeaseRecord,
    ) -> Result<kcache_reflector::VersionedLease, kcache_reflector::Error> {
        self.check()?;
        let leases = kcache_testing_server::fake_api_server::ServedResource::leases();
        let o = self
            .server
            .create(&leases, to_object(record, None))
            .map_err(|e| api_error(&e))?;
        Ok(to_versioned(&o))
    }
    async fn update(
        &self,
        current: &kcache_reflector::VersionedLease,
        record: &kcache_reflector::LeaseRecord,
    ) -> Result<kcache_reflector::VersionedLease, kcache_reflector::Error> {
        self.check()?;
        let leases = kcache_testing_server::fake_api_server::ServedResource::leases();
        let o = self
            .server
            .update(&leases, to_object(record, Some(&current.resource_version)))
            .map_err(|e| api_error(&e))?;
        Ok(to_versioned(&o))
    }
}

/// Each leadership on the paused clock: who, from when, until when.
type PausedTerms = Arc<Mutex<Vec<(String, tokio::time::Instant, Option<tokio::time::Instant>)>>>;

/// Candidate `id` (the `i`-th; the first releases on cancel) on the server's Lease, standing
/// again whenever it loses, recording its terms.
fn paused_candidate(
    server: &Arc<FakeApiServer>,
    cut: &Arc<Mutex<std::collections::HashSet<String>>>,
    terms: &PausedTerms,
    i: usize,
    id: &'static str,
) -> (&'static str, CancellationToken, tokio::task::JoinHandle<()>) {
    let lock = Arc::new(ServerLease {
        server: Arc::clone(server),
        identity: id.to_owned(),
        cut: Arc::clone(cut),
    });
    let elector = LeaderElector::builder(lock, id)
        .release_on_cancel(i == 0)
        .seed(i as u64)
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
                            t.push((id.to_owned(), tokio::time::Instant::now(), None));
                            t.len() - 1
                        };
                        async move {
                            leading.cancelled().await;
                            terms.lock().unwrap()[term].2 = Some(tokio::time::Instant::now());
                        }
                    })
                    .await;
            }
        }
    });
    (id, cancel, task)
}

/// The scenario on the fake API server's own Lease, under a paused clock, with
/// client-go's defaults: the leader cancelled with release (the next within 4.4 s), the next
/// cut off (it stops within 12 s, the one after starts within 15 + 4.4 s), the next cancelled
/// without release (taken over after its lease expired). One leader at a time throughout,
/// and the terms agree with the holders the server stored.
#[tokio::test(start_paused = true)]
async fn three_candidates_on_the_fake_servers_lease_under_a_paused_clock() {
    use tokio::time::Instant as TokioInstant;

    let server = Arc::new(FakeApiServer::start().await.unwrap());
    let cut: Arc<Mutex<std::collections::HashSet<String>>> = Arc::default();
    let terms: PausedTerms = Arc::default();
    let mut candidates: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .enumerate()
        .map(|(i, id)| paused_candidate(&server, &cut, &terms, i, id))
        .collect();
    let current = |not: &[String]| {
        terms
            .lock()
            .unwrap()
            .last()
            .filter(|t| t.2.is_none() && !not.contains(&t.0))
            .cloned()
    };
    let next = |not: Vec<String>| {
        let current = &current;
        async move {
            loop {
                if let Some(t) = current(&not) {
                    return t;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let first = next(vec![]).await;
    assert_eq!(first.0, "a", "the first candidate leads first");
    tokio::time::sleep(Duration::from_secs(30)).await;
    let (_, cancel, task) = candidates.remove(0);
    cancel.cancel();
    task.await.unwrap();
    let gone = TokioInstant::now();
    let second = next(vec!["a".to_owned()]).await;
    assert!(
        second.1 - gone <= Duration::from_millis(4400),
        "released: {second:?}"
    );

    tokio::time::sleep(Duration::from_secs(30)).await;
    cut.lock().unwrap().insert(second.0.clone());
    let cut_at = TokioInstant::now();
    let third = next(vec!["a".to_owned(), second.0.clone()]).await;
    let second_stopped = terms.lock().unwrap()[1].2.unwrap();
    assert!(
        second_stopped - cut_at <= Duration::from_secs(12),
        "the cut leader stopped late"
    );
    assert!(
        third.1 - cut_at <= Duration::from_millis(19_400),
        "{third:?}"
    );
    cut.lock().unwrap().clear();

    tokio::time::sleep(Duration::from_secs(30)).await;
    let i = candidates
        .iter()
        .position(|(id, ..)| *id == third.0)
        .unwrap();
    let (_, cancel, task) = candidates.remove(i);
    cancel.cancel();
    task.await.unwrap();
    let gone = TokioInstant::now();
    let fourth = next(vec!["a".to_owned(), third.0.clone()]).await;
    assert_eq!(fourth.0, second.0);
    assert!(
        fourth.1 - gone >= Duration::from_secs(13),
        "taken before the lease expired"
    );
    assert!(fourth.1 - gone <= Duration::from_millis(19_400));

    for (_, cancel, task) in candidates {
        cancel.cancel();
        task.await.unwrap();
    }
    let terms = terms.lock().unwrap().clone();
    for pair in terms.windows(2) {
        assert!(
            pair[1].1 > pair[0].2.unwrap(),
            "two leaders at once: {pair:?}"
        );
    }
    let ids: Vec<&str> = terms.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(
        ids,
        ["a", second.0.as_str(), third.0.as_str(), second.0.as_str()]
    );
}
