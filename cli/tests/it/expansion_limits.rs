//! Bounded expansion through the `pysplice` program (see the library's
//! `tests/it/limits.rs`): a recipe whose code grows past the limit once its placeholders
//! are filled in is refused with exit 2, the file is left untouched.

use crate::common;

use std::path::Path;
use std::process::Command;

use pysplice::limits::MAX_RENDERED_BYTES;
use pysplice_test_support::recipe_text::{hook_at_module_end, recipe_with_big_var};

const MIB: usize = 1 << 20;

fn line_of(text: &str, needle: &str) -> usize {
    text[..text.find(needle).expect("the needle is in the text")]
        .lines()
        .count()
        + 1
}

/// Through the CLI: exit 2, the message names the recipe's line and the hook, the file keeps
/// its bytes.
#[test]
fn the_cli_refuses_the_recipe_and_leaves_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = recipe_with_big_var(
        MIB,
        &hook_at_module_end("big", &format!("x = '{}'", "{big}".repeat(1000))),
    );
    assert!(text.len() < 2 * MIB);
    let spec = dir.path().join("r.toml");
    std::fs::write(&spec, &text).unwrap();
    let file = dir.path().join("m.py");
    std::fs::write(&file, b"x = 1\n").unwrap();
    for command in ["apply", "check"] {
        let output = Command::new(common::program("pysplice"))
            .args([command, "--spec"])
            .args([&spec, &file])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        let expected = format!(
            "{}:{}:1: bad spec: the code, with its placeholders filled in, would be {} bytes, more than the limit of {MAX_RENDERED_BYTES} bytes [hook big]",
            spec.display(),
            line_of(&text, "code = "),
            1000 * MIB + 6
        );
        assert!(stderr.contains(&expected), "{expected}\n{stderr}");
        assert!(
            stderr.len() < 1000,
            "the message does not echo the code: {} bytes",
            stderr.len()
        );
        assert_eq!(std::fs::read(&file).unwrap(), b"x = 1\n");
    }
    assert!(Path::new(&file).exists());
}
