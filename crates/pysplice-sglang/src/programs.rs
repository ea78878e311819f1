//! The SGLang programs, each a module with the `main` of its command: [`hs_dump`]
//! (`sglang-hs-dump`: patch SGLang's model files so that the server dumps EAGLE-3 hidden states),
//! [`hs_send`] (`sglang-hs-send`: send training conversations or harvested requests to a patched
//! server) and [`hs_inspect`] (`sglang-hs-inspect`: check a dump folder before training on it).
//! The last two are Python programs (`python/pysplice_sglang/` of this crate) built into a
//! native launcher ([`python_launch`]).
//!
//! The binaries are thin files of the `pysplice-cli` package (`cli/sglang/`), so that one wheel
//! and one `cargo install --path cli` carry every command: each calls its module's `main`, and
//! `sglang-hs-dump`'s also declares the programs' allocator there.

pub mod hs_dump;
pub mod hs_inspect;
pub mod hs_send;
pub mod python_launch;
