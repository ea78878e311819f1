//! The parser's known syntax gaps (see the library's `tests/syntax_level.rs`) as the `pysplice`
//! program reports them: exit 2 and the message users see, the file untouched.

use crate::common;

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
        let output = Command::new(common::program("pysplice"))
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
