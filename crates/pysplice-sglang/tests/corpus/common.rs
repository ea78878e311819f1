//! Helpers shared by the tests of this binary: where the SGLang corpus lives and what it holds.
#![allow(unused_imports)]

pub use pysplice_test_support::{corpus_root, evenly, models_dir, pinned_versions, python_files, WORKSPACE};
