//! The library's benchmarks live under `benches/`; this crate has no code of its own.
//! Run one with `cargo bench -p pysplice-bench --bench NAME` (the corpus fetched first:
//! `bash scripts/fetch-corpus.sh`).
