//! Helpers shared by the tests of this binary: where the SGLang corpus lives and what it holds,
//! and the commands (the SGLang programs' binaries are `pysplice-cli`'s: [`program`] builds them).
#![allow(unused_imports)]

pub use pysplice_test_support::programs::program;
pub use pysplice_test_support::{corpus_root, models_dir, pinned_versions, python_files, WORKSPACE};
