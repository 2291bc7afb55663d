//! What serving costs the fake API server: its CPU time for a paginated list, a watch-list and a
//! burst of watch events over N realistic pods (the workload of `cargo xtask bench`).
//!
//! ```text
//! cargo run --release -p kcache-testing-server --example serve_cost -- [--pods N] [--updates U]
//!     [--threads T] [--decode] [--dump DIR] [--pause SECS]
//! ```
//!
//! The server runs alone in threads of its own (`--threads 0`, the default: one thread with a
//! single-threaded runtime; else a multi-threaded runtime with T workers, as in the bench), and
//! the CPU time of those threads (from `/proc/self/task/*/schedstat`, Linux only) is what each
//! step reports:
//!
//! 1. a list of every pod, 500 a page (`limit=500`, all namespaces);
//! 2. a watch-list (`sendInitialEvents=true`) up to its `k8s.io/initial-events-end` bookmark;
//! 3. on that watch, U updates written while the watches are paused, then released at once.
//!
//! The client (hyper, on the main thread) reads as fast as it can, or with `--decode` parses
//! every watch line into a `serde_json::Value` to read at a client's pace.
//!
//! - `--metadata` asks for metadata only (`PartialObjectMetadataList` pages and
//!   `PartialObjectMetadata` events), as metadata informers do.
//! - `--dump DIR` writes the bodies received (`list.json`, `watch-list.json`, `events.json`),
//!   with `creationTimestamp` values blanked, to compare two builds byte for byte.
//! - `--pause SECS` waits once the pods are in, before measuring, e.g. to attach
//!   `perf record -g -p <pid>` (the pid is printed) and look at the `fake-server*` threads.
#![allow(clippy::print_stdout, reason = "a command-line tool reports on stdout")]
#![allow(clippy::cast_precision_loss, reason = "figures for a report")]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kcache_testing::workload::{self, PodGenerator};
use kcache_testing_server::fake_api_server::{FakeApiServer, INITIAL_EVENTS_END, ServedResource};
use tokio::sync::{mpsc, oneshot};

type Http = Client<HttpConnector, Empty<Bytes>>;

/// Namespaces the pods are spread over, as in the bench.
const NAMESPACES: usize = 20;

/// What serving costs the fake API server: its CPU time for a paginated list, a watch-list
/// and a burst of watch events over N realistic pods.
#[derive(Parser)]
struct Args {
    /// Pods to create, spread over 20 namespaces.
    #[arg(long, default_value_t = 20_000)]
    pods: usize,
    /// Updates written while the watches are paused, then released at once.
    #[arg(long, default_value_t = 1000)]
    updates: usize,
    /// Server runtime worker threads; 0: one thread, single-threaded runtime.
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Decode every watch line into a `serde_json::Value`, to read at a client's pace.
    #[arg(long)]
    decode: bool,
    /// Write the bodies received (`list.json`, `watch-list.json`, `events.json`) into DIR, with
    /// `creationTimestamp` values blanked.
    #[arg(long, value_name = "DIR")]
    dump: Option<PathBuf>,
    /// Ask for metadata only (`PartialObjectMetadata`), as metadata informers do.
    #[arg(long)]
    metadata: bool,
    /// Seconds to wait once the pods are in, before measuring (to attach a profiler).
    #[arg(long, value_name = "SECS", default_value_t = 0)]
    pause: u64,
}

/// A command to the server thread, answered when done.
enum Command {
    /// Wait for a watch, pause the watches and write the updates.
    Prepare(oneshot::Sender<()>),
    /// Resume the watches.
    Release(oneshot::Sender<()>),
}

/// The server, on threads of its own named `fake-server*`.
struct ServerThread {
    url: String,
    commands: mpsc::Sender<Command>,
    thread: std::thread::JoinHandle<()>,
}

impl ServerThread {
    /// Starts the server with `pods` pods and `updates` updates to make on `Prepare`.
    fn start(pods: usize, updates: usize, threads: usize) -> Result<Self, String> {
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (commands, rx) = mpsc::channel(1);
        let thread = std::thread::Builder::new()
            .name("fake-server".into())
            .spawn(move || {
                let runtime = if threads == 0 {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                } else {
                    tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(threads)
                        .thread_name("fake-server-w")
                        .enable_all()
                        .build()
                };
                runtime
                    .expect("runtime")
                    .block_on(serve(pods, updates, url_tx, rx));
            })
            .map_err(|e| e.to_string())?;
        let url = url_rx.recv().map_err(|e| e.to_string())?;
        Ok(Self {
            url,
            commands,
            thread,
        })
    }

    async fn command(&self, make: impl FnOnce(oneshot::Sender<()>) -> Command) {
        let (done, wait) = oneshot::channel();
        self.commands.send(make(done)).await.expect("server thread");
        wait.await.expect("server thread");
    }

    fn stop(self) {
        drop(self.commands);
        self.thread.join().expect("server thread");
    }
}

/// The server thread's task: the pods, then the commands until the channel closes.
async fn serve(
    pods: usize,
    updates: usize,
    url: std::sync::mpsc::Sender<String>,
    mut commands: mpsc::Receiver<Command>,
) {
    let server = FakeApiServer::builder()
        .history_limit(pods + updates + 1000)
        .watcher_buffer(pods + updates + 1000)
        .start()
        .await
        .expect("start");
    let resource = ServedResource::pods();
    let mut names = Vec::with_capacity(pods);
    for pod in workload::pods(1, pods, NAMESPACES) {
        let created = server.create(&resource, pod).expect("create");
        let name = created.metadata.name.clone().unwrap_or_default();
        names.push((created.metadata.namespace.clone(), name));
    }
    url.send(server.url().to_owned()).expect("main thread");
    let mut generator = PodGenerator::new(7, NAMESPACES);
    while let Some(command) = commands.recv().await {
        match command {
            Command::Prepare(done) => {
                while server.watcher_count(&resource) == 0 {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                server.pause_watches();
                for (ns, name) in names.iter().cycle().take(updates) {
                    let current = server.get(&resource, ns.as_deref(), name).expect("pod");
                    let pod = generator.mutate(&current);
                    server.update(&resource, pod).expect("update");
                }
                let _ = done.send(());
            }
            Command::Release(done) => {
                server.resume_watches();
                let _ = done.send(());
            }
        }
    }
    server.shutdown().await;
}

/// CPU time of the server's threads (those named `fake-server*`), in seconds.
fn server_cpu() -> f64 {
    let mut ns = 0u64;
    let tasks = std::fs::read_dir("/proc/self/task").into_iter().flatten();
    for task in tasks.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("fake-server") {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        ns += stat
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    ns as f64 / 1e9
}

/// Measures the server's CPU and the wall time from creation to [`report`](Self::report).
struct Step {
    cpu: f64,
    wall: Instant,
}

impl Step {
    fn start() -> Self {
        Self {
            cpu: server_cpu(),
            wall: Instant::now(),
        }
    }

    fn report(&self, what: &str, count: usize, unit: &str, body: &[u8]) {
        let cpu = server_cpu() - self.cpu;
        println!(
            "{what:<11} {count:>6} {unit}s, {:>6.1} MB, server CPU {cpu:>6.3} s \
             ({:>5.1} µs/{unit}), wall {:.3} s",
            body.len() as f64 / 1e6,
            cpu * 1e6 / count.max(1) as f64,
            self.wall.elapsed().as_secs_f64()
        );
    }
}

/// Blanks every `"creationTimestamp":"..."` value (they differ from run to run).
fn normalize(body: &[u8]) -> Vec<u8> {
    const KEY: &[u8] = b"\"creationTimestamp\":\"";
    let mut out = Vec::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.windows(KEY.len()).position(|w| w == KEY) {
        out.extend_from_slice(&rest[..at + KEY.len()]);
        rest = &rest[at + KEY.len()..];
        let end = rest.iter().position(|b| *b == b'"').unwrap_or(rest.len());
        rest = &rest[end..];
    }
    out.extend_from_slice(rest);
    out
}

/// What a watch received so far; with `decode`, parses each whole line as a client would.
struct Received {
    decode: bool,
    bytes: Vec<u8>,
    /// Where the first line not parsed yet starts in `bytes`.
    parsed: usize,
    lines: usize,
}

impl Received {
    fn new(decode: bool) -> Self {
        Self {
            decode,
            bytes: Vec::new(),
            parsed: 0,
            lines: 0,
        }
    }

    fn feed(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
        let Some(end) = self.bytes[self.parsed..].iter().rposition(|b| *b == b'\n') else {
            return;
        };
        let whole = &self.bytes[self.parsed..=self.parsed + end];
        for line in whole.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            self.lines += 1;
            if self.decode {
                let value = serde_json::from_slice::<serde_json::Value>(line).expect("a line");
                std::hint::black_box(value);
            }
        }
        self.parsed += end + 1;
    }

    /// Takes what was received so far, leaving the count of lines.
    fn take(&mut self) -> Vec<u8> {
        self.parsed = 0;
        std::mem::take(&mut self.bytes)
    }
}

/// `Accept` for a metadata-only list.
const METADATA_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// `Accept` for a metadata-only watch.
const METADATA: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/// Sends a GET of `url`, with `accept` if any.
async fn send(client: &Http, url: &str, accept: Option<&str>) -> hyper::Response<Incoming> {
    let mut req = hyper::Request::get(url);
    if let Some(accept) = accept {
        req = req.header(hyper::header::ACCEPT, accept);
    }
    client
        .request(req.body(Empty::new()).expect("request"))
        .await
        .expect("get")
}

async fn get(client: &Http, url: &str, accept: Option<&str>) -> Bytes {
    let resp = send(client, url, accept).await;
    resp.into_body().collect().await.expect("body").to_bytes()
}

/// Reads `body` until `done` says what was received is enough.
async fn read_until(
    body: &mut Incoming,
    received: &mut Received,
    done: impl Fn(&Received) -> bool,
) {
    while !done(received) {
        let Some(frame) = body.frame().await else {
            return;
        };
        if let Ok(data) = frame.expect("frame").into_data() {
            received.feed(&data);
        }
    }
}

/// Step 1: every page of a list, 500 a page. Returns the bodies, one a line.
async fn list(client: &Http, url: &str, pods: usize, metadata: bool) -> Vec<u8> {
    let step = Step::start();
    let mut bodies = Vec::new();
    let mut token = String::new();
    loop {
        let body = get(
            client,
            &format!("{url}/api/v1/pods?limit=500&continue={token}"),
            metadata.then_some(METADATA_LIST),
        )
        .await;
        let list: serde_json::Value = serde_json::from_slice(&body).expect("a list");
        bodies.extend_from_slice(&body);
        bodies.push(b'\n');
        match list["metadata"]["continue"].as_str() {
            Some(next) if !next.is_empty() => next.clone_into(&mut token),
            _ => break,
        }
    }
    step.report("list:", pods, "pod", &bodies);
    bodies
}

/// Steps 2 and 3: a watch-list, then the updates on that watch. Returns both bodies.
async fn watch(client: &Http, server: &ServerThread, args: &Args) -> (Vec<u8>, Vec<u8>) {
    let step = Step::start();
    let url = format!(
        "{}/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&\
         allowWatchBookmarks=true",
        server.url
    );
    let resp = send(client, &url, args.metadata.then_some(METADATA)).await;
    let mut body = resp.into_body();
    let mut received = Received::new(args.decode);
    let marker = INITIAL_EVENTS_END.as_bytes();
    read_until(&mut body, &mut received, |r| {
        r.bytes[r.bytes.len().saturating_sub(512)..]
            .windows(marker.len())
            .any(|w| w == marker)
    })
    .await;
    step.report("watch-list:", args.pods, "pod", &received.bytes);
    let initial = received.take();

    server.command(Command::Prepare).await;
    let step = Step::start();
    let before = received.lines;
    server.command(Command::Release).await;
    read_until(&mut body, &mut received, |r| {
        r.lines >= before + args.updates
    })
    .await;
    step.report("events:", args.updates, "event", &received.bytes);
    (initial, received.take())
}

fn main() -> Result<(), String> {
    let args = Args::parse();
    let server = ServerThread::start(args.pods, args.updates, args.threads)?;
    if args.pause > 0 {
        println!("pid {}: measuring in {} s", std::process::id(), args.pause);
        std::thread::sleep(Duration::from_secs(args.pause));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let bodies = runtime.block_on(async {
        let client: Http = Client::builder(TokioExecutor::new()).build_http();
        // Open the connection first.
        get(&client, &format!("{}/version", server.url), None).await;
        let list = list(&client, &server.url, args.pods, args.metadata).await;
        let (initial, events) = watch(&client, &server, &args).await;
        [("list", list), ("watch-list", initial), ("events", events)]
    });
    server.stop();
    if let Some(dir) = &args.dump {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        for (name, body) in bodies {
            std::fs::write(dir.join(format!("{name}.json")), normalize(&body))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}
