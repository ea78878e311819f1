//! The compile checks against CPython itself: random small programs (`tests/it/python/py_compile_cases.py`,
//! fixed seeds) that nest functions, async functions, classes, loops, `with` and `try` around
//! the statements CPython's compiler judges by context. CPython compiles or refuses each; the
//! checks must agree on every one: never refuse what CPython compiles (a patch would be refused
//! for nothing) and never accept what it refuses (a patched file would not load). Which error
//! comes first may differ: CPython reports its symbol-table errors before the others.

use std::path::Path;
use std::process::Command;

use pysplice::{ParsedFile, SourceFile};

#[test]
fn compile_checks_agree_with_cpython_on_random_programs() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/python/py_compile_cases.py");
    let mut disagreements = Vec::new();
    let mut counts = [0usize; 2];
    for seed in ["7", "11"] {
        let output = Command::new("python3")
            .arg(&script)
            .args([seed, "2000"])
            .output()
            .expect("python3 runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let cases: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).expect("JSON cases");
        for case in &cases {
            let src = case["src"].as_str().expect("a program");
            let cpython = case["msg"].as_str();
            let parsed = ParsedFile::parse(SourceFile::new("t.py", src))
                .unwrap_or_else(|err| panic!("CPython parses what pysplice does not: {err}\n{src}"));
            let ours = parsed.compiler_errors();
            counts[usize::from(cpython.is_some())] += 1;
            match (cpython, ours.first()) {
                (None, Some(err)) => disagreements.push(format!("refused what CPython compiles: {err}\n{src}")),
                (Some(message), None) => {
                    disagreements.push(format!("accepted what CPython refuses ({message}):\n{src}"))
                }
                _ => {}
            }
        }
    }
    assert!(counts[0] > 300 && counts[1] > 3000, "{counts:?}");
    assert!(
        disagreements.is_empty(),
        "{} disagreements, the first ones:\n{}",
        disagreements.len(),
        disagreements
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n---\n")
    );
}
