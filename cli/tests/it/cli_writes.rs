//! Safe reads and writes end to end, through the `pysplice` and `sglang_hs_dump` binaries: what a
//! hostile or unlucky file system does to them (FIFOs, devices, links, planted temp files,
//! concurrent runs, files that cannot be replaced, a closed or full standard output), with the
//! exit code, the message and the file's bytes before and after.
#![cfg(unix)]

use crate::common;

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

fn pysplice() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::program("pysplice"))
}

fn hs_dump() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::program("sglang_hs_dump"))
}

const MODEL: &str =
    "class Model:\n    def forward(self, x):\n        return x\n\n    def backward(self, x):\n        return x\n";

/// A recipe that inserts `code` at the start of `Model.<method>`.
fn recipe(id: &str, method: &str, code: &str) -> String {
    format!(
        "[recipe]\nid = \"{id}\"\nsummary = \"s\"\n\n[[hook]]\nid = \"h\"\nsummary = \"Added {code}\"\nin = \"Model.{method}\"\nat = \"start\"\ncode = \"{code}\"\n"
    )
}

struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    fn new() -> Dir {
        Dir {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path().join(name);
        fs::write(&path, text).expect("write");
        path
    }

    fn spec(&self) -> PathBuf {
        self.write("a.toml", &recipe("ra", "forward", "self.a = 1"))
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// Waits for `child`, killing it (and failing) if it hangs: a FIFO that blocks must fail the
/// test, not hang it. Its output is read meanwhile (a full pipe would block it).
fn finish(child: Child) -> Output {
    let pid = child.id();
    let (done, output) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    match output.recv_timeout(Duration::from_secs(60)) {
        Ok(result) => result.expect("output"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("the command hangs");
        }
    }
}

/// Runs `binary` under a 4 GiB address-space limit: should reading `/dev/zero` ever come back,
/// the run fails instead of taking the machine's memory.
fn run(binary: &Path, args: &[&Path]) -> Output {
    let child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 4194304 && exec \"$0\" \"$@\"")
        .arg(binary)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    finish(child)
}

fn p(s: &str) -> &Path {
    Path::new(s)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[track_caller]
fn assert_exit(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
}

fn patched_by_library(spec: &str, source: &str) -> String {
    let recipe = pysplice::Recipe::from_toml("r.toml", spec).unwrap();
    pysplice::apply(&recipe, pysplice::SourceFile::new("m.py", source))
        .unwrap()
        .output()
        .to_string()
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(status.success());
}

fn is_root() -> bool {
    fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

/// `chattr +i` on `path`; false (the test then says it skips) where the file system or the
/// user cannot.
fn immutable(path: &Path, on: bool) -> bool {
    Command::new("chattr")
        .arg(if on { "+i" } else { "-i" })
        .arg(path)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

// ------------------------------------------------------------------------------------------------
// Lost updates

/// Two different recipes applied to one file at the same moment, 40 times: no run may report
/// success having lost the other's change. Either both changes are in the file, or the loser exits
/// 1 with "changed on disk" and the file holds the winner's change.
#[test]
fn concurrent_runs_of_two_recipes_never_lose_a_change() {
    let dir = Dir::new();
    let spec_a = dir.write("a.toml", &recipe("ra", "forward", "self.a = 1"));
    let spec_b = dir.write("b.toml", &recipe("rb", "backward", "self.b = 1"));
    let (mut both, mut refused) = (0, 0);
    for round in 0..40 {
        let file = dir.write(&format!("m{round}.py"), MODEL);
        let start = |spec: &Path| {
            Command::new(pysplice())
                .args([p("apply"), p("--spec"), spec, &file])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the binary runs")
        };
        let (a, b) = (start(&spec_a), start(&spec_b));
        let (a, b) = (finish(a), finish(b));
        let now = fs::read_to_string(&file).unwrap();
        let has_a = now.contains("self.a = 1");
        let has_b = now.contains("self.b = 1");
        let report = format!(
            "round {round}\nA: {:?} {}{}\nB: {:?} {}{}\nfile:\n{now}",
            a.status.code(),
            text(&a.stdout),
            text(&a.stderr),
            b.status.code(),
            text(&b.stdout),
            text(&b.stderr)
        );
        match (a.status.code(), b.status.code()) {
            (Some(0), Some(0)) => {
                assert!(has_a && has_b, "both succeeded but a change is lost\n{report}");
                both += 1;
            }
            (Some(0), Some(1)) | (Some(1), Some(0)) => {
                let (loser, winner_has, loser_has) = if a.status.code() == Some(1) {
                    (&a, has_b, has_a)
                } else {
                    (&b, has_a, has_b)
                };
                assert!(
                    text(&loser.stderr).contains("the file changed on disk since it was read; nothing was written"),
                    "{report}"
                );
                assert!(loser.stdout.is_empty(), "the loser reported something\n{report}");
                assert!(winner_has && !loser_has, "{report}");
                refused += 1;
            }
            _ => panic!("unexpected exit codes\n{report}"),
        }
        assert!(
            dir.names().iter().all(|n| !n.starts_with(".pysplice-")),
            "a temp file is left: {:?}",
            dir.names()
        );
    }
    eprintln!("40 pairs: {both} with both changes, {refused} refused as changed since read");
}

/// A run that cannot take the lock within its wait gives up, prints no success, and writes
/// nothing (another pysplice holds the file for the whole run here).
#[test]
fn a_locked_file_is_not_written_and_nothing_is_reported() {
    use std::os::unix::io::AsRawFd;
    let dir = Dir::new();
    let spec = dir.spec();
    let file = dir.write("m.py", MODEL);
    let demo = pysplice_sglang::programs::hs_dump::DEMO_MODEL;
    let model = dir.write("deepseek_v2.py", demo);
    let lock = |path: &Path| {
        let holder = fs::File::open(path).unwrap();
        // SAFETY: flock on a descriptor `holder` keeps open.
        assert_eq!(unsafe { libc::flock(holder.as_raw_fd(), libc::LOCK_EX) }, 0);
        holder
    };
    let holders = (lock(&file), lock(&model));
    let spawn = |binary: &Path, args: &[&Path]| {
        Command::new(binary)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // Both wait for the lock at the same time.
    let apply = spawn(pysplice(), &[p("apply"), p("--spec"), &spec, &file]);
    let dump = spawn(hs_dump(), &[p("--json"), &model]);
    let (apply, dump) = (finish(apply), finish(dump));
    drop(holders);
    assert_exit(&apply, 1);
    assert!(apply.stdout.is_empty(), "{}", text(&apply.stdout));
    assert!(
        text(&apply.stderr).contains("m.py:1:1: another process keeps the file locked; nothing was written"),
        "{}",
        text(&apply.stderr)
    );
    assert_eq!(fs::read_to_string(&file).unwrap(), MODEL);
    assert_exit(&dump, 1);
    let value: serde_json::Value = serde_json::from_slice(&dump.stdout).unwrap();
    assert_eq!(value["ok"], false, "{value}");
    assert_eq!(value["status"], "failed", "{value}");
    assert_eq!(value["written"], false, "{value}");
    assert!(value["error"]["message"]
        .as_str()
        .unwrap()
        .contains("another process keeps the file locked"));
    // The hooks as planned, as a success lists them.
    assert_eq!(value["hooks"].as_array().map(Vec::len), Some(5), "{value}");
    assert_eq!(fs::read_to_string(&model).unwrap(), demo);
    assert_eq!(dir.names(), ["a.toml", "deepseek_v2.py", "m.py"]);
}

// ------------------------------------------------------------------------------------------------
// Temp files

/// The temp file name used to be `.<name>.pysplice-<pid>.tmp`, created following links: a link
/// planted under every name the next processes could use redirected root's write. Now the name is
/// unpredictable and created exclusively: the victim is untouched, the target patched.
#[test]
fn planted_links_under_predictable_temp_names_are_never_followed() {
    let dir = Dir::new();
    let spec = dir.spec();
    let file = dir.write("m.py", MODEL);
    let victim_dir = Dir::new();
    let victim = victim_dir.write("victim", "precious\n");
    fs::set_permissions(&victim, fs::Permissions::from_mode(0o600)).unwrap();
    let next = std::process::id();
    for pid in next..next + 3000 {
        std::os::unix::fs::symlink(&victim, dir.path().join(format!(".m.py.pysplice-{pid}.tmp"))).unwrap();
    }
    let output = run(pysplice(), &[p("apply"), p("--spec"), &spec, &file]);
    assert_exit(&output, 0);
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(fs::metadata(&victim).unwrap().mode() & 0o7777, 0o600);
    let expected = patched_by_library(&recipe("ra", "forward", "self.a = 1"), MODEL);
    assert_eq!(fs::read_to_string(&file).unwrap(), expected);
}

/// A temp file that a dead pysplice left behind (our exact name pattern, old) is removed; a
/// link with that pattern, a recent one, and other files are not.
#[test]
fn stale_temp_files_of_dead_runs_are_cleaned_up() {
    let dir = Dir::new();
    let spec = dir.spec();
    let file = dir.write("m.py", MODEL);
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let old = std::time::SystemTime::now() - Duration::from_secs(3600);
    let stale = format!(".pysplice-{dead}-Ab3dEf6hI9.tmp");
    let recent = format!(".pysplice-{dead}-Zb3dEf6hI9.tmp");
    let link = format!(".pysplice-{dead}-Yb3dEf6hI9.tmp");
    for name in [&stale, &recent] {
        let path = dir.write(name, "half written");
        if *name == stale {
            fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
    }
    std::os::unix::fs::symlink(&file, dir.path().join(&link)).unwrap();
    let output = run(pysplice(), &[p("apply"), p("--spec"), &spec, &file]);
    assert_exit(&output, 0);
    let mut expected = vec![link.clone(), recent.clone(), "a.toml".to_string(), "m.py".to_string()];
    expected.sort();
    assert_eq!(dir.names(), expected);
}

// ------------------------------------------------------------------------------------------------
// Owner, mode, links

#[test]
fn owner_group_and_mode_are_kept() {
    let dir = Dir::new();
    let spec = dir.spec();
    let file = dir.write("m.py", MODEL);
    fs::set_permissions(&file, fs::Permissions::from_mode(0o640)).unwrap();
    let owner = if is_root() {
        std::os::unix::fs::chown(&file, Some(4321), Some(8765)).unwrap();
        (4321, 8765)
    } else {
        eprintln!("skipping the owner part: changing a file's owner needs root");
        let meta = fs::metadata(&file).unwrap();
        (meta.uid(), meta.gid())
    };
    let output = run(pysplice(), &[p("apply"), p("--spec"), &spec, &file]);
    assert_exit(&output, 0);
    let meta = fs::metadata(&file).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o640);
    assert_eq!((meta.uid(), meta.gid()), owner);
    assert!(fs::read_to_string(&file).unwrap().contains("self.a = 1"));
}

/// A symbolic link is written through (the link stays, the file it points to is patched);
/// reverting through the link gives back the exact bytes.
#[test]
fn a_symlinked_target_is_written_through() {
    let dir = Dir::new();
    let spec = dir.spec();
    let real_dir = Dir::new();
    let real = real_dir.write("real.py", MODEL);
    let link = dir.path().join("m.py");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let output = run(pysplice(), &[p("apply"), p("--spec"), &spec, &link]);
    assert_exit(&output, 0);
    assert!(text(&output.stdout).starts_with(&format!("Successfully patched {}", link.display())));
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(fs::read_to_string(&real).unwrap().contains("self.a = 1"));
    let output = run(pysplice(), &[p("revert"), p("--spec"), &spec, &link]);
    assert_exit(&output, 0);
    assert_eq!(fs::read_to_string(&real).unwrap(), MODEL);
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(real_dir.names(), ["real.py"]);
}

/// A file with several hard links becomes a file of its own (as with `sed -i`);
/// the command says so, and the other name keeps the old bytes.
#[test]
fn hard_links_are_broken_and_said() {
    let dir = Dir::new();
    let spec = dir.spec();
    let file = dir.write("m.py", MODEL);
    let other = dir.path().join("other.py");
    fs::hard_link(&file, &other).unwrap();
    let output = run(pysplice(), &[p("apply"), p("--spec"), &spec, &file]);
    assert_exit(&output, 0);
    assert!(
        text(&output.stderr)
            .contains("m.py had 2 hard links; it is now a file of its own, the other names keep the old content"),
        "{}",
        text(&output.stderr)
    );
    assert!(fs::read_to_string(&file).unwrap().contains("self.a = 1"));
    assert_eq!(fs::read_to_string(&other).unwrap(), MODEL);
}

/// Two names of one file (hard links), given at once or met in a folder, are two files to the
/// user: each name is patched (each becomes a file of its own), one note names both, and the
/// next run finds both up to date.
#[test]
fn two_hard_links_given_at_once_are_both_patched() {
    let dir = Dir::new();
    let spec = dir.spec();
    let sub = dir.path().join("pkg");
    fs::create_dir(&sub).unwrap();
    let file = sub.join("m.py");
    fs::write(&file, MODEL).unwrap();
    let other = sub.join("other.py");
    for folder_run in [false, true] {
        fs::write(&file, MODEL).unwrap();
        let _ = fs::remove_file(&other);
        fs::hard_link(&file, &other).unwrap();
        let args: Vec<&Path> = if folder_run {
            vec![p("apply"), p("--spec"), &spec, &sub]
        } else {
            vec![p("apply"), p("--spec"), &spec, &file, &other]
        };
        let output = run(pysplice(), &args);
        assert_exit(&output, 0);
        let (out, err) = (text(&output.stdout), text(&output.stderr));
        for name in [&file, &other] {
            assert!(
                fs::read_to_string(name).unwrap().contains("self.a = 1"),
                "{}",
                name.display()
            );
            assert!(
                out.contains(&format!("Successfully patched {}", name.display())),
                "{out}"
            );
        }
        assert!(
            err.contains(&format!(
                "note: {}, {} were names (hard links) of one file; each is now a file of its own with the new text",
                file.display(),
                other.display()
            )),
            "{err}"
        );
        assert_ne!(fs::metadata(&file).unwrap().ino(), fs::metadata(&other).unwrap().ino());
        let again = run(pysplice(), &[p("check"), p("--spec"), &spec, &sub]);
        assert_exit(&again, 0);
    }
}

// ------------------------------------------------------------------------------------------------
// Non-regular and oversized files

/// FIFOs, devices, folders and sockets are refused before reading, as targets and as specs: exit
/// 2, a message naming what the path is, nothing blocks, nothing is replaced.
#[test]
fn non_regular_files_are_refused_before_reading() {
    let dir = Dir::new();
    let spec = dir.spec();
    let fifo = dir.path().join("fifo.py");
    mkfifo(&fifo);
    let zero = dir.path().join("zero.py");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let socket = dir.path().join("socket.py");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let folder = dir.path().join("folder.py");
    fs::create_dir(&folder).unwrap();
    let cases: [(&Path, &str); 5] = [
        (&fifo, "a FIFO (named pipe)"),
        (&zero, "a character device"),
        (p("/dev/null"), "a character device"),
        (&socket, "a socket"),
        (&folder, "a directory"),
    ];
    for (target, kind) in cases {
        // A folder given to apply, check and revert is a folder run (`cli_folders`).
        let commands: &[&str] = if target == folder.as_path() {
            &[]
        } else {
            &["apply", "check", "revert"]
        };
        for &command in commands {
            let output = run(pysplice(), &[p(command), p("--spec"), &spec, target]);
            assert_exit(&output, 2);
            let expected = format!(
                "{}:1:1: {kind}, not a regular file; pysplice reads and writes regular files only",
                target.display()
            );
            assert!(text(&output.stderr).contains(&expected), "{}", text(&output.stderr));
        }
        let output = run(
            pysplice(),
            &[p("apply"), p("--spec"), target, &dir.write("m.py", MODEL)],
        );
        assert_exit(&output, 2);
        assert!(text(&output.stderr).contains(kind), "{}", text(&output.stderr));
        let output = run(pysplice(), &[p("locate"), target]);
        assert_exit(&output, 2);
        assert!(text(&output.stderr).contains(kind), "{}", text(&output.stderr));
        let output = run(hs_dump(), &[target]);
        if target != folder.as_path() {
            assert_exit(&output, 2);
            assert!(text(&output.stderr).contains(kind), "{}", text(&output.stderr));
        }
    }
    assert!(fs::symlink_metadata(&zero).unwrap().file_type().is_symlink());
    assert!(fs::metadata("/dev/null").unwrap().file_type().is_char_device());
    assert_eq!(fs::read_to_string(dir.path().join("m.py")).unwrap(), MODEL);
}

/// `reach` over a package holding a FIFO and a link to `/dev/zero` named `.py`: both are listed
/// as unreadable, the rest is answered.
#[test]
fn the_project_scan_skips_fifos_and_devices() {
    let dir = Dir::new();
    let package = dir.path().join("pkg");
    fs::create_dir(&package).unwrap();
    fs::write(package.join("model.py"), MODEL).unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    std::os::unix::fs::symlink(&fifo, package.join("x.py")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", package.join("z.py")).unwrap();
    let output = run(pysplice(), &[p("reach"), &package, p("Model.forward")]);
    assert_exit(&output, 0);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("x.py:1:1: a FIFO (named pipe), not a regular file"),
        "{stderr}"
    );
    assert!(
        stderr.contains("z.py:1:1: a character device, not a regular file"),
        "{stderr}"
    );
}

/// Over the documented limit (16 MiB): refused before reading, the file untouched.
#[test]
fn files_over_the_size_limit_are_refused() {
    let dir = Dir::new();
    let spec = dir.spec();
    let big = dir.path().join("big.py");
    let handle = fs::File::create(&big).unwrap();
    handle.set_len(pysplice::limits::MAX_FILE_BYTES + 1).unwrap();
    let output = run(pysplice(), &[p("apply"), p("--spec"), &spec, &big]);
    assert_exit(&output, 2);
    assert!(
        text(&output.stderr).contains("the file has 16777217 bytes, more than the limit of 16777216 bytes"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(fs::metadata(&big).unwrap().len(), pysplice::limits::MAX_FILE_BYTES + 1);
}

// ------------------------------------------------------------------------------------------------
// Report only what happened; all files or none

/// A target that cannot be replaced (immutable): the command fails, prints no success, and the
/// file keeps its bytes. With two files, the one that could be written is put back.
#[test]
fn a_failed_write_reports_no_success_and_puts_back_what_was_written() {
    let dir = Dir::new();
    let spec = dir.spec();
    let first = dir.write("a.py", MODEL);
    let second = dir.write("b.py", MODEL);
    if !immutable(&second, true) {
        eprintln!("skipping: `chattr +i` is not available here (needs root and a file system with attributes)");
        return;
    }
    let one = run(pysplice(), &[p("apply"), p("--spec"), &spec, &second]);
    let json = run(
        pysplice(),
        &[p("apply"), p("--json"), p("--spec"), &spec, &first, &second],
    );
    let both = run(pysplice(), &[p("apply"), p("--spec"), &spec, &first, &second]);
    immutable(&second, false);
    for output in [&one, &both] {
        assert_exit(output, 2);
        assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains(&format!(
                "{}:1:1: cannot write: Operation not permitted",
                second.display()
            )),
            "{stderr}"
        );
        assert!(stderr.ends_with("nothing was written\n"), "{stderr}");
    }
    assert_exit(&json, 2);
    let values: Vec<serde_json::Value> = text(&json.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(values.len(), 2, "{values:?}");
    for value in &values {
        assert_eq!(value["ok"], false, "{value}");
        assert_eq!(value["written"], false, "{value}");
        assert_eq!(value["error"]["file"], second.display().to_string());
    }
    assert_eq!(
        fs::read_to_string(&first).unwrap(),
        MODEL,
        "the first file was not put back"
    );
    assert_eq!(fs::read_to_string(&second).unwrap(), MODEL);
    assert_eq!(dir.names(), ["a.py", "a.toml", "b.py"]);
}

// ------------------------------------------------------------------------------------------------
// Standard output closed or full

/// A pipe whose reading end is already closed: every write to it fails with EPIPE.
fn broken_pipe() -> Stdio {
    use std::os::unix::io::FromRawFd;
    let mut fds = [0; 2];
    // Close-on-exec: a child that another test thread spawns in the meantime must not inherit
    // the read end, or the pipe would not be broken for this run.
    // SAFETY: `fds` has room for the two descriptors pipe2() returns.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just created and are owned here only.
    unsafe {
        drop(fs::File::from_raw_fd(fds[0]));
        Stdio::from(std::os::fd::OwnedFd::from_raw_fd(fds[1]))
    }
}

/// Runs with `stdout`; `$TMPDIR` is `tmp`, so the demo's copy lands there.
fn run_with_stdout(binary: &Path, args: &[&Path], stdout: Stdio, tmp: &Path) -> Output {
    let child = Command::new(binary)
        .args(args)
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    finish(child)
}

/// `| head` (EPIPE) and `> /dev/full` (ENOSPC): no panic, exit 3, the file fully written (the
/// write comes before the report), quiet on a broken pipe, one line on a full disk.
#[test]
fn a_closed_or_full_stdout_exits_3_after_writing_the_file() {
    let spec_text = recipe("ra", "forward", "self.a = 1");
    let expected = patched_by_library(&spec_text, MODEL);
    for full in [false, true] {
        let dir = Dir::new();
        let spec = dir.write("a.toml", &spec_text);
        let file = dir.write("m.py", MODEL);
        let stdout = || {
            if full {
                Stdio::from(fs::File::options().write(true).open("/dev/full").unwrap())
            } else {
                broken_pipe()
            }
        };
        let output = run_with_stdout(
            pysplice(),
            &[p("apply"), p("--spec"), &spec, &file],
            stdout(),
            dir.path(),
        );
        assert_exit(&output, 3);
        assert_eq!(fs::read_to_string(&file).unwrap(), expected);
        let stderr = text(&output.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        if full {
            assert_eq!(
                stderr,
                "error: cannot write to standard output: No space left on device (os error 28)\n"
            );
        } else {
            assert_eq!(stderr, "");
        }
        for args in [
            vec![p("check"), p("--spec"), &spec, &file],
            vec![p("revert"), p("--json"), p("--spec"), &spec, &file],
            vec![p("locate"), &file],
            vec![p("reach"), dir.path(), p("Model.forward")],
        ] {
            let output = run_with_stdout(pysplice(), &args, stdout(), dir.path());
            assert_exit(&output, 3);
        }
        assert_eq!(fs::read_to_string(&file).unwrap(), MODEL, "the revert was written");
        // A failure keeps its own exit code: `check` finds work (1), a missing file (2).
        let output = run_with_stdout(
            pysplice(),
            &[p("check"), p("--spec"), &spec, &file],
            stdout(),
            dir.path(),
        );
        assert_exit(&output, 1);
        let missing = dir.path().join("missing.py");
        let output = run_with_stdout(
            pysplice(),
            &[p("apply"), p("--json"), p("--spec"), &spec, &missing],
            stdout(),
            dir.path(),
        );
        assert_exit(&output, 2);

        let model = dir.write("deepseek_v2.py", pysplice_sglang::programs::hs_dump::DEMO_MODEL);
        let output = run_with_stdout(hs_dump(), &[&model], stdout(), dir.path());
        assert_exit(&output, 3);
        assert!(fs::read_to_string(&model).unwrap().contains("_pysplice_hs_dump"));
        for args in [
            vec![],
            vec![p("--check"), &model],
            vec![p("--json"), p("--revert"), &model],
        ] {
            let output = run_with_stdout(hs_dump(), &args, stdout(), dir.path());
            assert_exit(&output, 3);
            assert!(!text(&output.stderr).contains("panicked"));
        }
        assert_eq!(
            fs::read_to_string(&model).unwrap(),
            pysplice_sglang::programs::hs_dump::DEMO_MODEL
        );
    }
}

/// A standard error that cannot be written (`2> /dev/full`) is ignored: no panic, the usual exit
/// code.
#[test]
fn a_full_stderr_is_ignored() {
    let dir = Dir::new();
    let spec = dir.spec();
    let missing = dir.path().join("missing.py");
    for binary in [pysplice(), hs_dump()] {
        let args: Vec<&Path> = if binary == pysplice() {
            vec![p("apply"), p("--spec"), &spec, &missing]
        } else {
            vec![&missing]
        };
        let output = Command::new(binary)
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(fs::File::options().write(true).open("/dev/full").unwrap())
            .output()
            .unwrap();
        assert_exit(&output, 2);
    }
}

/// The language server's standard output is its transport: when it is closed or full, the
/// server ends without a panic.
#[test]
fn the_language_server_survives_a_closed_or_full_stdout() {
    use std::io::Write as _;
    let lsp = common::program("pysplice_lsp");
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}"#;
    for full in [false, true] {
        let stdout = if full {
            Stdio::from(fs::File::options().write(true).open("/dev/full").unwrap())
        } else {
            broken_pipe()
        };
        let mut child = Command::new(&lsp)
            .stdin(Stdio::piped())
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let _ = write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len());
        drop(stdin);
        let output = finish(child);
        let stderr = text(&output.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_ne!(output.status.code(), Some(101), "{stderr}");
        assert!(output.status.code().is_some(), "killed by a signal: {stderr}");
    }
}

// ------------------------------------------------------------------------------------------------
// The demo's folder

/// The demo copy goes into a fresh private folder (0700, unpredictable name), never into a
/// `sglang_hs_dump-demo-<pid>` that someone may have planted as a link.
#[test]
fn the_demo_writes_into_a_fresh_private_folder() {
    let tmp = Dir::new();
    let victim = Dir::new();
    let next = std::process::id();
    for pid in next..next + 3000 {
        std::os::unix::fs::symlink(victim.path(), tmp.path().join(format!("sglang-hs-dump-demo-{pid}"))).unwrap();
    }
    let child = Command::new(hs_dump())
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = finish(child);
    assert_exit(&output, 0);
    assert!(victim.names().is_empty(), "{:?}", victim.names());
    let stdout = text(&output.stdout);
    let copy = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Successfully patched "))
        .expect("the copy is named");
    let folder = Path::new(copy).parent().unwrap();
    assert_eq!(folder.parent().unwrap(), tmp.path());
    // Removed as the run ends (its mode, 0700, is checked where it is made: demo.rs's test); the
    // planted links are all that is left.
    assert!(fs::symlink_metadata(folder).is_err(), "{} is left", folder.display());
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 3000);
}

// ------------------------------------------------------------------------------------------------
// Folders swapped, outputs over the limit, odd names

/// A folder of the path moved away and replaced by a link to another folder between the read
/// and the write (driven through the library's two steps, read then write, so the swap happens
/// exactly there): nothing is written, neither into the folder the link points to nor into the
/// file read, and the error says why. Through `DiskFile` and through `Batch`.
#[test]
fn a_folder_swapped_between_read_and_write_redirects_nothing() {
    let dir = Dir::new();
    let spec = recipe("ra", "forward", "self.a = 1");
    let recipe = pysplice::Recipe::from_toml("a.toml", &spec).unwrap();
    let d = dir.path().join("d");
    let victim = dir.path().join("victim");
    fs::create_dir(&victim).unwrap();
    fs::write(victim.join("m.py"), MODEL).unwrap();
    for through_batch in [false, true] {
        fs::create_dir(&d).unwrap();
        let target = d.join("m.py");
        fs::write(&target, MODEL).unwrap();
        let read = pysplice::files::DiskFile::read(&target).unwrap();
        let batch = pysplice::batch::Batch::run(&recipe, std::slice::from_ref(&target), pysplice::batch::Op::Apply);
        let moved = dir.path().join("d.old");
        fs::rename(&d, &moved).unwrap();
        std::os::unix::fs::symlink(&victim, &d).unwrap();
        let err = if through_batch {
            pysplice::Error::from(batch.write().unwrap_err())
        } else {
            let patched = pysplice::apply(&recipe, read.source().clone()).unwrap();
            read.write(patched.output()).unwrap_err()
        };
        assert!(
            matches!(err.kind(), pysplice::ErrorKind::FolderReplaced { .. }),
            "{err}"
        );
        let expected = format!(
            "{}:1:1: its folder {} is no longer the folder the file was read from (moved, or replaced by a link); nothing was written",
            target.display(),
            fs::canonicalize(&moved).unwrap().parent().unwrap().join("d").display()
        );
        assert_eq!(err.to_string(), expected);
        assert_eq!(
            fs::read_to_string(victim.join("m.py")).unwrap(),
            MODEL,
            "the victim was written"
        );
        assert_eq!(
            fs::read_to_string(moved.join("m.py")).unwrap(),
            MODEL,
            "the file read was written"
        );
        let names = |p: &Path| fs::read_dir(p).unwrap().count();
        assert_eq!((names(&victim), names(&moved)), (1, 1), "a temp file is left");
        fs::remove_file(&d).unwrap();
        fs::remove_dir_all(&moved).unwrap();
    }
}

/// An apply whose output would be over the 16 MiB that pysplice reads is refused before writing
/// (it used to write the file, which check and revert then refused): exit 2, the file, the
/// recipe and the hook named, the bytes unchanged, no temp file left. The library says the same.
#[test]
fn an_apply_over_the_size_limit_is_refused_before_writing() {
    let dir = Dir::new();
    let spec = dir.spec();
    let limit = usize::try_from(pysplice::limits::MAX_FILE_BYTES).unwrap();
    // Just under the limit: the hook's line takes it over.
    let mut source = MODEL.to_string();
    let filler = limit - source.len() - 2;
    source.push('#');
    source.push_str(&"x".repeat(filler));
    source.push('\n');
    assert_eq!(source.len(), limit);
    let file = dir.write("m.py", &source);
    let output = run(pysplice(), &[p("apply"), p("--spec"), &spec, &file]);
    assert_exit(&output, 2);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "{}:1:1: applying recipe `ra` would make the file 16777363 bytes, more than the limit of 16777216 bytes that pysplice reads; nothing was written [hook h]",
            file.display()
        )),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
    assert!(fs::read(&file).unwrap() == source.as_bytes(), "the file was written");
    assert_eq!(dir.names(), ["a.toml", "m.py"]);
    // check says the same, and so does the library.
    let output = run(pysplice(), &[p("check"), p("--spec"), &spec, &file]);
    assert_exit(&output, 2);
    assert!(
        text(&output.stderr).contains("would make the file 16777363 bytes"),
        "{}",
        text(&output.stderr)
    );
    let recipe = pysplice::Recipe::from_toml("a.toml", &recipe("ra", "forward", "self.a = 1")).unwrap();
    let err = pysplice::apply(&recipe, pysplice::SourceFile::new("m.py", source.as_str())).unwrap_err();
    assert!(
        matches!(err.kind(), pysplice::ErrorKind::OutputTooLarge { recipe: Some(id), size: 16_777_363, .. } if id == "ra"),
        "{err}"
    );
    assert_eq!(err.hook(), Some("h"));
}

/// File names with control characters are printed escaped by every text output of `pysplice`
/// (success lines, check lines, errors, `reach` problems): no ESC or BEL byte reaches the
/// terminal.
#[test]
fn names_with_control_characters_are_printed_escaped() {
    let dir = Dir::new();
    let spec = dir.spec();
    let evil = dir.write("evil\u{1b}]0;PWNED\u{7}x.py", MODEL);
    let shown = "evil\\x1b]0;PWNED\\x07x.py";
    let clean = |output: &Output| {
        for stream in [&output.stdout, &output.stderr] {
            assert!(!stream.iter().any(|b| *b == 0x1b || *b == 0x07), "{}", text(stream));
        }
    };
    for (command, code, expected) in [
        ("check", 1, format!("{shown}: needs apply")),
        (
            "apply",
            0,
            format!("Successfully patched {}/{shown}", dir.path().display()),
        ),
        ("check", 0, format!("{shown}: up to date")),
        ("revert", 0, format!("Reverted {}/{shown}", dir.path().display())),
    ] {
        let output = run(pysplice(), &[p(command), p("--spec"), &spec, &evil]);
        assert_exit(&output, code);
        clean(&output);
        assert!(
            text(&output.stdout).contains(&expected),
            "{command}: {}",
            text(&output.stdout)
        );
    }
    assert_eq!(fs::read_to_string(&evil).unwrap(), MODEL);
    fs::write(&evil, "class Model(:\n").unwrap();
    let output = run(pysplice(), &[p("apply"), p("--spec"), &spec, &evil]);
    assert_exit(&output, 2);
    clean(&output);
    assert!(
        text(&output.stderr).contains(&format!("{shown}:1:")),
        "{}",
        text(&output.stderr)
    );
    let output = run(pysplice(), &[p("reach"), dir.path(), p("Model.forward")]);
    clean(&output);
    assert!(text(&output.stderr).contains(shown), "{}", text(&output.stderr));
}

/// A folder that one may pass through and write into but not list (mode 0733, someone else's):
/// its files are read and written all the same (the folder is opened as a path handle), as a
/// user other than root.
#[test]
fn a_folder_one_may_not_list_is_still_read_and_written() {
    use std::os::unix::process::CommandExt;
    if !is_root() {
        eprintln!("skipping: needs root to give the folder to another user");
        return;
    }
    let dir = Dir::new();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let spec = dir.spec();
    let folder = dir.path().join("private");
    fs::create_dir(&folder).unwrap();
    let file = folder.join("m.py");
    fs::write(&file, MODEL).unwrap();
    std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o733)).unwrap();
    let as_nobody = |command: &str| {
        Command::new(pysplice())
            .args([command, "--spec"])
            .arg(&spec)
            .arg(&file)
            .uid(65534)
            .gid(65534)
            .output()
            .expect("the binary runs")
    };
    let output = as_nobody("check");
    assert_exit(&output, 1);
    assert!(
        text(&output.stdout).contains("m.py: needs apply"),
        "{}",
        text(&output.stdout)
    );
    let output = as_nobody("apply");
    assert_exit(&output, 0);
    let expected = patched_by_library(&recipe("ra", "forward", "self.a = 1"), MODEL);
    assert_eq!(fs::read_to_string(&file).unwrap(), expected);
    assert_eq!(fs::metadata(&file).unwrap().uid(), 65534);
    let output = as_nobody("revert");
    assert_exit(&output, 0);
    assert_eq!(fs::read_to_string(&file).unwrap(), MODEL);
    let names: Vec<_> = fs::read_dir(&folder).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["m.py"], "a temp file is left");
}

// ------------------------------------------------------------------------------------------------
// Names in messages

/// A file name that is not UTF-8 is shown with its bytes escaped (`\xff`), the name that
/// exists, never the lossy U+FFFD one: in the success line, in an error, in JSON.
#[test]
fn names_that_are_not_utf8_are_shown_escaped() {
    use std::os::unix::ffi::OsStrExt;
    let dir = Dir::new();
    let spec = dir.spec();
    let tree = dir.path().join("t");
    fs::create_dir(&tree).unwrap();
    let good = tree.join(std::ffi::OsStr::from_bytes(b"m\xff.py"));
    fs::write(&good, MODEL).unwrap();
    let shown = format!("{}/m\\xff.py", tree.display());
    let output = run(pysplice(), &[p("apply"), p("--spec"), &spec, &tree]);
    assert_exit(&output, 0);
    let out = text(&output.stdout);
    assert!(out.contains(&format!("Successfully patched {shown}")), "{out}");
    assert!(!out.contains('\u{fffd}'), "{out}");
    // An error names the file the same way.
    let bad = tree.join(std::ffi::OsStr::from_bytes(b"bad\xfe.py"));
    fs::write(&bad, "class Model:\n    def forward(self, x:\n").unwrap();
    let output = run(pysplice(), &[p("check"), p("--spec"), &spec, &tree]);
    let err = text(&output.stderr);
    assert!(err.contains(&format!("{}/bad\\xfe.py:", tree.display())), "{err}");
    assert!(!err.contains('\u{fffd}'), "{err}");
    let output = run(pysplice(), &[p("check"), p("--json"), p("--spec"), &spec, &tree]);
    let out = text(&output.stdout);
    assert!(out.contains("bad\\\\xfe.py"), "{out}");
    assert!(!out.contains('\u{fffd}'), "{out}");
}

/// In JSON, a name that is not UTF-8 comes also as `fs_path`, its `os.fsdecode` form (each byte
/// that is not UTF-8 a lone surrogate), so that Python's `os.fsencode` of it gives back the
/// name's bytes; `path` alone (`\xff` as text) could not be mapped back to the file.
#[test]
fn json_names_that_are_not_utf8_map_back_to_their_bytes() {
    use std::io::Write as _;
    use std::os::unix::ffi::OsStrExt;
    let dir = Dir::new();
    let spec = dir.spec();
    let tree = dir.path().join("t");
    fs::create_dir(&tree).unwrap();
    let odd = tree.join(std::ffi::OsStr::from_bytes(b"m\xff\xc3 \\x41.py"));
    let plain = tree.join("plain.py");
    let broken = tree.join(std::ffi::OsStr::from_bytes(b"bad\xfe.py"));
    fs::write(&odd, MODEL).unwrap();
    fs::write(&plain, MODEL).unwrap();
    let decoded = |args: &[&Path]| -> (String, Vec<Vec<u8>>) {
        let output = run(pysplice(), args);
        let lines = text(&output.stdout);
        let script = "import json, os, sys\n\
                      for line in sys.stdin:\n    \
                      v = json.loads(line)\n    \
                      sys.stdout.buffer.write(os.fsencode(v.get('fs_path', v['path'])).hex().encode() + b'\\n')\n";
        let mut python = Command::new("python3")
            .args(["-c", script])
            .env("PYTHONUTF8", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        python.stdin.take().unwrap().write_all(&output.stdout).unwrap();
        let answer = python.wait_with_output().unwrap();
        assert!(answer.status.success());
        let names = text(&answer.stdout)
            .lines()
            .map(|hex| {
                (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect()
            })
            .collect();
        (lines, names)
    };
    let dry_run: [&Path; 6] = [p("apply"), p("--dry-run"), p("--json"), p("--spec"), &spec, &tree];
    let check: [&Path; 5] = [p("check"), p("--json"), p("--spec"), &spec, &tree];
    for (command, args) in [("apply --dry-run", &dry_run[..]), ("check", &check[..])] {
        let (lines, names) = decoded(args);
        assert!(lines.contains(r#""fs_path":"#), "{lines}");
        assert!(lines.contains(r"\udcff\udcc3"), "{lines}");
        let mut want = vec![
            odd.as_os_str().as_bytes().to_vec(),
            plain.as_os_str().as_bytes().to_vec(),
        ];
        let mut names = names;
        want.sort();
        names.sort();
        assert_eq!(names, want, "{command}: {lines}");
        // A UTF-8 name has no `fs_path`: its `path` is its name.
        let plain_line = lines.lines().find(|l| l.contains("plain.py")).unwrap();
        assert!(!plain_line.contains("fs_path"), "{plain_line}");
    }
    // A file that fails names itself the same way.
    fs::write(&broken, "class Model:\n    def forward(self, x:\n").unwrap();
    let (lines, names) = decoded(&[p("apply"), p("--json"), p("--spec"), &spec, &tree]);
    assert!(names.contains(&broken.as_os_str().as_bytes().to_vec()), "{lines}");
    assert_eq!(fs::read(&odd).unwrap(), MODEL.as_bytes(), "nothing was written");
}

/// A mistyped target in a folder run gets the closest names of the files scanned, as one file
/// does.
#[test]
fn a_mistyped_target_in_a_folder_run_gets_a_suggestion() {
    let dir = Dir::new();
    let spec = dir.write("typo.toml", &recipe("rt", "forwad", "self.a = 1"));
    let tree = dir.path().join("t");
    fs::create_dir_all(tree.join("sub")).unwrap();
    fs::write(tree.join("sub/m.py"), MODEL).unwrap();
    fs::write(tree.join("n.py"), "def helper():\n    pass\n").unwrap();
    let output = run(pysplice(), &[p("apply"), p("--spec"), &spec, &tree]);
    assert_exit(&output, 1);
    let err = text(&output.stderr);
    assert!(
        err.contains(
            "`Model.forwad` is not defined in any of the 2 .py files of this run; did you mean `Model.forward`"
        ),
        "{err}"
    );
    assert_eq!(fs::read_to_string(tree.join("sub/m.py")).unwrap(), MODEL);
}
