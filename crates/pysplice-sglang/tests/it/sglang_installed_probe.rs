//! `sglang_hs_dump --installed --python X` against interpreters that misbehave (shell scripts
//! standing in for Python): one that hangs, one that floods its output, one that answers and
//! leaves a background child holding its standard output, one that prints garbage. Each run ends
//! within a bounded time with its exit code and message, and nothing the interpreter started
//! survives it.
//!
//! The program's output goes to files, not pipes: a leftover child holding a pipe cannot keep the
//! test waiting, and a watchdog kills a run that does not end, so the test fails instead of
//! hanging.
#![cfg(unix)]

use crate::common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a run may take before the test calls it hung (the probe's own limit is 20 s, set to 2 s
/// where a case waits for it).
const WATCHDOG: Duration = Duration::from_secs(40);
/// The bound each run must meet.
const BOUND: Duration = Duration::from_secs(10);

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    wall: Duration,
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("installed_probe")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An executable shell script at `dir/python`.
fn fake_python(dir: &Path, script: &str) -> PathBuf {
    let path = dir.join("python");
    std::fs::write(&path, format!("#!/bin/sh\n{script}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Runs `sglang_hs_dump --installed --python PYTHON ARGS` in `dir`, killing it (and failing) after
/// [`WATCHDOG`].
fn installed(dir: &Path, python: &Path, args: &[&str]) -> Run {
    let mut command = Command::new(common::program("sglang_hs_dump"));
    command.arg("--installed").arg("--python").arg(python).args(args);
    run_in(dir, command)
}

/// Runs `command` in `dir` as [`installed`] does.
fn run_in(dir: &Path, mut command: Command) -> Run {
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let start = Instant::now();
    let mut child = command
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("the program runs");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > WATCHDOG {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "still running after {WATCHDOG:?}; stderr so far: {}",
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        code: status.code(),
        stdout: std::fs::read_to_string(&out).unwrap(),
        stderr: std::fs::read_to_string(&err).unwrap(),
        wall: start.elapsed(),
    }
}

/// Whether process `pid` (written by a fake interpreter into `file`) still runs; a zombie that
/// nobody has reaped yet counts as gone.
fn alive(file: &Path) -> bool {
    let pid = std::fs::read_to_string(file).unwrap_or_else(|_| panic!("no pid in {}", file.display()));
    let pid = pid.trim();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        let running = match state {
            // The state follows the parenthesised command name.
            Some(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| !rest.trim_start().starts_with('Z')),
            None if Path::new("/proc/self/stat").exists() => false,
            None => Command::new("kill")
                .args(["-0", pid])
                .status()
                .is_ok_and(|s| s.success()),
        };
        // A kill takes a moment to land.
        if !running || Instant::now() > deadline {
            return running;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills, when dropped (also when the test fails), the process whose id a fake interpreter wrote
/// into the file: a leftover of a failed run must not outlive the test.
struct Leftover(PathBuf);

impl Drop for Leftover {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(&self.0) {
            let _ = Command::new("kill")
                .args(["-9", pid.trim()])
                .stderr(Stdio::null())
                .status();
        }
    }
}

#[test]
fn an_interpreter_that_hangs_is_stopped_at_the_limit() {
    let dir = scratch("hang");
    let pids = dir.join("pid");
    let _leftover = Leftover(pids.clone());
    let python = fake_python(&dir, &format!("echo $$ > '{}'\nexec sleep 1000\n", pids.display()));
    let run = installed(&dir, &python, &["--check", "--probe-timeout", "2"]);
    assert_eq!(run.code, Some(2), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(
        run.stderr.contains(&format!(
            "`{}` did not answer within 2 s when asked where SGLang is, and was stopped with all it started \
             (raise the limit with --probe-timeout SECONDS)",
            python.display()
        )),
        "{}",
        run.stderr
    );
    assert!(run.wall < BOUND, "{:?}", run.wall);
    assert!(!alive(&pids), "the hung interpreter survived");
}

#[test]
fn an_interpreter_that_floods_its_output_is_stopped_at_the_limit() {
    let dir = scratch("flood");
    // Endless output on both pipes: read as it comes (the writer never blocks), kept bounded.
    let python = fake_python(&dir, "yes '{\"not\": \"the answer\"' >&2 &\nexec yes garbage\n");
    let run = installed(&dir, &python, &["--check", "--probe-timeout", "2"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("did not answer within 2 s"), "{}", run.stderr);
    assert!(run.stderr.len() < 4096, "{} bytes of message", run.stderr.len());
    assert!(run.wall < BOUND, "{:?}", run.wall);
}

/// The interpreter answers and exits, but a child it started in the background keeps its
/// standard output open: the answer is taken at its exit, not when the pipe closes, and the child
/// is killed. Without a time limit given: the default one is never reached.
#[test]
fn an_answer_with_a_child_holding_the_output_is_taken_at_once() {
    let dir = scratch("child");
    let package = dir.join("site/sglang");
    let file = package.join("srt/models/deepseek_v2.py");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(package.join("__init__.py"), "").unwrap();
    let model = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/demo_model.py")).unwrap();
    std::fs::write(&file, &model).unwrap();
    let answer = serde_json::json!({
        "executable": "/fake/python", "version": "3.12.0",
        "origin": package.join("__init__.py"), "has_location": true, "package": true,
        "locations": [package],
    });
    let pids = dir.join("pid");
    let _leftover = Leftover(pids.clone());
    let python = fake_python(
        &dir,
        &format!("sleep 1000 &\necho $! > '{}'\necho '{answer}'\n", pids.display()),
    );
    let run = installed(&dir, &python, &["--check"]);
    assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.starts_with(&format!("{}: needs apply", file.display())),
        "{}{}",
        run.stdout,
        run.stderr
    );
    assert_eq!(std::fs::read(&file).unwrap(), model, "--check wrote");
    assert!(run.wall < BOUND, "{:?}", run.wall);
    assert!(!alive(&pids), "the interpreter's background child survived");

    // And applying goes through the same way.
    let run = installed(&dir, &python, &[]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(std::fs::read_to_string(&file).unwrap().contains("_pysplice_hs_dump"));
    assert!(run.wall < BOUND, "{:?}", run.wall);
    assert!(!alive(&pids), "the interpreter's background child survived");
}

#[test]
fn garbage_is_no_answer() {
    let dir = scratch("garbage");
    let pids = dir.join("pid");
    let _leftover = Leftover(pids.clone());
    // Not JSON on stdout, a megabyte line on stderr, and a child keeping both open.
    let python = fake_python(
        &dir,
        &format!(
            "sleep 1000 &\necho $! > '{}'\necho 'Python 3.12.0'\necho '{{\"origin\": '\nhead -c 1000000 /dev/zero | tr '\\0' x >&2\necho >&2\n",
            pids.display()
        ),
    );
    let run = installed(&dir, &python, &["--check"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(
        run.stderr.contains(&format!(
            "`{}` gave no answer when asked where SGLang is (xxxx",
            python.display()
        )),
        "{}",
        &run.stderr[..run.stderr.len().min(2000)]
    );
    assert!(run.stderr.len() < 4096, "{} bytes of message", run.stderr.len());
    assert!(run.wall < BOUND, "{:?}", run.wall);
    assert!(!alive(&pids), "the interpreter's background child survived");

    // A limit that is no number of seconds is a usage error.
    for bad in ["0", "-1", "x", "3601"] {
        let run = installed(&dir, &python, &[&format!("--probe-timeout={bad}")]);
        assert_eq!(run.code, Some(2), "{bad}: {}", run.stderr);
        assert!(
            run.stderr.contains("more than 0 and at most 3600"),
            "{bad}: {}",
            run.stderr
        );
    }
}

/// The message of a probe past its limit advises a flag to raise it: each program that can print
/// the message takes that flag, followed as written (the run ends in the same message with the
/// new limit, not in a usage error).
#[test]
fn the_flag_the_timeout_message_advises_is_taken_by_each_program() {
    let dir = scratch("advice");
    let pids = dir.join("pid");
    let _leftover = Leftover(pids.clone());
    let python = fake_python(&dir, &format!("echo $$ > '{}'\nexec sleep 1000\n", pids.display()));
    let wanted = pysplice_programs::installed::Wanted {
        name: "sglang",
        shown: "SGLang",
        remedy: "",
    };
    let message =
        pysplice_programs::installed::package_folder(python.to_str().unwrap(), wanted, Duration::from_millis(500))
            .unwrap_err();
    let advice = message
        .split("(raise the limit with ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no advice in {message:?}"));
    assert!(advice.starts_with("--"), "{message}");
    let python = python.to_str().unwrap();
    let programs: [(&str, Vec<&str>); 2] = [
        ("sglang-hs-dump", vec!["--installed", "--python", python, "--check"]),
        (
            "pysplice",
            vec![
                "check",
                "--spec",
                "builtin:sglang-hs-dump",
                "--installed",
                "sglang",
                "--python",
                python,
            ],
        ),
    ];
    for (program, args) in programs {
        let mut command = Command::new(common::program(program));
        command.args(&args).args([advice, "1.5"]);
        let run = run_in(&dir, command);
        assert_eq!(run.code, Some(2), "{program}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains("did not answer within 1.5 s")
                && run.stderr.contains(&format!("(raise the limit with {advice} SECONDS)")),
            "{program}: {}",
            run.stderr
        );
        assert!(run.wall < BOUND, "{program}: {:?}", run.wall);
        assert!(!alive(&pids), "{program}: the hung interpreter survived");
    }
}
