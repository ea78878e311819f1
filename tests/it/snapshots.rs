//! Stale snapshot files fail the suite: every file in `snapshots/` is one a test of this binary
//! takes (`<name>.snap`); the other crates keep theirs in their own folders. A snapshot no test
//! takes any more, or a leftover `.snap.new`, is flagged by name.

use std::path::Path;

/// Every snapshot name the tests of this binary take.
fn library_snapshots() -> Vec<String> {
    let mut names = crate::engine::snapshot_names();
    names.push(crate::public_api::SNAPSHOT.to_string());
    names
}

/// The files of `dir` that are not `<known>.snap`, sorted.
fn stale(dir: &Path, known: &[String]) -> Vec<String> {
    pysplice_test_support::unknown_snapshot_files(dir, known)
}

#[test]
fn no_snapshot_file_is_stale() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots");
    let known = library_snapshots();
    assert_eq!(
        stale(&dir, &known),
        Vec::<String>::new(),
        "files in {} no test takes",
        dir.display()
    );
    for name in &known {
        assert!(
            dir.join(format!("{name}.snap")).is_file(),
            "no snapshot file for {name}"
        );
    }
}

#[test]
fn stray_and_leftover_files_are_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let known = library_snapshots();
    for file in [
        format!("{}.snap", known[0]),
        "sglang_models@0.5.9.snap".to_string(),
        "engine_gone.snap".to_string(),
        format!("{}.snap.new", known[1]),
        "notes.txt".to_string(),
        "sglang_models@0.5.9.snap.new".to_string(),
    ] {
        std::fs::write(dir.path().join(file), "").unwrap();
    }
    assert_eq!(
        stale(dir.path(), &known),
        [
            "engine_gone.snap".to_string(),
            format!("{}.snap.new", known[1]),
            "notes.txt".to_string(),
            "sglang_models@0.5.9.snap".to_string(),
            "sglang_models@0.5.9.snap.new".to_string(),
        ]
    );
}
