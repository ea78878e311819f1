//! The library never panics, whatever bytes it is given: arbitrary strings and bytes, token soup,
//! and truncations and byte deletions of real Python (the outline fixtures, the demo model and,
//! when the corpus is fetched, SGLang's `deepseek_v2.py`) go through
//! `SourceFile::from_bytes` → `ParsedFile::parse` → `definitions()` → `locate()` of every path.
//! A panic fails the test; cheap invariants of the outline are checked on the way.

use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::sample::Index;
use pysplice::{ErrorKind, LineColumn, ParsedFile, SourceFile};

/// Runs the whole read → parse → outline → locate pipeline on `bytes`.
fn exercise(bytes: Vec<u8>) {
    let source = match SourceFile::from_bytes("input.py", bytes) {
        Ok(source) => source,
        Err(err) => {
            assert!(matches!(err.kind(), ErrorKind::NotUtf8 { .. }), "{err:?}");
            assert!(err.location().line >= 1 && err.location().column >= 1);
            return;
        }
    };
    let len = source.text().len();
    for offset in [0, len / 3, len / 2, len, len + 7] {
        let at = source.position(offset);
        let units = source.position_utf16(offset);
        assert_eq!(at.line, units.line);
        assert!(source.offset_of_utf16(units) <= len);
    }
    let parsed = match ParsedFile::parse(source) {
        Ok(parsed) => parsed,
        Err(err) => {
            assert!(matches!(err.kind(), ErrorKind::Syntax { .. }), "{err:?}");
            assert!(err.location().line >= 1 && err.location().column >= 1);
            return;
        }
    };
    let source = parsed.source();
    let definitions = parsed.definitions();
    for (i, d) in definitions.iter().enumerate() {
        assert!(d.parent().is_none_or(|p| p < i), "parent after child: {}", d.path());
        assert!(d.line() <= d.end_line(), "{}", d.path());
        assert!(d.decorator_line().is_none_or(|l| l < d.line()), "{}", d.path());
        let range = d.range();
        let body = d.body_range();
        assert!(
            range.start <= body.start && body.end <= range.end && range.end <= len,
            "{}",
            d.path()
        );
        assert!(d
            .docstring()
            .is_none_or(|doc| body.start <= doc.start && doc.end <= body.end));
        assert_eq!(source.position(range.start).line, d.line());
        let _ = (
            source.slice(range.clone()),
            source.position_utf16(range.end),
            d.body_indent(),
            d.name(),
        );
        assert!(parsed.node(d).is_definition());
        match parsed.locate(d.path()) {
            Ok(found) => assert_eq!(found.path(), d.path()),
            Err(err) if matches!(err.kind(), ErrorKind::Ambiguous { .. }) => {
                let ErrorKind::Ambiguous { lines, .. } = err.kind() else {
                    unreachable!()
                };
                assert!(lines.len() > 1 && lines.contains(&d.line()));
            }
            Err(err) => panic!("{} does not locate itself: {err}", d.path()),
        }
        let count = parsed.find_all(d.path()).len();
        assert!(parsed.locate(&format!("{}#{count}", d.path())).is_ok());
        assert!(parsed.locate(&format!("{}#{}", d.path(), count + 1)).is_err());
    }
    // A few misses, through the nearest-candidate search.
    if let Some(last) = definitions.last() {
        let _ = parsed.locate(&format!("{}x", last.path()));
        let _ = parsed.locate(&format!("{}.missing", last.path()));
    }
    for path in [
        "module",
        "",
        "#",
        "A..b",
        "A.b#0",
        "Missing",
        "<locals>",
        "\u{e9}.\u{2118}#1",
    ] {
        let _ = parsed.locate(path);
    }
    let _ = source.offset_of_utf16(LineColumn { line: 1, column: 1 });
}

/// Real-looking Python: the outline fixtures, the demo model, and the corpus file when fetched.
fn samples() -> &'static [Vec<u8>] {
    static SAMPLES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SAMPLES.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<_> = std::fs::read_dir(root.join("tests/fixtures/outline"))
            .expect("fixtures folder")
            .map(|entry| entry.unwrap().path())
            .collect();
        files.sort();
        files.retain(|path| path.is_file());
        // The demo model of the SGLang crate: a real model file in small.
        let demo = root.join("crates/pysplice-sglang/data/demo_model.py");
        assert!(demo.is_file(), "the demo model is readable at {}", demo.display());
        files.push(demo);
        let mut samples: Vec<Vec<u8>> = files.iter().map(|path| std::fs::read(path).unwrap()).collect();
        assert!(samples.len() >= 20, "only {} samples", samples.len());
        if let Some(corpus) = corpus_file() {
            samples.push(std::fs::read(corpus).unwrap());
        }
        samples
    })
}

/// SGLang 0.5.23's `deepseek_v2.py`, if `scripts/fetch-corpus.sh` has run.
fn corpus_file() -> Option<std::path::PathBuf> {
    let path = crate::support::sglang_corpus_root().join("0.5.23/sglang/srt/models/deepseek_v2.py");
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("no corpus at {}: fixtures only", path.display());
        None
    }
}

/// Python-flavoured fragments, so that random text often gets past the tokenizer.
const TOKENS: &[&str] = &[
    "def ", "class ", "async ", "await ", "lambda", "return", "yield", "pass", "...", "if ", "elif ", "else", "try",
    "except", "finally", "with ", "for ", "while ", "match ", "case ", "global ", "x", "A", "self", "é", "😀", ":",
    "(", ")", "[", "]", "{", "}", ",", ";", "=", "->", "@", ".", " ", "    ", "\t", "\n", "\r\n", "\r", "\x0c", "\\\n",
    "#", "'", "\"", "'''", "\"\"\"", "f\"", "b'", "r'", "\u{feff}", "0", "1.5", "*", "**",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..120).prop_map(|tokens| tokens.concat())
}

/// A sample with up to `deletions` single bytes removed and then cut at `cut`.
fn mutate(sample: &[u8], deletions: &[Index], cut: Option<Index>) -> Vec<u8> {
    let mut bytes = sample.to_vec();
    for index in deletions {
        if !bytes.is_empty() {
            bytes.remove(index.index(bytes.len()));
        }
    }
    if let Some(cut) = cut {
        bytes.truncate(cut.index(bytes.len() + 1));
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_strings(text in any::<String>()) {
        exercise(text.into_bytes());
    }

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        exercise(bytes);
    }

    #[test]
    fn token_soups(text in token_soup()) {
        exercise(text.into_bytes());
    }

    #[test]
    fn truncated_and_damaged_samples(
        which in any::<Index>(),
        deletions in prop::collection::vec(any::<Index>(), 0..4),
        cut in prop::option::of(any::<Index>()),
    ) {
        let samples = samples();
        exercise(mutate(&samples[which.index(samples.len())], &deletions, cut));
    }
}

proptest! {
    // The corpus file is large (150 KB); a few cases are enough to reach every kind of statement.
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn truncated_and_damaged_corpus_file(
        deletions in prop::collection::vec(any::<Index>(), 0..6),
        cut in any::<Index>(),
    ) {
        if let Some(path) = corpus_file() {
            exercise(mutate(&std::fs::read(path).unwrap(), &deletions, Some(cut)));
        }
    }
}

#[test]
fn every_sample_whole_and_cut_at_every_line() {
    for sample in samples().iter().filter(|sample| sample.len() < 20_000) {
        exercise(sample.clone());
        for (i, _) in sample.iter().enumerate().filter(|(_, &b)| b == b'\n' || b == b'\r') {
            exercise(sample[..i].to_vec());
            exercise(sample[i + 1..].to_vec());
        }
    }
}

#[test]
fn moderately_deep_nesting() {
    // CPython's own limits: 100 levels of indentation, 200 nested brackets.
    let mut defs = String::new();
    let mut ifs = String::new();
    for depth in 0..99 {
        defs.push_str(&format!("{}def f{depth}():\n", " ".repeat(depth)));
        ifs.push_str(&format!("{}if x:\n", " ".repeat(depth)));
    }
    defs.push_str(&format!("{}pass\n", " ".repeat(99)));
    ifs.push_str(&format!("{}pass\n", " ".repeat(99)));
    for text in [
        defs,
        ifs,
        format!("x = {}1{}\n", "(".repeat(199), ")".repeat(199)),
        format!("x = {}1{}\n", "[".repeat(199), "]".repeat(199)),
        format!("x = 1{}\n", " + 1".repeat(100)),
        format!("if x:\n    pass\n{}", "elif x:\n    pass\n".repeat(100)),
        format!("x = a{}\n", ".b".repeat(100)),
        "(".repeat(5000),
        "[{".repeat(5000),
    ] {
        exercise(text.into_bytes());
    }
}

/// Deeply nested code (CPython accepts up to about 3000 levels) is refused with a syntax error
/// past `pysplice::limits::MAX_DEPTH`, never a stack overflow, on a 2 MiB test thread.
#[test]
fn deep_nesting_is_refused_without_overflow() {
    for text in [
        format!("x = 1{}\n", " + 1".repeat(2000)),
        format!("if x:\n    pass\n{}", "elif x:\n    pass\n".repeat(2000)),
        format!("x = a{}\n", ".b".repeat(2000)),
        format!("x = a{}\n", "()".repeat(2000)),
        format!("x = {}1\n", "-".repeat(2000)),
    ] {
        let err = ParsedFile::parse(SourceFile::new("deep.py", text.clone())).unwrap_err();
        assert!(err.to_string().contains("nested more than"), "{err}");
        exercise(text.into_bytes());
    }
    // Deep but within the limit: parsed and outlined normally.
    let text = format!("if x:\n    pass\n{}", "elif x:\n    pass\n".repeat(200));
    assert!(ParsedFile::parse(SourceFile::new("elif.py", text)).is_ok());
}
