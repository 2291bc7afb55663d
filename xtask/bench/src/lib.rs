//! The parts shared by the bench's programs: `kcache-bench` (the parent, the fake server and the
//! timed clients, all with the plain allocator) and `kcache-bench-counted` (the same clients
//! with a counting allocator, for heap bytes). See `main.rs` for what is measured and how.

pub mod alloc;
pub mod child;
pub mod cli;
pub mod clients;
pub mod floor;
pub mod plot;
pub mod procfs;
pub mod server;
pub mod setup;
pub mod soak;
pub mod soak_client;
pub mod soak_serve;
