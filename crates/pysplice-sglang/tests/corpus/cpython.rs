//! The independent check of the model patches with CPython's `ast`
//! (`crates/pysplice-sglang/tests/python/check_hs_models.py`, sharing no code with pysplice) on every pinned release and
//! architecture, and the proof that it fails where it must. Its own module, sorted first, so
//! that its `python3` processes, the longest of this binary, start with the binary.

use crate::common;
use crate::models::{recipe, releases, scratch, Release};

use std::path::{Path, PathBuf};
use std::process::Command;

use pysplice::Recipe;

/// Copies a release's models folder and patches it for every architecture through the library,
/// as the command does; gives (patched folder, original folder, architectures).
fn patched_folder(recipe: &Recipe, version: &str, dir: &Path) -> (PathBuf, PathBuf, Vec<String>) {
    use pysplice_sglang::models::{patch, write_all, Mode};
    let original = common::models_dir(version);
    // The package name comes from the folders: sglang/srt/models, as installed.
    let copy = dir.join(version).join("sglang/srt/models");
    std::fs::create_dir_all(&copy).unwrap();
    for file in common::python_files(&original) {
        let rel = file.strip_prefix(&original).unwrap();
        let to = copy.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&file, &to).unwrap();
    }
    let (selection, patches) = patch(recipe, &copy, None, Mode::Apply).unwrap();
    for root in &selection.roots {
        assert!(
            root.skipped.is_none() || root.class == "MindSporeForCausalLM",
            "{version}: {} skipped: {:?}",
            root.class,
            root.skipped
        );
    }
    write_all(&patches).unwrap();
    (
        copy,
        original,
        selection.names().iter().map(|s| (*s).to_string()).collect(),
    )
}

/// Runs the independent CPython check over many (patched, original, architectures) folders:
/// per job, whether every verdict is ok, and the verdicts. The jobs are cut into one run of
/// consecutive jobs per core, each a `python3` process of its own: within a run, files met in
/// several folders are parsed once (neighbouring releases share most of their model files).
fn py_check_batch(jobs: &[(PathBuf, PathBuf, Vec<String>)], scratch: &Path) -> Vec<(bool, Vec<serde_json::Value>)> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runs: Vec<_> = runs_of_equal_weight(jobs, cores, |(_, _, archs)| archs.len())
        .into_iter()
        .enumerate()
        .map(|(i, run)| {
            let list: Vec<serde_json::Value> = run
                .iter()
                .map(|(patched, original, archs)| serde_json::json!([patched, original, archs]))
                .collect();
            let manifest = scratch.join(format!("jobs-{i}.json"));
            std::fs::write(&manifest, serde_json::to_string(&list).unwrap()).unwrap();
            let child = Command::new("python3")
                .arg(Path::new(common::WORKSPACE).join("crates/pysplice-sglang/tests/python/check_hs_models.py"))
                .arg("--batch")
                .arg(&manifest)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("python3 runs");
            (run, child)
        })
        .collect();
    let mut verdicts = Vec::new();
    for (run, child) in runs {
        let output = child.wait_with_output().expect("python3 runs");
        let results: Vec<Vec<serde_json::Value>> = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
            panic!(
                "no JSON from the check ({err}): {}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
        assert_eq!(results.len(), run.len());
        let start = verdicts.len();
        for ((_, _, archs), v) in run.iter().zip(results) {
            assert_eq!(v.len(), archs.len());
            verdicts.push((v.iter().all(|v| v["ok"] == true), v));
        }
        // The exit status says whether every verdict of every job of the run is ok.
        assert_eq!(output.status.success(), verdicts[start..].iter().all(|(ok, _)| *ok));
    }
    verdicts
}

/// `items` cut into at most `count` runs of consecutive items, each of about the same total
/// weight (newer releases have more architectures, so equal lengths would not balance).
fn runs_of_equal_weight<T>(items: &[T], count: usize, weight: impl Fn(&T) -> usize) -> Vec<&[T]> {
    let total: usize = items.iter().map(&weight).sum();
    let per_run = total.div_ceil(count.max(1)).max(1);
    let mut runs = Vec::new();
    let (mut start, mut acc) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        acc += weight(item);
        if acc >= per_run && runs.len() + 1 < count {
            runs.push(&items[start..=i]);
            (start, acc) = (i + 1, 0);
        }
    }
    if start < items.len() {
        runs.push(&items[start..]);
    }
    runs
}

/// A copy of `from` (its Python files) at `to`.
fn copy_folder(from: &Path, to: &Path) {
    for file in common::python_files(from) {
        let target = to.join(file.strip_prefix(from).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&file, &target).unwrap();
    }
}

/// The patched folder of one release as `write_all` leaves it: the release's files, the
/// patched ones with their patched text.
fn write_release(version: &str, r: &Release, dir: &Path) -> PathBuf {
    let original = common::models_dir(version);
    let copy = dir.join(version).join("sglang/srt/models");
    for file in common::python_files(&original) {
        let to = copy.join(file.strip_prefix(&original).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&file, &to).unwrap();
    }
    for (file, _, patched) in &r.files {
        std::fs::write(copy.join(file), patched.output()).unwrap();
    }
    copy
}

/// How many architectures of each release the independent `ast` check takes by default.
const MAX_ARCHS_PER_RELEASE: usize = 8;

/// The independent `ast` check: for each architecture, the forward that runs for its model
/// passes the post-norm hidden states and the aux states to the dump on every non-proxy
/// return, exactly once; the model's `__init__` sets the dump up; the architecture's
/// `__init__` enables capture. Every release in one `python3` process (`--batch`).
#[test]
fn python_ast_check_per_release_and_architecture() {
    let dir = scratch("py_check");
    let mut jobs = Vec::new();
    let mut versions = Vec::new();
    for (version, r) in releases() {
        let archs: Vec<String> = r.selection.names().iter().map(|s| (*s).to_string()).collect();
        if archs.is_empty() {
            continue;
        }
        // Suite time: an even sample of each release's architectures (all with
        // PYSPLICE_CORPUS_FULL=1); every architecture is still patched and compiled by
        // `models::every_architecture_with_capture_on_every_pinned_release`.
        let archs = common::evenly(archs, MAX_ARCHS_PER_RELEASE);
        let patched = write_release(version, r, &dir);
        jobs.push((patched, common::models_dir(version), archs));
        versions.push(version);
    }
    let mut checked = 0;
    for (version, (_, verdicts)) in versions.iter().zip(py_check_batch(&jobs, &dir)) {
        for v in &verdicts {
            assert!(v["ok"] == true, "{version}: {v:#}");
        }
        checked += verdicts.len();
    }
    assert!(checked > 100, "only {checked} architecture checks");
}

/// The check fails where it must: an unpatched folder; a forward whose return was put back by
/// hand; a pass-through override that dumps as well as its base (the dump would run twice).
#[test]
fn python_ast_check_rejects_wrong_patches() {
    let recipe = recipe();
    let dir = scratch("py_check_negative");
    let (patched, original, _) = patched_folder(&recipe, "0.5.23", &dir);
    // The command's write leaves what the shared in-memory patch of the release holds (the
    // folder the per-release check reads is written from that).
    let (_, r) = releases().iter().find(|(v, _)| v == "0.5.23").unwrap();
    for (file, input, once) in &r.files {
        assert!(
            std::fs::read_to_string(patched.join(file)).unwrap() == once.output(),
            "{file}"
        );
        assert!(
            std::fs::read_to_string(original.join(file)).unwrap() == *input,
            "{file}"
        );
    }
    for file in common::python_files(&patched) {
        let rel = file.strip_prefix(&patched).unwrap().to_string_lossy().into_owned();
        if !r.files.iter().any(|(f, _, _)| *f == rel) {
            assert!(
                std::fs::read(&file).unwrap() == std::fs::read(original.join(&rel)).unwrap(),
                "{rel} written"
            );
        }
    }
    let archs = vec!["Qwen3MoeForCausalLM".to_string(), "TeleFLMForCausalLM".to_string()];

    // One wrapped return of Qwen2MoeModel.forward (qwen2_moe.py) put back as it was.
    let unwrapped = dir.join("unwrapped");
    copy_folder(&patched, &unwrapped);
    let file = unwrapped.join("qwen2_moe.py");
    let text = std::fs::read_to_string(&file).unwrap();
    let line = text
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with("return (hidden_states, aux_hidden_states) if")
        })
        .expect("a wrapped aux return");
    let indent = &line[..line.len() - line.trim_start().len()];
    std::fs::write(
        &file,
        text.replacen(line, &format!("{indent}return hidden_states, aux_hidden_states"), 1),
    )
    .unwrap();

    // TeleFLMModel.forward only returns super().forward(...), whose returns dump: a dump call in
    // the override as well runs twice per pass.
    let doubled = dir.join("doubled");
    copy_folder(&patched, &doubled);
    let file = doubled.join("teleflm.py");
    let text = std::fs::read_to_string(&file).unwrap();
    let twice = text.replacen(
        "        return super().forward(",
        "        _pysplice_hs_dump(self, input_ids, forward_batch, input_embeds)\n        return super().forward(",
        1,
    );
    assert_ne!(twice, text);
    std::fs::write(&file, twice).unwrap();

    // One process for the four folders: they share most of their files.
    let jobs = [
        (original.clone(), original.clone(), archs.clone()),
        (patched.clone(), original.clone(), archs.clone()),
        (unwrapped, original.clone(), archs[..1].to_vec()),
        (doubled, original.clone(), archs[1..].to_vec()),
    ];
    let results = py_check_batch(&jobs, &dir);
    assert!(!results[0].0, "the unpatched folder passes");
    assert!(results[1].0, "{:#?}", results[1].1);
    assert!(!results[2].0);
    assert!(
        results[2].1[0].to_string().contains("does not go through"),
        "{:#?}",
        results[2].1
    );
    assert!(!results[3].0);
    assert!(results[3].1[0].to_string().contains("dumps too"), "{:#?}", results[3].1);
}
