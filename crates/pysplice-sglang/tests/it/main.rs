//! The SGLang recipes through the library: the hidden-state dump on every pinned release, its
//! launch flags, its markers.

mod common;
#[path = "../snapshot_groups.rs"]
mod snapshot_groups;

mod launch;
mod markers;
mod recipe;
mod snapshots;
