//! Folder runs of `pysplice apply`, `check` and `revert`, on a whole package from PyPI (the
//! transformers wheel pinned in `tests/py-packages.txt`, fetched by `scripts/fetch-corpus.sh`):
//! which files change, the exit codes, the bytes of every file of the tree before and after,
//! `--installed` in a virtual environment, and bad input anywhere in the tree.
#![cfg(unix)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;

/// The pinned package, from `tests/py-packages.txt`.
fn pinned(name: &str) -> String {
    let list = fs::read_to_string(Path::new(common::WORKSPACE).join("tests/py-packages.txt")).expect("readable");
    list.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .find_map(|l| l.strip_prefix(&format!("{name}==")).map(str::to_string))
        .unwrap_or_else(|| panic!("{name} is not pinned in tests/py-packages.txt"))
}

/// The unpacked `.py` files of the pinned transformers (its `transformers/` folder).
fn transformers_source() -> PathBuf {
    let root = std::env::var_os("PYSPLICE_PY_PACKAGES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(common::WORKSPACE).join("target/py-packages"))
        .join(format!("transformers-{}", pinned("transformers")));
    assert!(
        root.join(".complete").exists(),
        "{} is missing: run `bash scripts/fetch-corpus.sh` first",
        root.display()
    );
    root.join("transformers")
}

/// The pinned transformers wheel.
fn transformers_wheel() -> PathBuf {
    let wheels = std::env::var_os("PYSPLICE_PY_WHEELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(common::WORKSPACE).join("target/py-wheels"));
    let wheel = wheels.join(format!("transformers-{}-py3-none-any.whl", pinned("transformers")));
    assert!(
        wheel.exists(),
        "{} is missing: run `bash scripts/fetch-corpus.sh` first",
        wheel.display()
    );
    wheel
}

/// A recipe for Llama as a user writes it from the README: imports, a dump after the final
/// norm of `LlamaModel.forward`, a flag at the end of `LlamaForCausalLM.__init__`.
const RECIPE: &str = r#"
[recipe]
id = "record-hidden"
summary = "Record Llama hidden states"
notes = ["Set RECORD_DIR to turn recording on.", "Restart the process after patching."]

[[hook]]
id = "imports"
summary = "Imported os"
ensure-imports = ["os"]

[[hook]]
id = "record"
summary = "Recorded the post-norm hidden states"
in = "LlamaModel.forward"
at = { after = "hidden_states = self.norm(hidden_states)" }
code = "if os.environ.get('RECORD_DIR'):\n    self._recorded = hidden_states.detach()"

[[hook]]
id = "flag"
summary = "Flagged the model for recording"
in = "LlamaForCausalLM.__init__"
at = "end"
code = "self.recording = bool(os.environ.get('RECORD_DIR'))"
"#;

/// Every file below `dir` (links as their target path), by path relative to `dir`.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in fs::read_dir(&at).expect("listable") {
            let path = entry.expect("entry").path();
            let meta = fs::symlink_metadata(&path).expect("stat");
            let rel = path.strip_prefix(dir).expect("below").to_path_buf();
            if meta.file_type().is_symlink() {
                out.insert(
                    rel,
                    fs::read_link(&path)
                        .expect("link")
                        .into_os_string()
                        .into_encoded_bytes(),
                );
            } else if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                out.insert(rel, fs::read(&path).expect("readable"));
            } else {
                out.insert(rel, b"<special>".to_vec());
            }
        }
    }
    out
}

/// The paths whose bytes differ between two trees.
fn changed(before: &BTreeMap<PathBuf, Vec<u8>>, after: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<PathBuf> {
    let mut keys: Vec<&PathBuf> = before.keys().chain(after.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .cloned()
        .collect()
}

fn copy_tree(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs");
    assert!(status.success());
}

fn pysplice(args: &[&str]) -> Output {
    Command::new(common::program("pysplice"))
        .args(args)
        .output()
        .expect("pysplice runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn code(output: &Output) -> i32 {
    output.status.code().expect("exited")
}

/// A scratch folder with the recipe and a copy of the package.
struct Scratch {
    _dir: tempfile::TempDir,
    spec: String,
    package: PathBuf,
}

/// The whole package (`parts` empty), or those folders of it (the package's own files too).
fn scratch(parts: &[&str]) -> Scratch {
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = dir.path().join("record.toml");
    fs::write(&spec, RECIPE).unwrap();
    let package = dir.path().join("transformers");
    let source = transformers_source();
    if parts.is_empty() {
        copy_tree(&source, &package);
    } else {
        fs::create_dir(&package).unwrap();
        fs::copy(source.join("__init__.py"), package.join("__init__.py")).unwrap();
        for part in parts {
            let to = package.join(part);
            fs::create_dir_all(to.parent().unwrap()).unwrap();
            copy_tree(&source.join(part), &to);
            // The packages above it, so that module names stay those of the package.
            for above in Path::new(part).ancestors().skip(1) {
                let init = source.join(above).join("__init__.py");
                if init.exists() {
                    fs::copy(&init, package.join(above).join("__init__.py")).unwrap();
                }
            }
        }
    }
    Scratch {
        spec: spec.to_str().unwrap().to_string(),
        package,
        _dir: dir,
    }
}

/// The files of `dir` that define one of the classes (what the recipe must change, found
/// independently of pysplice: a line `class NAME(` at the left margin).
fn defining(dir: &Path, classes: &[&str]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = tree(dir)
        .into_iter()
        .filter(|(path, bytes)| {
            let text = format!("\n{}", text(bytes));
            path.extension().is_some_and(|e| e == "py")
                && classes.iter().any(|c| text.contains(&format!("\nclass {c}(")))
        })
        .map(|(path, _)| path)
        .collect();
    out.sort();
    out
}

#[test]
fn a_whole_package_changes_only_the_files_that_define_the_targets() {
    let s = scratch(&[]);
    let pkg = s.package.to_str().unwrap();
    let original = tree(&s.package);
    let expected = defining(&s.package, &["LlamaModel", "LlamaForCausalLM"]);
    assert_eq!(expected, [PathBuf::from("models/llama/modeling_llama.py")]);

    let dry = pysplice(&["apply", "--spec", &s.spec, "--dry-run", pkg]);
    assert_eq!(code(&dry), 0, "{}", text(&dry.stderr));
    assert_eq!(tree(&s.package), original, "a dry run writes nothing");
    let diff = text(&dry.stdout);
    assert_eq!(
        diff.matches("\n+++ ").count() + usize::from(diff.starts_with("+++ ")),
        1,
        "{diff}"
    );
    assert!(diff.contains("modeling_llama.py"));
    // Beside a diff, the summary and the notes go to standard error: the diff stays one to `patch`.
    assert!(!diff.contains("Not targeted") && !diff.contains("Notes:"));
    assert!(
        text(&dry.stderr).contains("Not targeted: 2213 files"),
        "{}",
        text(&dry.stderr)
    );

    let apply = pysplice(&["apply", "--spec", &s.spec, pkg]);
    assert_eq!(code(&apply), 0, "{}", text(&apply.stderr));
    let out = text(&apply.stdout);
    assert!(
        out.contains("Successfully patched") && out.contains("modeling_llama.py"),
        "{out}"
    );
    assert!(
        out.contains("Not targeted: 2213 files (no hook's target is defined there; left untouched)"),
        "{out}"
    );
    assert!(
        out.ends_with("Notes:\n  - Set RECORD_DIR to turn recording on.\n  - Restart the process after patching.\n"),
        "{out}"
    );
    let patched = tree(&s.package);
    assert_eq!(changed(&original, &patched), expected);
    let llama = text(&patched[&expected[0]]);
    assert!(llama.contains("import os\n") && llama.contains("self._recorded = hidden_states.detach()"));

    let again = pysplice(&["apply", "--spec", &s.spec, pkg]);
    assert_eq!(code(&again), 0);
    assert!(
        text(&again.stdout).contains("Already up to date"),
        "{}",
        text(&again.stdout)
    );
    assert!(!text(&again.stdout).contains("Notes:"), "notes follow a change only");
    assert_eq!(tree(&s.package), patched, "a second apply changes nothing");

    let check = pysplice(&["check", "--spec", &s.spec, pkg]);
    assert_eq!(code(&check), 0, "{}", text(&check.stdout));
    assert!(text(&check.stdout).contains("modeling_llama.py: up to date"));

    let revert = pysplice(&["revert", "--spec", &s.spec, pkg]);
    assert_eq!(code(&revert), 0, "{}", text(&revert.stderr));
    assert!(text(&revert.stdout).contains("none of the recipe's markers there"));
    assert_eq!(tree(&s.package), original, "revert gives back every byte");
    let check = pysplice(&["check", "--spec", &s.spec, pkg]);
    assert_eq!(code(&check), 1, "an unpatched package needs apply");
}

#[test]
fn json_names_every_file_and_carries_the_notes() {
    let s = scratch(&["models/llama"]);
    let llama = s.package.join("models/llama");
    let output = pysplice(&["apply", "--spec", &s.spec, "--json", llama.to_str().unwrap()]);
    assert_eq!(code(&output), 0, "{}", text(&output.stderr));
    let lines: Vec<serde_json::Value> = text(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let files = tree(&llama)
        .into_keys()
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .count();
    assert_eq!(lines.len(), files, "one object per file of the folder");
    for line in &lines {
        let path = line["path"].as_str().unwrap();
        if path.ends_with("/modeling_llama.py") {
            assert_eq!(line["status"], "patched");
            assert_eq!(line["notes"][0], "Set RECORD_DIR to turn recording on.");
        } else {
            assert_eq!(line["status"], "not-targeted", "{path}");
            assert!(line.get("notes").is_none());
        }
    }
}

/// The files of a folder given one by one (`llama/*.py`) are a set as the folder is: the one
/// that defines the targets is patched, the others are named as not targeted.
#[test]
fn several_files_given_by_name_are_a_set() {
    let s = scratch(&["models/llama"]);
    let llama = s.package.join("models/llama");
    let before = tree(&llama);
    let mut names: Vec<String> = before
        .keys()
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .map(|p| llama.join(p).to_str().unwrap().to_string())
        .collect();
    names.sort();
    let mut args = vec!["apply", "--spec", &s.spec];
    args.extend(names.iter().map(String::as_str));
    let output = pysplice(&args);
    assert_eq!(code(&output), 0, "{}", text(&output.stderr));
    assert_eq!(changed(&before, &tree(&llama)), [PathBuf::from("modeling_llama.py")]);
    let out = text(&output.stdout);
    assert!(
        out.contains("Not targeted (no hook's target is defined there; left untouched):\n"),
        "{out}"
    );
    for name in names.iter().filter(|n| !n.ends_with("/modeling_llama.py")) {
        assert!(out.contains(&format!("  - {name}\n")), "{name} named: {out}");
    }
    // One file alone keeps its strict meaning: a target it lacks is an error.
    let init = llama.join("__init__.py");
    let alone = pysplice(&["apply", "--spec", &s.spec, init.to_str().unwrap()]);
    assert_eq!(code(&alone), 1);
    assert!(
        text(&alone.stderr).contains("is not defined in this file"),
        "{}",
        text(&alone.stderr)
    );
}

#[test]
fn the_recipes_files_key_and_module_level_hooks() {
    let s = scratch(&["models/llama"]);
    let llama = s.package.join("models/llama");
    let before = tree(&llama);
    // Only module-level hooks: every file the `files` key takes in, and only those.
    let spec = s.package.parent().unwrap().join("imports.toml");
    fs::write(
        &spec,
        "[recipe]\nid = \"imp\"\nsummary = \"s\"\nfiles = [\"transformers.models.llama.configuration_llama\", \"**/tokenization_llama*.py\"]\n\n[[hook]]\nid = \"i\"\nsummary = \"Imported os\"\nensure-imports = [\"zlib\"]\n",
    )
    .unwrap();
    let output = pysplice(&["apply", "--spec", spec.to_str().unwrap(), llama.to_str().unwrap()]);
    assert_eq!(code(&output), 0, "{}", text(&output.stderr));
    let names: Vec<PathBuf> = changed(&before, &tree(&llama));
    assert_eq!(
        names,
        [
            PathBuf::from("configuration_llama.py"),
            PathBuf::from("tokenization_llama.py"),
            PathBuf::from("tokenization_llama_fast.py")
        ]
    );
    // The Llama recipe on the folder: the imports only where a targeted hook is placed.
    let before = tree(&llama);
    let output = pysplice(&["apply", "--spec", &s.spec, llama.to_str().unwrap()]);
    assert_eq!(code(&output), 0, "{}", text(&output.stderr));
    assert_eq!(changed(&before, &tree(&llama)), [PathBuf::from("modeling_llama.py")]);
}

#[test]
fn a_hook_no_file_targets_fails_the_run_and_nothing_is_written() {
    let s = scratch(&["models/bert"]);
    let bert = s.package.join("models/bert");
    let before = tree(&s.package);
    let output = pysplice(&["apply", "--spec", &s.spec, bert.to_str().unwrap()]);
    assert_eq!(code(&output), 1);
    let err = text(&output.stderr);
    let folder = bert.display().to_string();
    assert!(
        err.contains(&format!("{folder}: `LlamaModel.forward` is not defined in any of the "))
            && err.contains("[hook record]"),
        "{err}"
    );
    assert!(err.contains("`LlamaForCausalLM.__init__` is not defined") && err.contains("nothing was written"));
    assert!(!err.contains(&format!("{folder}:1:1")), "a folder has no line: {err}");
    let json = pysplice(&["check", "--spec", &s.spec, "--json", bert.to_str().unwrap()]);
    assert_eq!(code(&json), 1);
    let first: serde_json::Value = serde_json::from_str(text(&json.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["error"]["hook"], "record");
    assert!(first["error"]["line"].is_null(), "{first}");
    assert_eq!(tree(&s.package), before);
}

/// Bad input anywhere in the tree: exit 2, a message naming the file, no file written.
#[test]
fn bad_input_in_the_tree_writes_nothing() {
    type Plant = fn(&Path) -> PathBuf;
    let cases: [(&str, Plant, &str); 7] = [
        (
            "a FIFO",
            |pkg| {
                let fifo = pkg.join("utils/fifo.py");
                let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
                assert!(made.success());
                fifo
            },
            "a FIFO (named pipe), not a regular file",
        ),
        (
            "a link to itself",
            |pkg| {
                let link = pkg.join("utils/loop.py");
                std::os::unix::fs::symlink("loop.py", &link).unwrap();
                link
            },
            "a symbolic link loop",
        ),
        (
            "a link to a folder above it",
            |pkg| {
                let link = pkg.join("models/llama/up");
                std::os::unix::fs::symlink("../..", &link).unwrap();
                link
            },
            "a symbolic link loop: it points to",
        ),
        (
            "a file that is not UTF-8",
            |pkg| {
                let file = pkg.join("utils/latin1.py");
                fs::write(&file, b"x = '\xe9'\n").unwrap();
                file
            },
            "the file is not valid UTF-8",
        ),
        (
            "a file over the size limit",
            |pkg| {
                let file = pkg.join("utils/huge.py");
                let line = format!("# {}\n", "x".repeat(1000));
                fs::write(&file, line.repeat(17 * 1024)).unwrap();
                file
            },
            "more than the limit of",
        ),
        (
            "a read-only target file",
            |pkg| {
                let file = pkg.join("models/llama/modeling_llama.py");
                fs::set_permissions(&file, fs::Permissions::from_mode(0o444)).unwrap();
                file
            },
            "the file is read-only",
        ),
        (
            "a file that does not parse and defines a target",
            |pkg| {
                let file = pkg.join("utils/broken.py");
                fs::write(&file, "class LlamaModel(:\n    pass\n").unwrap();
                file
            },
            "invalid Python",
        ),
    ];
    let s = scratch(&["models/llama", "utils"]);
    for (what, plant, message) in cases {
        let work = s.package.parent().unwrap().join("work");
        copy_tree(&s.package, &work);
        let planted = plant(&work);
        let before = tree(&work);
        for command in ["apply", "check", "revert"] {
            let output = pysplice(&[command, "--spec", &s.spec, work.to_str().unwrap()]);
            let err = text(&output.stderr);
            if command == "revert" && (what.contains("read-only") || what.contains("parse")) {
                // Nothing to revert: a file without markers is not read further, and nothing is
                // written, so a read-only file is no obstacle.
                assert_eq!(code(&output), 0, "{what}: {err}");
                continue;
            }
            if command != "apply" && what.contains("read-only") {
                assert_eq!(code(&output), 1, "{what} {command}: check needs apply: {err}");
                continue;
            }
            assert_eq!(code(&output), 2, "{what} {command}: {err}");
            assert!(
                err.contains(&planted.display().to_string()),
                "{what} {command}: the file is named: {err}"
            );
            assert!(err.contains(message), "{what} {command}: {err}");
            assert_eq!(tree(&work), before, "{what} {command}: nothing written");
        }
        let _ = fs::set_permissions(
            work.join("models/llama/modeling_llama.py"),
            fs::Permissions::from_mode(0o644),
        );
        fs::remove_dir_all(&work).unwrap();
    }
}

/// A link to a folder outside the tree is not followed (and said so); the run goes on.
#[test]
fn links_out_of_the_tree_are_not_followed() {
    let s = scratch(&["models/llama"]);
    let outside = tempfile::tempdir().unwrap();
    fs::write(
        outside.path().join("outside.py"),
        "class LlamaModel:\n    def forward(self):\n        pass\n",
    )
    .unwrap();
    let llama = s.package.join("models/llama");
    std::os::unix::fs::symlink(outside.path(), llama.join("elsewhere")).unwrap();
    let output = pysplice(&["apply", "--spec", &s.spec, llama.to_str().unwrap()]);
    assert_eq!(code(&output), 0, "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("elsewhere: a symbolic link"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(
        fs::read_to_string(outside.path().join("outside.py")).unwrap(),
        "class LlamaModel:\n    def forward(self):\n        pass\n"
    );
}

/// `--installed transformers` in a virtual environment: located without importing it, patched,
/// checked, reverted to the bytes pip installed.
#[test]
fn an_installed_package_in_a_venv() {
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let made = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .expect("python3 runs");
    assert!(made.success(), "python3 -m venv works");
    let python = venv.join("bin/python");
    // The venv's site-packages, filled by the pip of the interpreter that made it.
    let site = text(
        &Command::new(&python)
            .args(["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
            .output()
            .unwrap()
            .stdout,
    )
    .trim()
    .to_string();
    let installed = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "-q",
            "--root-user-action=ignore",
            "--no-deps",
            "--no-index",
            "--no-compile",
            "--target",
            &site,
        ])
        .arg(transformers_wheel())
        .status()
        .expect("pip runs");
    assert!(installed.success(), "the wheel installs");
    let package = Path::new(&site).join("transformers");
    let original = tree(&package);
    let spec = dir.path().join("record.toml");
    fs::write(&spec, RECIPE).unwrap();
    let spec = spec.to_str().unwrap();
    let py = python.to_str().unwrap();
    let run = |command: &str| pysplice(&[command, "--spec", spec, "--installed", "transformers", "--python", py]);
    let apply = run("apply");
    assert_eq!(code(&apply), 0, "{}", text(&apply.stderr));
    assert_eq!(
        changed(&original, &tree(&package)),
        [PathBuf::from("models/llama/modeling_llama.py")]
    );
    let patched = tree(&package);
    assert_eq!(code(&run("apply")), 0);
    assert_eq!(tree(&package), patched, "a second apply changes nothing");
    assert_eq!(code(&run("check")), 0);
    assert_eq!(code(&run("revert")), 0);
    assert_eq!(tree(&package), original);
    // A sub-package by its dotted name.
    let sub = pysplice(&[
        "check",
        "--spec",
        spec,
        "--installed",
        "transformers.models.llama",
        "--python",
        py,
    ]);
    assert_eq!(code(&sub), 1, "unpatched: {}", text(&sub.stdout));
    // A package that is not there, and a folder given as the interpreter.
    let missing = pysplice(&[
        "apply",
        "--spec",
        spec,
        "--installed",
        "no_such_package_here",
        "--python",
        py,
    ]);
    assert_eq!(code(&missing), 2);
    assert!(
        text(&missing.stderr).contains("has no package `no_such_package_here`"),
        "{}",
        text(&missing.stderr)
    );
    let folder = pysplice(&[
        "apply",
        "--spec",
        spec,
        "--installed",
        "transformers",
        "--python",
        venv.to_str().unwrap(),
    ]);
    assert_eq!(code(&folder), 2);
    assert!(
        text(&folder.stderr).contains("is a folder, not an interpreter"),
        "{}",
        text(&folder.stderr)
    );
    assert_eq!(tree(&package), original);
}
