//! The work queue and its rate limiters, after client-go's `util/workqueue` tests
//! (`queue_test.go`, `delaying_queue_test.go`, `rate_limiting_queue_test.go`,
//! `default_rate_limiters_test.go`). Every delay runs on paused tokio time; tasks are
//! scheduled on a current-thread runtime (one stress test aside), so every run is the same.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use kcache_queue::{
    BucketRateLimiter, ItemExponentialBackoff, ItemFastSlow, MaxOf, RateLimiter, TryGetError,
    WorkQueue, default_rate_limiter,
};
use tokio::time::{Instant, advance, sleep};

use crate::support::now_or_never;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A queue of string keys with `limiter`.
fn queue_with(limiter: Arc<dyn RateLimiter<&'static str>>) -> WorkQueue<&'static str> {
    WorkQueue::builder().rate_limiter(limiter).build()
}

/// Lets every task that can run, run (paused time moves on only once all of them wait).
async fn settle() {
    sleep(Duration::from_nanos(1)).await;
}

/// Gets a key and marks it done.
fn take(q: &WorkQueue<&'static str>) -> Result<&'static str, TryGetError> {
    let k = q.try_get()?;
    q.done(&k);
    Ok(k)
}

// ----- queue_test.go -----

/// `TestBasic`: 50 producers add 50 keys each while 10 consumers get and finish them, under
/// `ShutDown` and under `ShutDownWithDrain`; an add after shutdown is never delivered, and the
/// queue ends empty.
#[tokio::test]
async fn producers_and_consumers_end_empty_with_and_without_drain() {
    for drain in [false, true] {
        let q = WorkQueue::<u32>::new();
        let producers: Vec<_> = (0..50)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move {
                    for i in 0..50 {
                        q.add(i);
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        let seen = Arc::new(Mutex::new(HashSet::new()));
        let consumers: Vec<_> = (0..10)
            .map(|_| {
                let (q, seen) = (q.clone(), Arc::clone(&seen));
                tokio::spawn(async move {
                    while let Some(k) = q.get().await {
                        seen.lock().unwrap().insert(k);
                        tokio::task::yield_now().await;
                        q.done(&k);
                    }
                })
            })
            .collect();
        for p in producers {
            p.await.unwrap();
        }
        if drain {
            q.shut_down_with_drain().await;
        } else {
            q.shut_down();
        }
        q.add(999);
        for c in consumers {
            c.await.unwrap();
        }
        let seen = seen.lock().unwrap();
        assert_eq!(*seen, (0..50).collect::<HashSet<_>>(), "drain: {drain}");
        assert!(
            !seen.contains(&999),
            "an add after shutdown is never delivered"
        );
        assert_eq!(q.len(), 0);
        assert_eq!(q.processing_len(), 0);
    }
}

/// `TestAddWhileProcessing`: workers re-add the key they hold; every key still finishes, and
/// no key is ever held by two workers at once (here on two threads, for real contention).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_re_adding_their_key_never_share_it() {
    let q = WorkQueue::<u32>::new();
    let in_flight = Arc::new(Mutex::new(HashSet::new()));
    let runs = Arc::new(Mutex::new(HashMap::<u32, u32>::new()));
    for i in 0..50 {
        q.add(i);
    }
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (q, in_flight, runs) = (q.clone(), Arc::clone(&in_flight), Arc::clone(&runs));
            tokio::spawn(async move {
                while let Some(k) = q.get().await {
                    assert!(in_flight.lock().unwrap().insert(k), "{k} held twice");
                    let n = {
                        let mut runs = runs.lock().unwrap();
                        let n = runs.entry(k).or_default();
                        *n += 1;
                        *n
                    };
                    if n < 3 {
                        q.add(k);
                        q.add(k);
                    }
                    tokio::task::yield_now().await;
                    in_flight.lock().unwrap().remove(&k);
                    q.done(&k);
                }
            })
        })
        .collect();
    // A worker that panics (a key held twice) stops for good: stop waiting then, and let its
    // join below report the panic, rather than spin forever. The timeout is a backstop.
    let all_ran = async {
        while runs.lock().unwrap().values().filter(|&&n| n == 3).count() < 50 {
            if workers.iter().any(tokio::task::JoinHandle::is_finished) {
                break;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), all_ran)
        .await
        .expect("every key ran three times within a minute");
    if workers.iter().any(tokio::task::JoinHandle::is_finished) {
        // A worker stopped early, holding its key: a drain would wait for it forever.
        q.shut_down();
    } else {
        q.shut_down_with_drain().await;
    }
    for w in workers {
        w.await.unwrap();
    }
    assert!(
        runs.lock().unwrap().values().all(|&n| n == 3),
        "two re-adds, one more run"
    );
}

/// `TestLen`: adding foo, bar, foo leaves two keys waiting.
#[test]
fn len_counts_each_waiting_key_once() {
    let q = WorkQueue::new();
    q.add("foo");
    assert_eq!(q.len(), 1);
    q.add("bar");
    assert_eq!(q.len(), 2);
    q.add("foo");
    assert_eq!(q.len(), 2);
    assert_eq!(q.waiting_keys(), ["foo", "bar"]);
}

/// `TestReinsert`: get, add, done, and the key is handed out again.
#[test]
fn a_key_added_while_processing_is_handed_out_again_after_done() {
    let q = WorkQueue::new();
    q.add("foo");
    let k = q.try_get().unwrap();
    q.add(k);
    assert_eq!(q.len(), 0, "not queued while processing");
    assert_eq!(
        q.try_get(),
        Err(TryGetError::Empty),
        "never handed out twice at once"
    );
    q.done(&k);
    assert_eq!(q.len(), 1);
    assert_eq!(q.try_get(), Ok("foo"));
    q.done(&"foo");
    assert_eq!(q.len(), 0);
}

/// `TestCollapse`: a double add gives one get.
#[test]
fn a_double_add_gives_one_get() {
    let q = WorkQueue::new();
    q.add("bar");
    q.add("bar");
    assert_eq!(take(&q), Ok("bar"));
    assert_eq!(q.try_get(), Err(TryGetError::Empty));
}

/// `TestCollapseWhileProcessing`: any number of adds while a key is processing give one more
/// get, only after done.
#[test]
fn adds_while_processing_give_one_more_get_after_done() {
    let q = WorkQueue::new();
    q.add("bar");
    let k = q.try_get().unwrap();
    for _ in 0..5 {
        q.add("bar");
    }
    assert_eq!(q.try_get(), Err(TryGetError::Empty));
    q.done(&k);
    assert_eq!(take(&q), Ok("bar"));
    assert_eq!(q.try_get(), Err(TryGetError::Empty));
}

/// client-go's `Done` on a key that is not processing only removes it from `processing`; here
/// it is ignored outright, so it cannot queue a waiting key twice.
#[test]
fn done_of_a_key_not_processing_is_ignored() {
    let q = WorkQueue::new();
    q.add("a");
    q.done(&"a");
    q.done(&"b");
    assert_eq!(q.waiting_keys(), ["a"]);
    assert_eq!(take(&q), Ok("a"));
    assert_eq!(q.len(), 0);
}

/// A key that counts its clones.
#[derive(Debug)]
struct Counted(u32, Arc<AtomicUsize>);

impl Clone for Counted {
    fn clone(&self) -> Self {
        self.1.fetch_add(1, Ordering::Relaxed);
        Self(self.0, Arc::clone(&self.1))
    }
}
impl PartialEq for Counted {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Counted {}
impl std::hash::Hash for Counted {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

/// client-go's `Add` of a dirty key returns at once: here an add of a waiting (or dirty) key
/// clones nothing, and neither do get and done; only a key queued again by done is cloned, once.
#[test]
fn a_waiting_key_is_not_cloned_again() {
    let clones = Arc::new(AtomicUsize::new(0));
    let key = || Counted(7, Arc::clone(&clones));
    let q = WorkQueue::new();
    q.add(key());
    assert_eq!(
        clones.load(Ordering::Relaxed),
        1,
        "one copy for dirty, one queued"
    );
    for _ in 0..100 {
        q.add(key());
    }
    assert_eq!(
        clones.load(Ordering::Relaxed),
        1,
        "dedupe hits clone nothing"
    );
    let k = q.try_get().unwrap();
    q.done(&k);
    assert_eq!(
        clones.load(Ordering::Relaxed),
        1,
        "get and done clone nothing"
    );
    q.add(key());
    let k = q.try_get().unwrap();
    for _ in 0..100 {
        q.add(key()); // while processing: marked dirty once, then dedupe hits
    }
    assert_eq!(clones.load(Ordering::Relaxed), 2);
    q.done(&k);
    assert_eq!(
        clones.load(Ordering::Relaxed),
        3,
        "queued again by done: one clone"
    );
    let k = q.try_get().unwrap();
    q.done(&k);
    assert_eq!(clones.load(Ordering::Relaxed), 3);
}

/// `TestGarbageCollection`: a key is not retained once it is done, and `forget` drops the
/// limiter's state of a key.
#[tokio::test(start_paused = true)]
async fn keys_are_not_retained_after_done_and_forget() {
    let key: Arc<str> = Arc::from("ns/a");
    let q = WorkQueue::new();
    q.add(Arc::clone(&key));
    let k = q.get().await.unwrap();
    q.done(&k);
    drop(k);
    assert_eq!(Arc::strong_count(&key), 1);

    q.add_rate_limited(Arc::clone(&key));
    let k = q.get().await.unwrap();
    q.done(&k);
    drop(k);
    assert_eq!(
        Arc::strong_count(&key),
        2,
        "the backoff still counts the key's failure"
    );
    q.forget(&key);
    assert_eq!(Arc::strong_count(&key), 1);
}

// ----- delaying_queue_test.go -----

/// `TestSimpleQueue`: a key delayed 50 ms is not waiting before, is after 60 ms, and nothing
/// more comes later (the heartbeat of client-go's loop has no counterpart here).
#[tokio::test(start_paused = true)]
async fn add_after_hands_the_key_out_once_its_delay_passed() {
    let q = WorkQueue::new();
    q.add_after("foo", ms(50));
    assert_eq!(q.len(), 0);
    assert_eq!(q.delayed_len(), 1);
    assert_eq!(q.try_get(), Err(TryGetError::Empty));
    advance(ms(49)).await;
    assert_eq!(q.len(), 0);
    advance(ms(11)).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.delayed_len(), 0);
    assert_eq!(take(&q), Ok("foo"));
    advance(Duration::from_secs(10)).await;
    assert_eq!(q.len(), 0);
}

/// `TestDeduping`: 50 ms then 70 ms fires once, at 50 ms; 50 ms then 30 ms fires at 30 ms.
#[tokio::test(start_paused = true)]
async fn add_after_keeps_the_earlier_deadline() {
    let q = WorkQueue::new();
    q.add_after("foo", ms(50));
    q.add_after("foo", ms(70));
    assert_eq!(q.delayed_len(), 1, "one entry per key");
    advance(ms(60)).await;
    assert_eq!(take(&q), Ok("foo"));
    advance(ms(20)).await;
    assert_eq!(q.len(), 0, "the later deadline was ignored");

    q.add_after("foo", ms(50));
    q.add_after("foo", ms(30));
    advance(ms(29)).await;
    assert_eq!(q.len(), 0);
    advance(ms(11)).await;
    assert_eq!(take(&q), Ok("foo"));
    advance(ms(50)).await;
    assert_eq!(q.len(), 0, "the earlier deadline replaced the later one");
}

/// `TestAddTwoFireEarly` and `TestCopyShifting`: keys come out in deadline order, whatever the
/// order they were added in.
#[tokio::test(start_paused = true)]
async fn add_after_orders_keys_by_deadline() {
    let q = WorkQueue::new();
    q.add_after("foo", Duration::from_secs(1));
    q.add_after("bar", ms(50));
    advance(ms(60)).await;
    assert_eq!(q.waiting_keys(), ["bar"]);
    q.add_after("kilo", ms(1500));
    advance(Duration::from_secs(1)).await;
    assert_eq!(q.waiting_keys(), ["bar", "foo"]);
    advance(Duration::from_secs(1)).await;
    assert_eq!(q.waiting_keys(), ["bar", "foo", "kilo"]);

    let q = WorkQueue::new();
    q.add_after("foo", Duration::from_secs(3));
    q.add_after("bar", Duration::from_secs(2));
    q.add_after("baz", Duration::from_secs(1));
    advance(Duration::from_secs(3)).await;
    assert_eq!(q.waiting_keys(), ["baz", "bar", "foo"]);
}

/// `AddAfter` with `d <= 0` calls `Add` at once; a delayed key already waiting is handed out
/// now, and again when its delay passes (the delay runs apart from the queue).
#[tokio::test(start_paused = true)]
async fn add_after_zero_adds_now_and_a_delay_runs_apart_from_the_queue() {
    let q = WorkQueue::new();
    q.add_after("a", Duration::ZERO);
    assert_eq!(q.len(), 1);
    q.add_after("a", ms(10));
    assert_eq!(take(&q), Ok("a"));
    advance(ms(10)).await;
    assert_eq!(take(&q), Ok("a"), "handed out again when the delay passed");

    // While it is still waiting, the delayed add is absorbed.
    q.add("b");
    q.add_after("b", ms(10));
    advance(ms(10)).await;
    assert_eq!(q.waiting_keys(), ["b"]);
}

/// `get` waits for the earliest deadline by itself (client-go's waiting loop): with nothing
/// else happening, a waiting getter receives a delayed key exactly when it is due.
#[tokio::test(start_paused = true)]
async fn get_sleeps_until_the_earliest_deadline() {
    let q = WorkQueue::new();
    q.add_after("late", ms(80));
    q.add_after("early", ms(30));
    let start = Instant::now();
    assert_eq!(q.get().await, Some("early"));
    assert_eq!(start.elapsed(), ms(30));
    assert_eq!(q.get().await, Some("late"));
    assert_eq!(start.elapsed(), ms(80));
}

/// A getter already waiting when an earlier delay is added re-arms its timer: client-go's
/// waiting loop wakes on new entries.
#[tokio::test(start_paused = true)]
async fn a_waiting_getter_wakes_at_a_deadline_added_later() {
    let q = WorkQueue::new();
    q.add_after("late", Duration::from_secs(60));
    let getter = tokio::spawn({
        let q = q.clone();
        async move { (q.get().await, Instant::now()) }
    });
    settle().await;
    let start = Instant::now();
    q.add_after("soon", ms(20));
    let (k, at) = getter.await.unwrap();
    assert_eq!(k, Some("soon"));
    assert_eq!(at - start, ms(20));
}

// ----- rate_limiting_queue_test.go, default_rate_limiters_test.go -----

/// `TestRateLimitingQueue`: with Exponential(1 ms, 1 s), a key's rate-limited adds wait 1 ms
/// then 2 ms, keys are independent, `NumRequeues` counts, and `Forget` starts over at 1 ms.
#[tokio::test(start_paused = true)]
async fn rate_limited_adds_back_off_per_key_and_forget_resets() {
    let q = queue_with(Arc::new(ItemExponentialBackoff::new(
        ms(1),
        Duration::from_secs(1),
    )));
    let ready_after = async |q: &WorkQueue<&'static str>, key| {
        let start = Instant::now();
        q.add_rate_limited(key);
        assert_eq!(q.get().await, Some(key));
        q.done(&key);
        start.elapsed()
    };
    assert_eq!(ready_after(&q, "one").await, ms(1));
    assert_eq!(ready_after(&q, "one").await, ms(2));
    assert_eq!(q.num_requeues(&"one"), 2);
    assert_eq!(ready_after(&q, "two").await, ms(1));
    assert_eq!(ready_after(&q, "two").await, ms(2));
    q.forget(&"one");
    assert_eq!(q.num_requeues(&"one"), 0);
    assert_eq!(q.num_requeues(&"two"), 2);
    assert_eq!(ready_after(&q, "one").await, ms(1));
}

/// The default limiter (`DefaultTypedControllerRateLimiter`): a failing key waits 5 ms, 10 ms,
/// 20 ms, ... (the 18th failure 655.36 s, the 19th and later 1000 s), and `forget` resets it.
#[tokio::test(start_paused = true)]
async fn the_default_limiter_doubles_from_5ms_to_1000s() {
    let q = WorkQueue::new();
    for expected in [5, 10, 20, 40, 80] {
        let start = Instant::now();
        q.add_rate_limited("a");
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(start.elapsed(), ms(expected));
        q.done(&"a");
    }
    q.forget(&"a");
    q.add_rate_limited("a");
    assert_eq!(q.delayed_len(), 1);
    advance(ms(5)).await;
    assert_eq!(take(&q), Ok("a"), "back to 5 ms after forget");

    let limiter = default_rate_limiter::<&str>();
    let delays: Vec<_> = (0..20).map(|_| limiter.when(&"b")).collect();
    assert_eq!(delays[17], ms(655_360));
    assert_eq!(delays[18], Duration::from_secs(1000));
    assert_eq!(delays[19], Duration::from_secs(1000));
}

/// `TestItemExponentialFailureRateLimiter` and `...OverFlow`: 1, 2, 4, 8, 16 ms, then 32 ms;
/// a thousand failures later the delay is the cap, with a 1 min base (3rd call 4 min) too; a
/// base so large that doubling overflows gives the cap rather than a panic.
#[test]
fn exponential_backoff_doubles_and_saturates() {
    let limiter = ItemExponentialBackoff::new(ms(1), Duration::from_secs(1000));
    let delays: Vec<_> = (0..6).map(|_| limiter.when(&"one")).collect();
    assert_eq!(delays, [1, 2, 4, 8, 16, 32].map(ms));
    assert_eq!(limiter.num_requeues(&"one"), 6);
    for _ in 0..1000 {
        limiter.when(&"one");
    }
    assert_eq!(limiter.when(&"one"), Duration::from_secs(1000));

    let limiter =
        ItemExponentialBackoff::new(Duration::from_secs(60), Duration::from_secs(3_600_000));
    limiter.when(&"one");
    limiter.when(&"one");
    assert_eq!(limiter.when(&"one"), Duration::from_secs(240));
    for _ in 0..1000 {
        limiter.when(&"one");
    }
    assert_eq!(limiter.when(&"one"), Duration::from_secs(3_600_000));

    let limiter = ItemExponentialBackoff::new(Duration::MAX / 2 + ms(1), Duration::MAX);
    assert_eq!(limiter.when(&"one"), Duration::MAX / 2 + ms(1));
    assert_eq!(limiter.when(&"one"), Duration::MAX, "overflow saturates");
    let limiter = ItemExponentialBackoff::new(Duration::ZERO, Duration::from_secs(1));
    assert_eq!(limiter.when(&"one"), Duration::ZERO);
}

/// A limiter's `Duration::MAX` ("never") delays the key for good without overflowing the
/// clock, and an earlier delay still moves it forward.
#[tokio::test(start_paused = true)]
async fn a_delay_of_duration_max_does_not_overflow() {
    let q = WorkQueue::new();
    q.add_after("a", Duration::MAX);
    advance(Duration::from_secs(86_400)).await;
    assert_eq!(q.try_get(), Err(TryGetError::Empty));
    q.add_after("a", ms(1));
    advance(ms(1)).await;
    assert_eq!(take(&q), Ok("a"));
}

/// `TestItemFastSlowRateLimiter`: FastSlow(5 ms, 10 s, 3) gives fast three times, then slow;
/// keys are independent and `Forget` starts over.
#[test]
fn fast_slow_switches_after_the_fast_attempts() {
    let limiter = ItemFastSlow::new(ms(5), Duration::from_secs(10), 3);
    let delays: Vec<_> = (0..5).map(|_| limiter.when(&"one")).collect();
    let slow = Duration::from_secs(10);
    assert_eq!(delays, [ms(5), ms(5), ms(5), slow, slow]);
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two"), ms(5));
    assert_eq!(limiter.when(&"two"), ms(5));
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), ms(5));
}

/// `TestMaxOfRateLimiter`: MaxOf(FastSlow(5 ms, 3 s, 3), Exponential(1 ms, 1 s)) gives 5, 5,
/// 5 ms, then 3 s; every limiter is asked each time, `NumRequeues` is the largest count, and
/// `Forget` reaches all of them.
#[test]
fn max_of_takes_the_longest_delay_and_asks_every_limiter() {
    let fast_slow = Arc::new(ItemFastSlow::new(ms(5), Duration::from_secs(3), 3));
    let exponential = Arc::new(ItemExponentialBackoff::new(ms(1), Duration::from_secs(1)));
    let limiter = MaxOf::new(vec![
        Arc::clone(&fast_slow) as Arc<dyn RateLimiter<&str>>,
        Arc::clone(&exponential) as Arc<dyn RateLimiter<&str>>,
    ]);
    let delays: Vec<_> = (0..5).map(|_| limiter.when(&"one")).collect();
    let slow = Duration::from_secs(3);
    assert_eq!(delays, [ms(5), ms(5), ms(5), slow, slow]);
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(exponential.num_requeues(&"one"), 5, "every limiter counted");
    assert_eq!(limiter.when(&"two"), ms(5));
    assert_eq!(limiter.num_requeues(&"two"), 1);
    limiter.forget(&"one");
    assert_eq!(fast_slow.num_requeues(&"one"), 0);
    assert_eq!(exponential.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), ms(5));
    assert_eq!(MaxOf::<&str>::new(Vec::new()).when(&"one"), Duration::ZERO);
}

/// `BucketRateLimiter` over `rate.NewLimiter(10, 100)`: the bucket starts full, so 100 calls
/// wait nothing, then calls are spaced 1/qps = 100 ms apart; the bucket is shared by every key
/// and refills with time (tokio's paused clock).
#[tokio::test(start_paused = true)]
async fn the_token_bucket_allows_a_burst_then_spaces_by_one_over_qps() {
    let bucket = BucketRateLimiter::default();
    for i in 0..100 {
        assert_eq!(
            RateLimiter::<u32>::when(&bucket, &i),
            Duration::ZERO,
            "call {i}"
        );
    }
    let delays: Vec<_> = (0..3)
        .map(|i| RateLimiter::<u32>::when(&bucket, &i))
        .collect();
    assert_eq!(delays, [100, 200, 300].map(ms));
    assert_eq!(RateLimiter::<u32>::num_requeues(&bucket, &0), 0);
    RateLimiter::<u32>::forget(&bucket, &0);

    // One second later: 3 tokens were owed, 10 refilled, so 7 calls go through at once.
    advance(Duration::from_secs(1)).await;
    for i in 0..7 {
        assert_eq!(
            RateLimiter::<u32>::when(&bucket, &i),
            Duration::ZERO,
            "call {i}"
        );
    }
    assert_eq!(RateLimiter::<u32>::when(&bucket, &0), ms(100));

    // Never more than the burst, however long it rested.
    let bucket = BucketRateLimiter::new(100.0, 2);
    advance(Duration::from_secs(60)).await;
    let delays: Vec<_> = (0..4)
        .map(|i| RateLimiter::<u32>::when(&bucket, &i))
        .collect();
    assert_eq!(delays, [0, 0, 10, 20].map(ms));
}

/// `golang.org/x/time/rate` edge cases: an infinite rate never waits; a zero rate hands out its
/// burst once, then never ("infinite" delay); a zero burst with a finite rate never allows.
#[test]
fn the_token_bucket_edge_rates() {
    let inf = BucketRateLimiter::new(f64::INFINITY, 0);
    assert!((0..1000).all(|i| RateLimiter::<u32>::when(&inf, &i).is_zero()));
    let zero = BucketRateLimiter::new(0.0, 2);
    let delays: Vec<_> = (0..3)
        .map(|i| RateLimiter::<u32>::when(&zero, &i))
        .collect();
    assert_eq!(delays, [Duration::ZERO, Duration::ZERO, Duration::MAX]);
    let no_burst = BucketRateLimiter::new(10.0, 0);
    assert_eq!(RateLimiter::<u32>::when(&no_burst, &0), Duration::MAX);
}

/// The default limiter's bucket: after 100 rate-limited adds of distinct keys in one instant,
/// the 101st key waits 100 ms although it never failed before.
#[tokio::test(start_paused = true)]
async fn the_default_limiter_spaces_retries_after_a_burst() {
    let q = WorkQueue::<u32>::new();
    for i in 0..100 {
        q.add_rate_limited(i);
    }
    q.add_rate_limited(100);
    advance(ms(5)).await;
    assert_eq!(q.len(), 100, "the first 100 waited their own 5 ms");
    advance(ms(94)).await;
    assert_eq!(q.len(), 100);
    advance(ms(1)).await;
    assert_eq!(q.len(), 101, "the 101st waited for a token");
}

// ----- shutdown -----

/// client-go's `Get` reports shutdown only once the queue is empty: keys waiting at shutdown
/// are still handed out; later adds are ignored and delayed keys are dropped.
#[tokio::test(start_paused = true)]
async fn shut_down_hands_out_waiting_keys_then_none() {
    let q = WorkQueue::new();
    q.add("a");
    q.add("b");
    q.add_after("delayed", ms(10));
    q.shut_down();
    assert!(q.is_shutting_down());
    q.add("c");
    q.add_after("d", ms(1));
    q.add_rate_limited("e");
    assert_eq!(q.delayed_len(), 0, "delayed keys are dropped");
    advance(ms(20)).await;
    assert_eq!(q.get().await, Some("a"));
    assert_eq!(q.get().await, Some("b"));
    assert_eq!(q.get().await, None);
    assert_eq!(q.try_get(), Err(TryGetError::ShutDown));
}

/// A delayed key whose deadline passed before shutdown counts as added (client-go's waiting
/// loop would have added it): it is handed out, not dropped.
#[tokio::test(start_paused = true)]
async fn shut_down_keeps_the_keys_already_due() {
    let q = WorkQueue::new();
    q.add_after("due", ms(10));
    q.add_after("not yet", ms(30));
    advance(ms(10)).await;
    q.shut_down();
    assert_eq!(q.get().await, Some("due"));
    assert_eq!(q.get().await, None);
}

/// `TestQueueDrainageUsingShutDownWithDrain`: the drain returns only once both keys in flight
/// are done.
#[tokio::test(start_paused = true)]
async fn drain_waits_for_every_key_in_flight() {
    let q = WorkQueue::new();
    q.add("foo");
    q.add("bar");
    let (foo, bar) = (q.get().await.unwrap(), q.get().await.unwrap());
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    settle().await;
    assert!(q.is_shutting_down());
    assert!(!drain.is_finished());
    q.done(&foo);
    settle().await;
    assert!(!drain.is_finished(), "bar is still processing");
    q.done(&bar);
    settle().await;
    assert!(drain.is_finished());
    drain.await.unwrap();
}

/// `TestNoQueueDrainageUsingShutDown`: a plain shutdown returns with keys in flight.
#[test]
fn shut_down_does_not_wait_for_keys_in_flight() {
    let q = WorkQueue::new();
    q.add("foo");
    let _foo = q.try_get().unwrap();
    q.shut_down();
    assert_eq!(q.processing_len(), 1);
    assert_eq!(q.try_get(), Err(TryGetError::ShutDown));
}

/// `TestForceQueueShutdownUsingShutDown`: a `ShutDown` releases a drain that waits.
#[tokio::test(start_paused = true)]
async fn shut_down_releases_a_waiting_drain() {
    let q = WorkQueue::new();
    q.add("foo");
    let _foo = q.get().await.unwrap();
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    settle().await;
    assert!(!drain.is_finished());
    q.shut_down();
    drain.await.unwrap();
    assert_eq!(q.processing_len(), 1, "foo was never done");
}

/// `TestQueueDrainageUsingShutDownWithDrainWithDirtyItem`: a key added while processing, then
/// a drain: done queues it again (even after shutdown), the drain returns (nothing processing),
/// the key is handed out once more, then `get` reports shutdown.
#[tokio::test(start_paused = true)]
async fn drain_then_a_dirty_key_is_handed_out_again() {
    let q = WorkQueue::new();
    q.add("foo");
    let foo = q.get().await.unwrap();
    q.add("foo");
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    settle().await;
    assert!(!drain.is_finished());
    q.done(&foo);
    drain.await.unwrap();
    assert_eq!(q.get().await, Some("foo"));
    q.done(&"foo");
    assert_eq!(q.get().await, None);
}

// ----- waking and cancel safety -----

/// client-go's `Add` signals a waiter: a getter waiting on an empty queue wakes when another
/// task adds a key.
#[tokio::test(start_paused = true)]
async fn get_wakes_when_another_task_adds() {
    let q = WorkQueue::new();
    let getter = tokio::spawn({
        let q = q.clone();
        async move { q.get().await }
    });
    settle().await;
    assert!(!getter.is_finished());
    tokio::spawn({
        let q = q.clone();
        async move { q.add("a") }
    });
    assert_eq!(getter.await.unwrap(), Some("a"));
}

/// client-go's `ShutDown` broadcasts: every waiting getter wakes with shutdown.
#[tokio::test(start_paused = true)]
async fn shut_down_wakes_every_waiting_getter() {
    let q = WorkQueue::<u32>::new();
    let getters: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        })
        .collect();
    settle().await;
    q.shut_down();
    for g in getters {
        assert_eq!(g.await.unwrap(), None);
    }
}

/// Cancel safety: a `get` dropped while waiting takes no key, and a wake-up it had received
/// goes to another getter (client-go has no cancellation; its waiters never lose a signal).
#[tokio::test(start_paused = true)]
async fn a_dropped_get_loses_no_key() {
    // Polled once, then dropped: the key added meanwhile stays queued.
    let q = WorkQueue::new();
    {
        let mut get = pin!(q.get());
        assert!(matches!(
            get.as_mut().poll(&mut Context::from_waker(Waker::noop())),
            Poll::Pending
        ));
        q.add("a");
    }
    assert_eq!(q.waiting_keys(), ["a"]);
    assert_eq!(take(&q), Ok("a"));

    // Two getters wait; the first is woken by the add, then cancelled before it runs: the
    // second gets the key.
    let spawn_get = || {
        let q = q.clone();
        tokio::spawn(async move { q.get().await })
    };
    let first = spawn_get();
    settle().await;
    let second = spawn_get();
    settle().await;
    q.add("b");
    first.abort();
    assert_eq!(second.await.unwrap(), Some("b"));
    assert!(first.await.unwrap_err().is_cancelled());
}

/// Cancel safety with delays: getters sleeping until a deadline, the one woken first dropped;
/// the other still receives the key when it is due.
#[tokio::test(start_paused = true)]
async fn a_dropped_get_sleeping_on_a_deadline_loses_no_key() {
    let q = WorkQueue::new();
    q.add_after("a", ms(10));
    let getters: Vec<_> = (0..2)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        })
        .collect();
    settle().await;
    getters[0].abort();
    let [first, second] = <[_; 2]>::try_from(getters).unwrap();
    assert_eq!(second.await.unwrap(), Some("a"));
    assert!(first.await.unwrap_err().is_cancelled());

    // A get future polled once then dropped while sleeping: the key comes out later all the same.
    q.add_after("b", ms(10));
    assert_eq!(now_or_never(q.get()), None);
    advance(ms(10)).await;
    assert_eq!(take(&q), Ok("b"));
}
