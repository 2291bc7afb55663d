//! Fuzzes the kubeconfig parser and context resolution (without reading files). It must never
//! panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = kcache_client_http::fuzz_kubeconfig(data);
});
