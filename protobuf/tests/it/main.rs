//! Integration tests of `kcache-protobuf`: one binary, one module per area.
#![allow(
    clippy::unwrap_used,
    reason = "a test fails loudly on any unexpected error"
)]

mod generate;
mod golden;
mod hostile;
mod round_trip;
mod streams;
mod typed;
