//! cargo-fuzz target `structured`: see `fuzz/README.md`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pysplice_fuzz::structured(data));
