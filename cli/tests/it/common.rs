//! Helpers shared by the tests of this binary: the programs, where the SGLang corpus lives and
//! what it holds.
#![allow(dead_code)]

pub mod lsp;

use std::path::PathBuf;

#[allow(unused_imports)]
pub use pysplice_test_support::{corpus_root, models_dir, pinned_versions, python_files, WORKSPACE};

/// The program `name` of this package (`pysplice`, `sglang-hs-dump`, `pysplice-lsp`; the
/// underscore spellings too), as cargo built it for the tests.
pub fn program(name: &str) -> PathBuf {
    PathBuf::from(match name {
        "pysplice" => env!("CARGO_BIN_EXE_pysplice"),
        "sglang-hs-dump" | "sglang_hs_dump" => env!("CARGO_BIN_EXE_sglang-hs-dump"),
        "pysplice-lsp" | "pysplice_lsp" => env!("CARGO_BIN_EXE_pysplice-lsp"),
        "sglang-hs-inspect" => env!("CARGO_BIN_EXE_sglang-hs-inspect"),
        other => panic!("no program {other}"),
    })
}
