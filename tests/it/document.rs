//! The editor-facing `Document`: incremental LSP changes in UTF-16 positions against a plain
//! `String` model, plans mapped to positions, edits that reproduce `apply` and `revert` exactly.
//! Also: the main public types are `Send + Sync`.

use proptest::prelude::*;
use pysplice::{Document, DocumentPlan, MarkerRef, TextEdit, Utf16Position, Utf16Range};
use pysplice::{Error, ErrorKind, ParsedFile, Patched, Plan, Recipe, SourceFile, Status};

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn public_types_are_send_and_sync() {
    assert_send_sync::<SourceFile>();
    assert_send_sync::<ParsedFile>();
    assert_send_sync::<Recipe>();
    assert_send_sync::<Plan<'static>>();
    assert_send_sync::<Patched>();
    assert_send_sync::<Error>();
    assert_send_sync::<Document>();
    assert_send_sync::<DocumentPlan>();
    assert_send_sync::<pysplice::KeptPlan>();
    assert_send_sync::<TextEdit>();
    assert_send_sync::<pysplice::project::Project>();
    assert_send_sync::<pysplice::project::ClassGraph<'static>>();
}

const RECIPE: &str = r#"
[recipe]
id = "demo"
summary = "Count forward calls"

[[hook]]
id = "imports"
summary = "Added the os import"
ensure-imports = ["os"]

[[hook]]
id = "count"
summary = "Counted calls"
in = "Model.forward"
at = "start"
code = "self.calls = getattr(self, 'calls', 0) + 1"

[[hook]]
id = "wrap"
summary = "Wrapped the result"
in = "Model.forward"
wrap-returns = "({value})"

[[hook]]
id = "absent"
summary = "Optional, target missing"
in = "Missing.run"
at = "end"
optional = true
code = "pass"
"#;

const MODEL: &str = "# 😀 émoji first\nclass Model:\n    def __init__(self):\n        self.s = '😀'\n\n    def forward(self, x):\n        return x\n";

fn recipe() -> Recipe {
    Recipe::from_toml("demo.toml", RECIPE).unwrap()
}

/// Byte offset of an LSP position by a plain walk (lines on `\n`, `\r\n`, `\r`; a character past
/// the line end means the line end; inside a surrogate pair means the character's start).
fn naive_offset(text: &str, at: Utf16Position) -> usize {
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
                return i;
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

/// Applies a batch of edits (positions of `text`) the way an LSP client does.
fn apply_lsp_edits(text: &str, edits: &[TextEdit]) -> String {
    let mut spans: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| {
            let (a, b) = (naive_offset(text, e.range.start), naive_offset(text, e.range.end));
            (a, b, e.new_text.as_str())
        })
        .collect();
    spans.sort_by_key(|&(a, b, _)| (a, b));
    let mut out = String::new();
    let mut at = 0;
    for (a, b, new_text) in spans {
        assert!(at <= a && a <= b, "overlapping edits {edits:?}");
        out.push_str(&text[at..a]);
        out.push_str(new_text);
        at = b;
    }
    out.push_str(&text[at..]);
    out
}

fn pos(line: u32, character: u32) -> Utf16Position {
    Utf16Position::new(line, character)
}

fn hook<'p>(plan: &'p DocumentPlan, id: &str) -> &'p pysplice::DocumentHook {
    plan.hooks.iter().find(|h| h.id == id).unwrap()
}

#[test]
fn changes_use_utf16_columns_and_clamp_like_lsp() {
    let mut doc = Document::new("m.py", "a😀b\r\nxy\rz");
    assert_eq!(doc.line_count(), 3);
    assert_eq!(doc.version(), 0);
    // `b` is at UTF-16 column 3 (the emoji takes two units).
    assert_eq!(doc.offset(pos(0, 3)), "a😀".len());
    assert_eq!(doc.position("a😀".len()), pos(0, 3));
    // Inside the surrogate pair: the emoji's start. Past the line end: before the line break.
    assert_eq!(doc.offset(pos(0, 2)), 1);
    assert_eq!(doc.offset(pos(0, 99)), "a😀b".len());
    assert_eq!(doc.offset(pos(9, 0)), doc.len_bytes());
    assert_eq!(doc.line_range(2), Utf16Range::new(pos(1, 0), pos(1, 2)));
    doc.apply_change(Some(Utf16Range::new(pos(0, 3), pos(1, 1))), "B\n");
    assert_eq!(doc.text(), "a😀B\ny\rz");
    assert_eq!(doc.version(), 1);
    // A reversed range is taken the other way round.
    doc.apply_change(Some(Utf16Range::new(pos(2, 1), pos(2, 0))), "Z");
    assert_eq!(doc.text(), "a😀B\ny\rZ");
    // Joining `\r` and `\n` across a change makes one line break, as in Python.
    doc.apply_change(Some(Utf16Range::new(pos(1, 1), pos(1, 1))), "\r");
    doc.apply_change(Some(Utf16Range::new(pos(2, 0), pos(2, 0))), "\n");
    assert_eq!(doc.text(), "a😀B\ny\r\n\rZ");
    assert_eq!(doc.line_count(), 4);
    doc.apply_change(None, "whole");
    doc.set_version(41);
    assert_eq!((doc.text().as_str(), doc.version()), ("whole", 41));
    // Unicode line separators and form feeds do not break lines.
    let doc = Document::new("m.py", "a\u{2028}b\x0cc\u{85}d");
    assert_eq!(doc.line_count(), 1);
}

#[test]
fn plan_reports_where_hooks_go_and_their_status() {
    let recipe = recipe();
    let mut doc = Document::new("m.py", MODEL);
    let plan = doc.plan(&recipe).unwrap();
    assert!(plan.relevant && plan.pending && !plan.patched && plan.is_complete());
    assert_eq!(plan.version, 0);
    assert_eq!(hook(&plan, "count").status, Status::Applied);
    assert_eq!(hook(&plan, "count").range, doc.line_range(6), "the `def forward` line");
    assert!(hook(&plan, "count").message.starts_with("can be applied"));
    assert!(matches!(hook(&plan, "absent").status, Status::Skipped { .. }));
    assert!(hook(&plan, "absent").blocks.is_empty());

    // Apply through the edits, as an editor would.
    let edits = doc.apply_edits(&recipe).unwrap();
    let patched = pysplice::apply(&recipe, SourceFile::new("m.py", MODEL)).unwrap();
    assert_eq!(apply_lsp_edits(MODEL, &edits), patched.output());
    assert!(edits.len() > 1, "line-based edits, not one replacement: {edits:?}");
    for edit in edits.iter().rev() {
        doc.apply_change(Some(edit.range), &edit.new_text);
    }
    assert_eq!(doc.text(), patched.output());
    assert!(doc.apply_edits(&recipe).unwrap().is_empty(), "applied already");

    let plan = doc.plan(&recipe).unwrap();
    assert!(plan.patched && !plan.pending && plan.relevant);
    let count = hook(&plan, "count");
    assert_eq!(count.status, Status::AlreadyApplied);
    assert!(count.message.starts_with("applied: Counted calls"));
    let marker_line = doc
        .text()
        .lines()
        .position(|l| l.contains("# >>> pysplice demo/count"))
        .unwrap();
    assert_eq!(count.range, doc.line_range(marker_line + 1));
    assert_eq!(count.blocks.len(), 1);
    assert_eq!(count.blocks[0].start, pos(marker_line as u32, 0));
    assert_eq!(
        count.blocks[0].end.line as usize,
        marker_line + 2,
        "marker, code, closing marker"
    );
    let wrap = hook(&plan, "wrap");
    assert_eq!(wrap.status, Status::AlreadyApplied);
    assert_eq!(wrap.blocks.len(), 1, "one inline change: {wrap:?}");
    assert_eq!(
        wrap.blocks[0].end.line,
        wrap.blocks[0].start.line + 1,
        "marker line and changed line"
    );
    assert_eq!(
        doc.marker_at(pos(marker_line as u32, 3)),
        Some(MarkerRef {
            recipe: "demo".into(),
            hook: "count".into()
        })
    );
    assert_eq!(doc.marker_at(pos(0, 0)), None);
    assert_eq!(doc.marker_at(pos(999, 0)), None);

    // A newer recipe: the block is "updated"; a new hook on a patched file lands at its target.
    let newer = Recipe::from_toml(
        "demo.toml",
        &RECIPE
            .replace("getattr(self, 'calls', 0) + 1", "getattr(self, 'calls', 0) + 2")
            .replace(
                "[[hook]]\nid = \"absent\"",
                "[[hook]]\nid = \"init\"\nsummary = \"New\"\nin = \"Model.__init__\"\nat = \"end\"\ncode = \"self.n = 0\"\n\n[[hook]]\nid = \"absent\"",
            ),
    )
    .unwrap();
    let plan = doc.plan(&newer).unwrap();
    assert!(plan.pending);
    assert_eq!(hook(&plan, "count").status, Status::Updated);
    assert_eq!(hook(&plan, "wrap").status, Status::AlreadyApplied);
    let init = hook(&plan, "init");
    assert_eq!(init.status, Status::Applied);
    let init_line = doc.text().lines().position(|l| l.contains("def __init__")).unwrap();
    assert_eq!(init.range, doc.line_range(init_line + 1));

    // Revert through the edits: the original bytes.
    let edits = doc.revert_edits(&recipe).unwrap();
    assert_eq!(apply_lsp_edits(&doc.text(), &edits), MODEL);
}

#[test]
fn failures_carry_candidates_and_point_at_the_closest_definition() {
    let recipe = Recipe::from_toml(
        "typo.toml",
        "[recipe]\nid = \"typo\"\nsummary = \"s\"\n[[hook]]\nid = \"h\"\nsummary = \"s\"\nin = \"Model.forwad\"\nat = \"end\"\ncode = \"pass\"\n",
    )
    .unwrap();
    let doc = Document::new("m.py", MODEL);
    let plan = doc.plan(&recipe).unwrap();
    assert!(!plan.is_complete() && !plan.pending && plan.relevant);
    let h = hook(&plan, "h");
    assert!(matches!(h.status, Status::Failed { .. }));
    assert!(h.message.contains("did you mean `Model.forward`?"), "{}", h.message);
    assert!(
        !h.message.starts_with("m.py:"),
        "the location is the range, not the message: {}",
        h.message
    );
    assert_eq!(h.range, doc.line_range(2), "the enclosing class that exists");
    assert!(matches!(
        doc.apply_edits(&recipe).as_ref().map_err(Error::kind),
        Err(ErrorKind::NotFound { .. })
    ));
    // The failure carries its typed error: kind, place and hook, not only a line of text.
    let Status::Failed { reason } = &h.status else {
        unreachable!()
    };
    let cause = reason.cause().expect("a typed cause");
    assert!(
        matches!(cause.kind(), ErrorKind::NotFound { path, .. } if path == "Model.forwad"),
        "{cause}"
    );
    assert_eq!((cause.location().line, cause.hook()), (2, Some("h")));
    assert_eq!(reason.text(), cause.to_string());

    // A file the recipe does not concern.
    let other = Document::new("other.py", "def main():\n    pass\n");
    assert!(!other.plan(&recipe).unwrap().relevant);
}

#[test]
fn regression_a_block_that_moves_is_an_update_here_as_in_apply() {
    // Actual: after `at = "start"` became `at = "end"`, `apply` said Updated while the plan said
    // AlreadyApplied (its grouping of blocks by hook ignored where a block sits).
    let hook = |at: &str| {
        Recipe::from_toml(
            "r.toml",
            &format!(
                "[recipe]\nid = \"r\"\nsummary = \"s\"\n[[hook]]\nid = \"h\"\nsummary = \"s\"\nin = \"f\"\nat = \"{at}\"\ncode = \"y = 1\"\n"
            ),
        )
        .unwrap()
    };
    let original = "def f():\n    a = 1\n    b = 2\n";
    let patched = pysplice::apply(&hook("start"), SourceFile::new("m.py", original)).unwrap();
    let moved = hook("end");
    let applied = pysplice::apply(&moved, SourceFile::new("m.py", patched.output())).unwrap();
    assert_eq!(applied.outcomes()[0].status, Status::Updated);
    let doc = Document::new("m.py", patched.output());
    let plan = doc.plan(&moved).unwrap();
    assert_eq!(plan.hooks[0].status, Status::Updated, "{}", plan.hooks[0].message);
    assert!(plan.pending);
    // Unmoved, both say so.
    let plan = doc.plan(&hook("start")).unwrap();
    assert_eq!(plan.hooks[0].status, Status::AlreadyApplied);
}

#[test]
fn regression_a_marker_line_inside_a_string_is_text_for_marker_at() {
    // Actual: marker_at named `r/h` for a docstring line, which the scan (rightly) reads as text.
    let text = "def f():\n    \"\"\"\n    # <<< pysplice r/h\n    \"\"\"\n# <<< pysplice r/h\r\n";
    let doc = Document::new("m.py", text);
    assert_eq!(doc.marker_at(pos(2, 0)), None);
    let named = doc.marker_at(pos(4, 3));
    assert_eq!(
        named.map(|m| (m.recipe, m.hook)),
        Some(("r".to_string(), "h".to_string()))
    );
}

#[test]
fn unparsable_text_and_hand_edited_blocks_are_errors() {
    let recipe = recipe();
    let doc = Document::new("m.py", "class Model:\n    def forward(self, x)\n");
    let err = doc.plan(&recipe).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Syntax { .. }), "{err}");
    assert_eq!(doc.location_range(err.location()).map(|r| r.start.line), Some(1));

    let patched = pysplice::apply(&recipe, SourceFile::new("m.py", MODEL)).unwrap();
    let edited = patched.output().replace("getattr(self, 'calls', 0) + 1", "0");
    let doc = Document::new("m.py", &edited);
    let err = doc.plan(&recipe).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Marker { .. }), "{err}");
    let range = doc.location_range(err.location()).unwrap();
    assert!(
        doc.marker_at(range.start).is_some(),
        "the error points at the marker line"
    );
    assert!(doc.location_range(&pysplice::Location::new("other.py", 1, 1)).is_none());
}

/// One line numbering in the library: `Document::line_range` counts lines from 1, like
/// `SourceFile::line_range` and `Location`; only the LSP positions it returns count from 0.
#[test]
fn document_lines_are_numbered_like_the_rest_of_the_library() {
    let text = "a = 1\nbb = 2\nccc = 3\n";
    let doc = Document::new("m.py", text);
    let source = SourceFile::new("m.py", text);
    for line in 1..=3 {
        let range = doc.line_range(line);
        assert_eq!(range.start.line as usize, line - 1, "LSP's 0-based line of line {line}");
        assert_eq!(
            doc.offset(range.end) - doc.offset(range.start),
            source.line_range(line).len(),
            "line {line} is the same line in both"
        );
        let location = pysplice::Location::new("m.py", line, 1);
        assert_eq!(doc.location_range(&location), Some(range));
    }
    assert_eq!(doc.line_range(0), doc.line_range(1), "no line 0: the first line");
    assert_eq!(
        doc.line_range(99),
        doc.line_range(4),
        "past the end: the last (empty) line"
    );
}

#[test]
fn edits_reproduce_apply_and_revert_in_every_style() {
    let recipe = recipe();
    let styles = [
        MODEL.to_string(),
        MODEL.replace('\n', "\r\n"),
        MODEL.replace('\n', "\r"),
        format!("\u{feff}{}", MODEL.replace('\n', "\r\n")),
        MODEL.replace("    ", "\t"),
        MODEL.trim_end().to_string(),
    ];
    for text in styles {
        let doc = Document::new("m.py", &text);
        let patched = pysplice::apply(&recipe, SourceFile::new("m.py", text.as_str())).unwrap();
        let edits = doc.apply_edits(&recipe).unwrap();
        let output = apply_lsp_edits(&text, &edits);
        assert_eq!(output, patched.output(), "{text:?}");
        let mut live = doc.clone();
        for edit in edits.iter().rev() {
            live.apply_change(Some(edit.range), &edit.new_text);
        }
        assert_eq!(live.text(), output, "{text:?}");
        let plan = live.plan(&recipe).unwrap();
        assert!(plan.patched && !plan.pending, "{text:?}: {plan:?}");
        let back = live.revert_edits(&recipe).unwrap();
        assert_eq!(apply_lsp_edits(&output, &back), text, "{text:?}");
    }
}

/// The plan kept from diagnostics gives the same edits as planning afresh, in every style; a kept
/// plan of an older version is not used.
#[test]
fn edits_from_a_kept_plan_equal_fresh_edits() {
    let recipe = recipe();
    for text in [
        MODEL.to_string(),
        MODEL.replace('\n', "\r\n"),
        MODEL.replace("    ", "\t"),
    ] {
        let mut doc = Document::new("m.py", &text);
        doc.set_version(3);
        let (plan, kept) = doc.plan_keeping(&recipe).unwrap();
        assert_eq!(plan, doc.plan(&recipe).unwrap());
        assert_eq!(kept.version(), 3);
        let fresh = doc.apply_edits(&recipe).unwrap();
        assert!(!fresh.is_empty());
        assert_eq!(doc.apply_edits_from(&recipe, kept).unwrap(), fresh, "{text:?}");
        // Typing after planning: the kept plan is stale and must not be applied to the new text.
        let (_, stale) = doc.plan_keeping(&recipe).unwrap();
        doc.apply_change(Some(Utf16Range::new(pos(0, 0), pos(0, 0))), "import os\n");
        doc.set_version(4);
        let edits = doc.apply_edits_from(&recipe, stale).unwrap();
        assert_eq!(edits, doc.apply_edits(&recipe).unwrap());
        assert_eq!(
            apply_lsp_edits(&doc.text(), &edits),
            pysplice::apply(&recipe, SourceFile::new("m.py", doc.text()))
                .unwrap()
                .output()
        );
        // Regression: the client keeps its version number across a change (version 4 again):
        // the kept plan is of the old text all the same and must not be used.
        let (_, stale) = doc.plan_keeping(&recipe).unwrap();
        doc.apply_change(Some(Utf16Range::new(pos(0, 0), pos(0, 0))), "import sys\n\n\n");
        doc.set_version(4);
        let edits = doc.apply_edits_from(&recipe, stale).unwrap();
        assert_eq!(edits, doc.apply_edits(&recipe).unwrap(), "{text:?}");
        assert_eq!(
            apply_lsp_edits(&doc.text(), &edits),
            pysplice::apply(&recipe, SourceFile::new("m.py", doc.text()))
                .unwrap()
                .output()
        );
    }
}

/// A text of short lines mixing every line break, emoji and accents.
fn text_strategy() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            "[a-c ]{0,4}",
            Just("😀".into()),
            Just("é".into()),
            Just("\n".into()),
            Just("\r".into()),
            Just("\r\n".into())
        ],
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn incremental_changes_match_a_string_model(
        start in text_strategy(),
        changes in proptest::collection::vec((0u32..8, 0u32..8, 0u32..3, 0u32..8, text_strategy()), 0..12),
    ) {
        let mut model = start.clone();
        let mut doc = Document::new("m.py", &start);
        for (line, character, lines, end_character, text) in changes {
            let range = Utf16Range::new(pos(line, character), pos(line + lines, end_character));
            let (a, b) = (naive_offset(&model, range.start), naive_offset(&model, range.end));
            prop_assert_eq!(doc.offset(range.start), a);
            prop_assert_eq!(naive_offset(&model, doc.position(a)), a);
            model.replace_range(a.min(b)..a.max(b), &text);
            doc.apply_change(Some(range), &text);
            prop_assert_eq!(doc.text(), model.clone());
            prop_assert_eq!(doc.line_count(), SourceFile::new("m", model.as_str()).lines().line_count());
        }
        // Every byte offset on a character boundary maps to a position and back.
        for (i, _) in model.char_indices() {
            if model[..i].ends_with('\r') && model[i..].starts_with('\n') {
                continue; // inside a `\r\n`: not a position an editor can name
            }
            prop_assert_eq!(naive_offset(&model, doc.position(i)), i);
            prop_assert_eq!(doc.offset(doc.position(i)), i);
        }
    }
}

/// Lines to edit the model with: some keep it valid Python, some break it for a while.
const EDIT_LINES: &[&str] = &[
    "x = 1\n",
    "    y = 2\n",
    "def g():\n    pass\n",
    "class Other:\n    pass\n",
    "# a comment\n",
    "(",
    ")\n",
    "\"\"\"\n",
    "",
    "    def forward(self, x):\n        return x\n",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A document planned after every keystroke (re-parsing only what changed since its last
    /// plan) plans exactly as a fresh document of the same text: edits anywhere, valid or not,
    /// before and after the recipe is applied.
    #[test]
    fn plans_after_edits_equal_plans_of_a_fresh_document(
        edits in proptest::collection::vec((0u32..12, 0u32..3, 0usize..EDIT_LINES.len(), any::<bool>()), 1..10),
    ) {
        let recipe = recipe();
        let mut doc = Document::new("m.py", MODEL);
        for (line, lines, piece, apply) in edits {
            let range = Utf16Range::new(pos(line, 0), pos(line + lines, 0));
            doc.apply_change(Some(range), EDIT_LINES[piece]);
            if apply {
                if let Ok(edits) = doc.apply_edits(&recipe) {
                    for edit in edits.iter().rev() {
                        doc.apply_change(Some(edit.range), &edit.new_text);
                    }
                }
            }
            let fresh = Document::new("m.py", &doc.text());
            match (doc.plan(&recipe), fresh.plan(&recipe)) {
                (Ok(mut kept), Ok(mut new)) => {
                    kept.version = 0;
                    new.version = 0;
                    prop_assert_eq!(kept, new, "{}", doc.text());
                }
                (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
                (a, b) => prop_assert!(false, "{:?} / {:?}: {}", a.is_ok(), b.is_ok(), doc.text()),
            }
        }
    }
}

/// A hook at the end of the module: the edits that apply and revert it stay inside the text
/// (no position on the line after the final line break, which Neovim turns into an extra empty
/// line), and still give exactly what `apply` and `revert` give, in every line-break style.
#[test]
fn edits_at_the_end_of_the_file_stay_inside_it() {
    let spec = r#"
[recipe]
id = "tail"
summary = "A helper at the end"

[[hook]]
id = "helper"
summary = "Added a helper"
in = "module"
at = "end"
code = "def _helper():\n    return 1\n"
"#;
    let recipe = Recipe::from_toml("tail.toml", spec).unwrap();
    for text in [
        MODEL.to_string(),
        MODEL.replace('\n', "\r\n"),
        MODEL.replace('\n', "\r"),
        MODEL.trim_end().to_string(),
    ] {
        // Every position on one of the text's lines (0-based line below the line count).
        let inside = |edits: &[TextEdit], of: &str| {
            let lines = of.replace("\r\n", "\n").replace('\r', "\n").lines().count();
            edits.iter().all(|e| (e.range.end.line as usize) < lines)
        };
        let doc = Document::new("m.py", &text);
        let patched = pysplice::apply(&recipe, SourceFile::new("m.py", text.as_str())).unwrap();
        let edits = doc.apply_edits(&recipe).unwrap();
        assert!(inside(&edits, &text), "{text:?}: {edits:?}");
        let output = apply_lsp_edits(&text, &edits);
        assert_eq!(output, patched.output(), "{text:?}");
        let applied = Document::new("m.py", &output);
        let back = applied.revert_edits(&recipe).unwrap();
        assert!(inside(&back, &output), "{text:?}: {back:?}");
        assert_eq!(apply_lsp_edits(&output, &back), text, "{text:?}");
    }
}

/// A block moved by a new version of the recipe (`at = "start"` became `at = "end"`) is
/// "updated" for `apply`, `check` and the document alike, and the document is pending.
#[test]
fn a_moved_block_is_updated_everywhere() {
    let spec = |at: &str| {
        format!(
            "[recipe]\nid = \"m\"\nsummary = \"s\"\n[[hook]]\nid = \"log\"\nsummary = \"Logged\"\nin = \"f\"\nat = \"{at}\"\ncode = \"print(1)\"\n"
        )
    };
    let (start, end) = (
        Recipe::from_toml("m.toml", &spec("start")).unwrap(),
        Recipe::from_toml("m.toml", &spec("end")).unwrap(),
    );
    let text = "def f():\n    a = 1\n    return a\n\n\ndef g():\n    pass\n";
    let applied = pysplice::apply(&start, SourceFile::new("m.py", text)).unwrap();
    let moved = pysplice::apply(&end, SourceFile::new("m.py", applied.output())).unwrap();
    assert_eq!(moved.outcomes()[0].status, Status::Updated);
    assert!(moved.changed());
    assert!(!moved.is_up_to_date());
    let plan = Document::new("m.py", applied.output()).plan(&end).unwrap();
    assert_eq!(plan.hooks[0].status, Status::Updated, "{}", plan.hooks[0].message);
    assert!(plan.pending);
    // Once moved, everything agrees that nothing is left to do.
    let again = pysplice::apply(&end, SourceFile::new("m.py", moved.output())).unwrap();
    assert_eq!(again.outcomes()[0].status, Status::AlreadyApplied);
    assert!(again.is_up_to_date());
    let plan = Document::new("m.py", moved.output()).plan(&end).unwrap();
    assert_eq!(plan.hooks[0].status, Status::AlreadyApplied);
    assert!(!plan.pending);
}
