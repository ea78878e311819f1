//! Placement values on tiny files: the line start and indentation a placement computes, the
//! text a frame carries, and the refusals, without the engine around them.

use super::{Insertion, Placer, Refusal, Refused};
use crate::error::PlacementReason;
use crate::marker::{self, Displaced};
use crate::outline::{Definition, ParsedFile};
use crate::source::{lines_inside_strings, SourceFile};
use crate::spec::Anchor;

/// `text` parsed, and a placer for hook `h` of `recipe` in it, given to `check`.
fn with_placer<R>(text: &str, recipe: &str, check: impl FnOnce(&Placer<'_>, &ParsedFile) -> R) -> R {
    let file = ParsedFile::parse(SourceFile::new("t.py", text)).expect("the test file parses");
    let strings = lines_inside_strings(text);
    let placer = Placer::new(&file, recipe, "h", &strings);
    check(&placer, &file)
}

/// The offset of the first `needle` in `text`.
fn at(text: &str, needle: &str) -> usize {
    text.find(needle).expect("the needle is in the text")
}

fn definition<'f>(file: &'f ParsedFile, path: &str) -> &'f Definition {
    file.definitions()
        .iter()
        .find(|d| d.path() == path)
        .expect("the definition exists")
}

/// The frame of recipe `recipe`, hook `h`, around `lines` (indented, each with its `\n`), as
/// whole lines (its final line break included).
fn block(recipe: &str, indent: &str, lines: &str) -> String {
    marker::block(recipe, "h", indent, "\n", lines, Displaced::Nothing).text + "\n"
}

fn placement_refusal(offset: usize, reason: PlacementReason) -> Refusal {
    Refusal {
        offset,
        cause: Refused::Placement(reason),
    }
}

// ---- lines ---------------------------------------------------------------------------------

#[test]
fn line_starts_and_indentation_around_an_offset() {
    let text = "def f():\n    x = 1\n";
    with_placer(text, "r", |p, _| {
        let x = at(text, "x = 1");
        assert_eq!(p.line_start(x), at(text, "    x"));
        assert_eq!(p.next_line_start(x), text.len());
        assert_eq!(p.next_line_start(0), at(text, "    x"));
        assert_eq!(p.indent_before(x), Some("    "));
        assert_eq!(p.indent_before(at(text, "= 1")), None);
    });
}

#[test]
fn the_first_line_starts_after_the_bom() {
    let text = "\u{feff}x = 1\n";
    with_placer(text, "r", |p, _| {
        assert_eq!(p.line_start(at(text, "= 1")), "\u{feff}".len());
    });
}

#[test]
fn a_decorated_statement_starts_at_its_first_decorator() {
    let text = "import os\n\n@a\n@b(1)\ndef f():\n    pass\n";
    with_placer(text, "r", |p, file| {
        assert_eq!(p.statement_start(&file.module_body()[1]), at(text, "@a"));
        assert_eq!(p.statement_start(&file.module_body()[0]), 0);
    });
}

#[test]
fn a_line_ends_after_blanks_a_semicolon_or_a_comment_only() {
    for (text, ends) in [
        ("x = 1\n", true),
        ("x = 1  # note\n", true),
        ("x = 1;\n", true),
        ("x = 1; y = 2\n", false),
        ("x = 1", true),
    ] {
        with_placer(text, "r", |p, _| {
            assert_eq!(p.line_ends_after("x = 1".len()), ends, "{text:?}");
        });
    }
}

// ---- the module -----------------------------------------------------------------------------

#[test]
fn module_code_goes_after_the_docstring_and_future_imports() {
    let text = "\"\"\"Doc.\"\"\"\nfrom __future__ import annotations\nimport os\nx = 1\n";
    with_placer(text, "r", |p, _| {
        assert_eq!(p.module_start(false), Ok(Insertion::new(at(text, "import os"), "")));
        assert_eq!(p.module_start(true), Ok(Insertion::new(at(text, "x = 1"), "")));
    });
}

#[test]
fn a_comment_header_stays_above_module_code() {
    let text = "# licence\n\nimport os\n";
    with_placer(text, "r", |p, _| {
        assert_eq!(p.module_start(false), Ok(Insertion::new(at(text, "import os"), "")));
        assert_eq!(p.module_start(true), Ok(Insertion::new(text.len(), "")));
    });
}

#[test]
fn an_empty_module_starts_at_its_end() {
    for text in ["", "# only a comment\n"] {
        with_placer(text, "r", |p, _| {
            assert_eq!(p.module_start(true), Ok(Insertion::new(text.len(), "")), "{text:?}");
        });
    }
}

#[test]
fn a_docstring_sharing_its_line_refuses_module_code() {
    let text = "\"\"\"Doc.\"\"\"; x = 1\n";
    with_placer(text, "r", |p, _| {
        assert_eq!(
            p.module_start(false),
            Err(placement_refusal(at(text, ";"), PlacementReason::PreviousSharesLine))
        );
    });
}

// ---- definitions ----------------------------------------------------------------------------

#[test]
fn a_body_start_is_after_the_docstring_at_the_body_indentation() {
    let text = "class C:\n    def f(self):\n        \"\"\"Doc.\"\"\"\n        return 1\n";
    with_placer(text, "r", |p, file| {
        let edits = p
            .insert_in_definition(definition(file, "C.f"), &Anchor::Start, &|_| Ok("y = 2".to_string()))
            .expect("placed");
        assert_eq!(edits.len(), 1);
        assert_eq!(edits[0].range(), at(text, "        return")..at(text, "        return"));
        assert_eq!(edits[0].text(), block("r", "        ", "        y = 2\n"));
    });
}

#[test]
fn a_body_end_is_the_line_after_its_last_statement() {
    let text = "def f():\n    return 1\nx = 2\n";
    with_placer(text, "r", |p, file| {
        let edits = p
            .insert_in_definition(definition(file, "f"), &Anchor::End, &|_| Ok("y = 2".to_string()))
            .expect("placed");
        assert_eq!(edits[0].range(), at(text, "x = 2")..at(text, "x = 2"));
        assert_eq!(edits[0].text(), block("r", "    ", "    y = 2\n"));
    });
}

#[test]
fn a_docstring_sharing_its_line_refuses_the_body_start() {
    let text = "def f():\n    \"\"\"Doc.\"\"\"; return 1\n";
    with_placer(text, "r", |p, file| {
        let refused = p.insert_in_definition(definition(file, "f"), &Anchor::Start, &|_| Ok("y = 2".to_string()));
        assert_eq!(
            refused,
            Err(placement_refusal(at(text, ";"), PlacementReason::DocstringSharesLine))
        );
    });
}

// ---- rendering ------------------------------------------------------------------------------

#[test]
fn code_takes_the_files_indentation_unit_and_the_blocks_indentation() {
    let spaces = "def f():\n    x = 1\n";
    with_placer(spaces, "r", |p, _| {
        assert_eq!(
            p.indent_code("if a:\n  b()", "    ").unwrap(),
            "    if a:\n        b()\n"
        );
    });
    let tabs = "def f():\n\tx = 1\n";
    with_placer(tabs, "r", |p, _| {
        assert_eq!(p.indent_code("if a:\n    b()", "\t").unwrap(), "\tif a:\n\t\tb()\n");
        // A block indented with spaces in a tab file nests with spaces, never a mix.
        assert_eq!(
            p.indent_code("if a:\n    b()", "    ").unwrap(),
            "    if a:\n        b()\n"
        );
    });
}

#[test]
fn code_takes_the_files_line_breaks_and_keeps_string_lines_as_written() {
    let crlf = "def f():\r\n    x = 1\r\n";
    with_placer(crlf, "r", |p, _| {
        assert_eq!(p.indent_code("a = 1\nb = 2", "").unwrap(), "a = 1\r\nb = 2\r\n");
    });
    with_placer("x = 1\n", "r", |p, _| {
        assert_eq!(
            p.indent_code("s = '''one\n  two'''\n\n", "    ").unwrap(),
            "    s = '''one\n  two'''\n\n\n"
        );
    });
}

#[test]
fn a_frame_at_the_end_of_a_file_without_a_final_line_break_starts_with_one() {
    let text = "x = 1";
    with_placer(text, "r", |p, _| {
        let edit = p.frame(&Insertion::new(text.len(), ""), "y = 2").expect("framed");
        assert_eq!(edit.range(), text.len()..text.len());
        assert_eq!(
            edit.text(),
            format!("\n{}", block("r", "", "y = 2\n").trim_end_matches('\n'))
        );
    });
}

// ---- other recipes' blocks ------------------------------------------------------------------

#[test]
fn a_new_block_goes_among_other_blocks_by_recipe_id() {
    let theirs = block("m", "", "a = 1\n");
    let text = format!("{theirs}y = 2\n");
    let after = at(&text, "y = 2");
    // Placed right before `y = 2`: ids sorting first stay above, the others go below.
    with_placer(&text, "a", |p, _| assert_eq!(p.among_other_blocks(after), 0));
    with_placer(&text, "z", |p, _| assert_eq!(p.among_other_blocks(after), after));
}

#[test]
fn insertion_points_step_over_the_markers_of_a_block_around_a_statement() {
    let text = format!("x = 0\n{}", block("m", "", "a = 1\n"));
    let a = at(&text, "a = 1");
    with_placer(&text, "r", |p, _| {
        // Before `a = 1`: above the opening marker; after it: below the closing marker.
        assert_eq!(p.before_markers(p.line_start(a)), at(&text, "# >>>"));
        assert_eq!(p.after_markers(p.next_line_start(a)), text.len());
    });
}
