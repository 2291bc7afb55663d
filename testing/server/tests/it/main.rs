//! Integration tests of kcache-testing-server: the fake API server, the fake proxy and the churn
//! driver over real HTTP on 127.0.0.1.
#![allow(clippy::unwrap_used, reason = "tests")]

mod fake_api_server;
mod fake_api_server_backlog;
mod fake_api_server_client;
mod fake_api_server_crd_schema;
mod fake_api_server_faults;
mod fake_api_server_kubectl;
mod fake_api_server_kubectl_crd_schema;
mod fake_api_server_kubectl_lifecycle;
mod fake_api_server_kubectl_protobuf;
mod fake_api_server_kubectl_schemas;
mod fake_api_server_kubectl_sharding;
mod fake_api_server_kubectl_writes;
mod fake_api_server_lifecycle;
mod fake_api_server_managed_fields;
mod fake_api_server_metadata;
mod fake_api_server_protobuf;
mod fake_api_server_python;
mod fake_api_server_schemas;
mod fake_api_server_sharding;
mod fake_api_server_writes;
mod fake_proxy;
mod workload;
