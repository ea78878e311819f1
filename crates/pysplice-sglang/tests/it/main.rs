//! The SGLang recipes through the library: the hidden-state dump on every pinned release, its
//! launch flags, its markers, the package its Python comes from; and the SGLang programs end to
//! end (`sglang-hs-dump`, the launcher of `sglang-hs-inspect`), run as users run them: exit codes,
//! messages, JSON output and the files' bytes before and after.

mod common;
use pysplice_test_support::snapshot_groups;

mod launch;
mod launch_flags;
mod markers;
mod printable;
mod recipe;
mod sglang_dump;
mod sglang_hs_inspect;
mod sglang_installed_probe;
mod sglang_models_cli;
mod sglang_trips;
mod snapshots;
