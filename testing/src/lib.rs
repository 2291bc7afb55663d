//! Fakes, workloads, reference models and proptest invariants for kcache.
//!
//! Users run these against their own code; kcache's own crates use them from their tests.
