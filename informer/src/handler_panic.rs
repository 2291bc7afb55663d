//! What a handler's delivery thread does when a callback panics (client-go's
//! `processorListener`, with its panics recovered): the panic is caught, one error is logged,
//! the event counts as delivered and is skipped, and the thread pauses before the next event.
//!
//! The pause bounds the cost of a handler that panics on every event: at most one panic, so one
//! log line, per [`PANIC_PAUSE`] per handler, whatever the event rate. Other handlers have
//! threads of their own and are not affected.

use std::any::Any;
use std::time::Duration;

use kcache_store::ObjectKey;

use crate::Event;

/// How long a delivery thread waits after a callback panicked before it delivers the next
/// event (client-go's listener sleeps a second too). Closing the listener ends the wait.
pub(crate) const PANIC_PAUSE: Duration = Duration::from_secs(1);

/// How a delivery thread names the object of an event in its panic report: `None` where the
/// listener does not know its objects' type well enough.
pub(crate) type KeyOf<T> = fn(&Event<T>) -> Option<ObjectKey>;

/// The key of an event's object, or of a tombstone: what a panic report names.
#[expect(
    clippy::unnecessary_wraps,
    reason = "a `KeyOf`, whose implementations for other types have no key"
)]
pub(crate) fn object_key<T: kcache_store::Object>(event: &Event<T>) -> Option<ObjectKey> {
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

/// Logs one panic of handler `handler`'s callback for `event`, its `panics`-th so far, at
/// error level.
pub(crate) fn report<T>(
    handler: &str,
    event: &Event<T>,
    key: Option<&ObjectKey>,
    payload: &(dyn Any + Send),
    panics: u64,
) {
    tracing::error!(
        handler,
        event = event_kind(event),
        key = key.map(tracing::field::display),
        panic = panic_message(payload),
        panics,
        pause = ?PANIC_PAUSE,
        "an event handler panicked; the event is skipped and the handler pauses"
    );
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kcache_store::{DeletedFinalStateUnknown, DynamicObject, ObjectOrTombstone};

    use super::*;

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
        let key = object_key(&event);
        let payload: Box<dyn Any + Send> = Box::new(format!("bad {}", "spec"));
        let lines = captured(|| report("pods-controller", &event, key.as_ref(), &*payload, 3));
        assert_eq!(lines.len(), 1, "{lines:?}");
        let line = &lines[0];
        for part in [
            "ERROR an event handler panicked",
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
        let lines = captured(|| report("h", &event, None, &*payload, 1));
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
}
