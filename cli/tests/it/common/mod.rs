//! Helpers shared by the tests of this binary: where the SGLang corpus lives and what it holds.
#![allow(dead_code)]

pub mod lsp;

use std::path::{Path, PathBuf};

/// The workspace root (this crate is `cli`).
pub const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// The corpus root: `$PYSPLICE_CORPUS` or `<workspace>/target/sglang-corpus`.
pub fn corpus_root() -> PathBuf {
    std::env::var_os("PYSPLICE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(WORKSPACE).join("target/sglang-corpus"))
}

/// The pinned SGLang versions, oldest first as listed.
pub fn pinned_versions() -> Vec<String> {
    let list = std::fs::read_to_string(Path::new(WORKSPACE).join("tests/sglang-versions.txt"))
        .expect("tests/sglang-versions.txt is readable");
    list.lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

/// The unpacked `sglang/srt/models` folder of `version`; fails the test, saying how to fetch
/// the corpus, when it is absent.
pub fn models_dir(version: &str) -> PathBuf {
    let root = corpus_root().join(version);
    assert!(
        root.join(".complete").exists(),
        "the SGLang corpus for {version} is missing at {}: run `bash scripts/fetch-corpus.sh` first",
        root.display()
    );
    root.join("sglang/srt/models")
}

/// Every `.py` file under `dir`, recursively, sorted.
pub fn python_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("corpus folder is readable") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "py") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The program `name` of this package (`pysplice`, `sglang-hs-dump`, `pysplice-lsp`; the
/// underscore spellings too), as cargo built it for the tests.
pub fn program(name: &str) -> PathBuf {
    PathBuf::from(match name {
        "pysplice" => env!("CARGO_BIN_EXE_pysplice"),
        "sglang-hs-dump" | "sglang_hs_dump" => env!("CARGO_BIN_EXE_sglang-hs-dump"),
        "pysplice-lsp" | "pysplice_lsp" => env!("CARGO_BIN_EXE_pysplice-lsp"),
        other => panic!("no program {other}"),
    })
}
