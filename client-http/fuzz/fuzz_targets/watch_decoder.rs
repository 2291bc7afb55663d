//! Fuzzes the incremental watch decoder: arbitrary bytes in arbitrary chunk sizes, with and
//! without managedFields skipping and with small size limits. It must never panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = kcache_client_http::fuzz_watch_decoder(data);
});
