//! The SGLang recipes through the library: the hidden-state dump on every pinned release, its
//! launch flags, its markers, the package its Python comes from.

mod common;
use pysplice_test_support::snapshot_groups;

mod launch;
mod markers;
mod printable;
mod recipe;
mod snapshots;
