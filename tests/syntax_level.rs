//! The parser's syntax level: Python 3.11's grammar with PEP 695 type parameters (3.12), and
//! known gaps (README "Limitations"): PEP 701 f-strings (3.12: a quote of the f-string's own
//! kind inside a field), PEP 696 type-parameter defaults (3.13) and PEP 758 unparenthesised
//! `except` lists (3.14) are refused as invalid Python: a typed error with line and column,
//! never a panic (the program's exit 2: `cli/tests/it/syntax_level.rs`). Should the parser learn them, this test says so.

use pysplice::{ErrorKind, ParsedFile, SourceFile};

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
fn known_gaps_are_clean_syntax_errors() {
    for (name, source, line, column, _) in GAPS {
        let err = ParsedFile::parse(SourceFile::new(format!("{name}.py"), source)).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Syntax { .. }), "{name}: {err:?}");
        assert_eq!((err.location().line, err.location().column), (line, column), "{name}");
    }
}

#[test]
fn what_is_supported_of_3_12_parses() {
    for source in [
        "def f[T](x: T) -> T:\n    return x\ntype X = int\nclass C[T]:\n    pass\n",
        "y = f\"{x!r:>{w}}\"\nz = f\"{'a'}\"\nw = f\"\"\"{\n1}\"\"\"\n",
        "match p:\n    case [1, *rest]:\n        pass\n",
    ] {
        ParsedFile::parse(SourceFile::new("ok.py", source)).unwrap();
    }
}
