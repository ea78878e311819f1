//! `sglang-hs-dump` where an operator trips, each as a new user would try it: exit code, message,
//! and the files' bytes before and after.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The model files these tests patch; [`copy`] takes them with every file of the models folder
/// they import from, so that each run parses what the classes need and not the whole folder
/// (`sglang_models_cli` runs on whole folders).
const SEEDS: [&str; 3] = ["deepseek_v2.py", "qwen3_moe.py", "glm4v.py"];

/// A fresh copy of a release's model files ([`SEEDS`] and what they import from
/// `sglang.srt.models`), as `<dir>/sglang/srt/models`; gives `<dir>`.
fn copy(name: &str, version: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sglang_trips").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    let models = dir.join("sglang/srt/models");
    std::fs::create_dir_all(&models).unwrap();
    let original = common::models_dir(version);
    let mut todo: Vec<String> = SEEDS.iter().map(|s| (*s).to_string()).collect();
    let mut taken = std::collections::BTreeSet::new();
    while let Some(file) = todo.pop() {
        let from = original.join(&file);
        if !from.is_file() || !taken.insert(file) {
            continue;
        }
        let text = std::fs::read_to_string(&from).unwrap();
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let ["from", module, "import", ..] = words[..] {
                if let Some(name) = module.strip_prefix("sglang.srt.models.") {
                    // a module, or a package's __init__.py (whichever the release has)
                    let path = name.replace('.', "/");
                    todo.push(format!("{path}.py"));
                    todo.push(format!("{path}/__init__.py"));
                }
            }
        }
        let to = models.join(from.strip_prefix(&original).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, to).unwrap();
    }
    assert!(taken.len() > SEEDS.len(), "{version}: only {taken:?}");
    dir
}

fn bytes(models: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    common::python_files(models)
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect()
}

fn marked(models: &Path) -> Vec<String> {
    let mut out: Vec<String> = bytes(models)
        .into_iter()
        .filter(|(_, b)| String::from_utf8_lossy(b).contains("# >>> pysplice sglang-hs-dump/"))
        .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

fn run_env(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(common::program("sglang-hs-dump"));
    command.args(args);
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("the binary runs")
}

fn run(args: &[&str]) -> Output {
    run_env(args, &[])
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("an exit code")
}

/// `--arch Qwen3MoeForCausalLM` patched `qwen2_moe.py` and `qwen3_moe.py`: a revert or check of
/// the folder, the package or `--installed`-style paths without `--arch` covers both (and
/// `deepseek_v2.py` when it is patched too), never only `deepseek_v2.py`.
#[test]
fn revert_and_check_without_arch_cover_every_patched_file() {
    let dir = copy("cover", "0.5.23");
    let models = dir.join("sglang/srt/models");
    let (m, package) = (models.to_str().unwrap(), dir.join("sglang"));
    let original = bytes(&models);
    let out = run(&[m, "--arch", "Qwen3MoeForCausalLM"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(marked(&models), ["qwen2_moe.py", "qwen3_moe.py"]);
    let patched = bytes(&models);

    for path in [m, package.to_str().unwrap()] {
        let out = run(&[path, "--check"]);
        assert_eq!(code(&out), 0, "{path}: {}{}", stdout(&out), stderr(&out));
        let text = stdout(&out);
        assert!(
            text.contains(&format!(
                "{m}: files carrying the patch: qwen2_moe.py, qwen3_moe.py; checking them"
            )),
            "{text}"
        );
        assert!(text.contains(&format!("{m}/qwen2_moe.py: up to date")), "{text}");
        assert!(text.contains(&format!("{m}/qwen3_moe.py: up to date")), "{text}");
        assert!(!text.contains("deepseek_v2.py: needs apply"), "{text}");
        let out = run(&[path, "--revert", "--dry-run"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(stdout(&out).contains(&format!("--- a/{}/qwen3_moe.py", m.trim_start_matches('/'))));
        assert_eq!(bytes(&models), patched, "{path}: a dry run wrote");
    }

    let out = run(&[package.to_str().unwrap(), "--revert"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&format!("Reverted {m}/qwen2_moe.py")), "{text}");
    assert!(text.contains(&format!("Reverted {m}/qwen3_moe.py")), "{text}");
    assert!(!text.contains("Nothing to revert"), "{text}");
    assert_eq!(bytes(&models), original, "the revert gives back every original byte");

    // With deepseek_v2.py patched on its own as well: all three.
    assert_eq!(code(&run(&[m, "--arch", "Qwen3MoeForCausalLM"])), 0);
    assert_eq!(code(&run(&[&format!("{m}/deepseek_v2.py")])), 0);
    assert_eq!(marked(&models), ["deepseek_v2.py", "qwen2_moe.py", "qwen3_moe.py"]);
    let out = run(&[m, "--check"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let out = run(&[m, "--revert"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("files carrying the patch: deepseek_v2.py, qwen2_moe.py, qwen3_moe.py"));
    assert_eq!(bytes(&models), original);
    // Nothing left: the one-file answer, as before.
    let out = run(&[m, "--revert"]);
    assert_eq!(code(&out), 0);
    assert_eq!(stdout(&out), format!("Nothing to revert in {m}/deepseek_v2.py\n"));
    assert_eq!(bytes(&models), original);
}

/// A check without `--arch` of a folder where a patched file serves no architecture any more
/// (its `EntryClass` taken out by hand): refused, naming the file, nothing written.
#[test]
fn check_without_arch_names_a_patched_file_it_cannot_place() {
    let dir = copy("stray", "0.5.23");
    let models = dir.join("sglang/srt/models");
    let m = models.to_str().unwrap();
    assert_eq!(code(&run(&[m, "--arch", "Qwen3MoeForCausalLM"])), 0);
    let qwen3 = models.join("qwen3_moe.py");
    let text = std::fs::read_to_string(&qwen3).unwrap();
    let entry = text.lines().find(|l| l.starts_with("EntryClass")).unwrap().to_string();
    std::fs::write(&qwen3, text.replace(&entry, "")).unwrap();
    let before = bytes(&models);
    let out = run(&[m, "--check"]);
    assert_eq!(code(&out), 2, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "{m}: qwen3_moe.py carry this recipe's markers but serve no architecture patched here (none whose \
             __init__ has the capture hook); check them with --arch CLASS, or remove the patch with --revert\n"
        )
    );
    assert_eq!(bytes(&models), before);
    let out = run(&[m, "--revert"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(marked(&models), Vec::<String>::new());
}

/// `--revert FILE` of a file `--arch` patched names the classes of that file, never
/// `DeepseekV2Model`; apply and `--json` do too.
#[test]
fn summaries_name_the_class_actually_patched() {
    let dir = copy("summaries", "0.5.23");
    let models = dir.join("sglang/srt/models");
    let m = models.to_str().unwrap();
    let original = bytes(&models);
    let out = run(&[m, "--arch", "Qwen3MoeForCausalLM"]);
    assert_eq!(code(&out), 0);
    let text = stdout(&out);
    assert!(
        text.contains("  - Added _hs_dump init in Qwen2MoeModel.__init__ (lines "),
        "{text}"
    );
    assert!(
        text.contains("  - Added _hs_dump init in Qwen3MoeModel.__init__ (lines "),
        "{text}"
    );
    assert!(
        text.contains("  - Added dump logic in Qwen2MoeModel.forward (lines "),
        "{text}"
    );
    assert!(
        text.contains("  - Auto-enabled aux hidden state capture in Qwen3MoeForCausalLM.__init__ (lines "),
        "{text}"
    );
    assert!(
        !text.contains("the model's") && !text.contains("the architecture's"),
        "{text}"
    );
    let out = run(&[m, "--arch", "Qwen3MoeForCausalLM", "--check", "--json"]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains("Added _hs_dump init in Qwen3MoeModel.__init__"));

    let qwen3 = models.join("qwen3_moe.py");
    let out = run(&[qwen3.to_str().unwrap(), "--revert"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("  - removed: Added _hs_dump init in Qwen3MoeModel.__init__\n"),
        "{text}"
    );
    assert!(
        text.contains("  - removed: Auto-enabled aux hidden state capture in Qwen3MoeForCausalLM.__init__\n"),
        "{text}"
    );
    assert!(text.contains("  - not present: Added dump logic\n"), "{text}");
    assert!(!text.contains("DeepseekV2"), "{text}");
    assert_eq!(std::fs::read(&qwen3).unwrap(), original[&qwen3]);
}

/// `Glm4vForConditionalGeneration` is served by 0.5.23 but lost its aux capture after 0.5.3:
/// said so, with the folder named without a line or column, and nothing written.
#[test]
fn an_architecture_without_capture_in_this_release_is_named_as_such() {
    let dir = copy("glm4v", "0.5.23");
    let models = dir.join("sglang/srt/models");
    let m = models.to_str().unwrap();
    let original = bytes(&models);
    let out = run(&[m, "--arch", "Glm4vForConditionalGeneration"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out),
        format!(
            "{m}: `Glm4vForConditionalGeneration` is a class of this release (glm4v.py) but has no aux capture \
             in it: neither it nor a class it inherits from defines set_eagle3_layers_to_capture, so its hidden \
             states cannot be dumped for EAGLE-3 here (docs/sglang.md's architecture table gives the releases \
             that have it)\n"
        )
    );
    assert_eq!(bytes(&models), original);
    // A name no class has keeps the did-you-mean answer, also without `:1:1:`.
    let out = run(&[m, "--arch", "NoSuchModelForCausalLM"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).starts_with(&format!("{m}: `NoSuchModelForCausalLM` is none of the classes")),
        "{}",
        stderr(&out)
    );
    // The release the table gives as its last with capture patches it.
    let old = copy("glm4v-0.5.3", "0.5.3");
    let models = old.join("sglang/srt/models");
    let out = run(&[
        models.to_str().unwrap(),
        "--arch",
        "Glm4vForConditionalGeneration",
        "--dry-run",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let table = std::fs::read_to_string(Path::new(common::WORKSPACE).join("docs/sglang.md")).unwrap();
    assert!(table.contains("| `Glm4vForConditionalGeneration` | glm4v.py | 0.5.2 | 0.5.3 |"));
}

/// A hub id for `--model-path`: the one snapshot of the local hub cache when there is one (said
/// on stderr), else a message saying to pass the local snapshot folder.
#[test]
fn a_hub_id_is_looked_up_in_the_local_hub_cache() {
    let dir = copy("hub", "0.5.23");
    let models = dir.join("sglang/srt/models");
    let m = models.to_str().unwrap();
    let original = bytes(&models);
    let cache = dir.join("hub");
    std::fs::create_dir_all(&cache).unwrap();
    let args = [m, "--model-path", "Qwen/Qwen3-30B-A3B", "--dry-run"];
    let out = run_env(&args, &[("HF_HUB_CACHE", &cache)]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out),
        format!(
            "Qwen/Qwen3-30B-A3B: no such folder; this looks like a Hugging Face hub id, and the local hub cache \
             ({}) holds no snapshot of it with a config.json: download it (`huggingface-cli download \
             Qwen/Qwen3-30B-A3B`) or pass the local folder of the model (its snapshot folder, which holds \
             config.json)\n",
            cache.display()
        )
    );
    let snapshot = |rev: &str| {
        let folder = cache.join("models--Qwen--Qwen3-30B-A3B/snapshots").join(rev);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("config.json"),
            r#"{"architectures": ["Qwen3MoeForCausalLM"]}"#,
        )
        .unwrap();
        folder
    };
    let one = snapshot("0123abcd");
    // Found through HF_HOME as well ($HF_HOME/hub).
    let out = run_env(&args, &[("HF_HOME", &dir)]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).starts_with(&format!(
        "note: --model-path Qwen/Qwen3-30B-A3B is a Hugging Face hub id; using its snapshot {} from the local hub cache\n",
        one.display()
    )));
    assert!(stdout(&out).contains("Qwen3MoeForCausalLM (qwen3_moe.py): qwen3_moe.py, qwen2_moe.py"));
    let two = snapshot("4567ef01");
    let out = run_env(&args, &[("HF_HUB_CACHE", &cache)]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains(&format!(
        "holds 2 snapshots of it: pass the one to use as --model-path ({}, {})",
        one.display(),
        two.display()
    )));
    assert_eq!(bytes(&models), original);
}

/// `--python` given a virtual environment's folder: says which interpreter to pass.
#[test]
fn python_given_a_venv_folder_names_its_interpreter() {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sglang_trips/venv");
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    let out = run(&["--installed", "--python", venv.to_str().unwrap()]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out),
        format!(
            "`{0}` is a folder, not an interpreter; pass its interpreter: --python {0}/bin/python\n",
            venv.display()
        )
    );
    assert_eq!(stdout(&out), "");
}

/// `--arch` says what a run of one file says: the release in "Server flags", an example launch
/// line, "Undo with:" (which undoes it), and diff headers with the path as given.
#[test]
fn arch_output_matches_the_one_file_output() {
    let dir = copy("parity", "0.5.23");
    let models = dir.join("sglang/srt/models");
    let m = models.to_str().unwrap();
    let original = bytes(&models);
    let out = run(&[m, "--arch", "Qwen3MoeForCausalLM", "--dry-run"]);
    assert_eq!(code(&out), 0);
    let headers = m.trim_start_matches('/');
    assert!(stdout(&out).contains(&format!("--- a/{headers}/qwen3_moe.py\n+++ b/{headers}/qwen3_moe.py\n")));
    let one = run(&[&format!("{m}/deepseek_v2.py"), "--dry-run"]);
    assert!(stdout(&one).contains(&format!("--- a/{headers}/deepseek_v2.py\n")));

    let out = run(&[m, "--arch", "Qwen3MoeForCausalLM", "--sglang-version", "0.5.23"]);
    assert_eq!(code(&out), 0);
    let text = stdout(&out);
    let flags = "--disable-cuda-graph --disable-radix-cache --skip-server-warmup --disable-overlap-schedule";
    assert!(
        text.contains(&format!(
            "Server flags for SGLang 0.5.23 (from --sglang-version):\n  {flags}"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "e.g. SGLANG_HS_DUMP_DIR=/dev/shm/sglang_hs python3 -m sglang.launch_server --model-path MODEL {flags}"
        )),
        "{text}"
    );
    let undo = format!("Undo with: sglang-hs-dump --revert {m} --arch Qwen3MoeForCausalLM\n");
    assert!(text.ends_with(&undo), "{text}");
    let one = run(&[&format!("{m}/deepseek_v2.py"), "--sglang-version", "0.5.23"]);
    let one = stdout(&one);
    assert!(one.contains(&format!(
        "Server flags for SGLang 0.5.23 (from --sglang-version):\n  {flags}"
    )));
    assert!(
        one.ends_with(&format!("Undo with: sglang-hs-dump --revert {m}/deepseek_v2.py\n")),
        "{one}"
    );
    assert_eq!(code(&run(&["--revert", &format!("{m}/deepseek_v2.py")])), 0);
    // The undo line, run as printed, gives back every byte.
    let out = run(&["--revert", m, "--arch", "Qwen3MoeForCausalLM"]);
    assert_eq!(code(&out), 0);
    assert_eq!(bytes(&models), original);
}

/// The demo removes its temporary folder when it ends, and says so.
#[test]
fn the_demo_leaves_no_temporary_folder_behind() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sglang_trips/demo-tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    for extra in [&[][..], &["--dry-run"], &["--json"]] {
        let out = run_env(extra, &[("TMPDIR", &tmp)]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(
            std::fs::read_dir(&tmp).unwrap().count(),
            0,
            "{extra:?}: left in {}",
            tmp.display()
        );
    }
    let out = run_env(&[], &[("TMPDIR", &tmp)]);
    assert!(stdout(&out).ends_with("The demo copy and its temporary folder are removed as this run ends.\n"));
    assert!(!stdout(&out).contains("Undo with"));
}

/// `--revert --dry-run` of a file that is not patched says there is nothing to revert, then that
/// nothing was written.
#[test]
fn revert_dry_run_of_an_unpatched_file_says_there_is_nothing_to_revert() {
    let dir = copy("dry", "0.5.23");
    let file = dir.join("sglang/srt/models/deepseek_v2.py");
    let f = file.to_str().unwrap();
    let original = std::fs::read(&file).unwrap();
    let out = run(&[f, "--revert", "--dry-run"]);
    assert_eq!(code(&out), 0);
    assert_eq!(stdout(&out), format!("Nothing to revert in {f}\n"));
    assert_eq!(stderr(&out), format!("dry run: nothing was written to {f}\n"));
    assert_eq!(std::fs::read(&file).unwrap(), original);
    let m = dir.join("sglang/srt/models");
    let out = run(&[
        m.to_str().unwrap(),
        "--arch",
        "Qwen3MoeForCausalLM",
        "--revert",
        "--dry-run",
    ]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains(&format!("Nothing to revert in {}/qwen3_moe.py\n", m.display())));
    assert_eq!(stderr(&out), "dry run: nothing was written\n");
}
