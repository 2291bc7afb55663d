//! `ListerWatcher` and the `Reflector` that keeps a store in step with the API server.
//!
//! This crate sits above `kcache-store` and below `kcache-informer`. It is not built yet: it
//! exports nothing until the reflector issue lands.
