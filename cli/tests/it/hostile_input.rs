//! Hostile input through the real binaries: files and recipes nested a million levels deep, NUL
//! bytes, coding declarations, a deeply nested recipe. No signal, a clean error with file, line
//! and column, exit code 2, and the file's bytes untouched.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

const DEPTH: usize = 1_000_000;

const RECIPE: &str = r#"
[recipe]
id = "demo"
summary = "Adds an import and a line"

[[hook]]
id = "imports"
summary = "Added the os import"
ensure-imports = ["os"]
"#;

/// A fresh temporary folder, removed when dropped.
struct Temp(PathBuf);

impl Temp {
    fn new() -> Temp {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("pysplice-hostile-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp folder");
        Temp(dir)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let to = self.0.join(name);
        std::fs::write(&to, bytes).expect("write");
        to
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(binary: &str, args: &[&Path]) -> Output {
    Command::new(common::program(binary))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Exit code `code` (no signal), and stderr holding every one of `needles`.
#[track_caller]
fn assert_fails(output: &Output, code: i32, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(code),
        "status {:?}\nstdout:\n{}\nstderr:\n{stderr}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
    );
    for needle in needles {
        assert!(stderr.contains(needle), "`{needle}` not in stderr:\n{stderr}");
    }
}

/// Files of a million levels: the construct, and the 1-based column where the scan gives up.
fn deep_files() -> Vec<(&'static str, String, String)> {
    let n = DEPTH;
    let limit = pysplice::limits::MAX_NESTING;
    vec![
        (
            "minus",
            format!("Z = {}1\n", "-".repeat(n)),
            format!(":1:{}:", 4 + limit + 1),
        ),
        (
            "attributes",
            format!("Z = a{}\n", ".b".repeat(n)),
            format!(":1:{}:", 6 + 2 * limit),
        ),
        (
            "parens",
            format!("Z = {}1{}\n", "(".repeat(n), ")".repeat(n)),
            ":1:205:".to_string(),
        ),
        ("brackets", format!("Z = {}\n", "[".repeat(n)), ":1:205:".to_string()),
        (
            "not",
            format!("Z = {}1\n", "not ".repeat(n)),
            format!(":1:{}:", 4 + 4 * limit + 1),
        ),
        (
            "lambda",
            format!("Z = {}1\n", "lambda: ".repeat(n)),
            format!(":1:{}:", 4 + 8 * limit + 1),
        ),
        (
            "power",
            format!("Z = 2{}\n", "**2".repeat(n)),
            format!(":1:{}:", 5 + 3 * limit + 1),
        ),
        (
            "fstring",
            format!("Z = f'{{{}1}}'\n", "-".repeat(n)),
            format!(":1:{}:", 7 + limit),
        ),
        ("calls", format!("Z = f{}\n", "()".repeat(n)), ":1:".to_string()),
        (
            "elif",
            format!("if x:\n pass\n{}", "elif x:\n pass\n".repeat(n)),
            format!(":{}:2:", 2 * limit + 2),
        ),
    ]
}

#[test]
fn million_deep_files_are_refused_by_every_binary() {
    let temp = Temp::new();
    let spec = temp.write("recipe.toml", RECIPE.as_bytes());
    for (name, text, at) in deep_files() {
        let file = temp.write(&format!("{name}.py"), text.as_bytes());
        let expected = if matches!(name, "parens" | "brackets") {
            "too many nested parentheses"
        } else {
            "too deeply nested code"
        };
        let located = format!("{name}.py{at}");
        for args in [
            vec![Path::new("apply"), Path::new("--spec"), &spec, &file],
            vec![Path::new("check"), Path::new("--spec"), &spec, &file],
            vec![Path::new("locate"), &file],
        ] {
            let output = run("pysplice", &args);
            assert_fails(&output, 2, &[&located, expected]);
        }
        let output = run("sglang_hs_dump", &[&file]);
        assert_fails(&output, 2, &[&located, expected]);
        assert_eq!(std::fs::read(&file).unwrap(), text.as_bytes(), "{name}: untouched");
    }
}

#[test]
fn million_deep_recipe_code_is_a_clean_error() {
    let temp = Temp::new();
    let file = temp.write("m.py", b"x = 1\n");
    for (name, code) in [
        ("minus", format!("Z = {}1", "-".repeat(DEPTH))),
        ("attributes", format!("Z = a{}", ".b".repeat(DEPTH))),
        ("parens", format!("Z = {}1{}", "(".repeat(DEPTH), ")".repeat(DEPTH))),
    ] {
        let recipe = format!(
            "[recipe]\nid = \"deep\"\nsummary = \"s\"\n\n[[hook]]\nid = \"h\"\nsummary = \"s\"\n\
             at = \"after-imports\"\ncode = \"{code}\"\n"
        );
        let spec = temp.write(&format!("{name}.toml"), recipe.as_bytes());
        let output = run("pysplice", &[Path::new("apply"), Path::new("--spec"), &spec, &file]);
        assert_fails(&output, 2, &["nested"]);
        let pattern = format!(
            "[recipe]\nid = \"deep\"\nsummary = \"s\"\n\n[[hook]]\nid = \"h\"\nsummary = \"s\"\n\
             at = \"after\"\nanchor = \"{code}\"\ncode = \"pass\"\n"
        );
        let spec = temp.write(&format!("{name}-anchor.toml"), pattern.as_bytes());
        let output = run("pysplice", &[Path::new("apply"), Path::new("--spec"), &spec, &file]);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(std::fs::read(&file).unwrap(), b"x = 1\n");
    }
}

#[test]
fn deeply_nested_recipe_toml_is_a_clean_error() {
    let temp = Temp::new();
    let file = temp.write("m.py", b"x = 1\n");
    for (name, toml) in [
        (
            "arrays",
            format!("{RECIPE}\nx = {}{}\n", "[".repeat(DEPTH), "]".repeat(DEPTH)),
        ),
        (
            "tables",
            format!("{RECIPE}\nx = {}1{}\n", "{a = ".repeat(DEPTH), "}".repeat(DEPTH)),
        ),
    ] {
        let spec = temp.write(&format!("{name}.toml"), toml.as_bytes());
        let output = run("pysplice", &[Path::new("apply"), Path::new("--spec"), &spec, &file]);
        assert_fails(&output, 2, &[&format!("{name}.toml")]);
        assert_eq!(std::fs::read(&file).unwrap(), b"x = 1\n");
    }
}

#[test]
fn nul_bytes_are_refused_with_their_position() {
    let temp = Temp::new();
    let spec = temp.write("recipe.toml", RECIPE.as_bytes());
    for (name, bytes, at) in [
        ("in-string", &b"import sys\nx = 'a\0b'\n"[..], "in-string.py:2:7:"),
        ("in-comment", b"# \0\nx = 1\n", "in-comment.py:1:3:"),
        ("alone", b"\0", "alone.py:1:1:"),
    ] {
        let file = temp.write(&format!("{name}.py"), bytes);
        let output = run("pysplice", &[Path::new("apply"), Path::new("--spec"), &spec, &file]);
        assert_fails(&output, 2, &[at, "source code cannot contain null bytes"]);
        assert_eq!(std::fs::read(&file).unwrap(), bytes, "{name}: untouched");
    }
}

#[test]
fn coding_declarations_other_than_utf8_are_refused() {
    let temp = Temp::new();
    let spec = temp.write("recipe.toml", RECIPE.as_bytes());
    let latin = b"# -*- coding: latin-1 -*-\nx = '\xe9'\n";
    let file = temp.write("latin.py", latin);
    let output = run("pysplice", &[Path::new("apply"), Path::new("--spec"), &spec, &file]);
    assert_fails(
        &output,
        2,
        &["latin.py:1:15:", "declared encoding latin-1 is not supported"],
    );
    assert_eq!(std::fs::read(&file).unwrap(), latin);

    let bom_latin = b"\xef\xbb\xbf# coding: latin-1\nx = 1\n";
    let file = temp.write("bom.py", bom_latin);
    let output = run("pysplice", &[Path::new("apply"), Path::new("--spec"), &spec, &file]);
    assert_fails(&output, 2, &["bom.py:1:11:", "encoding problem: latin-1 with BOM"]);
    assert_eq!(std::fs::read(&file).unwrap(), bom_latin);

    // UTF-8 declarations, with or without a BOM, are fine; the patch keeps both.
    for (name, bytes) in [
        ("utf8", &b"# -*- coding: utf-8 -*-\nx = '\xc3\xa9'\n"[..]),
        ("bom-utf8", b"\xef\xbb\xbf# coding=utf8\nx = '\xc3\xa9'\n"),
    ] {
        let file = temp.write(&format!("{name}.py"), bytes);
        let output = run("pysplice", &[Path::new("apply"), Path::new("--spec"), &spec, &file]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let patched = std::fs::read(&file).unwrap();
        assert!(patched.starts_with(&bytes[..bytes.iter().position(|&b| b == b'\n').unwrap()]));
        assert!(String::from_utf8(patched).unwrap().contains("import os"));
        let output = run("pysplice", &[Path::new("revert"), Path::new("--spec"), &spec, &file]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(std::fs::read(&file).unwrap(), bytes, "{name}: reverted byte for byte");
    }
}
