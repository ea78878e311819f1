//! `sglang_hs_dump --arch / --model-path` end to end on a copy of an SGLang models folder: exit
//! codes, messages, every needed file changed, `--check` after apply, exact revert, `--json`
//! listing every file, nothing written on failure.

mod common;

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
    Command::new(common::example_binary("sglang_hs_dump"))
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
            ":2:23: architecture `Evil\\u{1b}]0;PWNED\\u{7}` is not a Python class name".to_string(),
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

/// The stand-in model files of the device runtime test (tests/runtime/families: four families
/// whose forwards differ) are patched by `--arch all` and pass the independent check; where
/// python3 has PyTorch, the runtime test itself runs too (on the device machine it runs through
/// tests/runtime/patch_families.sh and run_families_on_device.sh).
#[test]
fn runtime_standins_patch_and_check() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("sglang_models_cli")
        .join("families");
    let _ = std::fs::remove_dir_all(&dir);
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/runtime/families");
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
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py_check_hs_models.py"))
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
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/runtime/run_families_test.py");
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
