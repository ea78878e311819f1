//! The SGLang recipes through the library: the hidden-state dump on every pinned release, its
//! launch flags, its markers.

mod common;

mod launch;
mod markers;
mod recipe;
