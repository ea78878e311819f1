//! The bundled `sglang-hs-dump` recipe on every pinned SGLang release: a snapshot of what it does
//! to `deepseek_v2.py` (per-hook status and location, the changed lines), the invariants (CPython
//! compiles the output, applying twice equals once, revert gives back the original bytes), an
//! independent check of the patched file with Python's `ast` (`tests/py_check_hs_dump.py`), and
//! the `sglang_hs_dump` example binary end to end.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use pysplice::{HookOutcome, ParsedFile, Patched, Recipe, SourceFile, Status};
use similar::{DiffTag, TextDiff};

const FILE: &str = pysplice::recipes::SGLANG_HS_DUMP_FILE;
const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

fn recipe() -> Recipe {
    Recipe::from_toml("recipes/sglang_hs_dump.toml", pysplice::recipes::SGLANG_HS_DUMP).expect("the recipe parses")
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
    for version in common::pinned_versions() {
        let patched = patch(&recipe, FILE, &original(&version));
        let summary = summary(&version, &patched);
        insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!(format!("sglang_hs_dump@{version}"), summary);
        });
    }
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

/// Runs `tests/py_check_hs_dump.py` on `(patched, original)` pairs; the verdicts by file.
fn py_check(pairs: &[(PathBuf, Option<PathBuf>)]) -> (bool, Vec<serde_json::Value>) {
    let args: Vec<String> = pairs
        .iter()
        .map(|(patched, original)| match original {
            Some(o) => format!("{}::{}", patched.display(), o.display()),
            None => patched.display().to_string(),
        })
        .collect();
    let output = Command::new("python3")
        .arg(Path::new(MANIFEST).join("tests/py_check_hs_dump.py"))
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
    let no_exclusion =
        pysplice::recipes::SGLANG_HS_DUMP.replace("unless-inside = \"if not self.pp_group.is_last_rank: $$$\"", "");
    assert_ne!(no_exclusion, pysplice::recipes::SGLANG_HS_DUMP);
    let no_exclusion = Recipe::from_toml("variant.toml", &no_exclusion).unwrap();
    cases.push((
        "proxy return wrapped",
        patch(&no_exclusion, FILE, &input).output().to_string(),
        &["returns"],
    ));

    // Capture placed at the start of __init__, before `self.capture_aux_hidden_states = False`.
    let early = pysplice::recipes::SGLANG_HS_DUMP.replacen(
        "in = \"DeepseekV2ForCausalLM.__init__\"\nat = \"end\"",
        "in = \"DeepseekV2ForCausalLM.__init__\"\nat = \"start\"",
        1,
    );
    assert_ne!(early, pysplice::recipes::SGLANG_HS_DUMP);
    let early = Recipe::from_toml("variant.toml", &early).unwrap();
    cases.push((
        "capture too early",
        patch(&early, FILE, &input).output().to_string(),
        &["capture"],
    ));

    // The init block at the start of DeepseekV2Model.__init__.
    let init_first = pysplice::recipes::SGLANG_HS_DUMP.replacen(
        "in = \"DeepseekV2Model.__init__\"\nat = \"end\"",
        "in = \"DeepseekV2Model.__init__\"\nat = \"start\"",
        1,
    );
    assert_ne!(init_first, pysplice::recipes::SGLANG_HS_DUMP);
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
        ("mock.py", "tests/runtime/mock_deepseek_v2.py"),
        ("demo.py", "examples/data/demo_model.py"),
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

/// `scripts/specforge_loss_mask.py` (SpecForge's loss mask for dumped samples) through its own
/// Python tests, on a small byte-level BPE tokenizer and real `transformers` chat-template output.
/// Needs the `transformers` package (`.ci/run` installs it); PyTorch is optional.
#[test]
fn loss_mask_script_python_tests() {
    let output = Command::new("python3")
        .arg(Path::new(MANIFEST).join("tests/py_loss_mask_test.py"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs");
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{}{stderr}", text(&output.stdout));
    assert!(stderr.contains("\nOK"), "{stderr}");
    for name in [
        "test_chatml_multi_turn",
        "test_deepseek_shape_with_bos_in_the_text",
        "test_ids_that_do_not_match_leave_the_file_untouched",
        "test_partial_samples_only_on_request",
    ] {
        assert!(stderr.contains(&format!("{name} ")), "{name} did not run: {stderr}");
        assert!(
            !stderr.contains(&format!("{name} (__main__.LossMaskTest.{name}) ... skipped")),
            "{name} skipped"
        );
    }
}

/// `tests/runtime/run_hs_dump_test.py` on the mock patched by the engine. It needs PyTorch, which
/// CI does not have: run it with `cargo test --test sglang_recipe -- --ignored` where PyTorch is
/// installed, or `tests/runtime/run_on_device.sh` on a GPU machine.
#[test]
#[ignore = "needs PyTorch"]
fn runtime_test_on_the_engine_patched_mock() {
    let dir = scratch("runtime");
    let mock = std::fs::read_to_string(Path::new(MANIFEST).join("tests/runtime/mock_deepseek_v2.py")).unwrap();
    let patched = dir.join("mock_deepseek_v2_patched.py");
    write(&patched, patch(&recipe(), "mock_deepseek_v2.py", &mock).output());
    let output = Command::new("python3")
        .arg(Path::new(MANIFEST).join("tests/runtime/run_hs_dump_test.py"))
        .arg(&patched)
        .env("HS_TEST_DEVICE", "cpu")
        .output()
        .unwrap();
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", text(&output.stderr));
    assert!(stdout.trim_end().ends_with(" passed, 0 failed"), "{stdout}");
}

// ------------------------------------------------------------------------------------------------
// The example binary

/// The example binary, built once per test process.
fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::example_binary("sglang_hs_dump"))
}

fn run(args: &[&str]) -> Output {
    Command::new(binary()).args(args).output().expect("the binary runs")
}

#[track_caller]
fn code(output: &Output) -> i32 {
    output.status.code().expect("exited")
}

/// An SGLang package folder holding `version`'s deepseek_v2.py and a `_version.py` as the wheels
/// of 0.5.9+ have it (with `version.py` reading it, as there).
fn sglang_tree(name: &str, version: &str) -> (PathBuf, PathBuf) {
    let root = scratch(name);
    let package = root.join("sglang");
    let file = package.join("srt/models/deepseek_v2.py");
    write(&file, &original(version));
    write(&package.join("__init__.py"), "");
    write(
        &package.join("version.py"),
        "try:\n    from sglang._version import __version__\nexcept ImportError:\n    __version__ = \"0.0.0.dev0\"\n",
    );
    write(
        &package.join("_version.py"),
        &format!("__version__ = version = '{version}'\n"),
    );
    (root, file)
}

#[test]
fn cli_demo_patches_a_copy_and_shows_the_diff() {
    let output = run(&[]);
    let stdout = text(&output.stdout);
    assert_eq!(code(&output), 0, "{stdout}{}", text(&output.stderr));
    assert!(stdout.contains("bundled demo model"), "{stdout}");
    assert!(stdout.contains("\n+# >>> pysplice sglang-hs-dump/imports "), "{stdout}");
    assert!(stdout.contains("\n+def _pysplice_hs_dump(model, input_ids, batch, value):\n"));
    assert!(stdout.contains("\nSuccessfully patched "));
    for summary in [
        "  - Added hidden state dump imports (lines ",
        "  - Added _hs_dump init in DeepseekV2Model.__init__ (lines ",
        "  - Added dump logic in DeepseekV2Model.forward (lines ",
        "  - Auto-enabled aux hidden state capture in DeepseekV2ForCausalLM (lines ",
    ] {
        assert!(stdout.contains(summary), "{summary}\n{stdout}");
    }
    assert!(stdout.contains("\nTo use: set SGLANG_HS_DUMP_DIR=/dev/shm/sglang_hs before starting server\n"));
    // the copy is left for inspection; the bundled file is untouched
    let copy = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Successfully patched "))
        .unwrap();
    assert!(std::fs::read_to_string(copy).unwrap().contains("_pysplice_hs_dump"));
    let _ = std::fs::remove_dir_all(Path::new(copy).parent().unwrap());
}

#[test]
fn cli_apply_check_revert_on_a_tree_with_its_release() {
    let (root, file) = sglang_tree("cli_tree", "0.5.10");
    let before = std::fs::read(&file).unwrap();
    let root_arg = root.to_str().unwrap();

    let check = run(&["--check", root_arg]);
    assert_eq!(code(&check), 1, "{}", text(&check.stdout));
    assert!(text(&check.stdout).contains(": needs apply\n  - imports: missing\n"));

    let dry = run(&["--dry-run", root_arg]);
    assert_eq!(code(&dry), 0);
    assert!(text(&dry.stdout).starts_with("--- a/"), "{}", text(&dry.stdout));
    assert_eq!(std::fs::read(&file).unwrap(), before, "--dry-run wrote");

    let apply = run(&[root_arg]);
    let stdout = text(&apply.stdout);
    assert_eq!(code(&apply), 0, "{stdout}{}", text(&apply.stderr));
    assert!(
        stdout.starts_with(&format!("Successfully patched {}\n", file.display())),
        "{stdout}"
    );
    assert!(stdout.contains("To use: set SGLANG_HS_DUMP_DIR=/dev/shm/sglang_hs before starting server"));
    assert!(stdout.contains("Server flags for SGLang 0.5.10 (from "), "{stdout}");
    assert!(stdout.contains(
        "  --disable-cuda-graph --disable-piecewise-cuda-graph --disable-radix-cache --chunked-prefill-size -1 \
         --skip-server-warmup --disable-overlap-schedule\n"
    ));

    let again = run(&[file.to_str().unwrap()]);
    assert_eq!(code(&again), 0);
    assert!(text(&again.stdout).starts_with("Already up to date: "));
    assert!(text(&again.stdout).contains("[already applied]"));

    let check = run(&["--check", root_arg]);
    assert_eq!(code(&check), 0, "{}", text(&check.stdout));
    assert!(text(&check.stdout).contains(": up to date\n"));

    let json = run(&["--check", "--json", root_arg]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["status"], "up-to-date");
    assert_eq!(value["command"], "sglang-hs-dump");
    assert!(value["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["status"] == "applied" || h["status"] == "skipped"));
    assert_eq!(value["release"]["version"], "0.5.10");
    assert_eq!(value["launch"]["env"]["SGLANG_HS_DUMP_DIR"], "/dev/shm/sglang_hs");

    let revert = run(&["--revert", root_arg]);
    assert_eq!(code(&revert), 0);
    assert!(text(&revert.stdout).starts_with("Reverted "));
    assert_eq!(std::fs::read(&file).unwrap(), before, "revert is not exact");
    let revert = run(&["--revert", root_arg]);
    assert!(text(&revert.stdout).starts_with("Nothing to revert in "));
}

/// The flags follow the release: read from the tree, or given with --sglang-version.
#[test]
fn cli_launch_flags_per_release() {
    let flags = |version: &str| -> (Vec<String>, Vec<String>) {
        let (_, file) = sglang_tree(&format!("cli_flags_{version}"), "0.5.9");
        let output = run(&[
            "--json",
            "--dry-run",
            "--sglang-version",
            version,
            file.to_str().unwrap(),
        ]);
        assert_eq!(code(&output), 0, "{}", text(&output.stderr));
        let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(value["written"], false);
        assert_eq!(value["release"]["source"], "--sglang-version");
        let strings = |key: &str| -> Vec<String> {
            value["launch"][key]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        };
        (strings("flags"), strings("notes"))
    };
    let has = |list: &[String], flag: &str| list.iter().any(|f| f == flag);
    for version in common::pinned_versions() {
        let (f, notes) = flags(&version);
        assert!(
            has(&f, "--disable-cuda-graph") && has(&f, "--disable-radix-cache"),
            "{version}"
        );
        let piecewise = ["0.5.10", "0.5.11", "0.5.12", "0.5.13"].contains(&version.as_str());
        assert_eq!(has(&f, "--disable-piecewise-cuda-graph"), piecewise, "{version}");
        assert_eq!(has(&f, "--chunked-prefill-size"), version != "0.2.6", "{version}");
        let warmup = !["0.2.6", "0.2.15", "0.3.6", "0.4.4.post2", "0.4.6"].contains(&version.as_str());
        assert_eq!(has(&f, "--skip-server-warmup"), warmup, "{version}");
        assert_eq!(notes.iter().any(|n| n.contains("warmup request")), !warmup, "{version}");
    }
    // A release read from the tree beats nothing; an unknown one gets the generic list and a note.
    let (_, file) = sglang_tree("cli_flags_detect", "0.5.14");
    let output = run(&["--dry-run", "--json", file.to_str().unwrap()]);
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["release"]["version"], "0.5.14");
    assert!(value["release"]["source"].as_str().unwrap().ends_with("_version.py"));
    let corpus = common::models_dir("0.5.9").join("deepseek_v2.py");
    let output = run(&["--dry-run", "--json", corpus.to_str().unwrap()]);
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["release"], serde_json::Value::Null);
    assert!(value["launch"]["notes"][0]
        .as_str()
        .unwrap()
        .starts_with("SGLang release unknown"));
}

/// A virtual environment as `python3 -m venv --without-pip` makes it (a `pyvenv.cfg` beside a
/// `bin/python` link to the real interpreter), built by hand so that no `venv` module is needed:
/// its python, and its site-packages folder (created).
fn venv(root: &Path) -> (PathBuf, PathBuf) {
    let ask = |python: &Path, code: &str| -> String {
        let output = Command::new(python)
            .args(["-I", "-c", code])
            .output()
            .expect("python3 runs");
        assert!(output.status.success(), "{}", text(&output.stderr));
        text(&output.stdout).trim().to_string()
    };
    let real = PathBuf::from(ask(
        Path::new("python3"),
        "import os, sys; print(os.path.realpath(sys.executable))",
    ));
    let version = ask(&real, "import sys; print('%d.%d.%d' % sys.version_info[:3])");
    write(
        &root.join("pyvenv.cfg"),
        &format!(
            "home = {}\ninclude-system-site-packages = false\nversion = {version}\n",
            real.parent().unwrap().display()
        ),
    );
    std::fs::create_dir_all(root.join("bin")).unwrap();
    let python = root.join("bin/python");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&real, &python).unwrap();
    let site = PathBuf::from(ask(
        &python,
        "import sysconfig; print(sysconfig.get_paths()['purelib'])",
    ));
    assert!(site.starts_with(root), "{} is not inside the venv", site.display());
    std::fs::create_dir_all(&site).unwrap();
    (python, site)
}

/// `--installed` locates SGLang without importing it, in isolated mode: a `sglang/` folder in the
/// current directory decides nothing, the package's `__init__.py` never runs, and each way of not
/// finding it gets its own message.
#[test]
fn cli_installed_locates_without_importing() {
    let root = scratch("cli_installed");
    // The current directory holds a decoy package: with `python -c "import sglang"` it won.
    let cwd = root.join("cwd");
    let decoy = cwd.join("sglang/srt/models/deepseek_v2.py");
    write(&decoy, &original("0.5.23"));
    write(&cwd.join("sglang/__init__.py"), "");
    let decoy_before = std::fs::read(&decoy).unwrap();
    let marker = root.join("imported");
    let installed = |python: &Path, extra: &[&str]| -> Output {
        Command::new(binary())
            .args(["--installed", "--python", python.to_str().unwrap()])
            .args(extra)
            .current_dir(&cwd)
            .env("PYTHONPATH", &cwd)
            .output()
            .unwrap()
    };

    // A venv with SGLang whose __init__ would leave a trace (and fail) if it ran.
    let (python, site) = venv(&root.join("with"));
    let package = site.join("sglang");
    let file = package.join("srt/models/deepseek_v2.py");
    write(&file, &original("0.5.23"));
    write(
        &package.join("__init__.py"),
        &format!(
            "open({:?}, 'w').close()\nraise ImportError('numpy')\n",
            marker.display().to_string()
        ),
    );
    write(&package.join("_version.py"), "__version__ = version = '0.5.23'\n");
    let output = installed(&python, &["--check"]);
    assert_eq!(code(&output), 1, "{}{}", text(&output.stdout), text(&output.stderr));
    assert!(
        text(&output.stdout).starts_with(&format!("{}: needs apply", file.display())),
        "{}",
        text(&output.stdout)
    );
    let output = installed(&python, &[]);
    assert_eq!(code(&output), 0, "{}{}", text(&output.stdout), text(&output.stderr));
    assert!(text(&output.stdout).contains("Server flags for SGLang 0.5.23 (from "));
    assert!(std::fs::read_to_string(&file).unwrap().contains("_pysplice_hs_dump"));
    assert!(!marker.exists(), "sglang/__init__.py ran");
    assert_eq!(std::fs::read(&decoy).unwrap(), decoy_before, "the decoy was patched");

    let fails = |python: &Path, message: &str| {
        let output = installed(python, &[]);
        assert_eq!(code(&output), 2, "{}{}", text(&output.stdout), text(&output.stderr));
        assert!(output.stdout.is_empty());
        let stderr = text(&output.stderr);
        assert!(stderr.contains(message), "{message}\n{stderr}");
        assert_eq!(std::fs::read(&decoy).unwrap(), decoy_before, "the decoy was patched");
    };
    // A per-user install (`pip install --user`) of the interpreter outside a venv is found, as a
    // plain start finds it; the decoy still does not count.
    let home = root.join("home");
    let ask_home = |code: &str| -> String {
        let output = Command::new("python3")
            .args(["-I", "-c", code])
            .env("HOME", &home)
            .output()
            .unwrap();
        text(&output.stdout).trim().to_string()
    };
    if ask_home("import sys; print(sys.prefix == sys.base_prefix)") == "True" {
        let user_site = PathBuf::from(ask_home("import site; print(site.getusersitepackages())"));
        assert!(user_site.starts_with(&home), "{}", user_site.display());
        let user_file = user_site.join("sglang/srt/models/deepseek_v2.py");
        write(&user_file, &original("0.5.23"));
        write(&user_site.join("sglang/__init__.py"), "raise ImportError('numpy')\n");
        let output = Command::new(binary())
            .args(["--installed", "--check"])
            .current_dir(&cwd)
            .env("HOME", &home)
            .output()
            .unwrap();
        assert_eq!(code(&output), 1, "{}{}", text(&output.stdout), text(&output.stderr));
        assert!(
            text(&output.stdout).starts_with(&format!("{}: needs apply", user_file.display())),
            "{}{}",
            text(&output.stdout),
            text(&output.stderr)
        );
    } else {
        eprintln!("skipping the per-user install: python3 runs inside a virtual environment here");
    }

    // No SGLang at all: the decoy in the current directory and PYTHONPATH do not count.
    let (bare, _) = venv(&root.join("bare"));
    fails(&bare, &format!("no installed SGLang: `{}` (", bare.display()));
    fails(
        &bare,
        "has no package `sglang` (looked in isolated mode: the current directory and PYTHONPATH are not searched)",
    );
    // A folder without __init__.py (what an uninstall can leave).
    let (namespace, site) = venv(&root.join("namespace"));
    std::fs::create_dir_all(site.join("sglang/srt")).unwrap();
    fails(
        &namespace,
        "finds `sglang` only as a namespace package (folders without __init__.py: ",
    );
    // A module, not a package.
    let (module, site) = venv(&root.join("module"));
    write(&site.join("sglang.py"), "raise SystemExit(3)\n");
    fails(&module, "finds `sglang` as a single module (");
    // A package without the model file.
    let (partial, site) = venv(&root.join("partial"));
    write(&site.join("sglang/__init__.py"), "");
    fails(&partial, "srt/models/deepseek_v2.py: the SGLang that `");
    // No interpreter, or not a Python.
    fails(
        &root.join("no-such-python"),
        "no-such-python`: no such program; pass --python",
    );
    let not_python = root.join("not-python");
    write(&not_python, "#!/bin/sh\necho 'not a python' >&2\nexit 1\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&not_python, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    fails(
        &not_python,
        "could not look for SGLang (not a python); is it a Python 3 interpreter?",
    );
}

#[test]
fn cli_exit_codes_for_bad_input() {
    let dir = scratch("cli_bad");
    assert_eq!(code(&run(&["--check", "--revert"])), 2);
    assert_eq!(code(&run(&[dir.join("missing.py").to_str().unwrap()])), 2);
    assert_eq!(
        code(&run(&[dir.to_str().unwrap()])),
        2,
        "a folder without deepseek_v2.py"
    );
    let bad = dir.join("bad.py");
    write(&bad, "def f(:\n");
    assert_eq!(code(&run(&[bad.to_str().unwrap()])), 2);
    assert_eq!(code(&run(&["--sglang-version", "next", bad.to_str().unwrap()])), 2);
    // Valid Python without the model classes: the hooks cannot be placed, nothing is written.
    let other = dir.join("other.py");
    write(&other, "import torch\n\n\nclass Other:\n    pass\n");
    let output = run(&[other.to_str().unwrap()]);
    assert_eq!(code(&output), 1, "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("nothing was written"));
    assert_eq!(
        std::fs::read_to_string(&other).unwrap(),
        "import torch\n\n\nclass Other:\n    pass\n"
    );
}
