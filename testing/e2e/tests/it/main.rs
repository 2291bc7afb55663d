//! The full-stack tests: informers over client-http against the fake API server and the
//! scripted server, over real HTTP on 127.0.0.1.
#![allow(clippy::unwrap_used, reason = "tests")]

mod backlog;
mod chaos;
// Sharded replicas killed, restarted and cut off from their Leases under the chaos faults.
mod chaos_replicas;
mod custom_types;
// Its `on_both_backends!` serves `hostile_client_go` and `hostile_lists` too.
#[macro_use]
mod hostile;
mod hostile_client_go;
// Servers allowing few HTTP/2 streams per connection.
mod hostile_h2;
mod hostile_lists;
mod hostile_protobuf;
mod hostile_support;
mod informer;
mod leader;
mod metadata;
mod operator;
mod own_thread;
// The work of one shard, shared by the sharded-replica tests.
mod shard_work;
// Sharded caches over HTTP: replicas caching only their shards.
mod sharded;
mod support;
