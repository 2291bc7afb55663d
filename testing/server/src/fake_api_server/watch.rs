//! Watch streams: one task per watch writes newline-delimited JSON events into the response body
//! (or, for a client that asked for protobuf, length-prefixed protobuf frames, see
//! [`protobuf`](super::protobuf); "line" below means either).
//!
//! Events that are ready together (the initial events of a watch-list, a history replay, a burst
//! of queued changes) go out in frames of several lines, up to 64 KiB by default, instead of one
//! channel message, HTTP chunk and write each; a line is never split across frames, and the
//! frame is sent before the task waits for anything. [`WatchFrames`] chooses other cuts: one
//! event per frame, or frames of a fixed size that cut lines anywhere. While a watch fault that counts events is
//! armed ([`FaultKind::DropAfter`], [`FaultKind::Slow`], ...), each event is its own frame, as the
//! fault needs.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Response, header};
use kcache_reflector::Status;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::body::{Abort, Chunk, ResponseBody};
use super::faults::{FaultKind, UndecodableEvent};
use super::negotiation::Format;
use super::params::{ListParams, Target, parse_rv};
use super::partial_metadata::{self, Partial};
use super::protobuf;
use super::response::error_response;
use super::state::{Event, EventType, Shared, wait_for_rv};
use super::status::ApiError;
use super::stored::Stored;
use super::table::Printer;
use super::watch_frames::WatchFrames;

/// Chunks buffered between a watch task and hyper.
const BODY_BUFFER: usize = 16;

/// Queued events taken at most after one received, before the task checks its timers, the
/// client and the server again.
const DRAIN_EVENTS: usize = 256;

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
    format: Format,
    fault: Option<FaultKind>,
) -> Response<ResponseBody> {
    match plan(&shared, &mut p).await {
        Ok(start) => stream(&shared, target, p, format, fault, start),
        Err(e) if format.is_protobuf() => protobuf::error_response(&e),
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
        Some(false) if rv.is_none_or(|n| n == 0) => {
            let state = shared.lock();
            Ok(Start::Exact(state.latest_as_of.unwrap_or(state.rv)))
        }
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
    format: Format,
    fault: Option<FaultKind>,
    start: Start,
) -> Response<ResponseBody> {
    let (tx, rx) = mpsc::channel(BODY_BUFFER);
    let mut resp = Response::new(ResponseBody::Stream(rx));
    let content_type = if format.is_protobuf() {
        kcache_protobuf::envelope::WATCH_CONTENT_TYPE
    } else {
        "application/json"
    };
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    let timeout = p.timeout.unwrap_or(shared.config.default_watch_timeout);
    let partial = match format {
        Format::Partial(partial) => Some(partial),
        Format::Json | Format::Table | Format::Protobuf => None,
    };
    // Bookmarks (and the objects of faults) are of the kind the watch's objects are.
    let (kind, api_version) = match partial {
        Some(partial) => (
            partial_metadata::KIND.to_owned(),
            partial.version.api_version().to_owned(),
        ),
        None => (
            target.resource.kind.clone(),
            target.resource.api.api_version(),
        ),
    };
    let producer = Producer {
        kind,
        api_version,
        unfiltered: target.namespace.is_none() && !p.has_selectors(),
        shared: shared.clone(),
        table: (format == Format::Table).then(|| Printer::new(&target.resource)),
        partial,
        protobuf: format.is_protobuf(),
        target,
        p,
        tx,
        batch: Vec::new(),
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
    /// For a table watch, the printer of the resource's Tables (its columns computed once).
    table: Option<Printer>,
    /// For a metadata-only watch, what it asked for: objects are sent as their
    /// `PartialObjectMetadata`; asking for the list kind ends the stream at the first object,
    /// which kube-apiserver cannot encode so and ends its stream at.
    partial: Option<Partial>,
    /// Whether events are protobuf frames rather than JSON lines.
    protobuf: bool,
    tx: mpsc::Sender<Chunk>,
    /// Lines written but not sent yet (see [`Producer::write`]).
    batch: Vec<u8>,
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
        let stream = async {
            let _ = self.run_inner(start).await;
            // Whatever the stream ends with (a timeout, an ERROR event, half a line) goes out.
            let _ = self.flush().await;
        };
        tokio::select! {
            () = cancel.cancelled() => {}
            () = stream => {}
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
            if self.selects(obj) {
                self.send_object("ADDED", obj).await?;
            }
        }
        self.last_rv = snapshot_rv;
        if end_bookmark && !self.end_initial_events(snapshot_rv).await? {
            return Ok(());
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
        // The timers live across iterations: one made per iteration would be registered with
        // the timer wheel and removed again for every event.
        let deadline = tokio::time::sleep_until(self.deadline);
        tokio::pin!(deadline);
        let bookmark_timer = tokio::time::sleep_until(next_bookmark);
        tokio::pin!(bookmark_timer);
        loop {
            // Send the lines batched so far unless more events are ready to join them: the
            // select below may wait.
            if paused || rx.is_empty() {
                self.flush().await?;
            }
            let bookmark_at = pre_deadline.map_or(next_bookmark, |d| d.min(next_bookmark));
            if bookmark_timer.deadline() != bookmark_at {
                bookmark_timer.as_mut().reset(bookmark_at);
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Ok(()),
                () = self.tx.closed() => return Ok(()),
                () = &mut deadline => return Ok(()),
                changed = paused_rx.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    paused = *paused_rx.borrow_and_update();
                }
                () = &mut bookmark_timer, if bookmarks && !paused => {
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
                    Some(event) => {
                        self.deliver(&event).await?;
                        // Events queued behind it join the same frame. The pause is checked
                        // before each, as this select checks it before each `recv`.
                        let mut more = DRAIN_EVENTS;
                        while more > 0
                            && self.batching()
                            && self.batch.len() < self.frames().limit()
                            && !paused_rx.has_changed().unwrap_or(true)
                        {
                            let Ok(event) = rx.try_recv() else { break };
                            self.deliver(&event).await?;
                            more -= 1;
                        }
                    }
                    // Dropped as too slow: end cleanly, the client resumes from its last RV.
                    None => return Ok(()),
                },
            }
        }
    }

    /// Sends the bookmark that ends a streaming list's initial events; `false` when a
    /// `NoInitialEventsEnd` fault left it out and the stream is over.
    async fn end_initial_events(&mut self, rv: u64) -> Result<bool, Stop> {
        match self.fault {
            Some(FaultKind::NoInitialEventsEndThenClose) if !self.fault_fired => {
                self.fault_fired = true;
                Ok(false)
            }
            Some(FaultKind::NoInitialEventsEndThenStall) if !self.fault_fired => {
                self.fault_fired = true;
                self.flush().await?;
                self.tx.closed().await;
                Ok(false)
            }
            _ => self.send_bookmark(rv, true).await.map(|()| true),
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
        if self.partial.is_some_and(|p| p.list) {
            return Err(Stop);
        }
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            metadata["annotations"] = json!({INITIAL_EVENTS_END: "true"});
        }
        let obj = json!({"kind": self.kind, "apiVersion": self.api_version, "metadata": metadata});
        self.send_line("BOOKMARK", &obj).await
    }

    /// Sends one stored event through this watch's filter (selector transitions per §2.9).
    async fn deliver(&mut self, event: &Event) -> Result<(), Stop> {
        if event.rv <= self.last_rv {
            return Ok(());
        }
        self.last_rv = event.rv;
        let new_matches = self.selects(&event.obj);
        let old_matches = event.prev.as_ref().is_some_and(|prev| self.selects(prev));
        let left;
        let (kind, obj): (EventType, &Stored) = match event.kind {
            EventType::Added if new_matches => (EventType::Added, &event.obj),
            EventType::Modified => match (old_matches, new_matches) {
                (true, true) => (EventType::Modified, &event.obj),
                (false, true) => (EventType::Added, &event.obj),
                (true, false) => {
                    // Left the selection: DELETED with the last state it matched in, at this
                    // event's RV (encoded here: only filtered watches need it).
                    let mut old = event
                        .prev
                        .as_ref()
                        .map(|prev| (*prev.object).clone())
                        .unwrap_or_default();
                    old.metadata.resource_version = Some(event.rv.to_string());
                    left = Stored::new(old).map_err(|_| Stop)?;
                    (EventType::Deleted, &left)
                }
                (false, false) => return Ok(()),
            },
            EventType::Deleted if old_matches || new_matches => (EventType::Deleted, &event.obj),
            _ => return Ok(()),
        };
        self.send_object(kind.as_str(), obj).await
    }

    /// Whether the watch's selectors select `obj` (a watch without any selects everything,
    /// unlooked at).
    fn selects(&self, obj: &Stored) -> bool {
        self.unfiltered || self.p.matches(&self.target, &obj.object)
    }

    async fn send_object(&mut self, kind: &str, obj: &Stored) -> Result<(), Stop> {
        if let Some(printer) = &self.table {
            let obj = &*obj.object;
            let t = printer.table(obj.metadata.resource_version.as_deref(), &[obj]);
            return self.send_counted(|out| write_line(out, kind, &t)).await;
        }
        if let Some(broken) = self.undecodable(kind, obj) {
            if self.protobuf {
                let api = (self.api_version.clone(), self.kind.clone());
                return self
                    .send_counted(|out| {
                        protobuf::write_undecodable_event(out, kind, (&api.0, &api.1), &broken);
                    })
                    .await;
            }
            return self
                .send_counted(|out| write_line(out, kind, &broken))
                .await;
        }
        match self.partial {
            Some(partial) if partial.list => Err(Stop),
            Some(partial) if self.protobuf => {
                let mut enveloped = Vec::new();
                if partial_metadata::write_protobuf_object(&mut enveloped, partial.version, obj)
                    .is_none()
                {
                    // Unencodable metadata: the ERROR event `write_event` makes of it.
                    let value = json!({"kind": partial_metadata::KIND,
                        "apiVersion": partial.version.api_version(), "metadata": obj.object.metadata});
                    return self
                        .send_counted(|out| protobuf::write_event(out, kind, &value))
                        .await;
                }
                self.send_counted(|out| kcache_protobuf::frames::write_event(kind, &enveloped, out))
                    .await
            }
            Some(partial) => {
                let version = partial.version;
                self.send_counted(|out| {
                    partial_metadata::write_event_line(out, kind, version, obj);
                })
                .await
            }
            None if self.protobuf => {
                // Encoded once per stored version, whatever the number of watches.
                if let Some(enveloped) = obj.protobuf() {
                    return self
                        .send_counted(|out| {
                            kcache_protobuf::frames::write_event(kind, enveloped, out);
                        })
                        .await;
                }
                let mut json = Vec::with_capacity(obj.json_len(true));
                obj.write_json(&mut json, true);
                self.send_counted(|out| protobuf::write_event_json(out, kind, &json))
                    .await
            }
            None => {
                self.send_counted(|out| obj.write_event_line(out, kind))
                    .await
            }
        }
    }

    /// When an undecodable-event fault is due for this event: the object to send instead (its
    /// `apiVersion` a number; its metadata intact; only that on a metadata-only watch),
    /// recorded in the server's state.
    fn undecodable(&mut self, kind: &str, obj: &Stored) -> Option<serde_json::Value> {
        let (event_type, after) = match self.fault {
            Some(FaultKind::UndecodableModifiedAfter(n)) => ("MODIFIED", n),
            Some(FaultKind::UndecodableDeletedAfter(n)) => ("DELETED", n),
            _ => return None,
        };
        if self.fault_fired || self.sent < after || kind != event_type {
            return None;
        }
        let mut broken = match self.partial {
            Some(_) => json!({"kind": partial_metadata::KIND, "metadata": obj.object.metadata}),
            None => serde_json::to_value(&*obj.object).ok()?,
        };
        broken["apiVersion"] = json!(7);
        self.fault_fired = true;
        let meta = &obj.object.metadata;
        self.shared.lock().undecodable.push(UndecodableEvent {
            event_type,
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
            resource_version: meta.resource_version.clone().unwrap_or_default(),
        });
        Some(broken)
    }

    async fn send_line(&mut self, kind: &str, obj: &impl serde::Serialize) -> Result<(), Stop> {
        let protobuf = self.protobuf;
        self.write(|out| write_event(out, protobuf, kind, obj))
            .await
    }

    /// Writes an event line, then applies an "after N events" fault.
    async fn send_counted(&mut self, line: impl FnOnce(&mut Vec<u8>)) -> Result<(), Stop> {
        if let Some(FaultKind::Slow(delay)) = &self.fault {
            tokio::time::sleep(*delay).await;
        }
        self.write(line).await?;
        self.sent += 1;
        self.check_fault().await
    }

    /// Whether lines may wait in [`batch`](Self::batch) for more: not while a fault that counts
    /// events or paces them is armed, so that each event is its own frame then, as before
    /// batching (the drop after N events waits for exactly N to be written out).
    fn batching(&self) -> bool {
        self.frames().batches() && (self.fault.is_none() || self.fault_fired)
    }

    fn frames(&self) -> WatchFrames {
        self.shared.config.watch_frames
    }

    /// Appends bytes (whole lines, or the fault's half line) with `write`, then sends the batch
    /// if it is full or batching is off. The caller [`flush`](Self::flush)es before waiting.
    async fn write(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> Result<(), Stop> {
        write(&mut self.batch);
        if !self.batching() {
            return self.flush().await;
        }
        let limit = self.frames().limit();
        if self.batch.len() < limit {
            return Ok(());
        }
        if let WatchFrames::Split(_) = self.frames() {
            // Whole frames of `limit` bytes go now; the rest waits for more.
            let whole = self.batch.len() - self.batch.len() % limit;
            let rest = self.batch.split_off(whole);
            let frames = std::mem::replace(&mut self.batch, rest);
            return self.send_frames(Bytes::from(frames)).await;
        }
        self.flush().await
    }

    /// Sends the batched bytes, if any: as one frame, or as frames of the split size.
    async fn flush(&mut self) -> Result<(), Stop> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let bytes = Bytes::from(std::mem::take(&mut self.batch));
        self.send_frames(bytes).await
    }

    /// Sends `bytes` as one frame, or cut into frames of the split size (zero-copy slices).
    async fn send_frames(&mut self, bytes: Bytes) -> Result<(), Stop> {
        let size = match self.frames() {
            WatchFrames::Split(n) => n.max(1),
            _ => bytes.len().max(1),
        };
        let mut at = 0;
        while at < bytes.len() {
            let end = (at + size).min(bytes.len());
            self.tx
                .send(Ok(bytes.slice(at..end)))
                .await
                .map_err(|_| Stop)?;
            at = end;
        }
        Ok(())
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
                let mut line = Vec::new();
                write_event(&mut line, self.protobuf, "MODIFIED", &obj);
                line.truncate(line.len() / 2);
                self.write(|out| out.extend_from_slice(&line)).await?;
                Err(Stop)
            }
            FaultKind::CorruptAfter(_) if self.protobuf => {
                self.write(protobuf::write_corrupt_frame).await
            }
            FaultKind::CorruptAfter(_) => {
                self.write(|out| {
                    out.extend_from_slice(b"{\"type\":\"MODIFIED\",\"object\":{\"kind\":\x01]]\n");
                })
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

/// Appends the event `kind` of `obj`: its protobuf frame when `protobuf`, else its JSON line.
fn write_event(out: &mut Vec<u8>, protobuf: bool, kind: &str, obj: &impl serde::Serialize) {
    if protobuf {
        let value = serde_json::to_value(obj).unwrap_or_default();
        protobuf::write_event(out, kind, &value);
    } else {
        write_line(out, kind, obj);
    }
}

/// Appends the event line `{"type":"<kind>","object":<obj>}\n`.
fn write_line(out: &mut Vec<u8>, kind: &str, obj: &impl serde::Serialize) {
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    // Serializing into a Vec fails only for maps with non-string keys, which no event has.
    let _ = serde_json::to_writer(&mut *out, obj);
    out.extend_from_slice(b"}\n");
}
