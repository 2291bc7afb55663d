//! `Controller` and `SharedIndexInformer`: the cache and event fan-out controllers build on.
//!
//! This crate sits above `kcache-store`, `kcache-queue` and `kcache-reflector`. It is not built
//! yet: it exports nothing until the informer issue lands.
