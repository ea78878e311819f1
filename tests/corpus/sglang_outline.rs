//! Every class and def pysplice finds in the real SGLang corpus agrees with CPython's `ast`.

use std::process::Command;

use pysplice::{ParsedFile, SourceFile};

use crate::support as common;

/// (path, kind, line, end line, decorator line, async)
type Row<'a> = (String, &'a str, usize, usize, Option<usize>, bool);

#[test]
fn outline_agrees_with_cpython_on_every_pinned_release() {
    let mut files_checked = 0;
    let mut definitions_checked = 0;
    let mut mismatches = Vec::new();
    for version in common::pinned_versions() {
        let files = common::python_files(&common::models_dir(&version));
        assert!(!files.is_empty(), "no model files for {version}");
        let output = Command::new("python3")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/python/py_outline.py"))
            .args(&files)
            .output()
            .expect("python3 runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let expected: serde_json::Value = serde_json::from_slice(&output.stdout).expect("helper prints JSON");
        for file in &files {
            let key = file.to_str().unwrap();
            let bytes = std::fs::read(file).unwrap();
            let want = &expected[key];
            let got = SourceFile::from_bytes(key, bytes).and_then(ParsedFile::parse);
            match (got, want.as_array()) {
                (Ok(parsed), Some(want)) => {
                    let got: Vec<Row> = parsed
                        .definitions()
                        .iter()
                        .map(|d| {
                            (
                                d.path().to_string(),
                                d.kind().as_str(),
                                d.line(),
                                d.end_line(),
                                d.decorator_line(),
                                d.is_async(),
                            )
                        })
                        .collect();
                    let want: Vec<Row> = want
                        .iter()
                        .map(|d| {
                            (
                                d["path"].as_str().unwrap().to_string(),
                                d["kind"].as_str().unwrap(),
                                d["line"].as_u64().unwrap() as usize,
                                d["end_line"].as_u64().unwrap() as usize,
                                d["decorator_line"].as_u64().map(|l| l as usize),
                                d["async"].as_bool().unwrap(),
                            )
                        })
                        .collect();
                    definitions_checked += want.len();
                    if got != want {
                        let first = got.iter().zip(&want).find(|(g, w)| g != w);
                        mismatches.push(format!(
                            "{key}: {} vs {} definitions; first difference: {first:?}",
                            got.len(),
                            want.len()
                        ));
                    }
                }
                (Err(err), Some(_)) => mismatches.push(format!("{key}: pysplice fails, CPython parses: {err}")),
                (Ok(_), None) => mismatches.push(format!("{key}: CPython fails ({want}), pysplice parses")),
                (Err(_), None) => {}
            }
            files_checked += 1;
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {files_checked} files differ from CPython:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert!(
        definitions_checked > 10_000,
        "only {definitions_checked} definitions checked"
    );
    eprintln!("{files_checked} files, {definitions_checked} definitions agree with CPython");
}
