//! The floor: one core decoding the same pods with bare `serde_json` (timed in a plain child,
//! `kcache-bench floor-speeds`, so that the pods it decodes never weigh on the parent), and what
//! a decoded pod weighs (counted in `kcache-bench-counted floor-bytes`).
//!
//! Bare decoding here is serde_json's fastest way: one UTF-8 check of the document, then
//! `from_str` (which checks no string again). `from_slice` checks every string and is about
//! 25% slower on pods; kcache's watch decoder takes the fast way, so the floor does too.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kcache_testing::workload::{self, PodShape};

use crate::alloc;
use crate::server::NAMESPACES;

/// How fast bare `serde_json` decodes the workload's pods (measured in a plain process).
#[derive(Debug, Clone, Copy)]
pub struct Speeds {
    pub pods_per_sec: f64,
    pub mb_per_sec: f64,
    /// Pods/s decoding into a map of `count` pods, each replacing (and freeing) the previous
    /// version of its key, on one thread: what any cache does, without I/O.
    pub cache_pods_per_sec: f64,
    /// The same with the replaced versions freed on a second thread.
    pub cache_cross_thread_pods_per_sec: f64,
}

/// What a decoded pod weighs (measured in the counting process).
#[derive(Debug, Clone, Copy)]
pub struct Bytes {
    /// Bytes one pod holds once decoded from its JSON bytes, `Arc` included.
    pub decoded_per_pod: f64,
    /// The same when every `Vec` is decoded with its exact length known (through `Value`).
    pub exact_per_pod: f64,
}

/// One pod, the fastest way bare serde_json offers (see the module docs).
fn decode_pod(doc: &[u8]) -> Result<Pod, serde_json::Error> {
    match std::str::from_utf8(doc) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(doc),
    }
}

/// The JSON of `count` workload pods of `shape`.
fn docs(shape: PodShape, seed: u64, count: usize) -> Result<Vec<Vec<u8>>, serde_json::Error> {
    workload::shaped_pods(shape, seed, count, NAMESPACES)
        .iter()
        .map(serde_json::to_vec)
        .collect()
}

/// Decoded pods per second and MB/s for `count` workload pods of `shape` (best of three
/// passes), and the rates of decoding into a cache.
pub fn speeds(shape: PodShape, seed: u64, count: usize) -> Result<Speeds, serde_json::Error> {
    let docs = docs(shape, seed, count)?;
    let bytes: usize = docs.iter().map(Vec::len).sum();
    let (cache_pods_per_sec, cache_cross_thread_pods_per_sec) = cache_rates(&docs)?;
    let mut best = f64::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        for d in &docs {
            std::hint::black_box(decode_pod(d)?);
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok(Speeds {
        pods_per_sec: count as f64 / best,
        mb_per_sec: bytes as f64 / best / 1e6,
        cache_pods_per_sec,
        cache_cross_thread_pods_per_sec,
    })
}

/// The heap bytes of `count` decoded workload pods of `shape`, per pod; needs the counting
/// allocator.
pub fn bytes(shape: PodShape, seed: u64, count: usize) -> Result<Bytes, serde_json::Error> {
    let docs = docs(shape, seed, count)?;
    let base = alloc::current();
    let pods: Vec<Arc<Pod>> = docs
        .iter()
        .map(|d| serde_json::from_slice(d).map(Arc::new))
        .collect::<Result<_, _>>()?;
    let decoded_per_pod = (alloc::current() - base) as f64 / count as f64;
    drop(pods);
    let base = alloc::current();
    let pods: Vec<Arc<Pod>> = docs
        .iter()
        .map(|d| {
            serde_json::from_slice::<serde_json::Value>(d)
                .and_then(serde_json::from_value)
                .map(Arc::new)
        })
        .collect::<Result<_, _>>()?;
    let exact_per_pod = (alloc::current() - base) as f64 / count as f64;
    drop(pods);
    Ok(Bytes {
        decoded_per_pod,
        exact_per_pod,
    })
}

impl Speeds {
    /// The `floor-speeds ...` line the plain child prints.
    pub fn to_line(&self) -> String {
        format!(
            "floor-speeds {} {} {} {}",
            self.pods_per_sec,
            self.mb_per_sec,
            self.cache_pods_per_sec,
            self.cache_cross_thread_pods_per_sec
        )
    }

    /// Parses a `floor-speeds ...` line.
    pub fn parse(line: &str) -> Result<Self, Box<dyn std::error::Error>> {
        let f = crate::child::fields(line, "floor-speeds ", 4)?;
        Ok(Self {
            pods_per_sec: f[0].parse()?,
            mb_per_sec: f[1].parse()?,
            cache_pods_per_sec: f[2].parse()?,
            cache_cross_thread_pods_per_sec: f[3].parse()?,
        })
    }
}

impl Bytes {
    /// The `floor-bytes ...` line the counting process prints.
    pub fn to_line(&self) -> String {
        format!(
            "floor-bytes {} {}",
            self.decoded_per_pod, self.exact_per_pod
        )
    }

    /// Parses a `floor-bytes ...` line.
    pub fn parse(line: &str) -> Result<Self, Box<dyn std::error::Error>> {
        let f = crate::child::fields(line, "floor-bytes ", 2)?;
        Ok(Self {
            decoded_per_pod: f[0].parse()?,
            exact_per_pod: f[1].parse()?,
        })
    }
}

/// Decodes every doc into a map once, then five more rounds replacing each key's version:
/// pods/s with the old versions freed here, then freed on a second thread.
fn cache_rates(docs: &[Vec<u8>]) -> Result<(f64, f64), serde_json::Error> {
    const ROUNDS: usize = 5;
    let n = docs.len().max(1);
    let mut map: HashMap<usize, Arc<Pod>> = HashMap::with_capacity(n);
    for (i, d) in docs.iter().enumerate() {
        map.insert(i, Arc::new(decode_pod(d)?));
    }
    let start = Instant::now();
    for round in 0..ROUNDS {
        for (i, d) in docs.iter().enumerate() {
            map.insert((i + round * 7) % n, Arc::new(decode_pod(d)?));
        }
    }
    let same = (ROUNDS * docs.len()) as f64 / start.elapsed().as_secs_f64();

    let (tx, rx) = std::sync::mpsc::channel::<Arc<Pod>>();
    let freer = std::thread::spawn(move || rx.into_iter().for_each(drop));
    let start = Instant::now();
    for round in 0..ROUNDS {
        for (i, d) in docs.iter().enumerate() {
            let new = Arc::new(decode_pod(d)?);
            if let Some(old) = map.insert((i + round * 3) % n, new) {
                // The receiver only ends when `tx` is dropped below.
                let _ = tx.send(old);
            }
        }
    }
    drop(tx);
    let _ = freer.join();
    let cross = (ROUNDS * docs.len()) as f64 / start.elapsed().as_secs_f64();
    Ok((same, cross))
}
