//! Fault injection: "fail the next N requests" rules, per verb and optionally per resource.
//!
//! Most faults act on the next matching request. A few need a request of a certain shape
//! ([`FaultKind::RepeatContinue`] a list page with a continue token, the `NoInitialEventsEnd`
//! faults a streaming list): they wait for one, letting other requests through.

use std::time::Duration;

use kcache_reflector::{Status, StatusDetails};

use super::served_resource::{ResourceId, ServedResource};
use super::status::ApiError;

/// Which requests a [`Fault`] applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// Collection GET without `watch`.
    List,
    /// Any watch request.
    Watch,
    /// Single-object GET.
    Get,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// DELETE.
    Delete,
    /// PATCH (any patch type, server-side apply included).
    Patch,
    /// Every request on a resource URL.
    Any,
}

/// What happens to a request (or a watch stream) a [`Fault`] hits.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FaultKind {
    /// Answer with this HTTP status and a `metav1.Status` body; `Retry-After` when set.
    Status {
        /// HTTP status code.
        code: u16,
        /// `reason`, e.g. `InternalError`, `TooManyRequests`, `Expired`.
        reason: String,
        /// `message`.
        message: String,
        /// Seconds for `Retry-After` and `details.retryAfterSeconds`.
        retry_after: Option<u32>,
    },
    /// Answer with this HTTP status and a text/plain body (APF-style 429, proxies).
    Text {
        /// HTTP status code.
        code: u16,
        /// The body.
        body: String,
        /// Seconds for `Retry-After`.
        retry_after: Option<u32>,
    },
    /// Watch: abort the connection (no terminating chunk; `RST_STREAM` on h2) after N events.
    DropAfter(usize),
    /// Watch: after N events, send half an event line, then end the stream.
    TruncateAfter(usize),
    /// Watch: after N events, send one line of corrupt JSON, then carry on.
    CorruptAfter(usize),
    /// Watch: after N events, send a valid JSON event with the unknown type `BOGUS`, then carry on.
    UnknownTypeAfter(usize),
    /// Watch: after N events (0 = at the start), send an ERROR event with this Status, then end
    /// the stream cleanly. See [`Fault::expired_event`].
    ErrorEventAfter {
        /// Events sent before the ERROR.
        events: usize,
        /// The Status object of the ERROR event.
        status: Box<Status>,
    },
    /// Watch: end the stream cleanly after N events, before `timeoutSeconds`.
    CloseAfter(usize),
    /// Watch: send the headers, then nothing at all (no events, no bookmarks) until the client
    /// goes away or the server shuts down.
    Stall,
    /// Watch: wait this long before each event.
    Slow(Duration),
    /// Watch: the first MODIFIED event after N events goes out with an object that does not
    /// decode (its `apiVersion` a number, where every client expects a string) but whose type,
    /// namespace, name and resourceVersion can still be read. Only the bytes on the wire are
    /// broken; the stored object is unchanged. Each one sent is recorded
    /// ([`FakeApiServer::undecodable_events`](super::FakeApiServer::undecodable_events)).
    UndecodableModifiedAfter(usize),
    /// Watch: as [`UndecodableModifiedAfter`](Self::UndecodableModifiedAfter), for the first
    /// DELETED event after N events.
    UndecodableDeletedAfter(usize),
    /// List: the next page requested with a continue token comes back with that same token
    /// (even when it is the last page), as a server that repeats itself for ever would answer.
    RepeatContinue,
    /// Streaming list (`sendInitialEvents=true`): the initial events, but never the bookmark
    /// that ends them; then the stream ends.
    NoInitialEventsEndThenClose,
    /// Streaming list: the initial events without their bookmark, then nothing at all (no
    /// events, no bookmarks) until the client goes away.
    NoInitialEventsEndThenStall,
}

/// An event a [`FaultKind::UndecodableModifiedAfter`] or
/// [`FaultKind::UndecodableDeletedAfter`] fault sent undecodable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UndecodableEvent {
    /// `MODIFIED` or `DELETED`.
    pub event_type: &'static str,
    /// The object's namespace.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// The resourceVersion of the event.
    pub resource_version: String,
}

/// What a fault needs to know of a request beyond its verb and resource (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RequestShape {
    /// A list page with a non-empty `continue`.
    pub(crate) continue_token: bool,
    /// A watch with `sendInitialEvents=true`.
    pub(crate) streaming_list: bool,
}

/// A fault rule: `kind` for the next `times` requests matching `verb` (and `resource`, if set).
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub(crate) kind: FaultKind,
    pub(crate) verb: Verb,
    pub(crate) resource: Option<ResourceId>,
    pub(crate) times: u32,
}

impl Fault {
    /// A fault of `kind` on the next request matching `verb`, on any resource.
    pub fn new(verb: Verb, kind: FaultKind) -> Self {
        Self {
            kind,
            verb,
            resource: None,
            times: 1,
        }
    }

    /// Only for requests on this resource.
    #[must_use]
    pub fn on(mut self, resource: &ServedResource) -> Self {
        self.resource = Some(resource.id());
        self
    }

    /// For the next `n` matching requests instead of one.
    #[must_use]
    pub fn times(mut self, n: u32) -> Self {
        self.times = n;
        self
    }

    /// An HTTP error with a Status body: e.g. `Fault::status(Verb::List, 500, "InternalError",
    /// "boom")`.
    pub fn status(verb: Verb, code: u16, reason: &str, message: &str) -> Self {
        Self::new(
            verb,
            FaultKind::Status {
                code,
                reason: reason.to_owned(),
                message: message.to_owned(),
                retry_after: None,
            },
        )
    }

    /// 429 `TooManyRequests` with `Retry-After: seconds`.
    pub fn too_many_requests(verb: Verb, seconds: u32) -> Self {
        Self::new(
            verb,
            FaultKind::Status {
                code: 429,
                reason: "TooManyRequests".into(),
                message: "Too many requests, please try again later.".into(),
                retry_after: Some(seconds),
            },
        )
    }

    /// An ERROR event with 410 Expired after `events` events (0: at watch start).
    pub fn expired_event(events: usize) -> Self {
        Self::new(
            Verb::Watch,
            FaultKind::ErrorEventAfter {
                events,
                status: Box::new(Status::expired(
                    "The resourceVersion for the provided watch is too old.",
                )),
            },
        )
    }

    /// A watch-stream fault (`DropAfter`, `Stall`, ...).
    pub fn watch(kind: FaultKind) -> Self {
        Self::new(Verb::Watch, kind)
    }

    pub(crate) fn matches(&self, verb: Verb, resource: &ResourceId, shape: RequestShape) -> bool {
        (self.verb == Verb::Any || self.verb == verb)
            && self.resource.as_ref().is_none_or(|r| r == resource)
            && self.kind.applies_to(shape)
    }
}

impl FaultKind {
    /// Whether this fault can act on a request of `shape`; otherwise it waits for one that can.
    fn applies_to(&self, shape: RequestShape) -> bool {
        match self {
            FaultKind::RepeatContinue => shape.continue_token,
            FaultKind::NoInitialEventsEndThenClose | FaultKind::NoInitialEventsEndThenStall => {
                shape.streaming_list
            }
            _ => true,
        }
    }

    /// The direct HTTP error, for request-level faults.
    pub(crate) fn as_error(&self) -> Option<ApiError> {
        match self {
            FaultKind::Status {
                code,
                reason,
                message,
                retry_after,
            } => {
                let mut err = match retry_after {
                    Some(s) => ApiError::with_details(
                        *code,
                        reason,
                        message,
                        StatusDetails {
                            retry_after_seconds: i32::try_from(*s).ok(),
                            ..StatusDetails::default()
                        },
                    ),
                    None => ApiError::new(*code, reason, message),
                };
                err.retry_after = *retry_after;
                Some(err)
            }
            FaultKind::Text {
                code,
                body,
                retry_after,
            } => {
                let mut err = ApiError::text(*code, body);
                err.retry_after = *retry_after;
                Some(err)
            }
            _ => None,
        }
    }
}
