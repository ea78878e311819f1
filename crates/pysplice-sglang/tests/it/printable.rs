//! The Python programs' printable form (`pysplice_sglang.masks.printable` and `shown`, which
//! `sglang-hs-send` and `sglang-hs-inspect` print every name from outside with) is the Rust
//! programs' (`pysplice::report::printable` and `shown`): both run on the same text, every
//! character of the Basic Multilingual Plane and a few beyond included, and must agree.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use pysplice::report::{printable, shown};

/// What `python3` makes of each text: `[printable, shown]` per text, as JSON.
fn python_forms(texts: &[String]) -> Vec<(String, String)> {
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("python");
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import json, sys\n\
             from pysplice_sglang.masks import printable, shown\n\
             texts = json.load(sys.stdin)\n\
             json.dump([[printable(t), shown(t)] for t in texts], sys.stdout)\n",
        ])
        .env("PYTHONPATH", package)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 starts");
    let input = serde_json::to_vec(texts).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "python3 failed");
    serde_json::from_slice(&output.stdout).expect("a JSON list of pairs")
}

#[test]
fn the_python_programs_print_text_from_outside_as_the_rust_ones_do() {
    let mut texts: Vec<String> = [
        // The library's own cases (src/printable.rs).
        "evil\u{1b}]0;PWNED\u{7}x.py",
        "a\nb\u{202e}c",
        "models/qwen2_moe.py",
        "A\u{1b}]0;x\u{7}",
        "a\nb\u{202e}c\td",
        "\u{85}x",
        "",
        "caf\u{e9} \u{4e2d}\u{6587} \u{1f600}",
        "\r\n\t\u{7f}\u{9f}\u{a0}\u{ad}\u{200b}\u{2028}\u{2029}\u{feff}",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Cut where a name is long, in characters of one to four bytes.
    for unit in ["a", "\u{e9}", "\u{4e2d}", "\u{1f600}", "\u{1b}"] {
        for count in [79, 80, 81, 200] {
            texts.push(unit.repeat(count));
        }
    }
    texts.push(format!("\u{1b}{}", "a".repeat(1000)));
    // Every character of the Basic Multilingual Plane but the surrogates, and the first of
    // each later plane, each between two letters.
    let chars = (0u32..0x1_0000)
        .chain((1..=16).map(|plane| plane << 16))
        .filter_map(char::from_u32);
    texts.extend(chars.map(|c| format!("a{c}b")));
    let python = python_forms(&texts);
    assert_eq!(python.len(), texts.len());
    let mut differ = Vec::new();
    for (text, (p, s)) in texts.iter().zip(&python) {
        if *p != printable(text) || *s != shown(text) {
            differ.push(format!(
                "{text:?}: Python {p:?} / {s:?}, Rust {:?} / {:?}",
                printable(text),
                shown(text)
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} texts differ, the first: {:#?}",
        differ.len(),
        &differ[..differ.len().min(10)]
    );
}
