//! Paths the tests share.

use std::path::{Path, PathBuf};

/// The SGLang corpus root: `$PYSPLICE_CORPUS` or `target/sglang-corpus`.
pub(crate) fn sglang_corpus_root() -> PathBuf {
    std::env::var_os("PYSPLICE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sglang-corpus"))
}
