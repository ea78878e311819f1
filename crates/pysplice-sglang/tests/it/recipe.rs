//! The bundled `sglang-hs-dump` recipe on every pinned SGLang release: a snapshot of what it does
//! to `deepseek_v2.py` (per-hook status and location, the changed lines), the invariants (CPython
//! compiles the output, applying twice equals once, revert gives back the original bytes), an
//! independent check of the patched file with Python's `ast` (`crates/pysplice-sglang/tests/python/check_hs_dump.py`), and
//! the `sglang_hs_dump` example binary end to end.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use pysplice::{HookOutcome, ParsedFile, Patched, Recipe, SourceFile, Status};
use similar::{DiffTag, TextDiff};

const FILE: &str = pysplice_sglang::recipes::SGLANG_HS_DUMP_FILE;
const MANIFEST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn recipe() -> Recipe {
    Recipe::from_toml("recipes/sglang_hs_dump.toml", pysplice_sglang::recipes::SGLANG_HS_DUMP)
        .expect("the recipe parses")
}

/// The unpatched `deepseek_v2.py` of `version`.
fn original(version: &str) -> String {
    let path = common::models_dir(version).join("deepseek_v2.py");
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn patch(recipe: &Recipe, name: &str, text: &str) -> Patched {
    pysplice::apply(recipe, SourceFile::new(name, text)).unwrap_or_else(|err| panic!("{name}: {err}"))
}

/// A fresh folder under the test's target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sglang_recipe").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// ------------------------------------------------------------------------------------------------
// Snapshots

/// The innermost definition of `file` whose body holds the first code line (not a comment) of
/// lines `first..=last`, or `<module>`.
fn enclosing(file: &ParsedFile, (first, last): (usize, usize)) -> String {
    let text: Vec<&str> = file.source().text().lines().collect();
    let line = (first..=last)
        .find(|&n| {
            let l = text[n - 1].trim();
            !l.is_empty() && !l.starts_with('#')
        })
        .unwrap_or(first);
    file.definitions()
        .iter()
        .filter(|d| d.line() < line && line <= d.end_line())
        .max_by_key(|d| d.line())
        .map_or_else(|| "<module>".to_string(), |d| d.path().to_string())
}

/// `a-b` for a range of 1-based lines, `a` for one line.
fn span(first: usize, last: usize) -> String {
    if first == last {
        first.to_string()
    } else {
        format!("{first}-{last}")
    }
}

fn status_cell(outcome: &HookOutcome, output: &ParsedFile) -> String {
    match (&outcome.status, outcome.lines) {
        (Status::Applied, Some(lines)) => {
            format!(
                "applied  lines {}  in {}",
                span(lines.0, lines.1),
                enclosing(output, lines)
            )
        }
        (Status::Skipped { reason }, _) => format!("skipped  {reason}"),
        (other, lines) => format!("{other:?} {lines:?}"),
    }
}

/// What the recipe did to one file, small enough to read: per hook its status and where it sits,
/// then every change: an inserted block as its line count, first line and first code line (the
/// recipe's own code); replaced lines (the wrapped `return`s) in full.
fn summary(version: &str, patched: &Patched) -> String {
    let output = ParsedFile::parse(SourceFile::new(FILE, patched.output())).expect("the output parses");
    let mut out = format!(
        "SGLang {version}, {FILE}: {} lines -> {} lines\n\nhooks\n",
        patched.input().lines().count(),
        patched.output().lines().count()
    );
    for outcome in patched.outcomes() {
        out.push_str(&format!("  {:<13}{}\n", outcome.hook, status_cell(outcome, &output)));
    }
    out.push_str("\nchanges\n");
    let diff = TextDiff::from_lines(patched.input(), patched.output());
    let (old, new) = (diff.old_slices(), diff.new_slices());
    for op in diff.ops() {
        let (tag, a, b) = op.as_tag_tuple();
        match tag {
            DiffTag::Equal => {}
            DiffTag::Insert => {
                let lines = &new[b.clone()];
                let first_code = lines
                    .iter()
                    .map(|l| l.trim())
                    .find(|l| !l.is_empty() && !l.starts_with('#'))
                    .unwrap_or("");
                out.push_str(&format!(
                    "  +{} lines after old line {} (new {}): {}\n      first code line: {first_code}\n",
                    b.len(),
                    a.start,
                    span(b.start + 1, b.end),
                    lines[0].trim(),
                ));
            }
            DiffTag::Delete | DiffTag::Replace => {
                out.push_str(&format!(
                    "  old {} -> new {}\n",
                    span(a.start + 1, a.end),
                    span(b.start + 1, b.end)
                ));
                for line in &old[a] {
                    out.push_str(&format!("    - {}\n", line.trim()));
                }
                for line in &new[b] {
                    out.push_str(&format!("    + {}\n", line.trim()));
                }
            }
        }
    }
    out
}

#[test]
fn snapshot_per_release() {
    let recipe = recipe();
    let mut results = Vec::new();
    for version in common::pinned_versions() {
        let patched = patch(&recipe, FILE, &original(&version));
        let summary = summary(&version, &patched);
        results.push((version, summary));
    }
    crate::snapshot_groups::assert_distinct("sglang_hs_dump", &results);
}

// ------------------------------------------------------------------------------------------------
// Invariants

/// Compiles every file with CPython; panics with its message when one does not compile.
fn cpython_compiles(files: &[PathBuf]) {
    let output = Command::new("python3")
        .arg("-c")
        .arg("import sys\nfor p in sys.argv[1:]:\n    compile(open(p, encoding='utf-8').read(), p, 'exec')\n")
        .args(files)
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "CPython cannot compile: {}",
        text(&output.stderr)
    );
}

#[test]
fn invariants_per_release() {
    let recipe = recipe();
    let dir = scratch("invariants");
    let mut written = Vec::new();
    for version in common::pinned_versions() {
        let input = original(&version);
        let once = patch(&recipe, FILE, &input);
        assert!(once.changed(), "{version}: nothing changed");
        let has_capture_api = input.contains("def set_eagle3_layers_to_capture");
        for outcome in once.outcomes() {
            let expect_skip = outcome.hook == "capture" && !has_capture_api;
            match &outcome.status {
                Status::Applied => assert!(!expect_skip, "{version}: capture applied without the API"),
                Status::Skipped { reason } => {
                    assert!(expect_skip, "{version}: {} skipped: {reason}", outcome.hook);
                    assert!(reason.contains("set_eagle3_layers_to_capture"), "{version}: {reason}");
                }
                other => panic!("{version}: {}: {other:?}", outcome.hook),
            }
        }

        // Applying twice equals applying once, and says so.
        let twice = patch(&recipe, FILE, once.output());
        assert!(!twice.changed(), "{version}: the second apply changed the file");
        assert_eq!(twice.output(), once.output());
        for (a, b) in once.outcomes().iter().zip(twice.outcomes()) {
            match (&a.status, &b.status) {
                (Status::Applied, Status::AlreadyApplied) => assert_eq!(a.lines, b.lines, "{version}: {}", a.hook),
                (Status::Skipped { reason: x }, Status::Skipped { reason: y }) => assert_eq!(x, y),
                (x, y) => panic!("{version}: {}: {x:?} then {y:?}", a.hook),
            }
        }

        // Revert is exact; reverting the original changes nothing.
        let reverted = pysplice::revert(&recipe, SourceFile::new(FILE, once.output())).unwrap();
        assert!(
            reverted.output() == input,
            "{version}: revert does not give back the original bytes"
        );
        assert!(reverted
            .outcomes()
            .iter()
            .all(|o| o.status == Status::Reverted || (o.hook == "capture" && !has_capture_api)));
        let nothing = pysplice::revert(&recipe, SourceFile::new(FILE, input.as_str())).unwrap();
        assert!(!nothing.changed(), "{version}: reverting the original changed it");

        let path = dir.join(&version).join("deepseek_v2.py");
        write(&path, once.output());
        written.push(path);
    }
    assert!(written.len() >= 11, "only {} pinned releases", written.len());
    cpython_compiles(&written);
}

// ------------------------------------------------------------------------------------------------
// The independent Python check

/// Runs `crates/pysplice-sglang/tests/python/check_hs_dump.py` on `(patched, original)` pairs; the verdicts by file.
fn py_check(pairs: &[(PathBuf, Option<PathBuf>)]) -> (bool, Vec<serde_json::Value>) {
    let args: Vec<String> = pairs
        .iter()
        .map(|(patched, original)| match original {
            Some(o) => format!("{}::{}", patched.display(), o.display()),
            None => patched.display().to_string(),
        })
        .collect();
    let output = Command::new("python3")
        .arg(Path::new(MANIFEST).join("crates/pysplice-sglang/tests/python/check_hs_dump.py"))
        .args(&args)
        .output()
        .expect("python3 runs");
    let verdicts: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("no JSON from the check ({err}): {}", text(&output.stderr)));
    assert_eq!(verdicts.len(), pairs.len());
    assert_eq!(
        output.status.success(),
        verdicts.iter().all(|v| v["ok"] == true),
        "exit status and verdicts disagree"
    );
    (output.status.success(), verdicts)
}

/// Every error message of a verdict, with its check's name.
fn errors(verdict: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(error) = verdict["error"].as_str() {
        out.push(error.to_string());
    }
    if let Some(checks) = verdict["checks"].as_object() {
        for (name, check) in checks {
            for e in check["errors"].as_array().into_iter().flatten() {
                out.push(format!("{name}: {}", e.as_str().unwrap_or("")));
            }
        }
    }
    out
}

#[test]
fn python_ast_check_per_release() {
    let recipe = recipe();
    let dir = scratch("py_check");
    let mut pairs = Vec::new();
    let mut engine_capture = Vec::new();
    for version in common::pinned_versions() {
        let input = original(&version);
        let patched = patch(&recipe, FILE, &input);
        let (new, old) = (
            dir.join(&version).join("deepseek_v2.py"),
            dir.join(&version).join("deepseek_v2.orig.py"),
        );
        write(&new, patched.output());
        write(&old, &input);
        pairs.push((new, Some(old)));
        let capture = patched.outcomes().iter().find(|o| o.hook == "capture").unwrap();
        engine_capture.push(matches!(capture.status, Status::Applied));
    }
    let (ok, verdicts) = py_check(&pairs);
    let versions = common::pinned_versions();
    for ((version, verdict), capture_applied) in versions.iter().zip(&verdicts).zip(engine_capture) {
        assert!(verdict["ok"] == true, "{version}: {:#?}", errors(verdict));
        let checks = &verdict["checks"];
        // The check's own view of the capture hook agrees with the engine's.
        let status = checks["capture"]["status"].as_str().unwrap();
        assert_eq!(status == "placed", capture_applied, "{version}: capture {status}");
        // Pipeline releases have their proxy return left alone; every other return is wrapped.
        let proxy = checks["returns"]["proxy"].as_array().unwrap().len();
        let wrapped = checks["returns"]["wrapped"].as_array().unwrap().len();
        assert!(wrapped >= 1, "{version}");
        let pipeline = version.as_str() >= "0.5";
        assert_eq!(proxy, usize::from(pipeline), "{version}: proxy returns");
        assert_eq!(
            checks["returns"]["params"],
            serde_json::json!([
                "input_ids",
                if version.starts_with("0.2") {
                    "input_metadata"
                } else {
                    "forward_batch"
                }
            ]),
            "{version}"
        );
    }
    assert!(ok);
}

/// The check fails on files that are not (or wrongly) patched: the unpatched file, a wrapped
/// return put back by hand, a recipe without the pipeline exclusion, a capture call placed before
/// SGLang resets the flag, an init block that is not last.
#[test]
fn python_ast_check_rejects_wrong_patches() {
    let dir = scratch("py_check_negative");
    let version = "0.5.9";
    let input = original(version);
    let good = patch(&recipe(), FILE, &input);
    let mut cases: Vec<(&str, String, &[&str])> = Vec::new();
    cases.push((
        "unpatched",
        input.clone(),
        &["returns", "capture", "module_names", "init_end"],
    ));

    // One wrapped return replaced by the original statement (markers and all).
    let mut lines: Vec<String> = good.output().lines().map(str::to_string).collect();
    let at = lines
        .iter()
        .position(|l| {
            l.trim_start()
                .starts_with("return hidden_states if getattr(self, '_hs_dump_dir'")
        })
        .expect("a wrapped return");
    let indent: String = lines[at].chars().take_while(|c| c.is_whitespace()).collect();
    lines[at] = format!("{indent}return hidden_states");
    cases.push(("one return unwrapped", lines.join("\n") + "\n", &["returns"]));

    // The recipe without `unless-inside`: the proxy return of non-last pipeline ranks is wrapped too.
    let no_exclusion = pysplice_sglang::recipes::SGLANG_HS_DUMP
        .replace("unless-inside = \"if not self.pp_group.is_last_rank: $$$\"", "");
    assert_ne!(no_exclusion, pysplice_sglang::recipes::SGLANG_HS_DUMP);
    let no_exclusion = Recipe::from_toml("variant.toml", &no_exclusion).unwrap();
    cases.push((
        "proxy return wrapped",
        patch(&no_exclusion, FILE, &input).output().to_string(),
        &["returns"],
    ));

    // Capture placed at the start of __init__, before `self.capture_aux_hidden_states = False`.
    let early = pysplice_sglang::recipes::SGLANG_HS_DUMP.replacen(
        "in = \"DeepseekV2ForCausalLM.__init__\"\nat = \"end\"",
        "in = \"DeepseekV2ForCausalLM.__init__\"\nat = \"start\"",
        1,
    );
    assert_ne!(early, pysplice_sglang::recipes::SGLANG_HS_DUMP);
    let early = Recipe::from_toml("variant.toml", &early).unwrap();
    cases.push((
        "capture too early",
        patch(&early, FILE, &input).output().to_string(),
        &["capture"],
    ));

    // The init block at the start of DeepseekV2Model.__init__.
    let init_first = pysplice_sglang::recipes::SGLANG_HS_DUMP.replacen(
        "in = \"DeepseekV2Model.__init__\"\nat = \"end\"",
        "in = \"DeepseekV2Model.__init__\"\nat = \"start\"",
        1,
    );
    assert_ne!(init_first, pysplice_sglang::recipes::SGLANG_HS_DUMP);
    let init_first = Recipe::from_toml("variant.toml", &init_first).unwrap();
    cases.push((
        "init block first",
        patch(&init_first, FILE, &input).output().to_string(),
        &["init_end"],
    ));

    let pairs: Vec<(PathBuf, Option<PathBuf>)> = cases
        .iter()
        .enumerate()
        .map(|(i, (_, text, _))| {
            let path = dir.join(format!("case{i}.py"));
            write(&path, text);
            (path, None)
        })
        .collect();
    let (ok, verdicts) = py_check(&pairs);
    assert!(!ok);
    for ((name, _, failing), verdict) in cases.iter().zip(&verdicts) {
        assert!(verdict["ok"] == false, "{name}: accepted");
        for (check, value) in verdict["checks"].as_object().unwrap() {
            let should_fail = failing.contains(&check.as_str());
            assert_eq!(value["ok"] == false, should_fail, "{name}: {check}: {value:#}");
        }
    }
}

/// The mock used by the runtime test and the demo model both pass the same check once patched.
#[test]
fn mock_and_demo_pass_the_python_check() {
    let dir = scratch("mock_and_demo");
    let recipe = recipe();
    let mut pairs = Vec::new();
    for (name, source) in [
        (
            "mock.py",
            "crates/pysplice-sglang/tests/python/runtime/mock_deepseek_v2.py",
        ),
        ("demo.py", "crates/pysplice-sglang/data/demo_model.py"),
    ] {
        let input = std::fs::read_to_string(Path::new(MANIFEST).join(source)).unwrap();
        let patched = patch(&recipe, source, &input);
        assert!(
            patched.outcomes().iter().all(|o| o.status == Status::Applied),
            "{source}: {:?}",
            patched.outcomes()
        );
        let (new, old) = (dir.join(name), dir.join(format!("{name}.orig")));
        write(&new, patched.output());
        write(&old, &input);
        pairs.push((new, Some(old)));
    }
    let (ok, verdicts) = py_check(&pairs);
    assert!(ok, "{:#?}", verdicts.iter().map(errors).collect::<Vec<_>>());
}

/// `crates/pysplice-sglang/tests/python/runtime/run_hs_dump_test.py` on the mock patched by the engine. It needs PyTorch, which
/// CI does not have: run it with `cargo test -p pysplice-sglang --test it -- --ignored` where PyTorch is
/// installed, or `crates/pysplice-sglang/tests/python/runtime/run_on_device.sh` on a GPU machine.
#[test]
#[ignore = "needs PyTorch"]
fn runtime_test_on_the_engine_patched_mock() {
    let dir = scratch("runtime");
    let mock = std::fs::read_to_string(
        Path::new(MANIFEST).join("crates/pysplice-sglang/tests/python/runtime/mock_deepseek_v2.py"),
    )
    .unwrap();
    let patched = dir.join("mock_deepseek_v2_patched.py");
    write(&patched, patch(&recipe(), "mock_deepseek_v2.py", &mock).output());
    let output = Command::new("python3")
        .arg(Path::new(MANIFEST).join("crates/pysplice-sglang/tests/python/runtime/run_hs_dump_test.py"))
        .arg(&patched)
        .env("HS_TEST_DEVICE", "cpu")
        .output()
        .unwrap();
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", text(&output.stderr));
    assert!(stdout.trim_end().ends_with(" passed, 0 failed"), "{stdout}");
}
