//! A child of the bench program (`current_exe WORDS...`: the fake server, a timed client),
//! spoken to one line at a time over its stdin and stdout.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

type BoxError = Box<dyn std::error::Error>;

/// A running child and its two pipes; killed if dropped.
pub struct Child {
    process: tokio::process::Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Child {
    /// Starts this program again with `args`; its stderr is the bench's.
    pub fn spawn(args: &[&str]) -> Result<Self, BoxError> {
        Self::spawn_program(&std::env::current_exe()?, args, &[])
    }

    /// Starts `program` with `args` and the environment variables `env` added to this one's.
    pub fn spawn_program(
        program: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Self, BoxError> {
        let mut process = tokio::process::Command::new(program)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = process.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(process.stdout.take().ok_or("no stdout")?).lines();
        Ok(Self {
            process,
            stdin,
            stdout,
        })
    }

    /// Writes one line to the child.
    pub async fn say(&mut self, line: &str) -> Result<(), BoxError> {
        self.stdin.write_all(format!("{line}\n").as_bytes()).await?;
        self.stdin.flush().await?;
        Ok(())
    }

    /// The child's next line; an error if it exited first.
    pub async fn line(&mut self) -> Result<String, BoxError> {
        Ok(self.stdout.next_line().await?.ok_or("the child exited")?)
    }

    /// The child's next line, which must start with `want`.
    pub async fn expect(&mut self, want: &str) -> Result<String, BoxError> {
        let line = self.line().await?;
        if line.starts_with(want) {
            Ok(line)
        } else {
            Err(format!("expected {want}, got {line:?}").into())
        }
    }

    /// Closes its stdin (after `last`, if given) and waits for it to exit.
    pub async fn finish(mut self, last: Option<&str>) {
        if let Some(line) = last {
            let _ = self.say(line).await;
        }
        drop(self.stdin);
        let _ = self.process.wait().await;
    }
}

/// The `n` words of `line` after `prefix` (`done 1.2 3 ...`): what a child's answer carries.
pub fn fields<'a>(line: &'a str, prefix: &str, n: usize) -> Result<Vec<&'a str>, BoxError> {
    let f: Vec<&str> = line
        .strip_prefix(prefix)
        .ok_or_else(|| format!("unexpected {line:?}"))?
        .split_whitespace()
        .collect();
    if f.len() == n {
        Ok(f)
    } else {
        Err(format!("unexpected {line:?}").into())
    }
}
