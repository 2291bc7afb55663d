//! Queues between a reflector and its consumer: `Fifo`, `DeltaFifo` and `RealFifo`.
//!
//! This crate sits above `kcache-store` and below `kcache-informer`. It is not built yet: it
//! exports nothing until the queue issue lands.
