//! `pysplice locate` end to end: the example binary's text and JSON output and its exit codes.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The example binary, built once per test process.
fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::program("pysplice"))
}

fn fixture(name: &str) -> String {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .join("tests/fixtures/outline")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn locate(args: &[&str]) -> Output {
    Command::new(binary())
        .arg("locate")
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

#[track_caller]
fn assert_exit(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(output),
        stderr(output)
    );
}

#[test]
fn outline_tree() {
    let file = fixture("async_def.py");
    let output = locate(&[&file]);
    assert_exit(&output, 0);
    assert_eq!(
        stdout(&output),
        "async function top  L4-5
class Server  L8-27
  async method Server.handle  L9-13
    async function Server.handle.<locals>.inner  L10-11
  async method Server.decorated  L16-17  decorator L15
  async method Server.stream  L19-27
    function Server.stream.<locals>.each  L21-22
    async function Server.stream.<locals>.under_with  L26-27
"
    );
    assert_eq!(stderr(&output), "");
}

#[test]
fn outline_tree_numbers_duplicate_paths() {
    let output = locate(&[&fixture("if_arms.py")]);
    assert_exit(&output, 0);
    assert_eq!(
        stdout(&output),
        "class Platform  L4-13
  method Platform.path#1  L6-7
  method Platform.path#2  L9-10
  method Platform.other  L12-13
function helper#1  L17-18
function helper#2  L20-21
"
    );
}

#[test]
fn json_outline_exact() {
    let file = fixture("one_line_suites.py");
    let output = locate(&[&file, "--json"]);
    assert_exit(&output, 0);
    let file_json = serde_json::to_string(&file).unwrap();
    let expected = format!(
        concat!(
            r#"{{"schema_version":1,"path":{},"ok":true,"error":null,"command":"locate","definitions":["#,
            r#"{{"path":"f","kind":"function","line":1,"end_line":1,"decorator_line":null,"async":false}},"#,
            r#"{{"path":"A","kind":"class","line":4,"end_line":4,"decorator_line":null,"async":false}},"#,
            r#"{{"path":"B","kind":"class","line":7,"end_line":9,"decorator_line":null,"async":false}},"#,
            r#"{{"path":"B.m","kind":"method","line":8,"end_line":8,"decorator_line":null,"async":false}},"#,
            r#"{{"path":"B.n","kind":"method","line":9,"end_line":9,"decorator_line":null,"async":false}},"#,
            r#"{{"path":"g","kind":"function","line":12,"end_line":12,"decorator_line":null,"async":false}}"#,
            "]}}\n"
        ),
        file_json
    );
    assert_eq!(stdout(&output), expected);
}

#[test]
fn json_shape_and_key_order() {
    let file = fixture("decorators.py");
    let output = locate(&["--json", &file]);
    assert_exit(&output, 0);
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let object = value.as_object().unwrap();
    // serde_json sorts keys
    assert_eq!(
        object.keys().collect::<Vec<_>>(),
        ["command", "definitions", "error", "ok", "path", "schema_version"]
    );
    assert_eq!(value["path"], file.as_str());
    assert_eq!(value["command"], "locate");
    assert_eq!(value["ok"], true);
    let definitions = value["definitions"].as_array().unwrap();
    assert_eq!(definitions.len(), 7);
    for d in definitions {
        let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["async", "decorator_line", "end_line", "kind", "line", "path"]);
        assert!(d["path"].is_string() && d["kind"].is_string() && d["async"].is_boolean());
        assert!(d["line"].is_u64() && d["end_line"].is_u64());
        assert!(d["decorator_line"].is_u64() || d["decorator_line"].is_null());
    }
    assert_eq!(
        definitions[3],
        serde_json::json!({"path": "parenthesized", "kind": "function", "line": 24, "end_line": 25,
                           "decorator_line": 22, "async": false})
    );
    // The printed order of keys is the declared one, not the sorted one.
    let text = stdout(&output);
    let first =
        text.find(r#"{"path":"plain","kind":"function","line":4,"end_line":5,"decorator_line":null,"async":false}"#);
    assert!(first.is_some(), "{text}");
    assert!(
        text.starts_with(r#"{"schema_version":1,"path":"#) && text.ends_with("]}\n"),
        "{text}"
    );
}

#[test]
fn json_of_one_path_has_only_the_match() {
    let file = fixture("locals.py");
    let output = locate(&[&file, "C.m.<locals>.f", "--json"]);
    assert_exit(&output, 0);
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        value["definitions"],
        serde_json::json!([{"path": "C.m.<locals>.f", "kind": "function", "line": 3, "end_line": 7,
                            "decorator_line": null, "async": false}])
    );
}

#[test]
fn one_path_as_text() {
    let file = fixture("decorators.py");
    let output = locate(&[&file, "Decorated.prop"]);
    assert_exit(&output, 0);
    assert_eq!(
        stdout(&output),
        format!("{file}:39:5: method Decorated.prop  L39-40  decorator L36\n")
    );
    let output = locate(&[&fixture("if_arms.py"), "Platform.path#2"]);
    assert_exit(&output, 0);
    assert!(
        stdout(&output).ends_with(":9:9: method Platform.path  L9-10\n"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn not_found_exits_1_with_candidates() {
    let file = fixture("decorators.py");
    let output = locate(&[&file, "Decorated.propp"]);
    assert_exit(&output, 1);
    assert_eq!(stdout(&output), "");
    assert_eq!(
        stderr(&output),
        format!(
            "error: {file}:31:1: `Decorated.propp` is not defined in this file; did you mean `Decorated.prop`? \
             The class defines: static, prop\n"
        )
    );
    // With --json: the same message as a JSON error object on stdout, nothing on stderr.
    let output = locate(&[&file, "Nope", "--json"]);
    assert_exit(&output, 1);
    assert_eq!(stderr(&output), "");
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(value["ok"], false);
    assert_eq!(value["command"], "locate");
    assert_eq!(value["definitions"], serde_json::json!([]));
    let message = value["error"]["message"].as_str().unwrap();
    assert!(message.contains("`Nope` is not defined in this file"), "{message}");
}

#[test]
fn ambiguous_exits_1_listing_lines() {
    let file = fixture("if_arms.py");
    let output = locate(&[&file, "Platform.path"]);
    assert_exit(&output, 1);
    assert_eq!(
        stderr(&output),
        format!(
            "error: {file}:6:9: `Platform.path` is defined 2 times (lines 6, 9); add an ordinal such as \
             `Platform.path#1`\n"
        )
    );
    let output = locate(&[&file, "Platform.path#3"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("asks for occurrence 3 but it is defined 2 times"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn syntax_error_exits_2_with_line_and_column() {
    let file = fixture("syntax_error.py");
    let output = locate(&[&file]);
    assert_exit(&output, 2);
    assert_eq!(stdout(&output), "");
    assert_eq!(
        stderr(&output),
        format!("error: {file}:9:5: invalid Python: invalid syntax. Got unexpected token 'pass'\n")
    );
}

#[test]
fn non_utf8_exits_2_naming_the_byte() {
    let file = fixture("non_utf8.py");
    let output = locate(&[&file]);
    assert_exit(&output, 2);
    assert_eq!(stdout(&output), "");
    assert_eq!(
        stderr(&output),
        format!("error: {file}:4:12: the file is not valid UTF-8 (byte 0xe9); Python source must be UTF-8 encoded\n")
    );
    // With --json: a JSON error object naming the place.
    let output = locate(&[&file, "--json"]);
    assert_exit(&output, 2);
    assert_eq!(stderr(&output), "");
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(value["ok"], false);
    assert_eq!(value["error"]["line"], 4);
    assert_eq!(value["error"]["column"], 12);
    assert!(value["error"]["message"].as_str().unwrap().contains("not valid UTF-8"));
}

#[test]
fn missing_file_exits_2() {
    let file = fixture("no_such_file.py");
    let output = locate(&[&file]);
    assert_exit(&output, 2);
    let err = stderr(&output);
    assert!(err.starts_with(&format!("error: {file}:1:1: cannot read: ")), "{err}");
    // With --json: a JSON error object on stdout (regression: nothing but stderr before).
    let output = locate(&[&file, "--json"]);
    assert_exit(&output, 2);
    assert_eq!(stderr(&output), "");
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(value["schema_version"], 1);
    assert_eq!(value["ok"], false);
    assert_eq!(value["path"], file.as_str());
    assert!(
        value["error"]["message"].as_str().unwrap().contains("cannot read"),
        "{value}"
    );
}

#[test]
fn bad_usage_exits_2() {
    let file = fixture("locals.py");
    for args in [
        vec![],
        vec![file.as_str(), "A..b"],
        vec![file.as_str(), "C.m#0"],
        vec![file.as_str(), "module"],
        vec![file.as_str(), "C.m", "extra"],
        vec![file.as_str(), "--frobnicate"],
    ] {
        let output = locate(&args);
        assert_exit(&output, 2);
        assert_eq!(stdout(&output), "", "{args:?}");
        assert!(!stderr(&output).is_empty(), "{args:?}");
    }
    // A malformed path is reported before the file is even read.
    let output = locate(&[&fixture("no_such_file.py"), "A-b"]);
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("`A-b` is not a Python name"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn help_exits_0() {
    let output = locate(&["--help"]);
    assert_exit(&output, 0);
    assert!(stdout(&output).contains("--json"));
}

#[test]
fn empty_file_prints_nothing() {
    let output = locate(&[&fixture("empty.py")]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "");
    let output = locate(&[&fixture("empty.py"), "--json"]);
    assert_exit(&output, 0);
    assert_eq!(
        stdout(&output),
        format!(
            r#"{{"schema_version":1,"path":{},"ok":true,"error":null,"command":"locate","definitions":[]}}"#,
            serde_json::to_string(&fixture("empty.py")).unwrap()
        ) + "\n"
    );
}
