//! The corpus-heavy SGLang tests: every architecture of every pinned release, the engine over
//! every model file, the project queries over whole packages.

mod common;
use pysplice_test_support::snapshot_groups;

mod cpython;
mod engine;
mod forwarder;
mod models;
mod project;
