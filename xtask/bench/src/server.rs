//! The fake API server in a child process, so its own allocations and CPU are not counted
//! against the client being measured. The parent drives it over stdin/stdout.
//!
//! The server makes its pods (of the table's shape) and every update it will send before it
//! prints its URL; while a client syncs it only serves (the parent asks for its CPU time before
//! and after each sync and prints the difference). What happens to the updates depends on the
//! scenario:
//!
//! - `quiet`: they are made (each a [`PodGenerator::mutate`] of a pod as created) before the
//!   URL is printed, and written to the store after the client's sync, with the watches paused;
//!   then released as one burst.
//! - `backlog`: the same updates are written before the URL is printed, then the server serves
//!   the latest state as of the resource version before them
//!   ([`FakeApiServer::set_latest_as_of`]): every list (and a watch-list's initial events) is the
//!   state before the updates, and the updates follow it from the history.
//!
//! Over HTTPS the server writes its kubeconfig (its URL and CA) to a temporary file, prints
//! the file's path after its URL, and removes it when it ends.

use std::path::PathBuf;

use kcache_testing::workload::{self, PodGenerator};

use crate::child::Child;
use crate::setup::{Scenario, Setup, Transport};
use kcache_testing_server::FakeApiServer;
use kcache_testing_server::fake_api_server::ServedResource;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

type BoxError = Box<dyn std::error::Error>;

/// Namespaces the workload spreads pods over.
pub const NAMESPACES: usize = 20;

/// A file removed when dropped: the server's kubeconfig.
pub(crate) struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Prints `url URL` and `kubeconfig PATH` for the parent (`kubeconfig -` over plain HTTP);
/// over HTTPS the kubeconfig is written to a temporary file, removed when the returned guard
/// is dropped.
pub(crate) async fn announce(
    server: &FakeApiServer,
    tls: bool,
) -> Result<Option<TempFile>, BoxError> {
    let kubeconfig = if tls {
        let path =
            std::env::temp_dir().join(format!("kcache-bench-{}.kubeconfig", std::process::id()));
        server.write_kubeconfig(&path)?;
        Some(TempFile(path))
    } else {
        None
    };
    let kubeconfig_line = match &kubeconfig {
        Some(file) => format!("kubeconfig {}\n", file.0.display()),
        None => "kubeconfig -\n".to_owned(),
    };
    let mut out = tokio::io::stdout();
    out.write_all(format!("url {}\n{kubeconfig_line}", server.url()).as_bytes())
        .await?;
    out.flush().await?;
    Ok(kubeconfig)
}

/// `serve` mode: start the server with `pods` pods of `setup`'s shape, print `url URL` and
/// `kubeconfig PATH` (`kubeconfig -` over plain HTTP), then obey commands: `prepare N` (quiet
/// scenario: pause the watches, write N pod updates; answered with `prepared <rv>`), `release`
/// (resume the watches: the burst begins; answered with `released`), `cpu` (answered with
/// `cpu <user s> <system s>`, this process's CPU time so far), `watchers` (answered with
/// `watchers N`, the open watches), `versions` (answered with `versions V,...`, the HTTP
/// versions of the requests since the last `versions`, which clears the log) and `quit`.
pub async fn serve(pods: usize, updates: usize, seed: u64, setup: Setup) -> Result<(), BoxError> {
    let server = FakeApiServer::builder()
        .history_limit(pods + updates + 1000)
        .watcher_buffer(updates + pods + 1000)
        .watch_frames(setup.frames.0)
        // Encoded with the writes (untimed), as the JSON is: a protobuf row's clock measures
        // the client, as kube-apiserver's watch cache encodes an event once.
        .protobuf_on_write(true)
        .tls(setup.transport.tls())
        .http2(setup.transport != Transport::HttpsH1)
        .seed(seed)
        .start()
        .await?;
    let resource = ServedResource::pods();
    let rss_before = crate::procfs::rss()?;
    let mut created = Vec::with_capacity(pods);
    for pod in workload::shaped_pods(setup.shape, seed, pods, NAMESPACES) {
        created.push(server.create(&resource, pod)?);
    }
    if created.is_empty() && updates > 0 {
        return Err("updates need at least one pod".into());
    }
    fits(
        (crate::procfs::rss()?.saturating_sub(rss_before)) / pods.max(1),
        updates,
        setup,
    )?;
    // Every update is a change of a pod as it was created, the same ones in every scenario.
    let mut generator = PodGenerator::with_shape(seed ^ 0x5eed, NAMESPACES, setup.shape);
    let mut update = |i: usize| generator.mutate(&created[i % created.len()]);
    let mut prepared = Vec::new();
    match setup.scenario {
        Scenario::Quiet => {
            // Updates are made before they are timed, so the clients, not the generator, set
            // the pace.
            prepared = (0..updates).map(&mut update).collect();
        }
        Scenario::Backlog => {
            let rv0 = server.resource_version();
            let started = std::time::Instant::now();
            for i in 0..updates {
                server.update(&resource, update(i))?;
            }
            server.set_latest_as_of(Some(rv0)).map_err(|compacted| {
                format!("the history no longer reaches {rv0} (compacted to {compacted})")
            })?;
            eprintln!(
                "  server: {updates} updates written in {:.2} s, queued behind the state at resource version {rv0}",
                started.elapsed().as_secs_f64()
            );
        }
    }
    let mut prepared = prepared.into_iter();
    // Each pod's uid hash, for the `shard` command (update `i` changes pod `i % pods`).
    let uid_hashes: Vec<u64> = created
        .iter()
        .map(|p| kcache_reflector::shard_hash(kcache_store::Object::uid(&**p).unwrap_or("")))
        .collect();
    drop(created);
    let kubeconfig = announce(&server, setup.transport.tls()).await?;
    let mut out = tokio::io::stdout();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        let mut words = line.split_whitespace();
        match (words.next(), words.next().map(str::parse::<usize>)) {
            (Some("prepare"), Some(Ok(n))) => {
                // Written while the watches are paused: the writes and their encoding happen
                // here, untimed; the client's clock starts at `release`.
                // The client's watch must be open first, or it would start from a list
                // taken in the middle of the writes.
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
                while server.watcher_count(&resource) == 0 {
                    if std::time::Instant::now() > deadline {
                        return Err("no client watch opened within 30 s".into());
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                server.pause_watches();
                let started = std::time::Instant::now();
                for _ in 0..n {
                    let pod = prepared
                        .next()
                        .ok_or("more updates asked for than prepared")?;
                    server.update(&resource, pod)?;
                }
                eprintln!(
                    "  server: {n} updates written and encoded in {:.2} s (watches paused)",
                    started.elapsed().as_secs_f64()
                );
                out.write_all(format!("prepared {}\n", server.resource_version()).as_bytes())
                    .await?;
                out.flush().await?;
            }
            (Some("shard"), Some(Ok(shard))) => {
                // `shard I N`: how many pods, and how many of the updates, fall in uid shard I
                // of N (`shard P U`).
                let shards = words
                    .next()
                    .and_then(|w| w.parse::<u32>().ok())
                    .ok_or("shard I N")?;
                let shard = u32::try_from(shard)?;
                let in_shard = |h: &u64| kcache_reflector::shard_index(*h, shards) == shard;
                let pods_in = uid_hashes.iter().filter(|h| in_shard(h)).count();
                let updates_in = (0..updates)
                    .filter(|i| in_shard(&uid_hashes[i % uid_hashes.len()]))
                    .count();
                out.write_all(format!("shard {pods_in} {updates_in}\n").as_bytes())
                    .await?;
                out.flush().await?;
            }
            (Some("release"), _) => {
                server.resume_watches();
                out.write_all(b"released\n").await?;
                out.flush().await?;
            }
            (Some("cpu"), _) => {
                let cpu = crate::procfs::Cpu::now()?;
                out.write_all(
                    format!(
                        "cpu {} {}\n",
                        cpu.user.as_secs_f64(),
                        cpu.system.as_secs_f64()
                    )
                    .as_bytes(),
                )
                .await?;
                out.flush().await?;
            }
            (Some("versions"), _) => {
                let mut versions: Vec<String> =
                    server.requests().into_iter().map(|r| r.version).collect();
                server.clear_requests();
                versions.sort();
                versions.dedup();
                let line = if versions.is_empty() {
                    "none".to_owned()
                } else {
                    versions.join(",")
                };
                out.write_all(format!("versions {line}\n").as_bytes())
                    .await?;
                out.flush().await?;
            }
            (Some("watchers"), _) => {
                let n = server.watcher_count(&resource);
                out.write_all(format!("watchers {n}\n").as_bytes()).await?;
                out.flush().await?;
            }
            (Some("quit"), _) | (None, _) => break,
            _ => return Err(format!("unknown command {line:?}").into()),
        }
    }
    server.shutdown().await;
    drop(kubeconfig);
    Ok(())
}

/// Fails, before they are made, if `updates` updates of `setup`'s shape would take the server
/// past three quarters of the memory the machine has available, at `per_object` bytes each
/// (what each pod took: every update is kept as long, as an object and its encoding, until it
/// is sent). On a shared machine a bench run must not get the kernel's OOM killer to pick a
/// process.
fn fits(per_object: usize, updates: usize, setup: Setup) -> Result<(), BoxError> {
    let need = per_object.saturating_mul(updates);
    let available = crate::procfs::mem_available()?;
    if need / 3 > available / 4 {
        return Err(format!(
            "the fake server would need about {:.1} GB more for {updates} updates of {} pods ({:.0} KB each as it keeps them), \
             and the machine has {:.1} GB available: run fewer (--updates, --heavy-updates) or free memory",
            need as f64 / 1e9,
            setup.shape.name(),
            per_object as f64 / 1e3,
            available as f64 / 1e9
        )
        .into());
    }
    Ok(())
}

/// The parent's handle on the child server.
pub struct Server {
    child: Child,
    /// Where it listens.
    pub url: String,
    /// Its kubeconfig (URL and CA), over HTTPS.
    pub kubeconfig: Option<String>,
}

impl Server {
    /// Starts `current_exe serve ...` and waits for its URL and kubeconfig.
    pub async fn spawn(
        pods: usize,
        updates: usize,
        seed: u64,
        setup: &Setup,
    ) -> Result<Self, BoxError> {
        let (pods, updates, seed) = (pods.to_string(), updates.to_string(), seed.to_string());
        let mut args = vec![
            "serve",
            "--pods",
            &pods,
            "--updates",
            &updates,
            "--seed",
            &seed,
        ];
        let setup_args = setup.args();
        args.extend(setup_args.iter().map(String::as_str));
        Self::attach(Child::spawn(&args)?).await
    }

    /// Waits for the URL and kubeconfig a server child announces (see [`announce`]).
    pub async fn attach(mut child: Child) -> Result<Self, BoxError> {
        let line = child.expect("url ").await?;
        let url = line.trim_start_matches("url ").to_owned();
        let line = child.expect("kubeconfig ").await?;
        let kubeconfig = match line.trim_start_matches("kubeconfig ") {
            "-" => None,
            path => Some(path.to_owned()),
        };
        Ok(Self {
            child,
            url,
            kubeconfig,
        })
    }

    /// The arguments that point a client child at this server: `--url U [--kubeconfig P]`.
    pub fn client_args(&self) -> Vec<&str> {
        let mut args = vec!["--url", self.url.as_str()];
        if let Some(path) = &self.kubeconfig {
            args.extend(["--kubeconfig", path.as_str()]);
        }
        args
    }

    /// Asks for `n` updates, made while the watches are paused; returns the final RV.
    pub async fn prepare(&mut self, n: usize) -> Result<u64, BoxError> {
        let reply = self.command(&format!("prepare {n}")).await?;
        Ok(reply
            .strip_prefix("prepared ")
            .ok_or_else(|| format!("unexpected {reply:?}"))?
            .parse()?)
    }

    /// `(pods, updates)` of uid shard `shard` of `shards`: the pods it holds and the updates
    /// that change them.
    pub async fn shard(&mut self, shard: u32, shards: u32) -> Result<(usize, usize), BoxError> {
        let reply = self.command(&format!("shard {shard} {shards}")).await?;
        let f = crate::child::fields(&reply, "shard ", 2)?;
        Ok((f[0].parse()?, f[1].parse()?))
    }

    /// Resumes the watches: the prepared updates go out as fast as the client takes them.
    pub async fn release(&mut self) -> Result<(), BoxError> {
        let reply = self.command("release").await?;
        if reply == "released" {
            Ok(())
        } else {
            Err(format!("unexpected {reply:?}").into())
        }
    }

    /// Sends `command` and returns the child's one-line answer.
    pub async fn command(&mut self, command: &str) -> Result<String, BoxError> {
        self.child.say(command).await?;
        self.child.line().await
    }

    /// The server's CPU time so far (user plus system).
    pub async fn cpu(&mut self) -> Result<std::time::Duration, BoxError> {
        let reply = self.command("cpu").await?;
        let f = crate::child::fields(&reply, "cpu ", 2)?;
        Ok(std::time::Duration::from_secs_f64(
            f[0].parse::<f64>()? + f[1].parse::<f64>()?,
        ))
    }

    /// The HTTP versions of the requests since the last call (`HTTP/1.1`, `HTTP/2.0`, joined
    /// by commas).
    pub async fn versions(&mut self) -> Result<String, BoxError> {
        let reply = self.command("versions").await?;
        Ok(reply
            .strip_prefix("versions ")
            .ok_or_else(|| format!("unexpected {reply:?}"))?
            .to_owned())
    }

    /// Waits until no watch is open (a client that exited has been noticed), for at most
    /// `limit`; false if one still is.
    pub async fn wait_no_watchers(&mut self, limit: std::time::Duration) -> Result<bool, BoxError> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            let reply = self.command("watchers").await?;
            if reply == "watchers 0" {
                return Ok(true);
            }
            if std::time::Instant::now() > deadline {
                return Ok(false);
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Stops the child.
    pub async fn quit(self) {
        self.child.finish(Some("quit")).await;
    }
}
