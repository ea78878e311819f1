//! cargo-fuzz target `document`: see `fuzz/README.md`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pysplice_fuzz::document(data));
