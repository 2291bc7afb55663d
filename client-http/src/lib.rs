//! A hyper + rustls implementation of `ListerWatcher` for real Kubernetes API servers.
//!
//! This crate sits above `kcache-store` and `kcache-reflector`; nothing else in the workspace
//! depends on it. It is not built yet: it exports nothing until the client-http issue lands.
