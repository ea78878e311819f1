//! Stale snapshot files fail the suite: every file in `snapshots/` is a family's table of
//! releases (`<family>@releases.snap`) or a distinct result that table names
//! (`<family>@<release>.snap`, see `snapshot_groups`). A snapshot no table names any more, a
//! leftover `.snap.new` or any other file is flagged by name; a named result with no file too.

use std::path::Path;

use crate::snapshot_groups::{names_in_table, DIR, FAMILIES};

/// The snapshot names the tables in `dir` name (each family's table included).
fn known(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for family in FAMILIES {
        let table = std::fs::read_to_string(dir.join(format!("{family}@releases.snap"))).unwrap_or_default();
        out.extend(names_in_table(family, &table));
    }
    out
}

/// The files of `dir` that are not `<known>.snap`, sorted; and the known names with no file.
fn stale(dir: &Path) -> (Vec<String>, Vec<String>) {
    let known = known(dir);
    let extra = pysplice_test_support::unknown_snapshot_files(dir, &known);
    let missing = known
        .into_iter()
        .filter(|name| !dir.join(format!("{name}.snap")).is_file())
        .collect();
    (extra, missing)
}

#[test]
fn no_snapshot_file_is_stale() {
    let (extra, missing) = stale(Path::new(DIR));
    assert_eq!(extra, Vec::<String>::new(), "files in {DIR} no test takes");
    assert_eq!(
        missing,
        Vec::<String>::new(),
        "snapshots named in a table with no file in {DIR}"
    );
}

#[test]
fn stray_and_leftover_files_are_flagged() {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(DIR).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
    }
    assert_eq!(stale(dir.path()), (vec![], vec![]), "the copy of {DIR}");
    let table = std::fs::read_to_string(dir.path().join("sglang_hs_dump@releases.snap")).unwrap();
    let first = names_in_table("sglang_hs_dump", &table)[1].clone();
    for file in [
        "sglang_hs_dump@0.0.1.snap".to_string(),
        "reach_gone@0.5.9.snap".to_string(),
        format!("{first}.snap.new"),
        "notes.txt".to_string(),
    ] {
        std::fs::write(dir.path().join(file), "").unwrap();
    }
    std::fs::remove_file(dir.path().join(format!("{first}.snap"))).unwrap();
    let mut stray = vec![
        "notes.txt".to_string(),
        "reach_gone@0.5.9.snap".to_string(),
        format!("{first}.snap.new"),
        "sglang_hs_dump@0.0.1.snap".to_string(),
    ];
    stray.sort();
    assert_eq!(stale(dir.path()), (stray, vec![first]));
}
