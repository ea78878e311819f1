//! Marker and recipe trust end to end, through the `pysplice` example binary: forged, missing
//! and duplicated markers, stacked recipes, imports shared by two recipes, dropped hooks and
//! bad recipes. Each case checks the exit code (0 success, 1 refused, 2 bad spec), the message,
//! and the file's bytes before and after.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::program("pysplice"))
}

/// A fresh temporary folder, removed when dropped.
struct Temp(PathBuf);

impl Temp {
    fn new() -> Temp {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("pysplice-cli-markers-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp folder");
        Temp(dir)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let to = self.0.join(name);
        std::fs::write(&to, text).expect("write");
        to
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(command: &str, spec: &Path, file: &Path) -> Output {
    Command::new(binary())
        .arg(command)
        .arg("--spec")
        .arg(spec)
        .arg(file)
        .output()
        .expect("the binary runs")
}

fn text(path: &Path) -> String {
    String::from_utf8(std::fs::read(path).expect("readable")).expect("UTF-8")
}

fn show(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs `command` and checks exit 0; returns stdout.
#[track_caller]
fn succeeds(command: &str, spec: &Path, file: &Path) -> String {
    let output = run(command, spec, file);
    assert_eq!(output.status.code(), Some(0), "{}", show(&output));
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// Runs `command`, checks the exit code, that stderr has each of `has`, and that `file` kept
/// its bytes.
#[track_caller]
fn refuses(command: &str, spec: &Path, file: &Path, code: i32, has: &[&str]) {
    let before = std::fs::read(file).expect("readable");
    let output = run(command, spec, file);
    assert_eq!(output.status.code(), Some(code), "{command}: {}", show(&output));
    assert_eq!(
        std::fs::read(file).expect("readable"),
        before,
        "{command} changed the file"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    for needle in has {
        assert!(
            stderr.contains(needle),
            "{command}: stderr lacks {needle:?}\n{}",
            show(&output)
        );
    }
}

/// 1-based line of the first line of `text` containing `needle`.
#[track_caller]
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no `{needle}` in\n{text}"))
        + 1
}

/// Recipe `id`: its own `os` import, a helper at the module's end, and the returns of `f`
/// wrapped in the helper.
fn wrapping_spec(id: &str) -> String {
    format!(
        r#"[recipe]
id = "{id}"
summary = "recipe {id}"

[[hook]]
id = "imports"
summary = "{id}: imports"
ensure-imports = ["os"]

[[hook]]
id = "helper"
summary = "{id}: helper"
at = "end"
code = '''
def _{id}_wrap(x):
    return (x, os.sep)
'''

[[hook]]
id = "wrap"
summary = "{id}: wraps the returns"
in = "f"
wrap-returns = "_{id}_wrap({{value}})"
"#
    )
}

const ORIGINAL: &str = "def f(y):\n    if y:\n        return y\n    return 0\n";

/// Runs the module in CPython and evaluates `calls`; panics with Python's error.
#[track_caller]
fn runs_in_python(file: &Path, calls: &[&str]) {
    let script = format!(
        "import sys\nns = {{}}\nexec(compile(open(sys.argv[1]).read(), 'm.py', 'exec'), ns)\nfor call in {calls:?}:\n    eval(call, ns)\n"
    );
    let output = Command::new("python3")
        .arg("-c")
        .arg(&script)
        .arg(file)
        .output()
        .expect("python3 runs");
    assert!(output.status.success(), "{}\n{}", show(&output), text(file));
}

#[test]
fn regression_a_forged_was_is_refused_by_every_command() {
    // Actual: revert exited 0 and wrote the forged `was=` text as code.
    let t = Temp::new();
    let spec = t.write("a.toml", &wrapping_spec("a"));
    let file = t.write("m.py", ORIGINAL);
    succeeds("apply", &spec, &file);
    let forged = text(&file).replacen(r#"was="return 0""#, r#"was="return os.system('id')""#, 1);
    std::fs::write(&file, &forged).unwrap();
    let at = format!("m.py:{}:1: ", line_of(&forged, "os.system"));
    for command in ["revert", "apply", "check"] {
        refuses(
            command,
            &spec,
            &file,
            1,
            &[&at, "edited by hand", "[hook wrap]", "nothing was written"],
        );
    }
    assert!(!text(&file).contains("    return os.system"));
}

#[test]
fn regression_a_deleted_inline_marker_line_is_refused() {
    // Actual: apply wrapped the return twice; revert exited 0 and left `_a_wrap(0)` behind with
    // the helper gone.
    let t = Temp::new();
    let spec = t.write("a.toml", &wrapping_spec("a"));
    let file = t.write("m.py", ORIGINAL);
    succeeds("apply", &spec, &file);
    let damaged: String = text(&file)
        .split_inclusive('\n')
        .filter(|l| !l.contains(" at=4 "))
        .collect();
    std::fs::write(&file, &damaged).unwrap();
    let at = format!("m.py:{}:5: ", line_of(&damaged, "return _a_wrap(0)"));
    for command in ["apply", "revert", "check"] {
        refuses(command, &spec, &file, 1, &[&at, "marker line deleted", "[hook wrap]"]);
    }
}

#[test]
fn regression_imports_shared_by_two_recipes_survive_either_revert_order() {
    // Actual: the second recipe counted the first one's framed `import os` as present; reverting
    // the first left a NameError behind while revert exited 0.
    let t = Temp::new();
    let a = t.write("a.toml", &wrapping_spec("a"));
    // `b` wraps another function, so the two recipes do not stack.
    let b = t.write("b.toml", &wrapping_spec("b").replace("in = \"f\"", "in = \"g\""));
    let original = "def f(y):\n    return y\n\ndef g(y):\n    return y\n";
    for (first, second) in [(&a, &b), (&b, &a)] {
        for revert_first in [first, second] {
            let revert_second = if revert_first == first { second } else { first };
            let file = t.write("m.py", original);
            succeeds("apply", first, &file);
            succeeds("apply", second, &file);
            runs_in_python(&file, &["f(1)", "g(1)"]);
            let out = succeeds("revert", revert_first, &file);
            assert!(out.starts_with("Reverted "), "{out}");
            // What is left still runs: the remaining recipe's import is its own.
            runs_in_python(&file, &["f(1)", "g(1)"]);
            succeeds("revert", revert_second, &file);
            assert_eq!(text(&file), original);
        }
    }
}

#[test]
fn regression_reverting_stacked_recipes_out_of_order_names_the_top_one() {
    // Actual: "edited by hand".
    let t = Temp::new();
    let a = t.write("a.toml", &wrapping_spec("a"));
    let b = t.write("b.toml", &wrapping_spec("b"));
    let file = t.write("m.py", ORIGINAL);
    succeeds("apply", &a, &file);
    succeeds("apply", &b, &file);
    let both = text(&file);
    let at = format!(
        "m.py:{}:1: recipe `b` was applied on top",
        line_of(&both, "pysplice a/wrap")
    );
    refuses("revert", &a, &file, 1, &[&at, "revert `b` first", "[hook wrap]"]);
    succeeds("revert", &b, &file);
    succeeds("revert", &a, &file);
    assert_eq!(text(&file), ORIGINAL);
}

#[test]
fn regression_a_dropped_hook_is_reported_as_removed() {
    // Actual: "Already up to date" although the file changed.
    let t = Temp::new();
    let spec = t.write("a.toml", &wrapping_spec("a"));
    let file = t.write("m.py", ORIGINAL);
    succeeds("apply", &spec, &file);
    let patched = text(&file);
    let newer = wrapping_spec("a");
    let newer = &newer[..newer.find("[[hook]]\nid = \"helper\"").unwrap()];
    let newer_spec = t.write("newer.toml", newer);
    let check = run("check", &newer_spec, &file);
    assert_eq!(check.status.code(), Some(1), "{}", show(&check));
    assert!(
        String::from_utf8_lossy(&check.stdout).contains("needs apply"),
        "{}",
        show(&check)
    );
    let out = succeeds("apply", &newer_spec, &file);
    assert!(out.starts_with("Successfully patched "), "{out}");
    assert!(
        out.contains("  - removed: hook `helper` is no longer in the recipe"),
        "{out}"
    );
    assert!(
        out.contains("  - removed: hook `wrap` is no longer in the recipe"),
        "{out}"
    );
    let now = text(&file);
    assert_ne!(now, patched);
    assert!(
        !now.contains("_a_wrap") && now.contains("# >>> pysplice a/imports "),
        "{now}"
    );
    let again = succeeds("apply", &newer_spec, &file);
    assert!(again.starts_with("Already up to date: "), "{again}");
}

#[test]
fn bad_recipes_exit_2_naming_the_toml_position_and_hook() {
    let t = Temp::new();
    let file = t.write("m.py", ORIGINAL);
    let head = "[recipe]\nid = \"r\"\nsummary = \"s\"\n[[hook]]\nid = \"h\"\nsummary = \"s\"\nin = \"f\"\n";
    let cases = [
        (
            format!("{head}at = \"end\"\ncode = '''\nx = 1\n# <<< pysplice r/h\n'''\n"),
            "s.toml:11:3: bad spec: the code has a line that looks like a pysplice marker",
        ),
        (
            format!("{head}at = \"end\"\ncode = \"x = {{undefined}}\"\n"),
            "s.toml:9:13: bad spec: `{undefined}` names no variable",
        ),
        (
            format!("{head}at = \"end\"\ncode = \"print({{value}})\"\n"),
            "s.toml:9:15: bad spec: `{value}` (the returned value) exists only in `wrap-returns`",
        ),
    ];
    for (spec_text, message) in cases {
        let spec = t.write("s.toml", &spec_text);
        for command in ["apply", "revert", "check"] {
            refuses(command, &spec, &file, 2, &[message, "[hook h]"]);
        }
    }
    assert_eq!(text(&file), ORIGINAL);
}

#[test]
fn regression_sglang_hs_dump_refuses_a_file_missing_a_marker_line() {
    // Actual: a deleted `# ~~~` line made the next run wrap the return again (the dump then ran
    // twice per prefill), and --revert exited 0 leaving a call to the removed helper.
    let t = Temp::new();
    let demo = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../crates/pysplice-sglang/data/demo_model.py"
    ))
    .unwrap();
    let file = t.write("deepseek_v2.py", &demo);
    let dump = common::program("sglang_hs_dump");
    let run_dump = |args: &[&str]| {
        Command::new(&dump)
            .args(args)
            .arg(&file)
            .arg("--sglang-version")
            .arg("0.5.10")
            .output()
            .expect("runs")
    };
    let first = run_dump(&[]);
    assert_eq!(first.status.code(), Some(0), "{}", show(&first));
    let patched = text(&file);
    let inline = patched
        .lines()
        .position(|l| l.contains("# ~~~ pysplice sglang-hs-dump/dump"))
        .unwrap();
    let damaged: String = patched
        .split_inclusive('\n')
        .enumerate()
        .filter(|(i, _)| *i != inline)
        .map(|(_, l)| l)
        .collect();
    std::fs::write(&file, &damaged).unwrap();
    let wrapped = damaged
        .lines()
        .skip(inline)
        .position(|l| l.contains("_pysplice_hs_dump(self"))
        .unwrap()
        + inline
        + 1;
    for args in [&[][..], &["--revert"], &["--check"]] {
        let output = run_dump(args);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {}", show(&output));
        assert_eq!(text(&file), damaged, "{args:?} changed the file");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!("deepseek_v2.py:{wrapped}:")) && stderr.contains("[hook dump]"),
            "{args:?}: {}",
            show(&output)
        );
    }
}

/// `text` with every seal replaced by the 8-digit hash that markers carried before the seal
/// (FNV-1a of what the marker frames, low 32 bits).
fn to_legacy(text: &str) -> String {
    let hash = |text: &str| {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in text.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        format!("{:08x}", hash & 0xffff_ffff)
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(at) = line.find("sha256:") else {
            out.push_str(line);
            continue;
        };
        let number = |key: &str| -> usize {
            line.split(key)
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        let content = if line.contains("# ~~~ pysplice ") {
            let (column, len) = (number(" at="), number(" len="));
            lines[i + 1][column..column + len].to_string()
        } else {
            let end = lines[i + 1..]
                .iter()
                .position(|l| l.contains("# <<< pysplice "))
                .unwrap();
            lines[i + 1..i + 1 + end].concat()
        };
        out.push_str(&line[..at]);
        out.push_str(&hash(&content));
        out.push_str(&line[at + "sha256:".len() + 64..]);
    }
    out
}

#[test]
fn a_file_patched_with_the_older_markers_is_outdated_then_migrated() {
    let t = Temp::new();
    let spec = t.write("a.toml", &wrapping_spec("a"));
    let file = t.write("m.py", ORIGINAL);
    succeeds("apply", &spec, &file);
    let fresh = text(&file);
    let legacy = to_legacy(&fresh);
    assert!(!legacy.contains("sha256:"), "{legacy}");
    std::fs::write(&file, &legacy).unwrap();
    let check = run("check", &spec, &file);
    assert_eq!(check.status.code(), Some(1), "{}", show(&check));
    assert!(
        String::from_utf8_lossy(&check.stdout).contains("  - wrap: outdated"),
        "{}",
        show(&check)
    );
    assert_eq!(text(&file), legacy, "check wrote");
    let out = succeeds("apply", &spec, &file);
    assert!(
        out.starts_with("Successfully patched ") && out.contains("[updated]"),
        "{out}"
    );
    assert_eq!(text(&file), fresh);
    // Reverting an older file works too.
    std::fs::write(&file, &legacy).unwrap();
    succeeds("revert", &spec, &file);
    assert_eq!(text(&file), ORIGINAL);
}
