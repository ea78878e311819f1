//! A folder run while another process swaps the tree's files and folders for symbolic links to
//! a folder outside it, over and over: nothing outside the tree is ever read into a patch or
//! written, and every run ends in patches inside the tree or in an error that names a file.
//!
//! In CI a few dozen runs (bounded by count, not time); `PYSPLICE_SWAP_FUZZ_SECS=600` runs it
//! for ten minutes and prints the figures.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use pysplice::batch::{Batch, Op};
use pysplice::{ErrorKind, Recipe};

const RECIPE: &str = "[recipe]\nid = \"r\"\nsummary = \"s\"\n[[hook]]\nid = \"log\"\nsummary = \"s\"\nin = \"f\"\nat = \"start\"\ncode = \"print(1)\"\n";
const ORIGINAL: &str = "def f():\n    pass\n";
/// The folders of the tree (and of its outside twin), each with `m.py` and `n.py`.
const FOLDERS: [&str; 5] = ["", "a", "a/b", "a/b/c", "d"];

/// The figures of a fuzz run.
#[derive(Debug, Default)]
struct Figures {
    runs: u64,
    swaps: u64,
    written: u64,
    refused: u64,
    outside_changed: u64,
}

/// A small xorshift: the same swaps for the same seed, no dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn build(root: &Path) {
    for folder in FOLDERS {
        std::fs::create_dir_all(root.join(folder)).unwrap();
        for name in ["m.py", "n.py"] {
            std::fs::write(root.join(folder).join(name), ORIGINAL).unwrap();
        }
    }
}

/// Every entry below `root` (files and folders, links not followed), with the bytes of each
/// file: what "unchanged" means for the outside folder.
fn snapshot(root: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path.clone());
                out.push((path, None));
            } else {
                out.push((path.clone(), Some(std::fs::read(&path).unwrap())));
            }
        }
    }
    out.sort();
    out
}

/// Swaps one entry of `tree` (a file or a folder) for a link to its twin in `outside`, then
/// puts it back; until `stop`.
fn renamer(tree: PathBuf, outside: PathBuf, seed: u64, stop: Arc<AtomicBool>, swaps: Arc<AtomicU64>) {
    let mut rng = Rng(seed | 1);
    let mut entries: Vec<String> = Vec::new();
    for folder in FOLDERS {
        if !folder.is_empty() {
            entries.push(folder.to_string());
        }
        for name in ["m.py", "n.py"] {
            entries.push(if folder.is_empty() {
                name.to_string()
            } else {
                format!("{folder}/{name}")
            });
        }
    }
    while !stop.load(Ordering::Relaxed) {
        let rel = &entries[rng.below(entries.len())];
        let at = tree.join(rel);
        let name = at.file_name().unwrap().to_string_lossy().into_owned();
        // Kept inside the tree under a name no walk takes (hidden, or not `.py`).
        let away = at.with_file_name(format!(".{name}.away"));
        if std::fs::rename(&at, &away).is_err() {
            continue;
        }
        // A writer may have renamed a file into the name meanwhile: then no link this time.
        if std::os::unix::fs::symlink(outside.join(rel), &at).is_ok() {
            swaps.fetch_add(1, Ordering::Relaxed);
        }
        for _ in 0..rng.below(50) {
            std::hint::spin_loop();
        }
        // The link, or whatever a writer renamed over it.
        let _ = std::fs::remove_file(&at);
        std::fs::rename(&away, &at).unwrap();
    }
}

/// One run of the recipe over a fresh tree under a renamer, counted in `figures`.
fn one_run(seed: u64, recipe: &Recipe, patched: &str, figures: &mut Figures) {
    let dir = tempfile::tempdir().unwrap();
    let (tree, outside) = (dir.path().join("t"), dir.path().join("outside"));
    build(&tree);
    build(&outside);
    let before = snapshot(&outside);
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let worker = {
        let (tree, outside, stop, swaps) = (tree.clone(), outside.clone(), stop.clone(), swaps.clone());
        std::thread::spawn(move || renamer(tree, outside, seed, stop, swaps))
    };
    let batch = Batch::run(recipe, std::slice::from_ref(&tree), Op::Apply);
    let result = batch.write().map(|w| w.len()).map_err(pysplice::Error::from);
    stop.store(true, Ordering::Relaxed);
    worker.join().unwrap();
    figures.runs += 1;
    figures.swaps += swaps.load(Ordering::Relaxed);
    match result {
        Ok(_) => figures.written += 1,
        Err(err) => {
            figures.refused += 1;
            assert!(!err.location().file.is_empty(), "an error names its file: {err}");
            assert!(
                matches!(
                    err.kind(),
                    ErrorKind::FileReplaced
                        | ErrorKind::FolderReplaced { .. }
                        | ErrorKind::Changed
                        | ErrorKind::NotRegular { .. }
                        | ErrorKind::NotInFolder { .. }
                        | ErrorKind::Io { .. }
                ),
                "{err}"
            );
        }
    }
    if snapshot(&outside) != before {
        figures.outside_changed += 1;
    }
    // Inside, each file holds its old text or the patched one; nothing else is left.
    for (path, bytes) in snapshot(&tree) {
        let Some(bytes) = bytes else { continue };
        let text = String::from_utf8(bytes).unwrap();
        assert!(text == ORIGINAL || text == patched, "{}: {text:?}", path.display());
        assert!(
            path.extension().is_some_and(|e| e == "py"),
            "left behind: {}",
            path.display()
        );
    }
}

#[test]
fn a_folder_run_under_a_renamer_never_writes_outside_the_tree() {
    let recipe = Recipe::from_toml("r.toml", RECIPE).unwrap();
    let patched = pysplice::apply(&recipe, pysplice::SourceFile::new("m.py", ORIGINAL))
        .unwrap()
        .output()
        .to_string();
    let seconds: Option<u64> = std::env::var("PYSPLICE_SWAP_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok());
    let start = std::time::Instant::now();
    let mut figures = Figures::default();
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    loop {
        let done = match seconds {
            Some(s) => start.elapsed().as_secs() >= s,
            None => figures.runs >= 40,
        };
        if done {
            break;
        }
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        one_run(seed, &recipe, &patched, &mut figures);
    }
    eprintln!("{figures:?}");
    assert_eq!(figures.outside_changed, 0, "{figures:?}");
    assert!(figures.swaps > 0, "the renamer swapped nothing: {figures:?}");
}
