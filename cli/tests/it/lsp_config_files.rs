//! The language server reads its workspace configuration (`pysplice.toml`) and the recipes it
//! names with the library's safe reader: in an untrusted repository, a FIFO or a link to
//! `/dev/zero` under those names is reported (stderr and `window/showMessage`), never waited on or
//! drained, and the server goes on serving. Driven through the real stdio transport.
#![cfg(unix)]

use crate::common;

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn frame(body: &serde_json::Value) -> String {
    let body = body.to_string();
    format!("Content-Length: {}\r\n\r\n{body}", body.len())
}

/// Initializes the server on `root`, shuts it down, and returns what it did; kills it (and fails)
/// if it hangs.
fn session(root: &Path) -> Output {
    session_at(&format!("file://{}", root.display()))
}

/// [`session`] with the workspace root given as a URI.
fn session_at(uri: &str) -> Output {
    // Under a 4 GiB address-space limit: should reading `/dev/zero` ever come back, the server
    // fails instead of taking the machine's memory.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 4194304 && exec \"$0\"")
        .arg(common::program("pysplice_lsp"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server runs");
    let messages = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"capabilities": {}, "rootUri": uri}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}),
        serde_json::json!({"jsonrpc": "2.0", "method": "exit"}),
    ];
    let mut stdin = child.stdin.take().unwrap();
    for message in &messages {
        stdin.write_all(frame(message).as_bytes()).unwrap();
    }
    drop(stdin);
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the server hangs");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

#[track_caller]
fn assert_served(output: &Output, messages: &[String]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains(r#""id":2,"result":null"#),
        "no shutdown answer:\n{stdout}"
    );
    for message in messages {
        assert!(stderr.contains(message.as_str()), "{message}\n{stderr}");
        assert!(stdout.contains("window/showMessage"), "{stdout}");
    }
}

#[test]
fn a_fifo_or_device_as_pysplice_toml_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pysplice.toml");
    mkfifo(&config);
    let expected = format!("{}:1:1: a FIFO (named pipe), not a regular file", config.display());
    assert_served(&session(dir.path()), &[expected]);

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pysplice.toml");
    std::os::unix::fs::symlink("/dev/zero", &config).unwrap();
    let expected = format!("{}:1:1: a character device, not a regular file", config.display());
    assert_served(&session(dir.path()), &[expected]);
}

#[test]
fn a_fifo_or_device_as_a_recipe_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("pysplice.toml"),
        "recipes = [\"fifo.toml\", \"zero.toml\", \"big.toml\"]\n",
    )
    .unwrap();
    mkfifo(&dir.path().join("fifo.toml"));
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.toml")).unwrap();
    let big = std::fs::File::create(dir.path().join("big.toml")).unwrap();
    big.set_len(pysplice::limits::MAX_FILE_BYTES + 1).unwrap();
    let output = session(dir.path());
    assert_served(
        &output,
        &[
            "fifo.toml:1:1: a FIFO (named pipe), not a regular file".to_string(),
            "zero.toml:1:1: a character device, not a regular file".to_string(),
            "big.toml:1:1: the file has 16777217 bytes, more than the limit".to_string(),
        ],
    );
}

/// Regression: without `pysplice.toml` or options the server warned in a popup in every Python
/// project. It now logs one line and shows nothing.
#[test]
fn no_configuration_is_quiet() {
    let dir = tempfile::tempdir().unwrap();
    let output = session(dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout.contains(r#""id":2,"result":null"#), "{stdout}");
    assert!(!stdout.contains("window/showMessage"), "{stdout}");
    assert!(stdout.contains("window/logMessage"), "{stdout}");
}

/// A recipe that does not compile is shown in the recipe file itself: a diagnostic at the line of
/// the error, not a popup.
#[test]
fn a_spec_error_is_a_diagnostic_in_the_recipe_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pysplice.toml"), "recipes = [\"bad.toml\"]\n").unwrap();
    std::fs::write(
        dir.path().join("bad.toml"),
        "[recipe]\nid = \"r\"\nsummary = \"s\"\n\n[[hook]]\nid = \"h\"\nsummary = \"t\"\nplace = 1\n",
    )
    .unwrap();
    let output = session(dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0));
    assert!(!stdout.contains("window/showMessage"), "{stdout}");
    let diagnostics = stdout
        .split("Content-Length")
        .filter_map(|part| part.find('{').map(|i| &part[i..]))
        .filter_map(|body| serde_json::from_str::<serde_json::Value>(body).ok())
        .find(|m| m["method"] == "textDocument/publishDiagnostics")
        .expect("diagnostics for the recipe file");
    let uri = diagnostics["params"]["uri"].as_str().unwrap();
    assert!(uri.starts_with("file://") && uri.ends_with("/bad.toml"), "{uri}");
    let diagnostic = &diagnostics["params"]["diagnostics"][0];
    assert_eq!(diagnostic["severity"], 1, "{diagnostic}");
    assert!(
        diagnostic["message"]
            .as_str()
            .unwrap()
            .contains("unknown field `place`"),
        "{diagnostic}"
    );
    assert_eq!(diagnostic["range"]["start"]["line"], 7, "{diagnostic}");
}

/// The workspace root and the recipe files come as `file:` URIs with percent-escapes (a space,
/// `%`, non-ASCII), with or without the host `localhost`: each is decoded to the path on disk,
/// and the recipe file's diagnostics go back to its URI, escaped the same way.
#[test]
fn percent_encoded_workspace_uris_are_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("my proj 100% é");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("pysplice.toml"), "recipes = [\"bad.toml\"]\n").unwrap();
    std::fs::write(
        root.join("bad.toml"),
        "[recipe]\nid = \"r\"\nsummary = \"s\"\nplace = 1\n",
    )
    .unwrap();
    let encode = |path: &Path| -> String {
        let mut out = String::new();
        for byte in path.to_str().unwrap().bytes() {
            if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
                out.push(byte as char);
            } else {
                out.push_str(&format!("%{byte:02X}"));
            }
        }
        out
    };
    for host in ["", "localhost"] {
        let output = session_at(&format!("file://{host}{}", encode(&root)));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        let expected = format!("\"uri\":\"file://{}\"", encode(&root.join("bad.toml")));
        assert!(stdout.contains(&expected), "{expected}\n{stdout}");
        assert!(stdout.contains("unknown field `place`"), "{stdout}");
        assert!(
            stderr.contains(&format!("{}:", root.join("bad.toml").display())),
            "{stderr}"
        );
    }
}

/// Regression: a `pysplice.toml` of 40,000 entries stalled the server 24 s (each name loaded, the
/// same recipe compiled again and again) and then sent 39,999 popups. Now at most 64 distinct
/// recipes are loaded and every problem goes into one popup, which names the first few and counts
/// the rest; each problem is in the log.
#[test]
fn regression_a_huge_recipe_list_is_bounded_and_one_message() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("r.toml"),
        "[recipe]\nid = \"r\"\nsummary = \"s\"\n[[hook]]\nid = \"i\"\nsummary = \"s\"\nensure-imports = [\"os\"]\n",
    )
    .unwrap();
    let mut names = vec!["\"r.toml\"".to_string(); 20_000];
    names.extend((0..20_000).map(|i| format!("\"missing-{i}.toml\"")));
    std::fs::write(
        dir.path().join("pysplice.toml"),
        format!("recipes = [{}]\n", names.join(", ")),
    )
    .unwrap();
    let start = Instant::now();
    let output = session(dir.path());
    let elapsed = start.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    let popups: Vec<&str> = stdout
        .split("Content-Length")
        .filter(|frame| frame.contains("window/showMessage"))
        .collect();
    assert_eq!(popups.len(), 1, "{} popups", popups.len());
    let popup = popups[0];
    assert!(
        popup.contains("pysplice: 65 problems with the recipe configuration: "),
        "{popup}"
    );
    assert!(popup.contains("missing-0.toml"), "{popup}");
    assert!(popup.contains("; and 62 more (in the server's log)"), "{popup}");
    assert!(popup.len() < 2000, "{popup}");
    assert!(stderr.contains("r.toml: named 20000 times, loaded once"), "{stderr}");
    assert!(
        stderr.contains(
            "20001 recipes are named, over the limit of 64: the first 64 are loaded, the other 19937 are not \
             (from missing-63.toml on)"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("missing-64.toml"), "a name past the limit was loaded");
}

/// Regression: a recipe whose code grows past the limit once its variables are filled in (a
/// 1 MB variable used 1,000 times) made the server abort right after `initialize` (a failed
/// allocation of a gigabyte). It is now a spec error, shown in the recipe file at the hook's
/// `code` line, and the server goes on serving.
#[test]
fn a_recipe_that_expands_past_the_limit_is_a_diagnostic() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pysplice.toml"), "recipes = [\"big.toml\"]\n").unwrap();
    let recipe = format!(
        "[recipe]\nid = \"r\"\nsummary = \"s\"\n\n[vars]\nbig = \"{}\"\n\n[[hook]]\nid = \"h\"\nsummary = \"t\"\nin = \"module\"\nat = \"end\"\ncode = \"x = '{}'\"\n",
        "a".repeat(1 << 20),
        "{big}".repeat(1000)
    );
    std::fs::write(dir.path().join("big.toml"), &recipe).unwrap();
    let output = session(dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains(r#""id":2,"result":null"#), "no shutdown answer");
    let diagnostics = stdout
        .split("Content-Length")
        .filter_map(|part| part.find('{').map(|i| &part[i..]))
        .filter_map(|body| serde_json::from_str::<serde_json::Value>(body).ok())
        .find(|m| m["method"] == "textDocument/publishDiagnostics")
        .expect("diagnostics for the recipe file");
    assert!(diagnostics["params"]["uri"].as_str().unwrap().ends_with("/big.toml"));
    let diagnostic = &diagnostics["params"]["diagnostics"][0];
    let message = diagnostic["message"].as_str().unwrap();
    assert!(
        message.contains("the code, with its placeholders filled in, would be 1048576006 bytes, more than the limit of 16777216 bytes"),
        "{message}"
    );
    assert!(message.len() < 1000, "the message does not echo the code");
    // `code = ` is on line 13 (0-based 12).
    assert_eq!(diagnostic["range"]["start"]["line"], 12, "{diagnostic}");
}
