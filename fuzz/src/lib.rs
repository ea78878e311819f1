//! Fuzz harnesses for pysplice (see `README.md`). Each target feeds bytes into one function here;
//! a panic (a library panic, or a broken invariant asserted here) is a crash.
//!
//! Invariants checked on every input that decodes and parses, for each of two fixed recipes:
//! - planning, applying, verifying and reverting never panic;
//! - applying succeeds or fails with a placement-kind error; a verification failure is a bug;
//! - applying the output again changes nothing; `revert(apply(x)) == revert(x)`, byte for byte;
//! - the reverted text parses;
//! - a `Document` over the text plans without panicking, and its `apply_edits`, applied the way an
//!   LSP client applies `TextEdit`s (UTF-16 positions), give exactly the patched text.

use std::sync::OnceLock;

use pysplice::{Document, TextEdit, Utf16Position, Utf16Range};
use pysplice::{apply, revert, ErrorKind, ParsedFile, Recipe, SourceFile};

/// A recipe with every hook kind; most hooks are optional so that a mutated file still gets far.
pub const OPTIONAL_SPEC: &str = r#"
[recipe]
id = "fuzz"
summary = "Fuzzing recipe, optional hooks"

[vars]
env = "FUZZ_ENV"

[[hook]]
id = "imports"
summary = "imports"
ensure-imports = ["os", "from pathlib import Path"]

[[hook]]
id = "helper"
summary = "helper at the end of the module"
in = "module"
at = "end"
code = '''
def _fuzz_wrap(value):
    return value
'''

[[hook]]
id = "after-imports"
summary = "after the imports"
in = "module"
at = "after-imports"
code = "_FUZZ = os.environ.get('{env}')"

[[hook]]
id = "init"
summary = "start of A.__init__"
in = "A.__init__"
at = "start"
optional = true
code = "self.fuzz = {param.1}"

[[hook]]
id = "after"
summary = "after an assignment"
in = "A.__init__"
at = { after = "self.model = $_" }
optional = true
code = '''
if self.model is not None:
    self.fuzz_model = True
'''

[[hook]]
id = "wrap"
summary = "wrap the returns of A.forward"
in = "A.forward"
wrap-returns = "_fuzz_wrap({value})"
unless-inside = "if x: $$$"
optional = true

[[hook]]
id = "before"
summary = "before every return of g"
in = "g"
at = { before = "return $_", nth = "all" }
optional = true
code = "pass"

[[hook]]
id = "replace"
summary = "replace pass in g"
in = "g"
replace = "pass"
code = "x0 = 0"
optional = true

[[hook]]
id = "one-line"
summary = "start of a one-line suite"
in = "A.run"
at = "start"
optional = true
code = "self.ran = True"

[[hook]]
id = "forwarder"
summary = "forwarder in Wrapper"
in = "Wrapper"
add-forwarder = "forward"
via = "model"
optional = true

[[hook]]
id = "when"
summary = "end of helper when it returns"
in = "helper"
at = "end"
when = "return $_"
optional = true
code = "_unreachable = 1"
"#;

/// A recipe whose hooks are required: any missing target fails the file.
pub const REQUIRED_SPEC: &str = r#"
[recipe]
id = "fuzz-required"
summary = "Fuzzing recipe, required hooks"

[[hook]]
id = "imports"
summary = "imports"
ensure-imports = ["logging"]

[[hook]]
id = "end"
summary = "end of A.forward"
in = "A.forward"
at = "end"
code = "logging.debug('end')"

[[hook]]
id = "wrap"
summary = "wrap the returns of helper"
in = "helper"
wrap-returns = "({value})"
"#;

/// The seed file the structured target mutates: every recipe target exists in it.
pub const SEED: &str = r#""""Module docstring."""
from __future__ import annotations

import sys


def helper(x):
    return x


class A(Base):
    """Doc."""

    def __init__(self, config):
        super().__init__()
        self.model = Inner(config)
        self.capture = False

    @decorator
    def forward(self, x, batch=None):
        if x:
            return None
        y = x + 1  # comment
        for i in range(3):
            if i:
                return y
        def inner():
            return 1
        return (lambda: 2)()

    async def run(self): return 1


class Wrapper:
    def __init__(self):
        self.model = A(None)


def g(a, *args, b=1, **kw):
    pass
    x = 1; y = 2
    return a \
        + b
"#;

fn recipes() -> &'static [Recipe] {
    static RECIPES: OnceLock<Vec<Recipe>> = OnceLock::new();
    RECIPES.get_or_init(|| {
        [("optional.toml", OPTIONAL_SPEC), ("required.toml", REQUIRED_SPEC)]
            .iter()
            .map(|(name, text)| Recipe::from_toml(name, text).expect("the fuzz recipes are valid"))
            .collect()
    })
}

/// Target `pipeline`: arbitrary bytes as a file.
pub fn pipeline(data: &[u8]) {
    exercise(data.to_vec());
}

/// Target `structured`: the seed file in one of several styles, with bytes inserted (and a few
/// deleted) at a position taken from the input, so that most inputs still parse.
///
/// Layout: `[style, position high, position low, deleted count, inserted bytes...]`.
pub fn structured(data: &[u8]) {
    exercise(mutate(data).into_bytes());
}

/// The text the structured target feeds to [`exercise`].
#[must_use]
pub fn mutate(data: &[u8]) -> String {
    let (head, tail) = data.split_at(data.len().min(4));
    let byte = |i: usize| head.get(i).copied().unwrap_or(0);
    let mut text = styled_seed(byte(0));
    let position = usize::from(u16::from_be_bytes([byte(1), byte(2)])) % (text.len() + 1);
    let start = floor_boundary(&text, position);
    let end = ceil_boundary(&text, start + usize::from(byte(3) % 8));
    let inserted = String::from_utf8_lossy(tail);
    text.replace_range(start..end, &inserted);
    text
}

/// The seed in style `style % 6`: LF, CRLF, CR, tabs, BOM + CRLF, two-space indents.
fn styled_seed(style: u8) -> String {
    match style % 6 {
        0 => SEED.to_string(),
        1 => SEED.replace('\n', "\r\n"),
        2 => SEED.replace('\n', "\r"),
        3 => SEED.replace("    ", "\t"),
        4 => format!("\u{feff}{}", SEED.replace('\n', "\r\n")),
        _ => SEED.replace("    ", "  "),
    }
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

fn strict() -> bool {
    static STRICT: OnceLock<bool> = OnceLock::new();
    *STRICT.get_or_init(|| std::env::var_os("PYSPLICE_FUZZ_LENIENT").is_none())
}

/// Runs every invariant of this module on `bytes`.
pub fn exercise(bytes: Vec<u8>) {
    let Ok(source) = SourceFile::from_bytes("fuzz.py", bytes) else {
        return;
    };
    let text = source.text().to_string();
    if ParsedFile::parse(source).is_err() {
        // Still: planning a document that does not parse must fail cleanly.
        // (unless it carries the recipe's markers: the text without them may parse).
        let doc = Document::new("fuzz.py", &text);
        for recipe in recipes() {
            let planned = doc.plan(recipe);
            let marked = pysplice::marker::carries(&text, &recipe.id);
            assert!(marked || planned.is_err(), "a text that does not parse was planned");
        }
        return;
    }
    let mut layered = text.clone();
    for recipe in recipes() {
        if let Some(output) = check_recipe(recipe, &text) {
            layered = output;
        }
    }
    // The second recipe on top of the first one's output.
    if let Some(last) = recipes().last() {
        check_recipe(last, &layered);
    }
}

/// Checks one recipe on `text` (which parses); returns the patched text when applying works.
pub fn check_recipe(recipe: &Recipe, text: &str) -> Option<String> {
    let file = |t: &str| SourceFile::new("fuzz.py", t);
    let doc = Document::new("fuzz.py", text);
    let planned = doc.plan(recipe);
    let patched = match apply(recipe, file(text)) {
        Ok(patched) => patched,
        Err(err) => {
            // A refusal docs/spec.md documents (an import that the file binds only below other
            // module code counts as present, so after-imports code using it would run first) is
            // the verification doing its job, not an engine fault.
            let documented = matches!(err.kind(), ErrorKind::EarlyNameUse { .. });
            if strict() && !documented {
                assert!(
                    !matches!(err.kind(), ErrorKind::Verify { .. }),
                    "verification failed:\n{err}\n--- input:\n{text:?}"
                );
            }
            assert!(err.location().line >= 1, "{err:?}");
            assert!(
                doc.apply_edits(recipe).is_err(),
                "Document::apply_edits succeeded where apply failed"
            );
            return None;
        }
    };
    let planned = planned.expect("Document::plan failed where apply succeeded");
    assert_eq!(planned.hooks.len(), recipe.hooks.len());
    let output = patched.output().to_string();

    let again = apply(recipe, file(&output)).unwrap_or_else(|err| panic!("applying to the output fails: {err}"));
    assert_eq!(again.output(), output, "apply is not idempotent\n--- input:\n{text:?}");
    let reverted = revert(recipe, file(&output)).unwrap_or_else(|err| panic!("reverting the output fails: {err}"));
    let base = revert(recipe, file(text)).unwrap_or_else(|err| panic!("reverting the input fails: {err}"));
    assert_eq!(
        reverted.output(),
        base.output(),
        "revert(apply(x)) != revert(x)\n--- input:\n{text:?}"
    );
    assert!(
        ParsedFile::parse(file(reverted.output())).is_ok(),
        "the reverted text does not parse"
    );

    let edits = doc
        .apply_edits(recipe)
        .expect("Document::apply_edits failed where apply succeeded");
    assert_eq!(
        apply_lsp_edits(text, &edits),
        output,
        "Document::apply_edits differs from apply"
    );
    let back = Document::new("fuzz.py", &output)
        .revert_edits(recipe)
        .expect("revert_edits failed");
    assert_eq!(
        apply_lsp_edits(&output, &back),
        base.output(),
        "Document::revert_edits differs from revert"
    );
    Some(output)
}

/// Applies LSP text edits (non-overlapping, positions of `text`) the way a client does. An
/// implementation independent of the library's.
#[must_use]
pub fn apply_lsp_edits(text: &str, edits: &[TextEdit]) -> String {
    let mut sorted: Vec<&TextEdit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.range.start, e.range.end));
    let mut out = String::new();
    let mut at = 0;
    for edit in sorted {
        let start = naive_offset(text, edit.range.start);
        let end = naive_offset(text, edit.range.end);
        assert!(at <= start && start <= end, "overlapping or reversed edits: {edits:?}");
        out.push_str(&text[at..start]);
        out.push_str(&edit.new_text);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// Byte offset of an LSP position by a plain walk over the text (lines on `\n`, `\r\n`, `\r`).
#[must_use]
pub fn naive_offset(text: &str, at: Utf16Position) -> usize {
    let mut line = 0;
    let mut units = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if line == at.line {
            if c == '\n' || c == '\r' || units >= at.character as usize {
                return i;
            }
            units += c.len_utf16();
            if units > at.character as usize {
                return i; // inside a surrogate pair: the start of the character
            }
            continue;
        }
        if c == '\n' || c == '\r' {
            if c == '\r' && chars.peek().map(|&(_, n)| n) == Some('\n') {
                chars.next();
            }
            line += 1;
        }
    }
    text.len()
}

/// Target `document`: incremental LSP changes on a [`Document`] against a `String` model.
///
/// Layout: repeated `[line, character, length, count, inserted bytes (count)...]`.
pub fn document(data: &[u8]) {
    let mut model = styled_seed(data.first().copied().unwrap_or(0));
    let mut doc = Document::new("doc.py", &model);
    let mut rest = data.get(1..).unwrap_or_default();
    let mut steps = 0;
    while rest.len() >= 4 && steps < 64 {
        let (line, character, length, count) = (rest[0], rest[1], rest[2], usize::from(rest[3] % 16));
        let inserted = String::from_utf8_lossy(&rest[4..(4 + count).min(rest.len())]).into_owned();
        rest = &rest[(4 + count).min(rest.len())..];
        steps += 1;
        let start = Utf16Position::new(u32::from(line % 64), u32::from(character % 96));
        let end = Utf16Position::new(
            start.line + u32::from(length / 64),
            if length / 64 == 0 {
                start.character + u32::from(length % 64)
            } else {
                u32::from(length % 64)
            },
        );
        let range = Utf16Range::new(start, end);
        let (a, b) = (naive_offset(&model, start), naive_offset(&model, end));
        assert_eq!(doc.offset(start), a, "offset of {start:?} in {model:?}");
        let back = doc.position(a);
        assert_eq!(naive_offset(&model, back), a, "position of byte {a} in {model:?}");
        model.replace_range(a.min(b)..a.max(b), &inserted);
        doc.apply_change(Some(range), &inserted);
        assert_eq!(doc.text(), model);
        assert_eq!(
            doc.line_count(),
            pysplice::SourceFile::new("m", model.as_str()).lines().line_count()
        );
        if let Some(marker) = doc.marker_at(start) {
            assert!(!marker.recipe.is_empty() && !marker.hook.is_empty());
        }
    }
    for recipe in recipes() {
        let _ = doc.plan(recipe);
    }
}
