//! What pysplice knows about SGLang, kept out of the generic library: the bundled hidden-state
//! dump recipes and their names ([`recipes`]), the server flags of every SGLang release
//! ([`launch`]), an SGLang install's model file and release, found on disk or by asking an
//! interpreter ([`install`]; the programs do the asking, this crate starts no process), and the dump
//! for every architecture with EAGLE-3 aux capture ([`models`]), and hook summaries naming the
//! classes a file was patched in ([`summary`]).
#![deny(missing_docs)]

pub mod install;
pub mod launch;
pub mod models;
pub mod recipes;
pub mod summary;
