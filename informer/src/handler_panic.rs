//! What a handler's delivery thread does when a callback panics (client-go's
//! `processorListener`, with its panics recovered): the panic is caught, one error is logged,
//! the event counts as delivered and is skipped, and the thread pauses before the next event.
//!
//! The pause bounds the cost of a handler that panics on every event: at most one panic per
//! [`PANIC_PAUSE`] per handler, whatever the event rate; the lines are rate limited on top, per
//! informer ([`InformerLogs::panics`]: at most ten a minute, the next one saying how many were
//! held back, each carrying the handler's panic count). Other handlers have threads of their
//! own and are not affected.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use kcache_store::{KeyFunc, Object, ObjectKey, ObjectOrTombstone};

use crate::Event;
use crate::informer_logs::InformerLogs;

/// How long a delivery thread waits after a callback panicked before it delivers the next
/// event (client-go's listener sleeps a second too). Closing the listener ends the wait.
pub(crate) const PANIC_PAUSE: Duration = Duration::from_secs(1);

/// How a delivery thread names the object of an event in its panic report: `None` where the
/// listener does not know its objects' type well enough, or the key function fails.
pub(crate) type KeyOf<T> = Arc<dyn Fn(&Event<T>) -> Option<ObjectKey> + Send + Sync>;

/// A [`KeyOf`] keying objects by `key_func` (the informer's, as its cache does); a tombstone
/// carries its key.
pub(crate) fn keyed_by<T: Object>(key_func: KeyFunc<T>) -> KeyOf<T> {
    Arc::new(move |event| match event {
        Event::Add { obj, .. }
        | Event::Update { new: obj, .. }
        | Event::Delete(ObjectOrTombstone::Object(obj)) => key_func(obj).ok(),
        Event::Delete(ObjectOrTombstone::Tombstone(t)) => Some(t.key.clone()),
    })
}

/// The `namespace/name` key of an event's object, or a tombstone's key.
#[expect(
    clippy::unnecessary_wraps,
    reason = "the shape of a `KeyOf`, whose implementations for other types have no key"
)]
pub(crate) fn object_key<T: Object>(event: &Event<T>) -> Option<ObjectKey> {
    Some(match event {
        Event::Add { obj, .. } => obj.key(),
        Event::Update { new, .. } => new.key(),
        Event::Delete(gone) => gone.key(),
    })
}

/// The callback an event goes to, for logs.
pub(crate) fn event_kind<T>(event: &Event<T>) -> &'static str {
    match event {
        Event::Add { .. } => "add",
        Event::Update { .. } => "update",
        Event::Delete(_) => "delete",
    }
}

/// The message of a panic: what `panic!("...")` and `panic!("{x}")` carry, or a placeholder
/// for a payload of another type (`std::panic::panic_any`).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(a panic payload that is not a string)"
    }
}

/// Logs one panic of handler `handler`'s callback for `event` (its object named by `key_of`),
/// its `panics`-th so far, at error level, within the informer's rate limit (`logs`).
pub(crate) fn report<T>(
    logs: &InformerLogs,
    handler: &str,
    event: &Event<T>,
    key_of: &KeyOf<T>,
    payload: &(dyn Any + Send),
    panics: u64,
) {
    let Some(permit) = logs.panics.allow() else {
        return;
    };
    let key = key_of(event);
    tracing::error!(
        informer = %logs.informer,
        handler,
        event = event_kind(event),
        key = key.as_ref().map(tracing::field::display),
        panic = panic_message(payload),
        panics,
        pause = ?PANIC_PAUSE,
        suppressed = permit.suppressed(),
        "an event handler panicked; the event is skipped and the handler pauses"
    );
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kcache_reflector::{LOG_BURST, LOG_WINDOW};
    use kcache_store::{DeletedFinalStateUnknown, DynamicObject, default_key_func};

    use super::*;

    fn no_key(_: &Event<String>) -> Option<ObjectKey> {
        None
    }

    /// What `f` logged, each line as `kcache_testing::LogCapture` writes it.
    fn captured(f: impl FnOnce()) -> Vec<String> {
        let (logs, guard) = kcache_testing::LogCapture::capture();
        f();
        drop(guard);
        logs.all()
    }

    /// client-go logs a recovered handler panic with the handler's name (`nameForHandler`);
    /// here the line also says which event, which object, the panic's message and how many.
    #[test]
    fn a_report_names_the_handler_the_event_the_object_and_the_count() {
        let obj = Arc::new(DynamicObject::new(Some("shop"), "web"));
        let event = Event::Update {
            old: Arc::clone(&obj),
            new: obj,
        };
        let payload: Box<dyn Any + Send> = Box::new(format!("bad {}", "spec"));
        let logs = InformerLogs::new("pods");
        let key_of = keyed_by(default_key_func());
        let lines = captured(|| report(&logs, "pods-controller", &event, &key_of, &*payload, 3));
        assert_eq!(lines.len(), 1, "{lines:?}");
        let line = &lines[0];
        assert!(!line.contains("suppressed"), "{line:?}");
        for part in [
            "ERROR an event handler panicked",
            " informer=pods",
            " handler=\"pods-controller\"",
            " event=\"update\"",
            " key=shop/web",
            " panic=\"bad spec\"",
            " panics=3",
            " pause=1s",
        ] {
            assert!(line.contains(part), "{part:?} missing from {line:?}");
        }
    }

    #[test]
    fn a_report_without_a_key_leaves_it_out() {
        let event = Event::Add {
            obj: Arc::new("x".to_owned()),
            is_in_initial_list: true,
        };
        let payload: Box<dyn Any + Send> = Box::new("static message");
        let logs = InformerLogs::new("things");
        let key_of: KeyOf<String> = Arc::new(no_key);
        let lines = captured(|| report(&logs, "h", &event, &key_of, &*payload, 1));
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains(" event=\"add\""), "{lines:?}");
        assert!(lines[0].contains(" panic=\"static message\""), "{lines:?}");
        assert!(!lines[0].contains(" key="), "{lines:?}");
    }

    #[test]
    fn messages_kinds_and_keys() {
        let payload: Box<dyn Any + Send> = Box::new(42_u8);
        assert_eq!(
            panic_message(&*payload),
            "(a panic payload that is not a string)"
        );
        let tombstone: Event<DynamicObject> =
            Event::Delete(ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
                key: ObjectKey::explicit("ns/gone"),
                obj: None,
            }));
        assert_eq!(event_kind(&tombstone), "delete");
        assert_eq!(object_key(&tombstone), Some(ObjectKey::explicit("ns/gone")));
        let added = Event::Add {
            obj: Arc::new(DynamicObject::new(None, "node-1")),
            is_in_initial_list: false,
        };
        assert_eq!(event_kind(&added), "add");
        assert_eq!(object_key(&added).unwrap().to_string(), "node-1");
    }

    /// A panic report names the object by the informer's key function (its cache's keys); a
    /// tombstone by the key it carries.
    #[test]
    fn a_report_keys_by_the_informer_key_function() {
        let by_uid: KeyFunc<DynamicObject> = Arc::new(|o: &DynamicObject| {
            Ok(ObjectKey::explicit(format!(
                "uid:{}",
                o.metadata.uid.as_deref().unwrap_or_default()
            )))
        });
        let key_of = keyed_by(by_uid);
        let mut obj = DynamicObject::new(Some("shop"), "web");
        obj.metadata.uid = Some("u-1".to_owned());
        let added = Event::Add {
            obj: Arc::new(obj),
            is_in_initial_list: false,
        };
        assert_eq!(key_of(&added), Some(ObjectKey::explicit("uid:u-1")));
        let tombstone: Event<DynamicObject> =
            Event::Delete(ObjectOrTombstone::Tombstone(DeletedFinalStateUnknown {
                key: ObjectKey::explicit("uid:u-2"),
                obj: None,
            }));
        assert_eq!(key_of(&tombstone), Some(ObjectKey::explicit("uid:u-2")));
    }

    /// Panic reports are rate limited per informer: ten lines a window, then the next one says
    /// how many were held back.
    #[tokio::test(start_paused = true)]
    async fn panic_reports_are_rate_limited_with_a_count() {
        let event = Event::Add {
            obj: Arc::new("x".to_owned()),
            is_in_initial_list: false,
        };
        let payload: Box<dyn Any + Send> = Box::new("again");
        let logs = InformerLogs::new("things");
        let key_of: KeyOf<String> = Arc::new(no_key);
        let lines = captured(|| {
            for n in 1..=25 {
                report(&logs, "h", &event, &key_of, &*payload, n);
            }
        });
        assert_eq!(lines.len(), LOG_BURST as usize, "{lines:?}");
        tokio::time::advance(LOG_WINDOW).await;
        let lines = captured(|| report(&logs, "h", &event, &key_of, &*payload, 26));
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains(" panics=26"), "{lines:?}");
        assert!(lines[0].contains(" suppressed=15"), "{lines:?}");
    }
}
