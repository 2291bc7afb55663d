//! Leader election against the fake API server's Leases: three candidates over HTTP with
//! `HttpLeaseLock` (real time, short durations), and three through the server's in-process
//! handle under a paused clock (client-go's defaults, a cut connection). One leader at a time
//! throughout; a leader that releases is replaced at once, one that does not once its lease
//! has expired, one cut off stops before another starts; the Lease the server stores names
//! each leader in turn.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kcache_client_http::{Client, Config, HttpLeaseLock};
use kcache_informer::LeaderElector;
use kcache_reflector::{Error, LeaseLock, LeaseRecord, Status, VersionedLease};
use kcache_store::DynamicObject;
use kcache_testing_server::FakeApiServer;
use kcache_testing_server::fake_api_server::{FakeApiError, ServedResource};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Each leadership as its work saw it: who, from when, until when (tokio's clock, paused or
/// not).
type Terms = Arc<Mutex<Vec<(String, Instant, Option<Instant>)>>>;

/// A candidate standing again whenever it loses, until its token is cancelled.
fn spawn_candidate(elector: LeaderElector, terms: &Terms) -> (CancellationToken, JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (cancel, terms) = (cancel.clone(), Arc::clone(terms));
        async move {
            while !cancel.is_cancelled() {
                let (terms, id) = (Arc::clone(&terms), elector.identity().to_owned());
                elector
                    .run(cancel.clone(), move |leading| {
                        let term = {
                            let mut t = terms.lock().unwrap();
                            t.push((id, Instant::now(), None));
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

/// Waits (60 s on tokio's clock at most) for a leader other than those in `not`.
async fn leader(terms: &Terms, not: &[&str]) -> (String, Instant) {
    let wait = async {
        loop {
            if let Some((id, at, None)) = terms.lock().unwrap().last().cloned()
                && !not.contains(&id.as_str())
            {
                return (id, at);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), wait)
        .await
        .unwrap_or_else(|_| panic!("no new leader: {:?}", terms.lock().unwrap()))
}

/// Each term starts after the one before it stopped.
fn one_leader_at_a_time(terms: &Terms) {
    let terms = terms.lock().unwrap();
    for pair in terms.windows(2) {
        let stopped = pair[0].2.expect("a later term means this one stopped");
        assert!(pair[1].1 > stopped, "two leaders at once: {pair:?}");
    }
}

async fn stop(candidate: (CancellationToken, JoinHandle<()>)) {
    candidate.0.cancel();
    candidate.1.await.unwrap();
}

/// The holder and transitions of the Lease the server stores.
fn stored(server: &FakeApiServer) -> (Option<String>, Option<i32>) {
    let lease = server
        .get(&ServedResource::leases(), Some("default"), "controller")
        .expect("the Lease exists");
    let record =
        LeaseRecord::from_spec(lease.data.get("spec").unwrap_or(&serde_json::Value::Null)).unwrap();
    (record.holder().map(str::to_owned), record.lease_transitions)
}

/// Over HTTP: `a` leads first and releases on cancel, so `b` or `c` takes over at once; that
/// one does not release, so the last takes over only once its lease has expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn candidates_over_http_keep_one_leader_and_hand_over() {
    let server = FakeApiServer::start().await.unwrap();
    let terms: Terms = Arc::default();
    let elector = |id: &str, release: bool| {
        let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
        let lock = Arc::new(HttpLeaseLock::new(client, "default", "controller"));
        LeaderElector::builder(lock, id)
            .lease_duration(Duration::from_secs(2))
            .renew_deadline(Duration::from_secs(1))
            .retry_period(Duration::from_millis(200))
            .release_on_cancel(release)
            .build()
            .unwrap()
    };
    let a = spawn_candidate(elector("a", true), &terms);
    assert_eq!(leader(&terms, &[]).await.0, "a");
    assert_eq!(stored(&server).0.as_deref(), Some("a"));
    let mut others = vec![
        ("b", spawn_candidate(elector("b", false), &terms)),
        ("c", spawn_candidate(elector("c", false), &terms)),
    ];
    tokio::time::sleep(Duration::from_millis(500)).await;

    stop(a).await;
    let (second, _) = leader(&terms, &["a"]).await;
    assert_eq!(stored(&server), (Some(second.clone()), Some(1)));

    let i = others.iter().position(|(id, _)| *id == second).unwrap();
    stop(others.remove(i).1).await;
    let gone = Instant::now();
    let (third, started) = leader(&terms, &["a", &second]).await;
    // Not released: the others wait for the 2 s lease (from when they last saw it change,
    // at most one jittered retry period, 440 ms, before the cancel).
    assert!(
        started - gone >= Duration::from_millis(1500),
        "taken before the lease expired"
    );
    assert_eq!(stored(&server), (Some(third), Some(2)));
    for (_, c) in others {
        stop(c).await;
    }
    one_leader_at_a_time(&terms);
    assert_eq!(terms.lock().unwrap().len(), 3);
}

/// The fake API server's Lease through its in-process handle rather than HTTP, so that a
/// paused clock drives the election: the server's own store, resource versions and 409s; a
/// candidate's connection can be cut.
struct ServerLease {
    server: Arc<FakeApiServer>,
    identity: String,
    cut: Arc<Mutex<HashSet<String>>>,
}

impl ServerLease {
    fn reachable(&self) -> Result<(), Error> {
        if self.cut.lock().unwrap().contains(&self.identity) {
            return Err(Error::transport(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "cut by the test",
            )));
        }
        Ok(())
    }
}

fn api_error(e: &FakeApiError) -> Error {
    Error::api(Status::failure(e.code, &e.reason, &e.message))
}

fn versioned(lease: &DynamicObject) -> Result<VersionedLease, Error> {
    let spec = lease.data.get("spec").unwrap_or(&serde_json::Value::Null);
    Ok(VersionedLease {
        record: LeaseRecord::from_spec(spec)?,
        resource_version: lease.metadata.resource_version.clone().unwrap_or_default(),
    })
}

fn lease_object(record: &LeaseRecord, rv: Option<&str>) -> DynamicObject {
    let mut lease = DynamicObject::new(Some("default"), "controller");
    lease.metadata.resource_version = rv.map(str::to_owned);
    let mut spec = serde_json::Map::new();
    record.write_spec(&mut spec);
    lease.data.insert("spec".to_owned(), spec.into());
    lease
}

#[async_trait::async_trait]
impl LeaseLock for ServerLease {
    fn describe(&self) -> String {
        "default/controller".to_owned()
    }
    async fn get(&self) -> Result<Option<VersionedLease>, Error> {
        self.reachable()?;
        let lease = self
            .server
            .get(&ServedResource::leases(), Some("default"), "controller");
        lease.map(|l| versioned(&l)).transpose()
    }
    async fn create(&self, record: &LeaseRecord) -> Result<VersionedLease, Error> {
        self.reachable()?;
        let created = self
            .server
            .create(&ServedResource::leases(), lease_object(record, None))
            .map_err(|e| api_error(&e))?;
        versioned(&created)
    }
    async fn update(
        &self,
        current: &VersionedLease,
        record: &LeaseRecord,
    ) -> Result<VersionedLease, Error> {
        self.reachable()?;
        let written = self
            .server
            .update(
                &ServedResource::leases(),
                lease_object(record, Some(&current.resource_version)),
            )
            .map_err(|e| api_error(&e))?;
        versioned(&written)
    }
}

/// Under a paused clock with client-go's defaults (15 s, 10 s, 2 s): `a` leads first and
/// releases on cancel (the next leads within one jittered retry period, 4.4 s); that one is
/// cut off (it stops within renew deadline + retry period, 12 s, and the last takes over
/// within lease duration + 4.4 s); the last is cancelled without releasing (taken over after
/// its lease expired). The server's Lease names each leader, with one more transition each.
#[tokio::test(start_paused = true)]
async fn three_candidates_on_the_fake_servers_lease_under_a_paused_clock() {
    let server = Arc::new(FakeApiServer::start().await.unwrap());
    let cut: Arc<Mutex<HashSet<String>>> = Arc::default();
    let terms: Terms = Arc::default();
    let elector = |i: u64, id: &str| {
        let lock = Arc::new(ServerLease {
            server: Arc::clone(&server),
            identity: id.to_owned(),
            cut: Arc::clone(&cut),
        });
        LeaderElector::builder(lock, id)
            .release_on_cancel(id == "a")
            .seed(i)
            .build()
            .unwrap()
    };
    let a = spawn_candidate(elector(0, "a"), &terms);
    assert_eq!(leader(&terms, &[]).await.0, "a");
    let mut others = vec![
        ("b", spawn_candidate(elector(1, "b"), &terms)),
        ("c", spawn_candidate(elector(2, "c"), &terms)),
    ];
    tokio::time::sleep(Duration::from_secs(30)).await;

    stop(a).await;
    let gone = Instant::now();
    let (second, started) = leader(&terms, &["a"]).await;
    assert!(
        started - gone <= Duration::from_millis(4400),
        "released: taken at once"
    );
    assert_eq!(stored(&server), (Some(second.clone()), Some(1)));

    tokio::time::sleep(Duration::from_secs(30)).await;
    cut.lock().unwrap().insert(second.clone());
    let cut_at = Instant::now();
    let (third, started) = leader(&terms, &["a", &second]).await;
    let second_stopped = terms.lock().unwrap()[1].2.expect("the cut leader stopped");
    assert!(
        second_stopped - cut_at <= Duration::from_secs(12),
        "the cut leader stopped late"
    );
    assert!(started - cut_at <= Duration::from_millis(19_400));
    assert_eq!(stored(&server), (Some(third.clone()), Some(2)));
    cut.lock().unwrap().clear();

    tokio::time::sleep(Duration::from_secs(30)).await;
    let i = others.iter().position(|(id, _)| *id == third).unwrap();
    stop(others.remove(i).1).await;
    let gone = Instant::now();
    let (fourth, started) = leader(&terms, &["a", &third]).await;
    assert_eq!(fourth, second);
    assert!(
        started - gone >= Duration::from_secs(13),
        "taken before the lease expired"
    );
    assert!(started - gone <= Duration::from_millis(19_400));
    assert_eq!(stored(&server), (Some(fourth), Some(3)));

    for (_, c) in others {
        stop(c).await;
    }
    one_leader_at_a_time(&terms);
    assert_eq!(terms.lock().unwrap().len(), 4);
}
