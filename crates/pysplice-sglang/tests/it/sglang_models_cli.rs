//! `sglang-hs-dump --arch / --model-path` end to end on a copy of an SGLang models folder: exit
//! codes, messages, every needed file changed, `--check` after apply, exact revert, `--json`
//! listing every file, nothing written on failure.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh copy of the 0.5.23 models folder, as `<dir>/sglang/srt/models`.
fn copy(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("sglang_models_cli")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    let models = dir.join("sglang/srt/models");
    let original = common::models_dir("0.5.23");
    for file in common::python_files(&original) {
        let to = models.join(file.strip_prefix(&original).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&file, &to).unwrap();
    }
    dir
}

fn snapshot(models: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    common::python_files(models)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

fn run(args: &[&str]) -> Output {
    Command::new(common::program("sglang_hs_dump"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn changed(before: &BTreeMap<PathBuf, Vec<u8>>, after: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<String> {
    before
        .iter()
        .filter(|(p, b)| after.get(*p) != Some(*b))
        .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn arch_apply_check_revert() {
    let dir = copy("arch");
    let models = dir.join("sglang/srt/models");
    let path = dir.to_str().unwrap();
    let before = snapshot(&models);

    let out = run(&[path, "--arch", "Qwen3MoeForCausalLM", "--check"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(snapshot(&models), before, "--check wrote");

    let out = run(&[path, "--arch", "Qwen3MoeForCausalLM"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let after = snapshot(&models);
    // The forward of Qwen3MoeModel is Qwen2MoeModel's: both files change, nothing else.
    assert_eq!(changed(&before, &after), ["qwen2_moe.py", "qwen3_moe.py"]);
    assert!(
        text(&out).contains("Qwen3MoeForCausalLM (qwen3_moe.py): qwen3_moe.py, qwen2_moe.py"),
        "{}",
        text(&out)
    );

    let out = run(&[path, "--arch", "Qwen3MoeForCausalLM", "--check", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let objects = json_lines(&out.stdout);
    assert!(objects.iter().all(|o| o["status"] == "up-to-date" && o["ok"] == true));
    assert!(objects
        .iter()
        .all(|o| o["architectures"] == serde_json::json!(["Qwen3MoeForCausalLM"])));
    let files: Vec<&str> = objects.iter().map(|o| o["path"].as_str().unwrap()).collect();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files
        .iter()
        .all(|f| f.ends_with("qwen2_moe.py") || f.ends_with("qwen3_moe.py")));

    // Idempotent.
    let out = run(&[path, "--arch", "Qwen3MoeForCausalLM"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(snapshot(&models), after);

    let out = run(&[path, "--arch", "Qwen3MoeForCausalLM", "--revert"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(snapshot(&models) == before, "revert is not exact");
}

#[test]
fn arch_all_and_model_path() {
    let dir = copy("all");
    let models = dir.join("sglang/srt/models");
    let path = models.to_str().unwrap();
    let before = snapshot(&models);

    let out = run(&[path, "--arch", "all", "--dry-run", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(snapshot(&models), before, "--dry-run wrote");
    let objects = json_lines(&out.stdout);
    let files: Vec<&serde_json::Value> = objects.iter().filter(|o| o["status"] != "skipped").collect();
    assert!(files.len() > 30, "{}", files.len());
    assert!(files.iter().all(|f| f["status"] == "would-patch"
        && f["diff"].as_str().is_some_and(|d| d.contains("+++ b/"))
        && !f["architectures"].as_array().unwrap().is_empty()));
    // A dry run's hooks say what would be done, never `applied`.
    assert!(files
        .iter()
        .flat_map(|f| f["hooks"].as_array().unwrap())
        .all(|h| h["status"] != "applied"));
    assert!(objects.iter().any(|o| o["status"] == "skipped"
        && o["architectures"] == serde_json::json!(["MindSporeForCausalLM"])
        && o["skipped"].is_string()
        && o["path"].as_str().unwrap().ends_with("mindspore.py")));

    let out = run(&[path, "--arch", "all"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(changed(&before, &snapshot(&models)).len(), files.len());
    let out = run(&[path, "--arch", "all", "--check"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = run(&[path, "--arch", "all", "--revert"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(snapshot(&models) == before, "revert is not exact");

    // --model-path reads config.json's architectures.
    let model = dir.join("hf-model");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::write(model.join("config.json"), r#"{"architectures": ["GptOssForCausalLM"]}"#).unwrap();
    let out = run(&[path, "--model-path", model.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(changed(&before, &snapshot(&models)), ["gpt_oss.py"]);
}

#[test]
fn unknown_or_unsupported_architectures_are_usage_errors() {
    let dir = copy("errors");
    let models = dir.join("sglang/srt/models");
    let path = dir.to_str().unwrap();
    let before = snapshot(&models);
    let out = run(&[path, "--arch", "Qwen3MoeForCausalLm"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("`Qwen3MoeForCausalLm` is none of the classes this recipe selects; did you mean")
            && text(&out).contains("`Qwen3MoeForCausalLM`"),
        "{}",
        text(&out)
    );
    let out = run(&[path, "--arch", "MindSporeForCausalLM"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("cannot be patched"), "{}", text(&out));
    let out = run(&[path, "--arch", "LlamaForCausalLM,MindSporeForCausalLM"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = run(&["--arch", "LlamaForCausalLM"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("need PATH"), "{}", text(&out));

    // A model folder's config.json comes from a download: anything it holds is a usage error
    // naming the file and the place, never a crash or a write.
    let model = dir.join("hf-model");
    std::fs::create_dir_all(&model).unwrap();
    let config = model.join("config.json");
    let model_path = model.to_str().unwrap();
    for (content, expected) in [
        (
            "{\"architectures\": [\n  \"LlamaForCausalLM\",\n",
            ":3:1: not JSON: EOF while parsing",
        ),
        ("{\"model_type\": \"llama\"}", ":1:1: no `architectures` list of names"),
        ("{\"architectures\": [1, 2]}", ":1:1: no `architectures` list of names"),
        ("\u{feff}\u{0}\u{1}", ":1:1: not JSON"),
    ] {
        std::fs::write(&config, content).unwrap();
        let out = run(&[path, "--model-path", model_path]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let shown = format!("{}{expected}", config.display());
        assert!(text(&out).contains(&shown), "{content:?}: {}", text(&out));
    }
    std::fs::write(&config, [0xff, 0xfe, b'{']).unwrap();
    let out = run(&[path, "--model-path", model_path, "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let objects = json_lines(&out.stdout);
    assert_eq!(objects.len(), 1, "{}", text(&out));
    assert_eq!(objects[0]["status"], "failed", "{}", objects[0]);
    assert!(
        objects[0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not valid UTF-8")),
        "{}",
        objects[0]
    );
    std::fs::remove_file(&config).unwrap();
    let out = run(&[path, "--model-path", model_path]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("config.json"), "{}", text(&out));
    assert_eq!(snapshot(&models), before, "an error wrote");
}

/// Regression: one 8 MB architecture name in config.json took 43 s (edit distances to every
/// known name) and was echoed whole. Names are bounded and must be Python names: refused at the
/// name's place, shown as a short escaped start, nothing written. A long `--arch` name gets no
/// suggestions (and no minutes of edit distances) and is shown cut.
#[test]
fn absurd_architecture_names_are_refused_short() {
    let dir = copy("absurd");
    let models = dir.join("sglang/srt/models");
    let path = dir.to_str().unwrap();
    let before = snapshot(&models);
    let model = dir.join("hf-model");
    std::fs::create_dir_all(&model).unwrap();
    let config = model.join("config.json");
    let model_path = model.to_str().unwrap();
    let huge = "A".repeat(8_000_000);
    for (name, expected) in [
        (
            huge.as_str(),
            format!(
                ":2:23: architecture `{}... (8000000 bytes)` is 8000000 bytes, more than the limit of 128",
                "A".repeat(80)
            ),
        ),
        (
            "Evil\\u001b]0;PWNED\\u0007",
            ":2:23: architecture `Evil\\x1b]0;PWNED\\x07` is not a Python class name".to_string(),
        ),
    ] {
        std::fs::write(
            &config,
            format!("{{\"architectures\": [\n  \"LlamaForCausalLM\", \"{name}\"]}}"),
        )
        .unwrap();
        let out = run(&[path, "--model-path", model_path]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let shown = format!("{}{expected}", config.display());
        let all = text(&out);
        assert!(all.contains(&shown), "{shown}\n{}", &all[..all.len().min(2000)]);
        assert!(all.len() < 2000, "{} bytes of output", all.len());
        assert!(!all.contains('\u{1b}'), "a raw escape character");
    }
    let long = format!("Qwen3Moe{}", "x".repeat(100_000));
    let out = run(&[path, "--arch", &long]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains(&format!(
            "`Qwen3Moe{}... (100008 bytes)` is none of the classes this recipe selects",
            "x".repeat(72)
        )),
        "{}",
        &all[..all.len().min(2000)]
    );
    assert!(all.len() < 2000, "{} bytes of output", all.len());
    assert_eq!(snapshot(&models), before, "an error wrote");
}

/// A file that cannot be patched (its markers edited by hand) stops the run before anything is
/// written: the other file of the architecture stays as it was.
#[test]
fn all_or_nothing() {
    let dir = copy("atomic");
    let models = dir.join("sglang/srt/models");
    let path = dir.to_str().unwrap();
    let out = run(&[path, "--arch", "Qwen2MoeForCausalLM"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shared = models.join("qwen2_moe.py");
    let patched = std::fs::read_to_string(&shared).unwrap();
    let edited = patched.replacen("self._hs_dump_count = 0", "self._hs_dump_count = 1", 1);
    assert_ne!(edited, patched);
    std::fs::write(&shared, &edited).unwrap();
    let before = snapshot(&models);
    let out = run(&[path, "--arch", "Qwen3MoeForCausalLM"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("qwen2_moe.py"), "{}", text(&out));
    assert_eq!(snapshot(&models), before, "a file was written although another failed");
}

/// The stand-in model files of the device runtime test (crates/pysplice-sglang/tests/python/runtime/families: four families
/// whose forwards differ) are patched by `--arch all` and pass the independent check; where
/// python3 has PyTorch, the runtime test itself runs too (on the device machine it runs through
/// crates/pysplice-sglang/tests/python/runtime/patch_families.sh and run_families_on_device.sh).
#[test]
fn runtime_standins_patch_and_check() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("sglang_models_cli")
        .join("families");
    let _ = std::fs::remove_dir_all(&dir);
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/runtime/families");
    let pristine = source.join("sglang/srt/models");
    for file in common::python_files(&source) {
        let to = dir.join(file.strip_prefix(&source).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&file, &to).unwrap();
    }
    let out = run(&[dir.to_str().unwrap(), "--arch", "all", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let mut archs: Vec<String> = json_lines(&out.stdout)
        .iter()
        .flat_map(|o| o["architectures"].as_array().unwrap().clone())
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    archs.sort();
    archs.dedup();
    assert_eq!(
        archs,
        [
            "GptOssForCausalLM",
            "LlamaForCausalLM",
            "Qwen2MoeForCausalLM",
            "Qwen3MoeForCausalLM",
            "VlmForConditionalGeneration"
        ]
    );
    let models = dir.join("sglang/srt/models");
    let check = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_hs_models.py"))
        .arg(&models)
        .arg(&pristine)
        .args(&archs)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check));
    let verdicts: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    let forwards: Vec<&str> = verdicts
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["forward"].as_str().unwrap())
        .collect();
    assert_eq!(
        forwards,
        [
            "gpt_oss.GptOssModel.forward",
            "llama.LlamaModel.forward",
            "qwen2_moe.Qwen2MoeModel.forward",
            "qwen2_moe.Qwen2MoeModel.forward",
            "llama.LlamaModel.forward"
        ]
    );
    let has_torch = Command::new("python3")
        .args(["-c", "import torch"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_torch {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/runtime/run_families_test.py");
        let patched = Command::new("python3")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .arg(&script)
            .arg(&dir)
            .output()
            .unwrap();
        assert!(patched.status.success(), "{}", text(&patched));
        let unpatched = Command::new("python3")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .arg(&script)
            .arg(&source)
            .arg("--unpatched")
            .output()
            .unwrap();
        assert!(unpatched.status.success(), "{}", text(&unpatched));
    } else {
        eprintln!("python3 has no torch here: the runtime half runs on the device machine");
    }
}

/// The objects of a `--json` output, one per line.
fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The uid the unprivileged runs use when the tests run as root (`nobody`).
const NOBODY: u32 = 65534;

/// Runs the program as an unprivileged user: root reads a file of mode 000, anyone else cannot.
fn run_unprivileged(args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(common::program("sglang_hs_dump"));
    command.args(args);
    if is_root() {
        // std drops the supplementary groups too when it changes the uid of a root process.
        command.uid(NOBODY).gid(NOBODY);
    }
    command.output().expect("the binary runs")
}

/// Gives the tree to the unprivileged user when the tests run as root, so that it may write
/// there as a user may write into their own install.
fn hand_over(dir: &Path) {
    if !is_root() {
        return;
    }
    let status = Command::new("chown")
        .args(["-R", &format!("{NOBODY}:{NOBODY}")])
        .arg(dir)
        .status()
        .expect("chown runs");
    assert!(status.success());
}

/// A patched model file that cannot be read (mode 000, as a user other than root) or is not
/// UTF-8: `--revert`, `--check` and apply of every architecture stop with exit 2 naming the file
/// (a revert used to report 36 files reverted and leave it patched, unmentioned; check and apply
/// listed the architectures needing it as skipped, for a wrong reason); nothing is written.
#[test]
fn an_unreadable_patched_model_file_is_an_error_never_a_skip() {
    use std::os::unix::fs::PermissionsExt;
    let dir = copy("unreadable");
    let models = dir.join("sglang/srt/models");
    let path = models.to_str().unwrap();
    let out = run(&[path, "--arch", "all"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shared = models.join("qwen2_moe.py");
    assert!(std::fs::read_to_string(&shared).unwrap().contains("# >>> pysplice"));
    hand_over(&dir);
    let patched = snapshot(&models);

    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o000)).unwrap();
    for mode in ["--revert", "--check", "--dry-run"] {
        let out = run_unprivileged(&[path, "--arch", "all", mode]);
        assert_eq!(out.status.code(), Some(2), "{mode}: {}", text(&out));
        let expected = format!("{}:1:1: cannot open: Permission denied", shared.display());
        assert!(text(&out).contains(&expected), "{mode}: {}", text(&out));
        assert!(!text(&out).contains("Reverted"), "{mode}: {}", text(&out));
        assert!(!text(&out).contains("skipped"), "{mode}: {}", text(&out));
    }
    let out = run_unprivileged(&[path, "--arch", "Qwen3MoeForCausalLM"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("qwen2_moe.py:1:1: cannot open"), "{}", text(&out));
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(snapshot(&models), patched, "a file was written");

    // Not UTF-8: a byte 0xff in a comment of the patched file.
    let mut bytes = std::fs::read(&shared).unwrap();
    let at = bytes.windows(2).position(|w| w == b"# ").unwrap() + 2;
    bytes.insert(at, 0xff);
    std::fs::write(&shared, &bytes).unwrap();
    let patched = snapshot(&models);
    for mode in ["--revert", "--check"] {
        let out = run(&[path, "--arch", "all", mode]);
        assert_eq!(out.status.code(), Some(2), "{mode}: {}", text(&out));
        assert!(
            text(&out).contains("qwen2_moe.py:") && text(&out).contains("the file is not valid UTF-8 (byte 0xff)"),
            "{mode}: {}",
            text(&out)
        );
    }
    let out = run(&[path, "--arch", "all", "--revert", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let objects = json_lines(&out.stdout);
    assert_eq!(objects.len(), 1, "{}", text(&out));
    assert_eq!(objects[0]["status"], "failed");
    assert!(objects[0]["error"]["file"].as_str().unwrap().ends_with("qwen2_moe.py"));
    assert_eq!(snapshot(&models), patched, "a file was written");
}

/// Other entries named `.py` that no one can read, root included: a FIFO, a folder, a dangling
/// link, a sub-folder that cannot be listed (as a user other than root). Each is an error naming
/// it, for revert, check and apply; nothing is written, nothing blocks.
#[test]
fn other_unreadable_entries_of_a_models_folder_are_errors() {
    use std::os::unix::fs::PermissionsExt;
    let dir = copy("unreadable-kinds");
    let models = dir.join("sglang/srt/models");
    let path = models.to_str().unwrap();
    let out = run(&[path, "--arch", "all"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let patched = snapshot(&models);
    let odd = models.join("x.py");
    let cases: [(&str, &dyn Fn(), &str); 3] = [
        (
            "fifo",
            &|| assert!(Command::new("mkfifo").arg(&odd).status().unwrap().success()),
            ":1:1: a FIFO (named pipe), not a regular file",
        ),
        (
            "folder",
            &|| std::fs::create_dir(&odd).unwrap(),
            ":1:1: a directory, not a regular file",
        ),
        (
            "dangling link",
            &|| std::os::unix::fs::symlink("gone.py", &odd).unwrap(),
            ": cannot read the link: No such file or directory",
        ),
    ];
    for (what, make, message) in cases {
        make();
        for mode in ["--revert", "--check", "--dry-run"] {
            let out = run(&[path, "--arch", "all", mode]);
            assert_eq!(out.status.code(), Some(2), "{what} {mode}: {}", text(&out));
            let expected = format!("{}{message}", odd.display());
            assert!(text(&out).contains(&expected), "{what} {mode}: {}", text(&out));
        }
        let out = run(&[path, "--arch", "Qwen3MoeForCausalLM", "--revert"]);
        assert_eq!(out.status.code(), Some(2), "{what}: {}", text(&out));
        if odd.is_dir() && !odd.is_symlink() {
            std::fs::remove_dir(&odd).unwrap();
        } else {
            std::fs::remove_file(&odd).unwrap();
        }
        assert_eq!(snapshot(&models), patched, "{what}: a file was written");
    }

    // A sub-folder that cannot be listed may hold patched files.
    let sub = models.join("sub");
    std::fs::create_dir(&sub).unwrap();
    hand_over(&dir);
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o000)).unwrap();
    let out = run_unprivileged(&[path, "--arch", "all", "--revert"]);
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let expected = format!("{}: cannot read the folder: Permission denied", sub.display());
    assert!(text(&out).contains(&expected), "{}", text(&out));
    assert_eq!(snapshot(&models), patched, "a file was written");
}

/// `--arch` runs say when a file written had other hard links (they keep the old content), as
/// the single-file mode does.
#[test]
fn arch_runs_note_hard_links() {
    let dir = copy("hard-links");
    let models = dir.join("sglang/srt/models");
    let shared = models.join("qwen2_moe.py");
    let other = dir.join("qwen2_moe.copy");
    std::fs::hard_link(&shared, &other).unwrap();
    let original = std::fs::read(&shared).unwrap();
    let out = run(&[models.to_str().unwrap(), "--arch", "Qwen3MoeForCausalLM"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let note = format!(
        "note: {} had 2 hard links; it is now a file of its own, the other names keep the old content",
        shared.display()
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(&note), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).matches("hard links").count(),
        1,
        "{}",
        text(&out)
    );
    assert!(std::fs::read_to_string(&shared).unwrap().contains("# >>> pysplice"));
    assert_eq!(std::fs::read(&other).unwrap(), original);
}

/// A file of the models folder whose name holds control characters (a terminal title escape)
/// is named escaped in the text output of apply, check and revert: no ESC or BEL byte reaches
/// the terminal.
#[test]
fn names_with_control_characters_are_printed_escaped() {
    // The printing is per file: a folder of two models is enough for `--arch all`.
    let models = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sglang_models_cli/odd-names/sglang/srt/models");
    let _ = std::fs::remove_dir_all(&models);
    std::fs::create_dir_all(&models).unwrap();
    std::fs::copy(
        common::models_dir("0.5.23").join("qwen2_moe.py"),
        models.join("qwen2_moe.py"),
    )
    .unwrap();
    let path = models.to_str().unwrap();
    let evil = models.join("evil\u{1b}]0;PWNED\u{7}x.py");
    std::fs::copy(models.join("qwen2_moe.py"), &evil).unwrap();
    let original = std::fs::read(&evil).unwrap();
    let shown = "evil\\x1b]0;PWNED\\x07x.py";
    for mode in [None, Some("--check"), Some("--revert")] {
        let mut args = vec![path, "--arch", "all"];
        args.extend(mode);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {}", text(&out));
        for stream in [&out.stdout, &out.stderr] {
            assert!(
                !stream.iter().any(|b| *b == 0x1b || *b == 0x07),
                "{mode:?}: {}",
                text(&out)
            );
        }
        assert!(text(&out).contains(shown), "{mode:?}: {}", text(&out));
    }
    assert_eq!(std::fs::read(&evil).unwrap(), original, "revert is not exact");
    // In a message too: the same file made unreadable by being a FIFO.
    std::fs::remove_file(&evil).unwrap();
    assert!(Command::new("mkfifo").arg(&evil).status().unwrap().success());
    let out = run(&[path, "--arch", "all", "--revert"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!out.stderr.iter().any(|b| *b == 0x1b || *b == 0x07), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{shown}:1:1: a FIFO (named pipe), not a regular file")),
        "{}",
        text(&out)
    );
}

/// The general program's folder run with the bundled models recipe (its hooks choose their
/// classes by selectors) writes the same bytes into the same files as `--arch all`, and
/// reverts them alike.
#[test]
fn a_folder_run_of_the_models_recipe_matches_arch_all() {
    let arch_models = copy("folder_run_arch").join("sglang/srt/models");
    let folder_models = copy("folder_run_pysplice").join("sglang/srt/models");
    let out = run(&["--arch", "all", arch_models.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let pysplice = |command: &str| {
        Command::new(common::program("pysplice"))
            .args([
                command,
                "--spec",
                "builtin:sglang-hs-dump-models",
                folder_models.to_str().unwrap(),
            ])
            .output()
            .expect("pysplice runs")
    };
    // Relative paths, so that the two copies compare.
    let tree = |root: &Path| -> BTreeMap<PathBuf, Vec<u8>> {
        snapshot(root)
            .into_iter()
            .map(|(p, b)| (p.strip_prefix(root).unwrap().to_path_buf(), b))
            .collect()
    };
    let original = tree(&folder_models);
    let out = pysplice("apply");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (by_folder, by_arch) = (tree(&folder_models), tree(&arch_models));
    let changed_by_folder = changed(&original, &by_folder);
    assert!(changed_by_folder.len() > 10, "{changed_by_folder:?}");
    assert_eq!(changed_by_folder, changed(&original, &by_arch), "the same files");
    let differing: Vec<&PathBuf> = by_arch
        .iter()
        .filter(|(p, b)| by_folder.get(*p) != Some(*b))
        .map(|(p, _)| p)
        .collect();
    assert!(differing.is_empty(), "the same bytes: {differing:?}");
    assert_eq!(pysplice("check").status.code(), Some(0));
    let out = pysplice("revert");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(tree(&folder_models) == original, "revert gives back every byte");
}
