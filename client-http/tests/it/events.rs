//! `EventRecorder` against the fake API server's `events.k8s.io/v1` Events, on tokio's paused
//! clock: the first Event and its fields, repeats as a series on the same Event (written at
//! once for the first repeat, at the refresh and when the series ends for the others), what
//! makes a new Event, the per-object rate limit, a server that is down (bounded queue and
//! caches, drops counted), notes cut to 1 KiB, expired Events created again, retries, and the
//! flush on shutdown.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kcache_client_http::{
    EventRecorder, EventRecorderBuilder, EventType, MAX_NOTE_BYTES, ObjectReference, Recorded,
};
use kcache_reflector::micro_time;
use kcache_store::{DynamicObject, Object};
use kcache_testing::wait_until;
use kcache_testing_server::fake_api_server::{Fault, Verb};
use kcache_testing_server::{FakeApiServer, ServedResource};
use serde_json::{Value, json};
use tokio::time::{Instant, sleep};

use crate::support::client;

const CONTROLLER: &str = "example.com/widget-controller";
const INSTANCE: &str = "widget-controller-0";

/// 2023-11-14T22:13:20.123456789Z.
fn base() -> SystemTime {
    UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789)
}

fn builder(server: &FakeApiServer) -> EventRecorderBuilder {
    EventRecorder::builder(client(server), CONTROLLER, INSTANCE)
}

/// A wall clock that starts at [`base`] and follows tokio's (paused) clock.
fn following_tokio(start: Instant) -> impl Fn() -> SystemTime + Send + Sync + 'static {
    move || base() + start.elapsed()
}

/// The widget `name` in `shop`.
fn widget(name: &str) -> ObjectReference {
    ObjectReference::new("example.com/v1", "Widget", Some("shop"), name)
}

/// The server's `events.k8s.io/v1` Events, by name.
fn stored(server: &FakeApiServer) -> Vec<Arc<DynamicObject>> {
    let mut events = server.list(&ServedResource::events_k8s_io());
    events.sort_by(|a, b| a.name().cmp(&b.name()));
    events
}

fn series_count(server: &FakeApiServer, name: &str) -> Option<u64> {
    stored(server)
        .iter()
        .find(|e| e.name() == Some(name))
        .and_then(|e| e.data.get("series")?.get("count")?.as_u64())
}

async fn until_events(server: &FakeApiServer, n: usize) {
    wait_until(Duration::from_secs(60), || stored(server).len() == n).await;
}

async fn until_series(server: &FakeApiServer, name: &str, count: u64) {
    wait_until(Duration::from_secs(60), || {
        series_count(server, name) == Some(count)
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_first_event_is_created_with_every_field() {
    let server = FakeApiServer::start().await.unwrap();
    let recorder = builder(&server).wall_clock(base).build().unwrap();
    let mut blue = DynamicObject::new(Some("shop"), "blue");
    blue.metadata.uid = Some("6f1c".into());
    blue.metadata.resource_version = Some("42".into());
    let regarding =
        ObjectReference::from_object(&blue, "example.com/v1", "Widget").with_field_path("spec");
    let related = ObjectReference::new("v1", "Pod", Some("shop"), "blue-0");
    let first = recorder.record(
        &regarding,
        Some(&related),
        EventType::Warning,
        "SyncFailed",
        "Sync",
        "quota exceeded",
    );
    assert_eq!(first, Recorded::New);
    // A cluster-scoped object's Events go to `default`.
    let node = ObjectReference::new("v1", "Node", None, "n1");
    let drained = recorder.record(&node, None, EventType::Normal, "Drained", "Drain", "done");
    assert_eq!(drained, Recorded::New);
    until_events(&server, 2).await;

    let events = stored(&server);
    let stamp: u64 = 1_700_000_000_123_456_789;
    let event = &events[0];
    assert_eq!(event.name(), Some(format!("blue.{stamp:x}").as_str()));
    assert_eq!(event.namespace(), Some("shop"));
    assert_eq!(event.api_version.as_deref(), Some("events.k8s.io/v1"));
    assert_eq!(event.kind.as_deref(), Some("Event"));
    assert_eq!(
        Value::Object(event.data.clone()),
        json!({
            "eventTime": "2023-11-14T22:13:20.123456Z",
            "reportingController": CONTROLLER,
            "reportingInstance": INSTANCE,
            "action": "Sync",
            "reason": "SyncFailed",
            "note": "quota exceeded",
            "type": "Warning",
            "regarding": {
                "apiVersion": "example.com/v1", "kind": "Widget", "namespace": "shop",
                "name": "blue", "uid": "6f1c", "resourceVersion": "42", "fieldPath": "spec",
            },
            "related": {"apiVersion": "v1", "kind": "Pod", "namespace": "shop", "name": "blue-0"},
        })
    );
    // The clock stood still: the next name's stamp is one past.
    let node_event = &events[1];
    assert_eq!(
        node_event.name(),
        Some(format!("n1.{:x}", stamp + 1).as_str())
    );
    assert_eq!(node_event.namespace(), Some("default"));
    assert_eq!(
        node_event.data["regarding"],
        json!({"apiVersion": "v1", "kind": "Node", "name": "n1"})
    );
    assert!(node_event.data.get("related").is_none());
    let stats = recorder.stats();
    assert_eq!((stats.created, stats.dropped()), (2, 0));
}

#[tokio::test(start_paused = true)]
async fn an_identical_event_becomes_a_series_on_the_same_event() {
    let server = FakeApiServer::start().await.unwrap();
    let start = Instant::now();
    let recorder = builder(&server)
        .wall_clock(following_tokio(start))
        .build()
        .unwrap();
    let blue = widget("blue");
    let record = || {
        recorder.record(
            &blue,
            None,
            EventType::Warning,
            "SyncFailed",
            "Sync",
            "quota exceeded",
        )
    };
    assert_eq!(record(), Recorded::New);
    until_events(&server, 1).await;
    let name = stored(&server)[0].name().unwrap().to_owned();

    // The first repeat is written at once, on the same Event.
    assert_eq!(record(), Recorded::Repeat { count: 2 });
    let second = micro_time(base() + start.elapsed());
    until_series(&server, &name, 2).await;
    let event = stored(&server)[0].clone();
    assert_eq!(event.data["series"]["lastObservedTime"], second.as_str());
    assert_eq!(event.data["eventTime"], micro_time(base()).as_str());

    // Later ones are counted...
    let mut last = String::new();
    for count in 3..=5 {
        sleep(Duration::from_secs(20)).await;
        assert_eq!(record(), Recorded::Repeat { count });
        last = micro_time(base() + start.elapsed());
    }
    sleep(Duration::from_secs(60)).await;
    assert_eq!(series_count(&server, &name), Some(2), "not written yet");

    // ...and written when the series ends: no repeat for 6 minutes, seen by the sweep every 6.
    sleep(Duration::from_secs(13 * 60)).await;
    until_series(&server, &name, 5).await;
    let events = stored(&server);
    assert_eq!(events.len(), 1, "one Event for the whole series");
    assert_eq!(events[0].data["series"]["lastObservedTime"], last.as_str());

    // Then it is forgotten: the same event again is a new Event.
    assert_eq!(record(), Recorded::New);
    until_events(&server, 2).await;
    let stats = recorder.stats();
    assert_eq!(
        (stats.created, stats.series_written, stats.repeats),
        (2, 2, 4)
    );
    assert_eq!(stats.series, 1);
}

#[tokio::test(start_paused = true)]
async fn series_counts_are_written_at_every_refresh_while_the_series_goes_on() {
    let server = FakeApiServer::start().await.unwrap();
    let recorder = builder(&server).build().unwrap();
    let blue = widget("blue");
    let record = || recorder.record(&blue, None, EventType::Normal, "Resized", "Resize", "to 3");
    assert_eq!(record(), Recorded::New);
    until_events(&server, 1).await;
    let name = stored(&server)[0].name().unwrap().to_owned();
    assert_eq!(record(), Recorded::Repeat { count: 2 });
    until_series(&server, &name, 2).await;
    // A repeat every 100 s for 25 minutes: never 6 minutes quiet.
    for count in 3..=17 {
        sleep(Duration::from_secs(100)).await;
        assert_eq!(record(), Recorded::Repeat { count });
    }
    assert_eq!(series_count(&server, &name), Some(2));
    // The refresh at 30 minutes writes the count.
    sleep(Duration::from_secs(6 * 60)).await;
    until_series(&server, &name, 17).await;
    assert_eq!(
        record(),
        Recorded::Repeat { count: 18 },
        "the series goes on"
    );
    assert_eq!(stored(&server).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_different_reason_note_or_type_makes_a_new_event() {
    let server = FakeApiServer::start().await.unwrap();
    let recorder = builder(&server).build().unwrap();
    let blue = widget("blue");
    let warn = EventType::Warning;
    assert_eq!(
        recorder.record(&blue, None, warn, "SyncFailed", "Sync", "quota"),
        Recorded::New
    );
    assert_eq!(
        recorder.record(&blue, None, warn, "SyncFailed", "Sync", "timeout"),
        Recorded::New
    );
    assert_eq!(
        recorder.record(&blue, None, warn, "Rejected", "Sync", "quota"),
        Recorded::New
    );
    assert_eq!(
        recorder.record(&blue, None, warn, "SyncFailed", "Retry", "quota"),
        Recorded::New
    );
    let normal = EventType::Normal;
    assert_eq!(
        recorder.record(&blue, None, normal, "SyncFailed", "Sync", "quota"),
        Recorded::New
    );
    let other = ObjectReference::new("v1", "Pod", Some("shop"), "blue-0");
    assert_eq!(
        recorder.record(&blue, Some(&other), warn, "SyncFailed", "Sync", "quota"),
        Recorded::New
    );
    until_events(&server, 6).await;
    assert_eq!(
        recorder.record(&blue, None, warn, "SyncFailed", "Sync", "timeout"),
        Recorded::Repeat { count: 2 }
    );
    let notes: Vec<_> = stored(&server)
        .iter()
        .map(|e| e.data["note"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(notes.iter().filter(|n| *n == "quota").count(), 5);
}

#[tokio::test(start_paused = true)]
async fn the_rate_limit_drops_events_past_the_burst_for_one_object_only() {
    use Recorded::{New, RateLimited};

    let server = FakeApiServer::start().await.unwrap();
    let refill = Duration::from_secs(300);
    let recorder = builder(&server).rate_limit(3, refill).build().unwrap();
    let (blue, green) = (widget("blue"), widget("green"));
    let failed = |r: &ObjectReference, note: &str| {
        recorder.record(r, None, EventType::Warning, "SyncFailed", "Sync", note)
    };
    let outcomes: Vec<_> = (0..5).map(|i| failed(&blue, &format!("try {i}"))).collect();
    assert_eq!(outcomes, [New, New, New, RateLimited, RateLimited]);
    assert_eq!(
        failed(&green, "try 0"),
        New,
        "another object has its own bucket"
    );
    // A repeat of an Event written takes no token.
    assert_eq!(failed(&blue, "try 0"), Recorded::Repeat { count: 2 });
    // One token back per refill period.
    sleep(refill).await;
    assert_eq!(failed(&blue, "try 5"), New);
    assert_eq!(failed(&blue, "try 6"), RateLimited);
    until_events(&server, 5).await;
    let about_blue = stored(&server)
        .iter()
        .filter(|e| e.data["regarding"]["name"] == "blue")
        .count();
    assert_eq!(about_blue, 4);
    let stats = recorder.stats();
    assert_eq!((stats.rate_limited, stats.rate_limited_objects), (3, 2));
    assert_eq!(recorder.dropped(), 3);
}

#[tokio::test(start_paused = true)]
async fn with_the_server_down_record_returns_at_once_and_memory_stays_bounded() {
    let server = FakeApiServer::start().await.unwrap();
    let recorder = builder(&server)
        .queue_capacity(8)
        .max_series(16)
        .max_rate_limited_objects(16)
        .write_attempts(3)
        .retry_interval(Duration::from_secs(1))
        .build()
        .unwrap();
    let record = |name: &str| {
        recorder.record(
            &widget(name),
            None,
            EventType::Warning,
            "SyncFailed",
            "Sync",
            "down",
        )
    };
    assert_eq!(record("first"), Recorded::New);
    until_events(&server, 1).await;
    let addr = server.addr();
    server.shutdown().await;
    // The port stays this test's, bound but not listening: connections to it are refused
    // (another test's server cannot take it over).
    let hold = tokio::net::TcpSocket::new_v4().unwrap();
    hold.set_reuseaddr(true).unwrap();
    hold.bind(addr).unwrap();

    // Nothing in `record` waits: a thousand calls take no time on tokio's clock, and the
    // writes past the queue's capacity are dropped, not kept.
    let before = Instant::now();
    let outcomes: Vec<_> = (0..1000).map(|i| record(&format!("w{i}"))).collect();
    assert_eq!(before.elapsed(), Duration::ZERO);
    let queued = outcomes.iter().filter(|o| **o == Recorded::New).count();
    assert_eq!(queued, 8);
    assert!(outcomes[8..].iter().all(|o| *o == Recorded::QueueFull));
    let stats = recorder.stats();
    assert_eq!((stats.queued, stats.queue_capacity), (8, 8));
    assert_eq!(stats.queue_full, 992);
    assert_eq!((stats.series, stats.rate_limited_objects), (16, 16));

    // The writer gives each write its attempts, then drops it: the queue drains.
    sleep(Duration::from_secs(10 * 60)).await;
    let stats = recorder.stats();
    assert_eq!((stats.queued, stats.failed), (0, 8));
    assert_eq!(recorder.dropped(), 1000);

    // Shutting down tries what is left once, within its bound, and takes no more events.
    assert_eq!(record("late"), Recorded::New);
    recorder.shutdown().await;
    assert_eq!(record("later"), Recorded::Closed);
    let stats = recorder.stats();
    assert_eq!((stats.failed, stats.closed, stats.created), (9, 1, 1));
    drop(hold);
}

#[tokio::test(start_paused = true)]
async fn notes_over_1_kib_are_cut_to_it() {
    let server = FakeApiServer::start().await.unwrap();
    let recorder = builder(&server).build().unwrap();
    // Two bytes a character: 1200 bytes, cut at a character boundary.
    let note = "é".repeat(600);
    let reason = "R".repeat(200);
    let outcome = recorder.record(
        &widget("blue"),
        None,
        EventType::Warning,
        &reason,
        "Sync",
        &note,
    );
    assert_eq!(outcome, Recorded::New);
    until_events(&server, 1).await;
    let event = stored(&server)[0].clone();
    let written = event.data["note"].as_str().unwrap();
    assert_eq!(written.len(), MAX_NOTE_BYTES);
    assert_eq!(written, "é".repeat(512));
    assert_eq!(event.data["reason"].as_str().unwrap().len(), 128);
    // The same long note again is a repeat of the cut one.
    assert_eq!(
        recorder.record(
            &widget("blue"),
            None,
            EventType::Warning,
            &reason,
            "Sync",
            &note
        ),
        Recorded::Repeat { count: 2 }
    );
}

#[tokio::test(start_paused = true)]
async fn a_series_whose_event_expired_is_created_again() {
    let server = FakeApiServer::start().await.unwrap();
    let recorder = builder(&server).build().unwrap();
    let blue = widget("blue");
    let record = || recorder.record(&blue, None, EventType::Normal, "Scaled", "Scale", "to 2");
    assert_eq!(record(), Recorded::New);
    until_events(&server, 1).await;
    let name = stored(&server)[0].name().unwrap().to_owned();
    // The Event's time to live ran out on the server.
    server
        .delete(&ServedResource::events_k8s_io(), Some("shop"), &name)
        .unwrap();
    // The series patch finds nothing: the Event is created again, series and all.
    assert_eq!(record(), Recorded::Repeat { count: 2 });
    until_series(&server, &name, 2).await;
    assert_eq!(stored(&server)[0].data["note"], "to 2");
    let stats = recorder.stats();
    assert_eq!((stats.created, stats.series_written), (2, 0));
}

#[tokio::test(start_paused = true)]
async fn transient_failures_are_retried_and_refusals_are_not() {
    let server = FakeApiServer::start().await.unwrap();
    let events = ServedResource::events_k8s_io();
    let recorder = builder(&server).build().unwrap();
    server.inject(
        Fault::status(Verb::Create, 503, "ServiceUnavailable", "busy")
            .on(&events)
            .times(2),
    );
    let start = Instant::now();
    assert_eq!(
        recorder.record(&widget("blue"), None, EventType::Normal, "A", "B", "c"),
        Recorded::New
    );
    until_events(&server, 1).await;
    // Two waits of 10 to 12.5 s.
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_secs(20) && waited <= Duration::from_secs(26),
        "{waited:?}"
    );

    server.inject(
        Fault::status(Verb::Create, 422, "Invalid", "no")
            .on(&events)
            .times(1),
    );
    assert_eq!(
        recorder.record(&widget("green"), None, EventType::Normal, "A", "B", "c"),
        Recorded::New
    );
    wait_until(Duration::from_secs(60), || recorder.stats().failed == 1).await;
    sleep(Duration::from_secs(60)).await;
    assert_eq!(stored(&server).len(), 1, "not retried");
    assert_eq!(recorder.stats().created, 1);
}

#[tokio::test(start_paused = true)]
async fn shutdown_and_the_last_drop_flush_queued_events_and_series_counts() {
    let server = FakeApiServer::start().await.unwrap();
    let recorder = builder(&server).build().unwrap();
    let blue = widget("blue");
    let record = |r: &EventRecorder| r.record(&blue, None, EventType::Normal, "A", "B", "c");
    for count in 1..=3 {
        assert!(!record(&recorder).is_dropped(), "sighting {count} kept");
    }
    // Nothing was written yet: the task had no turn. The shutdown writes the create, the
    // first repeat's patch and then the last count.
    assert!(stored(&server).is_empty());
    recorder.shutdown().await;
    let events = stored(&server);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].data["series"]["count"], 3);
    assert_eq!(record(&recorder), Recorded::Closed);

    // Dropping every clone flushes the same way.
    let recorder = builder(&server).build().unwrap();
    let clone = recorder.clone();
    let green = widget("green");
    for _ in 0..4 {
        clone.record(&green, None, EventType::Normal, "A", "B", "c");
    }
    drop((recorder, clone));
    wait_until(Duration::from_secs(60), || {
        stored(&server)
            .iter()
            .any(|e| e.data["regarding"]["name"] == "green" && e.data["series"]["count"] == 4)
    })
    .await;
}

#[tokio::test]
async fn building_checks_the_reporter_and_the_runtime() {
    let server = FakeApiServer::start().await.unwrap();
    let e = EventRecorder::new(client(&server), "", INSTANCE).unwrap_err();
    assert!(e.to_string().contains("reporting controller"), "{e}");
    let e = EventRecorder::new(client(&server), CONTROLLER, "i".repeat(129)).unwrap_err();
    assert!(e.to_string().contains("reporting instance"), "{e}");
    let c = client(&server);
    let outside = std::thread::spawn(move || EventRecorder::new(c, CONTROLLER, INSTANCE).map(drop))
        .join()
        .unwrap();
    assert!(outside.unwrap_err().to_string().contains("tokio runtime"));
    let recorder = EventRecorder::new(client(&server), CONTROLLER, INSTANCE).unwrap();
    assert_eq!(
        (
            recorder.reporting_controller(),
            recorder.reporting_instance()
        ),
        (CONTROLLER, INSTANCE)
    );
    assert!(format!("{recorder:?}").contains("widget-controller-0"));
}
