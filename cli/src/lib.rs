//! What pysplice's programs (`pysplice`, `sglang-hs-dump`, `sglang-hs-send`, `sglang-hs-inspect`,
//! `pysplice-lsp`) share: the versioned JSON output contract of `--json` ([`contract`]), the
//! package folder an interpreter imports ([`installed`]), standard output that a closed pipe
//! cannot crash ([`output`], with the `out!`, `outln!` and `errln!` macros), the launcher of the
//! programs written in Python ([`python_launch`]) and the allocator of the splicing programs
//! ([`program_allocator!`]). Not a library for other users: its layout is the programs' output,
//! documented by the JSON Schema under `schemas/`.
#![deny(missing_docs)]

pub mod contract;
pub mod installed;
pub mod output;
pub mod python_launch;

/// Declares mimalloc the program's allocator. A run builds and frees two syntax trees of a large
/// file, a great many small blocks, in a process that lives some tens of milliseconds: mimalloc
/// serves those faster than the system allocator (`scripts/bench-dry-run.sh` measures it). A
/// macro, not a `#[global_allocator]` here, so that each program chooses: the launchers of the
/// Python programs keep the system allocator, and the library `pysplice` leaves the allocator to
/// whoever links it.
#[macro_export]
macro_rules! program_allocator {
    () => {
        #[global_allocator]
        static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
    };
}
