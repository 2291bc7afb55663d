//! Integration tests of `kcache-queue`: one binary, one module per area.
#![allow(
    clippy::unwrap_used,
    reason = "a test fails loudly on any unexpected error"
)]

mod concurrency;
mod delta_fifo;
mod fifo;
mod metrics;
mod model;
mod real_fifo;
mod send_sync;
mod support;
mod work_queue;
