//! A models folder whose files or sub-folders are swapped for links to a twin outside it, at
//! each step of a run (after the walk, after the scan): the outside file is never read into a
//! patch, never written, and the error names the file. A file changed in place after the scan is
//! refused too: the selection was made from another text.

#![cfg(unix)]

use std::path::{Path, PathBuf};

use super::{faults, patch, Mode};
use pysplice::ErrorKind;

/// What the outside twins hold besides the stand-in's text: a patch made of them would carry it.
const OUTSIDE: &str = "\nOUTSIDE_THE_TREE = 1\n";

/// The stand-in models folder (`crates/pysplice-sglang/tests/python/runtime/families`), as `<dir>/t/sglang/srt/models`, with
/// `llama.py` moved into `sub` when `in_sub`; and its twin `<dir>/outside` (the same files, each
/// with [`OUTSIDE`] added). Gives the models folder and the twin.
fn folders(dir: &Path, in_sub: bool) -> (PathBuf, PathBuf) {
    let source = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/runtime/families"));
    let (tree, outside) = (dir.join("t"), dir.join("outside"));
    for file in pysplice_test_support::python_files(source) {
        let mut rel = file.strip_prefix(source).unwrap().to_path_buf();
        let text = std::fs::read_to_string(&file).unwrap();
        let models = Path::new("sglang/srt/models");
        if in_sub && rel == models.join("llama.py") {
            rel = models.join("sub/llama.py");
        }
        for (root, text) in [(&tree, text.clone()), (&outside, text + OUTSIDE)] {
            let to = root.join(&rel);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::write(to, text).unwrap();
        }
    }
    (tree.join("sglang/srt/models"), outside.join("sglang/srt/models"))
}

/// Every file below `root` with its bytes (links not followed).
fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = pysplice_test_support::python_files(root)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    out.sort();
    out
}

/// Runs `patch` on every architecture of a fresh pair of folders with `swap` (given the models
/// folder and its twin) run at the hook `at`; checks that the outside twin is untouched and
/// that no patch holds its text. Gives the error and the models folder.
fn swapped(in_sub: bool, at: faults::At, swap: fn(&Path, &Path)) -> (pysplice::Error, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (models, outside) = folders(dir.path(), in_sub);
    let before = snapshot(&outside);
    let recipe = crate::recipes::models_recipe().unwrap();
    // Without a swap every architecture patches, llama.py included.
    let (_, patches) = patch(&recipe, &models, None, Mode::Apply).unwrap();
    assert!(patches.iter().any(|p| p.relative.ends_with("llama.py")));
    let (m, o) = (models.clone(), outside.clone());
    at.with(|hook| *hook.borrow_mut() = Some(Box::new(move || swap(&m, &o))));
    let result = patch(&recipe, &models, None, Mode::Apply);
    at.with(|hook| *hook.borrow_mut() = None);
    if let Ok((_, patches)) = &result {
        let leaked: Vec<&str> = patches
            .iter()
            .filter(|p| p.patched.output().contains(OUTSIDE.trim()))
            .map(|p| p.relative.as_str())
            .collect();
        panic!("the swap went unnoticed; outside text patched in: {leaked:?}");
    }
    assert_eq!(snapshot(&outside), before, "the outside folder changed");
    (result.unwrap_err(), models)
}

fn file_for_link(models: &Path, outside: &Path) {
    std::fs::rename(models.join("llama.py"), models.join("llama.py.away")).unwrap();
    std::os::unix::fs::symlink(outside.join("llama.py"), models.join("llama.py")).unwrap();
}

fn folder_for_link(models: &Path, outside: &Path) {
    std::fs::rename(models.join("sub"), models.join(".sub.away")).unwrap();
    std::os::unix::fs::symlink(outside.join("sub"), models.join("sub")).unwrap();
}

#[test]
fn a_model_file_swapped_for_a_link_is_never_read() {
    for at in [&faults::AFTER_WALK, &faults::AFTER_SCAN] {
        let (err, models) = swapped(false, at, file_for_link);
        assert!(matches!(err.kind(), ErrorKind::FileReplaced), "{err}");
        assert_eq!(err.location().file, models.join("llama.py").display().to_string());
    }
}

#[test]
fn a_models_sub_folder_swapped_for_a_link_is_never_read() {
    for at in [&faults::AFTER_WALK, &faults::AFTER_SCAN] {
        let (err, models) = swapped(true, at, folder_for_link);
        assert!(matches!(err.kind(), ErrorKind::FolderReplaced { .. }), "{err}");
        assert_eq!(err.location().file, models.join("sub/llama.py").display().to_string());
    }
}

#[test]
fn a_model_file_that_is_a_link_is_an_error_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let (models, outside) = folders(dir.path(), false);
    let before = snapshot(&outside);
    // There before the run: the walk notes it, nothing reads through it.
    file_for_link(&models, &outside);
    let Err(err) = patch(&crate::recipes::models_recipe().unwrap(), &models, None, Mode::Apply) else {
        panic!("the link was followed");
    };
    assert!(matches!(err.kind(), ErrorKind::NotRegular { .. }), "{err}");
    assert_eq!(err.location().file, models.join("llama.py").display().to_string());
    assert_eq!((err.location().line, err.location().column), (1, 1));
    assert_eq!(snapshot(&outside), before, "the outside folder changed");
}

#[test]
fn a_model_file_changed_in_place_after_the_scan_is_refused() {
    // The same file (same inode), another text than the selection was made from.
    let (err, models) = swapped(false, &faults::AFTER_SCAN, |models, _| {
        let file = models.join("llama.py");
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text + "\nCHANGED = 1\n").unwrap();
    });
    assert!(matches!(err.kind(), ErrorKind::Changed), "{err}");
    assert_eq!(err.location().file, models.join("llama.py").display().to_string());
}
