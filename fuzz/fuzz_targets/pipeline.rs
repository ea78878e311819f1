//! cargo-fuzz target `pipeline`: see `fuzz/README.md`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pysplice_fuzz::pipeline(data));
