//! Every class and def pysplice finds in the real SGLang corpus agrees with CPython's `ast`.
//!
//! Most of a models folder is the same from one release to the next (about 2,000 distinct
//! files among 4,400): both outlines depend on the bytes alone, so each distinct content is
//! checked once and a difference names one of its paths and how many copies it has. CPython
//! runs as a few processes side by side while the library parses on every core.

use std::collections::hash_map::{Entry, HashMap};
use std::path::PathBuf;
use std::process::Command;

use pysplice::{ParsedFile, SourceFile};

use crate::support;

/// (path, kind, line, end line, decorator line, async)
type Row = (String, String, usize, usize, Option<usize>, bool);

/// The outline pysplice finds in `bytes`, or its error.
fn ours(label: &str, bytes: Vec<u8>) -> Result<Vec<Row>, String> {
    let parsed = SourceFile::from_bytes(label, bytes)
        .and_then(ParsedFile::parse)
        .map_err(|err| err.to_string())?;
    Ok(parsed
        .definitions()
        .iter()
        .map(|d| {
            (
                d.path().to_string(),
                d.kind().as_str().to_string(),
                d.line(),
                d.end_line(),
                d.decorator_line(),
                d.is_async(),
            )
        })
        .collect())
}

/// CPython's outline of one file, from `tests/it/python/py_outline.py`'s answer; `None` where
/// CPython does not parse it.
fn theirs(answer: &serde_json::Value) -> Option<Vec<Row>> {
    let rows = answer.as_array()?;
    Some(
        rows.iter()
            .map(|d| {
                (
                    d["path"].as_str().unwrap().to_string(),
                    d["kind"].as_str().unwrap().to_string(),
                    d["line"].as_u64().unwrap() as usize,
                    d["end_line"].as_u64().unwrap() as usize,
                    d["decorator_line"].as_u64().map(|l| l as usize),
                    d["async"].as_bool().unwrap(),
                )
            })
            .collect(),
    )
}

/// CPython's outlines of `files`, one process per shard, run side by side.
fn cpython_outlines(files: &[PathBuf], shards: usize) -> HashMap<String, serde_json::Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/python/py_outline.py");
    let per_shard = files.len().div_ceil(shards).max(1);
    std::thread::scope(|scope| {
        let runs: Vec<_> = files
            .chunks(per_shard)
            .map(|chunk| scope.spawn(move || Command::new("python3").arg(script).args(chunk).output()))
            .collect();
        let mut all = HashMap::new();
        for run in runs {
            let output = run.join().expect("shard thread").expect("python3 runs");
            assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
            let answer: HashMap<String, serde_json::Value> =
                serde_json::from_slice(&output.stdout).expect("helper prints JSON");
            all.extend(answer);
        }
        all
    })
}

#[test]
fn outline_agrees_with_cpython_on_every_pinned_release() {
    // Each distinct content once: its paths (the first one stands for all) and its bytes.
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut copies: Vec<Vec<PathBuf>> = Vec::new();
    let mut files_checked = 0;
    for version in support::pinned_versions() {
        let files = support::python_files(&support::models_dir(&version));
        assert!(!files.is_empty(), "no model files for {version}");
        for file in files {
            let bytes = std::fs::read(&file).unwrap();
            files_checked += 1;
            match index.entry(bytes) {
                Entry::Occupied(slot) => copies[*slot.get()].push(file),
                Entry::Vacant(slot) => {
                    slot.insert(copies.len());
                    copies.push(vec![file]);
                }
            }
        }
    }
    let mut contents = vec![Vec::new(); copies.len()];
    for (bytes, i) in index {
        contents[i] = bytes;
    }
    let firsts: Vec<PathBuf> = copies.iter().map(|paths| paths[0].clone()).collect();
    let labels: Vec<String> = firsts.iter().map(|p| p.to_str().unwrap().to_string()).collect();
    assert_eq!(contents.len(), labels.len());

    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()).min(16);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (expected, got) = std::thread::scope(|scope| {
        let cpython = scope.spawn(|| cpython_outlines(&firsts, cores));
        // The library's outlines on every core, each worker taking the next file.
        let workers: Vec<_> = (0..cores)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(bytes) = contents.get(i) else { break };
                        mine.push((i, ours(&labels[i], bytes.clone())));
                    }
                    mine
                })
            })
            .collect();
        let mut got: Vec<_> = workers
            .into_iter()
            .flat_map(|worker| worker.join().expect("parse worker"))
            .collect();
        got.sort_by_key(|(i, _)| *i);
        let got: Vec<_> = got.into_iter().map(|(_, outline)| outline).collect();
        (cpython.join().expect("CPython runs"), got)
    });

    let mut definitions_checked = 0;
    let mut mismatches = Vec::new();
    for ((label, got), paths) in labels.iter().zip(got).zip(&copies) {
        let key = match paths.len() {
            1 => label.clone(),
            n => format!("{label} (and {} identical copies)", n - 1),
        };
        let want = expected.get(label).expect("CPython answers every file");
        match (got, theirs(want)) {
            (Ok(got), Some(want)) => {
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
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} distinct files ({files_checked} in all) differ from CPython:\n{}",
        mismatches.len(),
        copies.len(),
        mismatches.join("\n")
    );
    assert!(
        definitions_checked > 10_000,
        "only {definitions_checked} definitions checked"
    );
    eprintln!(
        "{files_checked} files ({} distinct), {definitions_checked} definitions agree with CPython",
        copies.len()
    );
}
