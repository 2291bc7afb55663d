//! Watch streams: one task per watch writes newline-delimited JSON events into the response body.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Response, header};
use kcache_reflector::Status;
use kcache_store::DynamicObject;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::body::{Abort, Chunk, ResponseBody};
use super::faults::FaultKind;
use super::routes::{Item, ListParams, Target, error_response, parse_rv, wait_for_rv};
use super::state::{Event, EventType, Shared};
use super::status::ApiError;
use super::table;

/// Chunks buffered between a watch task and hyper.
const BODY_BUFFER: usize = 16;

/// The annotation on the bookmark that ends a watch-list's initial events.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// How the stream starts.
enum Start {
    /// Synthetic ADDED for the current state; `end_bookmark`: watch-list.
    State { end_bookmark: bool },
    /// Replay history after this RV.
    Exact(u64),
    /// 200, one ERROR event with this Status, then the end.
    Error(Box<Status>),
}

/// Validates a watch request and starts its stream.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    target: Target,
    mut p: ListParams,
    table: bool,
    fault: Option<FaultKind>,
) -> Response<ResponseBody> {
    match plan(&shared, &mut p).await {
        Ok(start) => stream(&shared, target, p, table, fault, start),
        Err(e) => error_response(&e),
    }
}

async fn plan(shared: &Shared, p: &mut ListParams) -> Result<Start, ApiError> {
    let config = &shared.config;
    let rv0 = p.rv.as_deref().is_none_or(|rv| rv == "0");
    if config.watch_list
        && config.watch_list_defaulting
        && rv0
        && p.send_initial.is_none()
        && p.rv_match.is_none()
    {
        p.send_initial = Some(true);
        p.rv_match = Some("NotOlderThan".into());
    }
    let rv = p.rv.as_deref().map(|rv| parse_rv(rv, true)).transpose()?;
    match p.send_initial {
        Some(true) => {
            if !config.watch_list {
                return Err(ApiError::invalid_list_options(
                    "sendInitialEvents",
                    "sendInitialEvents is forbidden for watch unless the WatchList feature gate \
                     is enabled",
                ));
            }
            if p.rv_match.as_deref() != Some("NotOlderThan") {
                return Err(ApiError::invalid_list_options(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            if let Some(n) = rv.filter(|n| *n > 0)
                && let Err(current) = wait_for_rv(shared, n).await
            {
                let e = ApiError::too_large(n, current);
                return Ok(Start::Error(Box::new(e.status())));
            }
            Ok(Start::State {
                end_bookmark: p.bookmarks,
            })
        }
        Some(false) if p.rv_match.is_some() => Err(ApiError::invalid_list_options(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        )),
        Some(false) if rv.is_none_or(|n| n == 0) => Ok(Start::Exact(shared.lock().rv)),
        _ if p.rv_match.is_some() => Err(ApiError::invalid_list_options(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        )),
        _ => match rv {
            None | Some(0) => Ok(Start::State {
                end_bookmark: false,
            }),
            Some(n) => Ok(Start::Exact(n)),
        },
    }
}

fn stream(
    shared: &Arc<Shared>,
    target: Target,
    p: ListParams,
    table: bool,
    fault: Option<FaultKind>,
    start: Start,
) -> Response<ResponseBody> {
    let (tx, rx) = mpsc::channel(BODY_BUFFER);
    let mut resp = Response::new(ResponseBody::Stream(rx));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let timeout = p.timeout.unwrap_or(shared.config.default_watch_timeout);
    let producer = Producer {
        kind: target.resource.kind.clone(),
        api_version: target.resource.api_version(),
        unfiltered: target.namespace.is_none()
            && p.label.is_empty()
            && p.field.is_empty()
            && p.name.is_none(),
        shared: shared.clone(),
        target,
        p,
        table,
        tx,
        sent: 0,
        fault,
        fault_fired: false,
        last_rv: 0,
        deadline: Instant::now() + timeout,
    };
    tokio::spawn(producer.run(start));
    resp
}

/// Why a stream stops.
#[derive(Debug)]
struct Stop;

struct Producer {
    shared: Arc<Shared>,
    target: Target,
    p: ListParams,
    table: bool,
    tx: mpsc::Sender<Chunk>,
    kind: String,
    api_version: String,
    unfiltered: bool,
    /// Events sent so far (for "after N events" faults).
    sent: usize,
    fault: Option<FaultKind>,
    fault_fired: bool,
    /// No event at or below this RV is sent after the initial phase.
    last_rv: u64,
    deadline: Instant,
}

impl Producer {
    async fn run(mut self, start: Start) {
        let cancel = self.shared.cancel.clone();
        tokio::select! {
            () = cancel.cancelled() => {}
            _ = self.run_inner(start) => {}
        }
    }

    async fn run_inner(&mut self, start: Start) -> Result<(), Stop> {
        if matches!(self.fault, Some(FaultKind::Stall)) {
            self.tx.closed().await;
            return Ok(());
        }
        let (initial, replay, mut rx, snapshot_rv, end_bookmark) = match start {
            Start::Error(status) => return self.send_line("ERROR", &status).await,
            Start::State { end_bookmark } => match self.register(None) {
                Ok(s) => (s.initial, s.replay, s.rx, s.snapshot_rv, end_bookmark),
                Err(status) => return self.send_line("ERROR", &status).await,
            },
            Start::Exact(n) => match self.register(Some(n)) {
                Ok(s) => (s.initial, s.replay, s.rx, n, false),
                Err(status) => return self.send_line("ERROR", &status).await,
            },
        };
        self.check_fault().await?;
        for obj in &initial {
            if self.p.matches(&self.target, obj) {
                self.send_object("ADDED", obj).await?;
            }
        }
        self.last_rv = snapshot_rv;
        if end_bookmark {
            self.send_bookmark(snapshot_rv, true).await?;
        }
        for event in replay {
            self.deliver(&event).await?;
        }
        let bookmarks = self.p.bookmarks;
        let interval = self.shared.config.bookmark_interval;
        let mut next_bookmark = Instant::now() + interval;
        let mut pre_deadline = (self.deadline.saturating_duration_since(Instant::now())
            >= Duration::from_secs(3))
        .then(|| self.deadline - Duration::from_secs(2));
        let mut bookmark_rx = self.shared.bookmark_tx.subscribe();
        bookmark_rx.mark_unchanged();
        let mut paused_rx = self.shared.paused_tx.subscribe();
        let mut paused = *paused_rx.borrow_and_update();
        let cancel = self.shared.cancel.clone();
        loop {
            let bookmark_at = pre_deadline.map_or(next_bookmark, |d| d.min(next_bookmark));
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Ok(()),
                () = self.tx.closed() => return Ok(()),
                () = tokio::time::sleep_until(self.deadline) => return Ok(()),
                changed = paused_rx.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    paused = *paused_rx.borrow_and_update();
                }
                () = tokio::time::sleep_until(bookmark_at), if bookmarks && !paused => {
                    if pre_deadline.is_some_and(|d| d <= Instant::now()) {
                        pre_deadline = None;
                    } else {
                        next_bookmark = Instant::now() + interval;
                    }
                    self.periodic_bookmark(&mut rx).await?;
                }
                changed = bookmark_rx.changed(), if bookmarks && !paused => {
                    if changed.is_ok() {
                        self.periodic_bookmark(&mut rx).await?;
                    }
                }
                event = rx.recv(), if !paused => match event {
                    Some(event) => self.deliver(&event).await?,
                    // Dropped as too slow: end cleanly, the client resumes from its last RV.
                    None => return Ok(()),
                },
            }
        }
    }

    /// Registers with the state; on a too-old RV, the ERROR Status to send instead.
    fn register(&self, from: Option<u64>) -> Result<super::state::WatchSetup, Box<Status>> {
        let buffer = self.shared.config.watcher_buffer;
        let result = self
            .shared
            .lock()
            .register_watch(&self.target.id, from, buffer);
        match result {
            Ok(Ok(setup)) => Ok(setup),
            Ok(Err(compacted)) => Err(Box::new(Status::expired(&format!(
                "too old resource version: {} ({compacted})",
                from.unwrap_or_default()
            )))),
            Err(e) => Err(Box::new(e.status())),
        }
    }

    /// Sends pending events, then a bookmark at the current global RV (which covers them all).
    async fn periodic_bookmark(&mut self, rx: &mut mpsc::Receiver<Arc<Event>>) -> Result<(), Stop> {
        let (pending, rv, closed) = {
            let state = self.shared.lock();
            let mut pending = Vec::new();
            let closed = loop {
                match rx.try_recv() {
                    Ok(e) => pending.push(e),
                    Err(mpsc::error::TryRecvError::Empty) => break false,
                    Err(mpsc::error::TryRecvError::Disconnected) => break true,
                }
            };
            (pending, state.rv, closed)
        };
        for event in pending {
            self.deliver(&event).await?;
        }
        if closed {
            return Err(Stop);
        }
        self.send_bookmark(rv.max(self.last_rv), false).await
    }

    async fn send_bookmark(&mut self, rv: u64, initial_end: bool) -> Result<(), Stop> {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            metadata["annotations"] = json!({INITIAL_EVENTS_END: "true"});
        }
        let obj = json!({"kind": self.kind, "apiVersion": self.api_version, "metadata": metadata});
        self.send_raw(encode_line("BOOKMARK", &obj)).await
    }

    /// Sends one stored event through this watch's filter (selector transitions per §2.9).
    async fn deliver(&mut self, event: &Event) -> Result<(), Stop> {
        if event.rv <= self.last_rv {
            return Ok(());
        }
        self.last_rv = event.rv;
        if self.unfiltered && !self.table {
            return self.send_counted(event.encoded_line()).await;
        }
        let new_matches = self.p.matches(&self.target, &event.obj);
        let old_matches = event
            .prev
            .as_ref()
            .is_some_and(|prev| self.p.matches(&self.target, prev));
        let (kind, obj): (EventType, Cow<'_, DynamicObject>) = match event.kind {
            EventType::Added if new_matches => (EventType::Added, Cow::Borrowed(&event.obj)),
            EventType::Modified => match (old_matches, new_matches) {
                (true, true) => (EventType::Modified, Cow::Borrowed(&event.obj)),
                (false, true) => (EventType::Added, Cow::Borrowed(&event.obj)),
                (true, false) => {
                    let mut old = event.prev.as_deref().cloned().unwrap_or_default();
                    old.metadata.resource_version = Some(event.rv.to_string());
                    (EventType::Deleted, Cow::Owned(old))
                }
                (false, false) => return Ok(()),
            },
            EventType::Deleted if old_matches || new_matches => {
                (EventType::Deleted, Cow::Borrowed(&event.obj))
            }
            _ => return Ok(()),
        };
        self.send_object(kind.as_str(), &obj).await
    }

    async fn send_object(&mut self, kind: &str, obj: &DynamicObject) -> Result<(), Stop> {
        let line = if self.table {
            let t = table::table(obj.metadata.resource_version.as_deref(), &[obj]);
            encode_line(kind, &t)
        } else {
            encode_obj_line(kind, obj)
        };
        self.send_counted(line).await
    }

    async fn send_line(&mut self, kind: &str, obj: &impl serde::Serialize) -> Result<(), Stop> {
        self.send_raw(encode_line(kind, obj)).await
    }

    /// Sends an event line, then applies an "after N events" fault.
    async fn send_counted(&mut self, line: Bytes) -> Result<(), Stop> {
        if let Some(FaultKind::Slow(delay)) = &self.fault {
            tokio::time::sleep(*delay).await;
        }
        self.send_raw(line).await?;
        self.sent += 1;
        self.check_fault().await
    }

    async fn send_raw(&mut self, line: Bytes) -> Result<(), Stop> {
        self.tx.send(Ok(line)).await.map_err(|_| Stop)
    }

    async fn check_fault(&mut self) -> Result<(), Stop> {
        if self.fault_fired {
            return Ok(());
        }
        let Some(fault) = self.fault.clone() else {
            return Ok(());
        };
        let after = match &fault {
            FaultKind::DropAfter(n)
            | FaultKind::TruncateAfter(n)
            | FaultKind::CorruptAfter(n)
            | FaultKind::UnknownTypeAfter(n)
            | FaultKind::CloseAfter(n)
            | FaultKind::ErrorEventAfter { events: n, .. } => *n,
            _ => return Ok(()),
        };
        if self.sent != after {
            return Ok(());
        }
        self.fault_fired = true;
        match fault {
            FaultKind::DropAfter(_) => {
                // Let hyper write out what was sent before, so exactly N events arrive.
                let drained = async {
                    while self.tx.capacity() < self.tx.max_capacity() {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                };
                let _ = tokio::time::timeout(Duration::from_secs(1), drained).await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                let _ = self.tx.send(Err(Abort)).await;
                Err(Stop)
            }
            FaultKind::TruncateAfter(_) => {
                let obj = json!({"kind": self.kind, "apiVersion": self.api_version,
                    "metadata": {"name": "truncated", "resourceVersion": self.last_rv.to_string()}});
                let line = encode_line("MODIFIED", &obj);
                let half = line.slice(..line.len() / 2);
                self.send_raw(half).await?;
                Err(Stop)
            }
            FaultKind::CorruptAfter(_) => {
                self.send_raw(Bytes::from_static(
                    b"{\"type\":\"MODIFIED\",\"object\":{\"kind\":\x01]]\n",
                ))
                .await
            }
            FaultKind::UnknownTypeAfter(_) => {
                let obj = json!({"kind": self.kind, "apiVersion": self.api_version,
                    "metadata": {"resourceVersion": self.last_rv.to_string()}});
                self.send_line("BOGUS", &obj).await
            }
            FaultKind::ErrorEventAfter { status, .. } => {
                self.send_line("ERROR", &status).await?;
                Err(Stop)
            }
            _ => Err(Stop),
        }
    }
}

fn encode_line(kind: &str, obj: &impl serde::Serialize) -> Bytes {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    let _ = serde_json::to_writer(&mut out, obj);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

impl Event {
    /// The event's line for unfiltered watchers, encoded on first use and shared after.
    pub(crate) fn encoded_line(&self) -> Bytes {
        self.line
            .get_or_init(|| encode_obj_line(self.kind.as_str(), &self.obj))
            .clone()
    }
}

fn encode_obj_line(kind: &str, obj: &DynamicObject) -> Bytes {
    let mut out = Vec::with_capacity(1024);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    let _ = serde_json::to_writer(&mut out, &Item(obj, true));
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}
