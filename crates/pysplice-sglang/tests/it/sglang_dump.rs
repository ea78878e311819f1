//! The `sglang-hs-dump` program end to end: the demo, a tree with its release, the launch flags
//! it prints, `--installed`, exit codes for bad input.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn original(version: &str) -> String {
    let path = common::models_dir(version).join("deepseek_v2.py");
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sglang_dump").join(name);
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

/// The program.
fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::program("sglang-hs-dump"))
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
        "  - Auto-enabled aux hidden state capture in DeepseekV2ForCausalLM.__init__ (lines ",
    ] {
        assert!(stdout.contains(summary), "{summary}\n{stdout}");
    }
    assert!(stdout.contains("\nTo use: set SGLANG_HS_DUMP_DIR=/dev/shm/sglang_hs before starting server\n"));
    // The flags of current releases, which all stitch chunked prefill: no `-1`, and one short
    // note on where other releases differ, pointing to every release's flags.
    let flags = "--disable-cuda-graph --disable-radix-cache --skip-server-warmup --disable-overlap-schedule";
    assert!(
        stdout.contains(&format!(
            "\n  {flags}\nNote: these are the flags of current releases; add "
        )),
        "{stdout}"
    );
    let to_use = &stdout[stdout.find("\nTo use:").unwrap()..];
    assert!(!to_use.contains("leave out --chunked-prefill-size"), "{to_use}");
    assert_eq!(to_use.matches("Note: ").count(), 1, "{to_use}");
    assert!(
        stdout.contains("every release's flags: sglang-hs-dump --flag-table\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "\ne.g. SGLANG_HS_DUMP_DIR=/dev/shm/sglang_hs python3 -m sglang.launch_server --model-path MODEL {flags}\n"
        )),
        "{stdout}"
    );
    // the copy and its folder are removed as the run ends (sglang_trips checks an empty TMPDIR)
    let copy = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Successfully patched "))
        .unwrap();
    assert!(!Path::new(copy).parent().unwrap().exists(), "{copy}");
}

/// The demo honours `--sglang-version`: the flags, notes and launch line of that release (text and
/// JSON), never the current releases' under the release's name.
#[test]
fn cli_demo_gives_the_flags_of_the_release_named() {
    use pysplice_sglang::launch::{self, ReleaseVersion};
    let release = ReleaseVersion::parse("0.3.6").unwrap();
    let own = launch::launch(Some(&release)).flags.join(" ");
    assert!(own.contains("--chunked-prefill-size -1"), "{own}");
    let output = run(&["--sglang-version", "0.3.6"]);
    let stdout = text(&output.stdout);
    assert_eq!(code(&output), 0, "{stdout}{}", text(&output.stderr));
    assert!(
        stdout.contains(&format!(
            "Server flags for SGLang 0.3.6 (from --sglang-version):\n  {own}\n"
        )),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("--model-path MODEL {own}\n")), "{stdout}");
    assert!(!stdout.contains("flags of current releases"), "{stdout}");
    let output = run(&["--json", "--sglang-version", "0.3.6"]);
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["demo"], true);
    assert_eq!(value["release"]["version"], "0.3.6");
    let flags: Vec<&str> = value["launch"]["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert_eq!(flags.join(" "), own);
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
        "  --disable-cuda-graph --disable-piecewise-cuda-graph --disable-radix-cache --skip-server-warmup \
         --disable-overlap-schedule\n"
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

/// The flags follow the release: read from the tree, or given with --sglang-version (which
/// beats the tree's own `_version.py`). The rules hold for the library's answer on every pinned
/// release; the program is run once per distinct answer and prints exactly it (releases with the
/// same answer take the same path through the program, as in `launch_flags.rs`).
#[test]
fn cli_launch_flags_per_release() {
    use pysplice_sglang::launch::{self, ReleaseVersion};
    let (_, file) = sglang_tree("cli_flags", "0.5.9");
    let flags = |version: &str| -> (Vec<String>, Vec<String>) {
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
        assert_eq!(value["release"]["version"], version);
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
    // (flags, notes) of each distinct answer, with the first release giving it.
    type Answer = (Vec<String>, Vec<String>);
    let mut run_for: Vec<(Answer, String)> = Vec::new();
    for version in common::pinned_versions() {
        let release = ReleaseVersion::parse(&version).expect("a pinned version parses");
        let answer = launch::launch(Some(&release));
        let f: Vec<String> = answer.flags.iter().map(|f| f.to_string()).collect();
        let notes = answer.notes.clone();
        assert!(
            has(&f, "--disable-cuda-graph") && has(&f, "--disable-radix-cache"),
            "{version}"
        );
        let piecewise = ["0.5.10", "0.5.11", "0.5.12", "0.5.13"].contains(&version.as_str());
        assert_eq!(has(&f, "--disable-piecewise-cuda-graph"), piecewise, "{version}");
        // chunked prefill turned off only where it is on and the dump cannot stitch chunks (< 0.4.6)
        let chunk_flag = ["0.2.15", "0.3.6", "0.4.4.post2"].contains(&version.as_str());
        assert_eq!(has(&f, "--chunked-prefill-size"), chunk_flag, "{version}");
        let warmup = !["0.2.6", "0.2.15", "0.3.6", "0.4.4.post2", "0.4.6"].contains(&version.as_str());
        assert_eq!(has(&f, "--skip-server-warmup"), warmup, "{version}");
        assert_eq!(notes.iter().any(|n| n.contains("warmup request")), !warmup, "{version}");
        if !run_for.iter().any(|(a, _)| *a == (f.clone(), notes.clone())) {
            run_for.push(((f, notes), version));
        }
    }
    // The answers differ across releases (chunked prefill, piecewise CUDA graphs, warmup).
    assert!(run_for.len() >= 4, "{} distinct answers", run_for.len());
    for (answer, version) in &run_for {
        assert_eq!(
            &flags(version),
            answer,
            "{version}: the program's flags are not the library's"
        );
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
    // The launch line names the interpreter whose SGLang was patched.
    assert!(
        text(&output.stdout).contains(&format!(
            "SGLANG_HS_DUMP_DIR=/dev/shm/sglang_hs {} -m sglang.launch_server --model-path MODEL ",
            python.display()
        )),
        "{}",
        text(&output.stdout)
    );
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
