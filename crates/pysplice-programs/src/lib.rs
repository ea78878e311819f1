//! What pysplice's programs (`pysplice`, `pysplice-lsp` and the SGLang programs of
//! `pysplice-sglang`) share: the versioned JSON output contract of `--json` ([`contract`]), the
//! package folder an interpreter imports ([`installed`]), standard output that a closed pipe
//! cannot crash ([`output`], with the `out!`, `outln!` and `errln!` macros) and the allocator of
//! the splicing programs ([`program_allocator!`]). Knows nothing of SGLang. Not a library for
//! other users: its layout is the programs' output, documented by the JSON Schema under
//! `schemas/`.
#![deny(missing_docs)]

pub mod contract;
pub mod installed;
pub mod output;

/// The allocator crate [`program_allocator!`] names, so that a program depends on this crate
/// only.
#[doc(hidden)]
pub use mimalloc;

/// Declares mimalloc the program's allocator. A run builds and frees two syntax trees of a large
/// file, a great many small blocks, in a process that lives some tens of milliseconds: mimalloc
/// serves those faster than the system allocator (`scripts/bench-dry-run.sh` measures it). A
/// macro, not a `#[global_allocator]` here, so that each program chooses: the launchers of the
/// Python programs keep the system allocator, and the library `pysplice` leaves the allocator to
/// whoever links it. Declared in the binary itself: one linked library declaring it would impose
/// it on every program that links that library.
#[macro_export]
macro_rules! program_allocator {
    () => {
        #[global_allocator]
        static ALLOCATOR: $crate::mimalloc::MiMalloc = $crate::mimalloc::MiMalloc;
    };
}
