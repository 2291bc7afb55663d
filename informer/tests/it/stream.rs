//! Event streams: the same guarantees as handlers, as a `Stream`.

use std::time::Duration;

use futures_util::StreamExt;
use kcache_informer::Event;

use crate::support::{Seen, informer, pod, start};

#[tokio::test(start_paused = true)]
async fn late_stream_replays_then_follows() {
    let (fake, inf) = informer(Duration::ZERO);
    fake.add(pod("ns", "a"));
    let (cancel, run) = start(&inf);
    assert!(inf.synced().await);

    let mut stream = inf.subscribe().unwrap();
    assert!(!stream.has_synced(), "its replay is not consumed yet");
    assert_eq!(stream.buffer_depth(), 1);
    let first = stream.next().await.unwrap();
    assert!(matches!(
        first,
        Event::Add {
            is_in_initial_list: true,
            ..
        }
    ));
    assert!(stream.has_synced());

    fake.add(pod("ns", "b"));
    let second = stream.next().await.unwrap();
    assert_eq!(
        Seen::from_event(&second),
        Seen::Add {
            key: "ns/b".into(),
            rv: "2".into(),
            initial: false
        }
    );
    // A dropped stream unsubscribes; the informer keeps going.
    drop(stream);
    fake.add(pod("ns", "c"));
    let mut again = inf.subscribe().unwrap();
    let mut keys = Vec::new();
    for _ in 0..3 {
        keys.push(
            Seen::from_event(&again.next().await.unwrap())
                .key()
                .to_owned(),
        );
    }
    keys.sort();
    assert_eq!(keys, ["ns/a", "ns/b", "ns/c"]);
    cancel.cancel();
    run.await.unwrap().unwrap();
}
