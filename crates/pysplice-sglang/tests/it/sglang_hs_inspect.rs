//! `sglang-hs-inspect`, the native launcher of the dump-folder checker: it starts the interpreter
//! named by `--python` on the checker built into it, passes the arguments through and hands back
//! the checker's exit status. Runs without PyTorch: the checker imports it only to read samples,
//! so its usage, a missing folder and an empty one are answered by any `python3`.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

fn inspect(args: &[&str]) -> Output {
    Command::new(common::program("sglang-hs-inspect"))
        .args(args)
        .output()
        .expect("the launcher runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `python3` where there is one (the launcher's default interpreter); the tests that run the
/// checker itself need it.
fn python3() -> bool {
    Command::new("python3")
        .arg("-c")
        .arg("pass")
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_folder_given_as_the_interpreter_is_refused_naming_its_interpreter() {
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().display().to_string();
    let out = inspect(&["--python", &venv, "x"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains(&format!("--python {venv}/bin/python")), "{err}");
}

#[test]
fn a_missing_interpreter_is_named_with_what_it_needs() {
    let out = inspect(&["--python=/no/such/python", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("cannot run `/no/such/python`") && err.contains("has torch"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn the_checker_is_run_with_the_arguments_and_its_exit_status_is_kept() {
    use std::os::unix::fs::PermissionsExt;
    // a stand-in interpreter: writes its arguments, one per line, and exits 7
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("args");
    let fake = dir.path().join("python");
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > '{}'\nexit 7\n",
        seen.display()
    );
    std::fs::write(&fake, script).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let python = fake.display().to_string();
    let out = inspect(&["dumpA", "--json", "--python", &python, "dumpB"]);
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    let args = std::fs::read_to_string(&seen).unwrap();
    let (first, rest) = args.split_once('\n').unwrap();
    assert_eq!(first, "-c");
    // the program, then the arguments as given
    let tail: Vec<&str> = rest.lines().rev().take(5).collect();
    assert_eq!(tail, ["dumpB", &python, "--python", "--json", "dumpA"]);
    let checker = include_str!("../../python/pysplice_sglang/inspector.py");
    let first_line = checker.lines().next().unwrap().trim_start_matches('"');
    assert!(rest.contains(first_line), "the checker's text is not in the program");
}

#[test]
fn the_built_in_checker_answers_usage_and_folders_without_torch() {
    if !python3() {
        eprintln!("skipped: no python3");
        return;
    }
    let out = inspect(&["--help"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let help = text(&out.stdout);
    for flag in ["--json", "--png FILE", "--png-size", "DIR"] {
        assert!(help.contains(flag), "{flag} not in the help:\n{help}");
    }
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let out = inspect(&[&missing.display().to_string()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not a folder"), "{}", text(&out.stderr));
    // an empty folder: no sample is not a clean folder
    let empty = dir.path().display().to_string();
    let out = inspect(&["--json", &empty]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["ok"], false);
    assert_eq!(report["complete"], 0);
    assert!(
        !Path::new(&empty).join("lengths.png").exists(),
        "a PNG was written without --png"
    );
}

#[cfg(unix)]
#[test]
fn without_pytorch_one_line_and_exit_2_not_a_line_per_file() {
    use std::os::unix::fs::PermissionsExt;
    if !python3() {
        eprintln!("skipped: no python3");
        return;
    }
    // python3 with `import torch` failing, whatever it has installed: the program given after
    // `-c` runs with torch hidden from it
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("python-without-torch");
    std::fs::write(
        &fake,
        "#!/bin/sh\nwhile [ $# -gt 0 ] && [ \"$1\" != -c ]; do shift; done; shift\n\
         exec python3 -c 'import sys; sys.modules[\"torch\"] = None; p = sys.argv.pop(1); \
         exec(compile(p, \"<program>\", \"exec\"), {\"__name__\": \"__main__\"})' \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dump = dir.path().join("dump");
    std::fs::create_dir(&dump).unwrap();
    for name in ["a.ckpt", "b.ckpt", "c.ckpt.partial"] {
        std::fs::write(dump.join(name), b"PK\x03\x04").unwrap();
    }
    let python = fake.display().to_string();
    let out = inspect(&["--python", &python, &dump.display().to_string()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert_eq!(text(&out.stdout), "");
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("PyTorch") && err.contains("--python"), "{err}");
}
