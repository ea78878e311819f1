//! The parser's syntax level: Python 3.11's grammar with PEP 695 type parameters (3.12), and
//! known gaps (docs/spec.md "Limitations"): PEP 701 f-strings (3.12: a quote of the f-string's own
//! kind inside a field), PEP 696 type-parameter defaults (3.13) and PEP 758 unparenthesised
//! `except` lists (3.14) are refused as invalid Python: a typed error with line and column,
//! exit 2 from the CLI, never a panic (the library's side: `tests/it/parse.rs`). Should the
//! parser learn them, this test says so.

mod common;

use std::process::Command;

/// (name, source, line, column, the unexpected token) of each known gap.
const GAPS: [(&str, &str, usize, usize, &str); 4] = [
    ("pep701", "x = {\"a\": 1}\ny = f\"{x[\"a\"]}\"\n", 2, 11, "'a'"),
    ("pep701-spec", "y = f\"{x:{\"a\"}}\"\n", 1, 12, "'a'"),
    ("pep696", "def f[T = int](x: T) -> T:\n    return x\n", 1, 9, "'='"),
    (
        "pep758",
        "try:\n    pass\nexcept ValueError, TypeError:\n    pass\n",
        3,
        18,
        "','",
    ),
];

#[test]
fn the_cli_shows_the_message_users_see() {
    let dir = tempfile::tempdir().unwrap();
    for (name, source, line, column, token) in GAPS {
        let file = dir.path().join(format!("{name}.py"));
        std::fs::write(&file, source).unwrap();
        let output = Command::new(common::example_binary("pysplice"))
            .arg("locate")
            .arg(&file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        let expected = format!(
            "{}:{line}:{column}: invalid Python: invalid syntax. Got unexpected token {token}",
            file.display()
        );
        assert!(stderr.contains(&expected), "{expected}\n{stderr}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), source);
    }
}
