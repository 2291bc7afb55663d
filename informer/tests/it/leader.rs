//! Leader election on a Lease (client-go's `leaderelection`): three candidates against one
//! in-memory Lease, under a paused clock. One leader at a time throughout, checked from the
//! candidates' own "started/stopped leading" history and from the Lease's holders; a leader
//! cancelled with and without release, and one cut off from the server, hand over in time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kcache_informer::{Error, LeaderElector};
use kcache_testing::FakeLease;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// One leadership as its candidate's work saw it.
#[derive(Debug, Clone)]
struct Term {
    identity: String,
    started: Instant,
    stopped: Option<Instant>,
}

type History = Arc<Mutex<Vec<Term>>>;

/// A candidate standing again whenever it loses, until its token is cancelled.
struct Candidate {
    elector: LeaderElector,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn candidate(lease: &FakeLease, identity: &str, release: bool, history: &History) -> Candidate {
    let elector = LeaderElector::builder(lease.lock(identity), identity)
        .release_on_cancel(release)
        .seed(identity.bytes().map(u64::from).sum())
        .build()
        .unwrap();
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (elector, cancel, history) = (elector.clone(), cancel.clone(), Arc::clone(history));
        let identity = identity.to_owned();
        async move {
            while !cancel.is_cancelled() {
                let (history, identity) = (Arc::clone(&history), identity.clone());
                elector
                    .run(cancel.clone(), move |leading: CancellationToken| {
                        let term = history.lock().unwrap().len();
                        history.lock().unwrap().push(Term {
                            identity,
                            started: Instant::now(),
                            stopped: None,
                        });
                        async move {
                            leading.cancelled().await;
                            history.lock().unwrap()[term].stopped = Some(Instant::now());
                        }
                    })
                    .await;
            }
        }
    });
    Candidate {
        elector,
        cancel,
        task,
    }
}

/// Asserts that no two terms overlap: each starts after the previous one stopped.
fn one_leader_at_a_time(history: &[Term]) {
    for pair in history.windows(2) {
        let stopped = pair[0]
            .stopped
            .expect("a later term means this one stopped");
        assert!(pair[1].started > stopped, "two leaders at once: {pair:?}");
    }
}

/// The terms' holders, in order, must be the Lease's holders after each change of holder.
fn agrees_with_the_lease(history: &[Term], lease: &FakeLease) {
    let mut holders = lease.holders();
    holders.dedup();
    holders.retain(|h| !h.is_empty());
    let terms: Vec<&str> = history.iter().map(|t| t.identity.as_str()).collect();
    assert_eq!(terms, holders);
}

async fn current_term(history: &History) -> Term {
    loop {
        if let Some(t) = history
            .lock()
            .unwrap()
            .last()
            .filter(|t| t.stopped.is_none())
        {
            return t.clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// client-go's defaults (15 s, 10 s, 2 s) with three candidates: the first leader is cancelled
/// and releases (another leads within one jittered retry period), the second is cut off from
/// the server (it stops leading within the renew deadline and a retry period of its last
/// renewal, before the lease expires for the others, who take over within the lease duration
/// and a retry period), the third is cancelled without releasing (taken over once its lease
/// expires). One leader at a time throughout.
#[tokio::test(start_paused = true)]
async fn three_candidates_one_leader_at_a_time_through_cancel_release_and_a_cut() {
    let lease = FakeLease::new("kube-system/controller");
    let history: History = Arc::default();
    let mut candidates: Vec<Candidate> = ["a", "b", "c"]
        .iter()
        .enumerate()
        .map(|(i, id)| candidate(&lease, id, i == 0, &history))
        .collect();
    let by_name =
        |c: &[Candidate], id: &str| c.iter().position(|c| c.elector.identity() == id).unwrap();

    // 1. Cancelled with release: the next leader within 2 × 2.2 retry periods.
    let first = current_term(&history).await;
    assert_eq!(
        first.identity, "a",
        "a released on cancel; it is the first candidate"
    );
    tokio::time::sleep(Duration::from_secs(30)).await;
    let a = candidates.remove(by_name(&candidates, "a"));
    a.cancel.cancel();
    a.task.await.unwrap();
    let stopped = history.lock().unwrap()[0].stopped.unwrap();
    let second = current_term(&history).await;
    assert!(
        second.started - stopped <= Duration::from_millis(4400),
        "{second:?}"
    );
    assert_eq!(lease.current().unwrap().record.lease_transitions, Some(1));

    // 2. Cut off: the leader stops before the others may take over; one does in time.
    tokio::time::sleep(Duration::from_secs(30)).await;
    lease.cut(&second.identity, true);
    let cut_at = Instant::now();
    let third = loop {
        let t = current_term(&history).await;
        if t.identity != second.identity {
            break t;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let second_stopped = history
        .lock()
        .unwrap()
        .iter()
        .find(|t| t.identity == second.identity)
        .and_then(|t| t.stopped)
        .unwrap();
    assert!(
        second_stopped - cut_at <= Duration::from_secs(12),
        "stopped late"
    );
    assert!(
        third.started - cut_at <= Duration::from_millis(15_000 + 4_400),
        "{third:?}"
    );
    lease.cut(&second.identity, false);

    // 3. Cancelled without release: taken over once its lease has expired.
    tokio::time::sleep(Duration::from_secs(30)).await;
    let c = candidates.remove(by_name(&candidates, &third.identity));
    c.cancel.cancel();
    c.task.await.unwrap();
    let cancelled_at = Instant::now();
    let fourth = current_term(&history).await;
    assert_eq!(fourth.identity, second.identity);
    assert!(
        fourth.started - cancelled_at >= Duration::from_secs(13),
        "took over too early"
    );
    assert!(fourth.started - cancelled_at <= Duration::from_millis(15_000 + 4_400));

    for c in candidates {
        c.cancel.cancel();
        c.task.await.unwrap();
    }
    let history = history.lock().unwrap().clone();
    assert_eq!(history.len(), 4, "{history:?}");
    one_leader_at_a_time(&history);
    agrees_with_the_lease(&history, &lease);
}

/// client-go's `NewLeaderElector` checks, in its order.
#[test]
fn the_timing_is_validated_as_client_go_does() {
    let lease = FakeLease::new("ns/l");
    let build = |lease_s: u64, renew_s: u64, retry_ms: u64, id: &str| {
        LeaderElector::builder(lease.lock(id), id)
            .lease_duration(Duration::from_secs(lease_s))
            .renew_deadline(Duration::from_secs(renew_s))
            .retry_period(Duration::from_millis(retry_ms))
            .build()
            .map(|_| ())
    };
    let msg = |r: Result<(), Error>| r.unwrap_err().to_string();
    assert!(build(15, 10, 2000, "a").is_ok());
    assert!(msg(build(10, 10, 2000, "a")).contains("greater than the renew deadline"));
    // A Lease carries whole seconds: 10.5 s is written as 10 s, not above a 10 s deadline.
    let cut_to_seconds = LeaderElector::builder(lease.lock("a"), "a")
        .lease_duration(Duration::from_millis(10_500))
        .renew_deadline(Duration::from_secs(10))
        .build();
    assert!(msg(cut_to_seconds.map(|_| ())).contains("whole seconds"));
    assert!(msg(build(15, 2, 2000, "a")).contains("1.2 × the retry period"));
    assert!(msg(build(15, 10, 0, "a")).contains("must be positive"));
    assert!(msg(build(15, 10, 2000, "")).contains("identity is empty"));
}

/// `run` returns without leading when cancelled while another candidate holds the Lease, and
/// each candidate reports the holder it sees (client-go's `OnNewLeader`).
#[tokio::test(start_paused = true)]
async fn a_follower_sees_the_leader_and_stops_on_cancel() {
    let lease = FakeLease::new("ns/l");
    let history: History = Arc::default();
    let leader = candidate(&lease, "leader", false, &history);
    current_term(&history).await;
    let follower = LeaderElector::builder(lease.lock("follower"), "follower")
        .build()
        .unwrap();
    let mut seen = follower.watch_leader();
    let cancel = CancellationToken::new();
    let standing = tokio::spawn({
        let (follower, cancel) = (follower.clone(), cancel.clone());
        async move { follower.run(cancel, |_| async {}).await }
    });
    seen.changed().await.unwrap();
    assert_eq!(seen.borrow().as_deref(), Some("leader"));
    assert!(!follower.is_leader());
    tokio::time::sleep(Duration::from_secs(60)).await;
    cancel.cancel();
    assert!(!standing.await.unwrap(), "never led");
    assert!(leader.elector.is_leader());
    leader.cancel.cancel();
    leader.task.await.unwrap();
}

/// A cancelled leader keeps renewing its Lease while its work drains: no other candidate
/// takes over before the work has returned, however long that takes (30 s here, twice the
/// lease duration); then the Lease is released and another candidate leads at once.
#[tokio::test(start_paused = true)]
async fn a_cancelled_leader_keeps_the_lease_until_its_work_has_stopped() {
    let lease = FakeLease::new("ns/l");
    let history: History = Arc::default();
    let slow = LeaderElector::builder(lease.lock("slow"), "slow")
        .release_on_cancel(true)
        .build()
        .unwrap();
    let cancel = CancellationToken::new();
    let drained = Arc::new(Mutex::new(None));
    let leading = tokio::spawn({
        let (cancel, drained) = (cancel.clone(), Arc::clone(&drained));
        async move {
            slow.run(cancel, move |leading: CancellationToken| async move {
                leading.cancelled().await;
                tokio::time::sleep(Duration::from_secs(30)).await;
                *drained.lock().unwrap() = Some(Instant::now());
            })
            .await
        }
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    let other = candidate(&lease, "other", false, &history);
    tokio::time::sleep(Duration::from_secs(5)).await;
    cancel.cancel();
    assert!(leading.await.unwrap(), "it led");
    let drained = drained.lock().unwrap().expect("the work returned");
    let taken = current_term(&history).await;
    assert_eq!(taken.identity, "other");
    assert!(
        taken.started > drained,
        "taken over while the work still ran"
    );
    assert!(
        taken.started - drained <= Duration::from_millis(4400),
        "released: taken at once"
    );
    other.cancel.cancel();
    other.task.await.unwrap();
}

/// A follower whose every call is slow (3 to 4.5 s, so that one attempt, a read then a
/// write, takes longer than the call timeout of 5 s) still takes over a leader cut off from
/// the server, and only once that leader has stopped: each server call is bounded on its own,
/// as client-go's client timeout bounds each request, not the attempt as a whole.
#[tokio::test(start_paused = true)]
async fn a_slow_follower_takes_over_a_cut_off_leader_only_after_it_stopped() {
    for delay_ms in [3_000, 3_500, 4_000, 4_500] {
        let lease = FakeLease::new("ns/l");
        let history: History = Arc::default();
        let leader = candidate(&lease, "leader", false, &history);
        let first = current_term(&history).await;
        lease.delay("follower", Duration::from_millis(delay_ms));
        let follower = candidate(&lease, "follower", false, &history);
        tokio::time::sleep(Duration::from_secs(20)).await;
        // Cut just after one of the leader's renewals.
        let renewals = lease.holders().len();
        while lease.holders().len() == renewals {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        lease.cut("leader", true);
        let takeover = async {
            loop {
                let t = current_term(&history).await;
                if t.identity == "follower" {
                    return t;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        };
        let next = tokio::time::timeout(Duration::from_secs(120), takeover)
            .await
            .unwrap_or_else(|_| panic!("delay {delay_ms} ms: the follower never took over"));
        let stopped = history.lock().unwrap()[0]
            .stopped
            .expect("the leader stopped");
        assert_eq!(first.identity, "leader");
        assert!(
            next.started > stopped,
            "delay {delay_ms} ms: two leaders at once"
        );
        for c in [leader, follower] {
            c.cancel.cancel();
            c.task.await.unwrap();
        }
    }
}
