//! The fake API server in a child process, so its own allocations and CPU are not counted
//! against the client being measured. The parent drives it over stdin/stdout.
//!
//! The server makes every update it will send before it prints its URL; while a client syncs it
//! only serves (the parent asks for its CPU time before and after each sync and prints the
//! difference). The updates are written to its store after the client's sync, with the watches
//! paused, and released as one burst.

use kcache_testing::workload::{self, PodGenerator};

use crate::child::Child;
use kcache_testing_server::FakeApiServer;
use kcache_testing_server::fake_api_server::ServedResource;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Namespaces the workload spreads pods over.
pub const NAMESPACES: usize = 20;

/// `serve` mode: start the server with `pods` pods, print its URL, then obey commands:
/// `prepare N` (pause the watches, make N pod updates; answered with `prepared <rv>`),
/// `release` (resume the watches: the burst begins; answered with `released`), `cpu` (answered
/// with `cpu <user s> <system s>`, this process's CPU time so far), `watchers` (answered with
/// `watchers N`, the open watches) and `quit`.
pub async fn serve(
    pods: usize,
    updates: usize,
    seed: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let server = FakeApiServer::builder()
        .history_limit(pods + updates + 1000)
        .watcher_buffer(updates + pods + 1000)
        .seed(seed)
        .start()
        .await?;
    let resource = ServedResource::pods();
    let mut names = Vec::with_capacity(pods);
    for pod in workload::pods(seed, pods, NAMESPACES) {
        let created = server.create(&resource, pod)?;
        names.push((
            created.metadata.namespace.clone(),
            created.metadata.name.clone().unwrap_or_default(),
        ));
    }
    // Updates are made before they are timed, so the clients, not the generator, set the pace.
    let mut generator = PodGenerator::new(seed ^ 0x5eed, NAMESPACES);
    let mut prepared = Vec::with_capacity(updates);
    for i in 0..updates {
        let (ns, name) = &names[i % names.len()];
        let current = server
            .get(&resource, ns.as_deref(), name)
            .ok_or("pod vanished")?;
        prepared.push(generator.mutate(&current));
    }
    let mut prepared = prepared.into_iter();
    let mut out = tokio::io::stdout();
    out.write_all(format!("url {}\n", server.url()).as_bytes())
        .await?;
    out.flush().await?;
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
    Ok(())
}

/// The parent's handle on the child server.
pub struct Server {
    child: Child,
    /// Where it listens.
    pub url: String,
}

impl Server {
    /// Starts `current_exe serve ...` and waits for its URL.
    pub async fn spawn(
        pods: usize,
        updates: usize,
        seed: u64,
    ) -> Result<Self, Box<dyn std::error::Error>> {
        let (pods, updates, seed) = (pods.to_string(), updates.to_string(), seed.to_string());
        let mut child = Child::spawn(&[
            "serve",
            "--pods",
            &pods,
            "--updates",
            &updates,
            "--seed",
            &seed,
        ])?;
        let line = child.expect("url ").await?;
        let url = line.trim_start_matches("url ").to_owned();
        Ok(Self { child, url })
    }

    /// Asks for `n` updates, made while the watches are paused; returns the final RV.
    pub async fn prepare(&mut self, n: usize) -> Result<u64, Box<dyn std::error::Error>> {
        let reply = self.command(&format!("prepare {n}")).await?;
        Ok(reply
            .strip_prefix("prepared ")
            .ok_or_else(|| format!("unexpected {reply:?}"))?
            .parse()?)
    }

    /// Resumes the watches: the prepared updates go out as fast as the client takes them.
    pub async fn release(&mut self) -> Result<(), Box<dyn std::error::Error>> {
        let reply = self.command("release").await?;
        if reply == "released" {
            Ok(())
        } else {
            Err(format!("unexpected {reply:?}").into())
        }
    }

    async fn command(&mut self, command: &str) -> Result<String, Box<dyn std::error::Error>> {
        self.child.say(command).await?;
        self.child.line().await
    }

    /// The server's CPU time so far (user plus system).
    pub async fn cpu(&mut self) -> Result<std::time::Duration, Box<dyn std::error::Error>> {
        let reply = self.command("cpu").await?;
        let f = crate::child::fields(&reply, "cpu ", 2)?;
        Ok(std::time::Duration::from_secs_f64(
            f[0].parse::<f64>()? + f[1].parse::<f64>()?,
        ))
    }

    /// Waits until no watch is open (a client that exited has been noticed), for at most
    /// `limit`; false if one still is.
    pub async fn wait_no_watchers(
        &mut self,
        limit: std::time::Duration,
    ) -> Result<bool, Box<dyn std::error::Error>> {
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
