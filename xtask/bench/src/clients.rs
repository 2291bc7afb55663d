//! The clients under test: kcache's informer over client-http, and kube-rs's watcher + store.
//! Each is started against the server, timed to its initial sync, then fed updates.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kcache_client_http::{Client, Config, HttpListerWatcher};
use kcache_informer::{HandlerFuncs, SharedIndexInformer};
use tokio_util::sync::CancellationToken;

use crate::alloc;

type BoxError = Box<dyn std::error::Error>;

/// What one client run measured.
#[derive(Debug, Clone, Copy)]
pub struct Figures {
    pub sync: Duration,
    pub sync_peak_bytes: usize,
    pub steady_bytes: usize,
    pub cached: usize,
    pub events_per_sec: f64,
}

/// Which client, and how it runs: on a task of the bench's multi-threaded runtime, or on a
/// thread of its own with a single-threaded runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// kcache's informer over client-http; `own_thread`: `run_on_own_thread`; `exact`:
    /// exact vector capacities.
    Kcache {
        skip_managed_fields: bool,
        own_thread: bool,
        exact: bool,
    },
    /// kube-runtime's watcher + reflector store; `own_thread`: polled on a thread of its own.
    KubeRs { own_thread: bool },
}

impl Which {
    /// Every row, in the table's order, with its `--only` name and its label.
    const ROWS: [(Which, &'static str, &'static str); 8] = [
        (Which::KubeRs { own_thread: false }, "kube-rs", "kube-rs"),
        (
            Which::KubeRs { own_thread: true },
            "kube-rs-thread",
            "kube-rs, own thread",
        ),
        (
            Which::Kcache {
                skip_managed_fields: false,
                own_thread: false,
                exact: false,
            },
            "kcache",
            "kcache",
        ),
        (
            Which::Kcache {
                skip_managed_fields: false,
                own_thread: true,
                exact: false,
            },
            "kcache-thread",
            "kcache, own thread",
        ),
        (
            Which::Kcache {
                skip_managed_fields: true,
                own_thread: false,
                exact: false,
            },
            "skipped",
            "kcache, managedFields skipped",
        ),
        (
            Which::Kcache {
                skip_managed_fields: true,
                own_thread: true,
                exact: false,
            },
            "skipped-thread",
            "kcache, skipped, own thread",
        ),
        (
            Which::Kcache {
                skip_managed_fields: false,
                own_thread: true,
                exact: true,
            },
            "exact-thread",
            "kcache, exact capacities, own thread",
        ),
        (
            Which::Kcache {
                skip_managed_fields: true,
                own_thread: true,
                exact: true,
            },
            "lean-thread",
            "kcache, skipped + exact, own thread",
        ),
    ];

    /// Every row, in the table's order.
    pub fn all() -> impl Iterator<Item = Which> {
        Self::ROWS.into_iter().map(|(w, _, _)| w)
    }

    fn row(self) -> (Which, &'static str, &'static str) {
        Self::ROWS
            .into_iter()
            .find(|(w, _, _)| *w == self)
            .unwrap_or((self, "?", "?"))
    }

    /// The row's name for `--only`.
    pub fn key(self) -> &'static str {
        self.row().1
    }

    pub fn label(self) -> &'static str {
        self.row().2
    }
}

/// Runs `fut` on a new thread with a single-threaded runtime; the handle ends with it.
fn on_own_thread(
    fut: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<tokio::task::JoinHandle<()>, BoxError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("bench-client".into())
        .spawn(move || {
            runtime.block_on(fut);
            let _ = tx.send(());
        })?;
    Ok(tokio::spawn(async move {
        let _ = rx.await;
    }))
}

async fn wait_for(what: &str, limit: Duration, cond: impl Fn() -> bool) -> Result<(), BoxError> {
    let deadline = Instant::now() + limit;
    while !cond() {
        if Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}").into());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(())
}

/// Runs one client: initial sync of every pod, then `updates` watch events.
pub async fn run(
    which: Which,
    url: &str,
    pods: usize,
    updates: usize,
    coordinator: &mut Coordinator,
) -> Result<Figures, BoxError> {
    alloc::set_counting(true);
    let baseline = alloc::current();
    alloc::reset_peak();
    let seen = Arc::new(AtomicUsize::new(0));
    let cancel = CancellationToken::new();
    let start = Instant::now();
    let (cached, task): (
        Box<dyn Fn() -> usize + Send + Sync>,
        tokio::task::JoinHandle<()>,
    ) = match which {
        Which::Kcache {
            skip_managed_fields,
            own_thread,
            exact,
        } => {
            let client = Client::new(Config::new(url.parse()?))?;
            let lw = HttpListerWatcher::<Pod>::typed(client)
                .all_namespaces()
                .skip_managed_fields(skip_managed_fields)
                .exact_capacities(exact)
                .build();
            let informer = SharedIndexInformer::new(Arc::new(lw), Duration::ZERO);
            let count = Arc::clone(&seen);
            informer.add_event_handler(HandlerFuncs::new().on_updated(
                move |_: &Arc<Pod>, _: &Arc<Pod>| {
                    count.fetch_add(1, Ordering::Relaxed);
                },
            ))?;
            let runner = informer.clone();
            let stop = cancel.clone();
            let task = tokio::spawn(async move {
                let result = if own_thread {
                    runner.run_on_own_thread(stop).await
                } else {
                    runner.run(stop).await
                };
                if let Err(e) = result {
                    eprintln!("kcache informer: {e}");
                }
            });
            let synced = informer.clone();
            wait_for("kcache sync", Duration::from_secs(600), move || {
                synced.has_synced()
            })
            .await?;
            (Box::new(move || informer.indexer().len()), task)
        }
        Which::KubeRs { own_thread } => {
            let client = kube::Client::try_from(kube::Config::new(url.parse()?))?;
            let api: kube::Api<Pod> = kube::Api::all(client);
            let (reader, writer) = kube::runtime::reflector::store();
            let stream = kube::runtime::reflector(
                writer,
                kube::runtime::watcher(api, kube::runtime::watcher::Config::default()),
            );
            let count = Arc::clone(&seen);
            let stop = cancel.clone();
            let consume = async move {
                let mut stream = std::pin::pin!(stream);
                loop {
                    tokio::select! {
                        () = stop.cancelled() => break,
                        ev = stream.next() => match ev {
                            Some(Ok(kube::runtime::watcher::Event::Apply(_))) => {
                                count.fetch_add(1, Ordering::Relaxed);
                            }
                            Some(_) => {}
                            None => break,
                        },
                    }
                }
            };
            let task = if own_thread {
                on_own_thread(consume)?
            } else {
                tokio::spawn(consume)
            };
            reader.wait_until_ready().await?;
            (Box::new(move || reader.state().len()), task)
        }
    };
    let sync = start.elapsed();
    let sync_peak_bytes = usize::try_from(alloc::peak() - baseline).unwrap_or(0);
    let steady_bytes = usize::try_from(alloc::current() - baseline).unwrap_or(0);
    alloc::set_counting(false);
    let n = cached();
    if n != pods {
        return Err(format!("{}: cached {n} pods, expected {pods}", which.label()).into());
    }

    // The parent has the server write the updates while its watches are paused, then
    // releases them once this side's clock runs.
    coordinator.synced().await?;
    let before = seen.load(Ordering::Relaxed);
    let start = Instant::now();
    coordinator.started().await?;
    // Generous: the slowest client here takes about 10 s for 100,000 events.
    let limit = Duration::from_secs(60 + (updates / 1000) as u64);
    if let Err(e) = wait_for("watch events", limit, || {
        seen.load(Ordering::Relaxed) >= before + updates
    })
    .await
    {
        let got = seen.load(Ordering::Relaxed) - before;
        return Err(format!("{}: {e}: {got} of {updates} arrived", which.label()).into());
    }
    let elapsed = start.elapsed().as_secs_f64();
    let events_per_sec = updates as f64 / elapsed;
    eprintln!("  client: {updates} watch events taken in {elapsed:.2} s");
    cancel.cancel();
    task.await?;
    Ok(Figures {
        sync,
        sync_peak_bytes,
        steady_bytes,
        cached: n,
        events_per_sec,
    })
}

/// The child's side of the parent's protocol: `synced` (then wait for `go`), `started`.
pub struct Coordinator {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::io::Stdin>>,
}

impl Coordinator {
    pub fn new() -> Self {
        use tokio::io::AsyncBufReadExt;
        Self {
            lines: tokio::io::BufReader::new(tokio::io::stdin()).lines(),
        }
    }

    async fn say(&mut self, line: &str) -> Result<(), BoxError> {
        use tokio::io::AsyncWriteExt;
        let mut out = tokio::io::stdout();
        out.write_all(format!("{line}\n").as_bytes()).await?;
        out.flush().await?;
        Ok(())
    }

    /// Synced: waits until the parent has the updates ready.
    async fn synced(&mut self) -> Result<(), BoxError> {
        self.say("synced").await?;
        match self.lines.next_line().await?.as_deref() {
            Some("go") => Ok(()),
            other => Err(format!("expected go, got {other:?}").into()),
        }
    }

    /// The clock runs: the parent may release the updates.
    async fn started(&mut self) -> Result<(), BoxError> {
        self.say("started").await
    }

    /// The figures, as the last line.
    pub async fn done(&mut self, f: &Figures) -> Result<(), BoxError> {
        self.say(&format!(
            "done {} {} {} {} {}",
            f.sync.as_secs_f64(),
            f.sync_peak_bytes,
            f.steady_bytes,
            f.cached,
            f.events_per_sec
        ))
        .await
    }
}

/// Each figure's median over `runs` (the mean of the middle two for an even count).
pub fn median(runs: &[Figures]) -> Figures {
    fn mid(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        match n {
            0 => 0.0,
            _ if n % 2 == 1 => v[n / 2],
            _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    }
    let of = |f: fn(&Figures) -> f64| mid(runs.iter().map(f).collect());
    Figures {
        sync: Duration::from_secs_f64(of(|f| f.sync.as_secs_f64())),
        sync_peak_bytes: of(|f| f.sync_peak_bytes as f64) as usize,
        steady_bytes: of(|f| f.steady_bytes as f64) as usize,
        cached: of(|f| f.cached as f64) as usize,
        events_per_sec: of(|f| f.events_per_sec),
    }
}

/// Parses the child's `done ...` line.
pub fn parse_done(line: &str) -> Result<Figures, BoxError> {
    let rest = line
        .strip_prefix("done ")
        .ok_or_else(|| format!("unexpected {line:?}"))?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    if f.len() != 5 {
        return Err(format!("unexpected {line:?}").into());
    }
    Ok(Figures {
        sync: Duration::from_secs_f64(f[0].parse()?),
        sync_peak_bytes: f[1].parse()?,
        steady_bytes: f[2].parse()?,
        cached: f[3].parse()?,
        events_per_sec: f[4].parse()?,
    })
}

/// Runs one client in a child process (`current_exe client KEY ...`), so that every client
/// starts from a fresh heap, and drives the burst between it and the server.
pub async fn run_in_child(
    which: Which,
    server: &mut crate::server::Server,
    pods: usize,
    updates: usize,
) -> Result<Figures, BoxError> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .args([
            "client",
            which.key(),
            "--url",
            &server.url,
            "--pods",
            &pods.to_string(),
            "--updates",
            &updates.to_string(),
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let mut expect = async |want: &str| -> Result<String, BoxError> {
        let line = lines
            .next_line()
            .await?
            .ok_or_else(|| format!("{}: the client exited", which.label()))?;
        if line.starts_with(want) {
            Ok(line)
        } else {
            Err(format!("{}: expected {want}, got {line:?}", which.label()).into())
        }
    };
    expect("synced").await?;
    server.prepare(updates).await?;
    stdin.write_all(b"go\n").await?;
    stdin.flush().await?;
    expect("started").await?;
    server.release().await?;
    let figures = parse_done(&expect("done").await?)?;
    drop(stdin);
    let _ = child.wait().await;
    Ok(figures)
}
