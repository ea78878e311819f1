//! What the workspace's test binaries share (a dev-dependency of each crate, never published):
//! where the SGLang corpus that `scripts/fetch-corpus.sh` unpacks lives, the pinned releases,
//! the Python files of a folder, recipe TOML built as text ([`recipe_text`]), the SGLang
//! crate's per-release snapshots ([`snapshot_groups`]), and the workspace's commands, built for
//! the tests of a crate whose programs are another package's binaries ([`programs`]).

use std::path::{Path, PathBuf};

pub mod programs;
pub mod recipe_text;
pub mod snapshot_groups;

/// The workspace root (this crate is `crates/pysplice-test-support`).
pub const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The SGLang corpus root: `$PYSPLICE_CORPUS` or `<workspace>/target/sglang-corpus`.
#[must_use]
pub fn corpus_root() -> PathBuf {
    std::env::var_os("PYSPLICE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(WORKSPACE).join("target/sglang-corpus"))
}

/// The pinned SGLang versions (`tests/sglang-versions.txt`), oldest first as listed.
///
/// # Panics
/// When the list is unreadable: the test cannot run without it.
#[must_use]
pub fn pinned_versions() -> Vec<String> {
    let list = std::fs::read_to_string(Path::new(WORKSPACE).join("tests/sglang-versions.txt"))
        .expect("tests/sglang-versions.txt is readable");
    list.lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

/// The unpacked `sglang/srt/models` folder of `version`.
///
/// # Panics
/// When that release is not in the corpus, saying how to fetch it.
#[must_use]
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
///
/// # Panics
/// When a folder of it is unreadable.
#[must_use]
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

/// At most `limit` of `items`, spread evenly over them in their order, so that the choice is the
/// same on every run: the stress tests' cap on how much of a corpus the default `cargo test`
/// pushes through the engine (suite time). `PYSPLICE_CORPUS_FULL=1` lifts the cap: every item.
#[must_use]
pub fn evenly<T>(items: Vec<T>, limit: usize) -> Vec<T> {
    let take = if std::env::var_os("PYSPLICE_CORPUS_FULL").is_some_and(|v| v == "1") {
        items.len()
    } else {
        items.len().min(limit)
    };
    if take == items.len() {
        return items;
    }
    let len = items.len();
    let mut wanted = (0..take).map(|k| k * len / take).peekable();
    items
        .into_iter()
        .enumerate()
        .filter_map(|(i, item)| {
            if wanted.peek() == Some(&i) {
                wanted.next();
                Some(item)
            } else {
                None
            }
        })
        .collect()
}

/// The files of the snapshot folder `dir` that are not `<name>.snap` for a name in `known`,
/// sorted: stale snapshots, leftover `.snap.new` files, anything else.
///
/// # Panics
/// When the folder is unreadable.
#[must_use]
pub fn unknown_snapshot_files(dir: &Path, known: &[String]) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .expect("the snapshot folder is readable")
        .map(|entry| {
            entry
                .expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|file| {
            !file
                .strip_suffix(".snap")
                .is_some_and(|name| known.iter().any(|k| k == name))
        })
        .collect();
    out.sort();
    out
}
