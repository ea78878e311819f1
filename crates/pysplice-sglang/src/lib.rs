//! What pysplice knows about SGLang, kept out of the generic library, and the programs built on
//! it: the bundled hidden-state dump recipes and their names ([`recipes`]), the server flags of
//! every SGLang release ([`launch`]), an SGLang install's model file and release, found on disk
//! or by asking an interpreter ([`install`]), the dump for every architecture with EAGLE-3 aux
//! capture ([`models`]), hook summaries naming the classes a file was patched in ([`summary`]),
//! and the commands `sglang-hs-dump`, `sglang-hs-send` and `sglang-hs-inspect` ([`programs`]).
#![deny(missing_docs)]

pub mod install;
pub mod launch;
pub mod models;
pub mod programs;
pub mod recipes;
pub mod summary;
