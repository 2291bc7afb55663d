//! The floor: one core decoding the same pods with bare `serde_json`, and what a decoded pod
//! weighs.

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kcache_testing::workload;

use crate::alloc;
use crate::server::NAMESPACES;

/// What bare `serde_json` does with the workload's pods.
pub struct Floor {
    pub pods_per_sec: f64,
    pub mb_per_sec: f64,
    /// Bytes one pod holds once decoded from its JSON bytes, `Arc` included.
    pub decoded_bytes_per_pod: f64,
    /// The same when every `Vec` is decoded with its exact length known (through `Value`).
    pub exact_bytes_per_pod: f64,
}

/// Decoded pods per second and MB/s for `count` workload pods (best of three passes), and the
/// memory of the decoded pods.
pub fn decode_floor(seed: u64, count: usize) -> Result<Floor, serde_json::Error> {
    let docs: Vec<Vec<u8>> = workload::pods(seed, count, NAMESPACES)
        .iter()
        .map(serde_json::to_vec)
        .collect::<Result<_, _>>()?;
    let bytes: usize = docs.iter().map(Vec::len).sum();

    alloc::set_counting(true);
    let base = alloc::current();
    let pods: Vec<Arc<Pod>> = docs
        .iter()
        .map(|d| serde_json::from_slice(d).map(Arc::new))
        .collect::<Result<_, _>>()?;
    let decoded_bytes_per_pod = (alloc::current() - base) as f64 / count as f64;
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
    let exact_bytes_per_pod = (alloc::current() - base) as f64 / count as f64;
    drop(pods);
    alloc::set_counting(false);

    let mut best = f64::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        for d in &docs {
            std::hint::black_box(serde_json::from_slice::<Pod>(d)?);
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok(Floor {
        pods_per_sec: count as f64 / best,
        mb_per_sec: bytes as f64 / best / 1e6,
        decoded_bytes_per_pod,
        exact_bytes_per_pod,
    })
}
