use std::ops::Range;

use proptest::prelude::*;

use super::class;
use crate::parse::parse_module;
use crate::parse::reparse::reparse;
use crate::source::SourceFile;
use crate::syntax::Node;

/// Edits as (range in the old text, range in the new).
type Spans = Vec<(Range<usize>, Range<usize>)>;

const OLD: &str = "import os\n\n\nclass A(B):\n    x = 1\n\n    def f(self):\n        return 1\n\n    # note\n    @property\n    def g(self):\n        return (1,\n                2)\n\n    async def deep(self, x):\n        if x:\n            y = 1\n        for i in x:\n            await i\n\n        def inner():\n            return 2\n        yield y\n\n\nclass C:\n    def h(self): pass\n";

/// `old` with `code` inserted at `at`, the output's file and the span.
fn insert(old: &str, at: usize, code: &str) -> (String, Spans) {
    (
        format!("{}{code}{}", &old[..at], &old[at..]),
        vec![(at..at, at..at + code.len())],
    )
}

/// The module's second statement (`class A`).
fn class_a(root: &Node) -> &Node {
    root.module_body()
        .and_then(|body| body.children().get(1))
        .expect("class A")
}

/// An edit inside a method is parsed a run of body statements at a time, and gives the class
/// a whole parse gives.
#[test]
fn a_class_edited_inside_its_body_is_parsed_a_method_at_a_time() {
    let original = parse_module(&SourceFile::new("m.py", OLD)).unwrap();
    let region = OLD.find("class A").unwrap()..OLD.find("class C").unwrap();
    for (anchor, code) in [
        ("        return 1", "        print(self)\n"),
        ("    # note", "    y = [\n1]\n"),
        ("    @property", "    def k(self):\n        pass\n"),
        ("    x = 1", "    z = 2\n"),
        ("            return 2", "            q = 3\n"),
        ("        for i", "        y = 2\n"),
        ("        yield y", "        # c\n        print(y)\n"),
    ] {
        let at = OLD.find(anchor).unwrap();
        let (new, spans) = insert(OLD, at, code);
        let whole = parse_module(&SourceFile::new("m.py", new.as_str())).unwrap();
        let nested = class(class_a(&original), OLD, &new, &region, region.start, &spans, "m.py");
        assert!(nested.as_ref() == Some(class_a(&whole)), "{code:?}");
        let out = SourceFile::new("m.py", new.as_str());
        assert!(reparse(&original, OLD, &out, &spans).unwrap().root == whole, "{code:?}");
    }
}

/// What only the class's context decides is left to the caller: a header edit, a body that
/// leaves the class (a line at column 0), an `else` at column 0, a more indented first line.
#[test]
fn edits_that_leave_the_body_are_not_parsed_alone() {
    let original = parse_module(&SourceFile::new("m.py", OLD)).unwrap();
    let region = OLD.find("class A").unwrap()..OLD.find("class C").unwrap();
    for (anchor, code) in [
        ("(B)", "(D)"),
        ("    @property", "y = 2\n"),
        ("    @property", "else:\n    pass\n"),
        ("    @property", "        w = 1\n"),
        ("    def f", "\n"),
    ] {
        let at = OLD.find(anchor).unwrap();
        let (new, spans) = insert(OLD, at, code);
        let nested = class(class_a(&original), OLD, &new, &region, region.start, &spans, "m.py");
        assert!(nested.is_none(), "{code:?}");
        let out = SourceFile::new("m.py", new.as_str());
        let again = reparse(&original, OLD, &out, &spans)
            .map(|r| r.root)
            .map_err(|e| e.to_string());
        assert_eq!(again, parse_module(&out).map_err(|e| e.to_string()), "{code:?}");
    }
}

const PIECES: &[&str] = &[
    "",
    "\n",
    "    pass\n",
    "        x = 1\n",
    "    def m(self):\n        return 2\n",
    "y = 0\n",
    "else:\n    pass\n",
    "(",
    ")",
    "\\\n",
    "'''",
    "#",
    "\t",
    "    @dec\n",
    "\r\n",
];

proptest! {
    /// Edits anywhere in a file of classes (inside methods, between them, at the class's end,
    /// breaking the syntax): the re-parse gives what a whole parse gives, tree or error.
    #[test]
    fn class_bodies_reparse_as_a_whole_parse(
        edits in proptest::collection::vec((0usize..OLD.len(), 0usize..6, 0usize..PIECES.len()), 1..3),
    ) {
        let original = parse_module(&SourceFile::new("m.py", OLD)).unwrap();
        let mut new = String::new();
        let mut spans = Vec::new();
        let mut at = 0;
        let mut edits = edits;
        edits.sort_unstable();
        for (start, len, piece) in edits {
            if start < at || !OLD.is_char_boundary(start) {
                continue;
            }
            let end = (start + len).min(OLD.len());
            new.push_str(&OLD[at..start]);
            let from = new.len();
            new.push_str(PIECES[piece]);
            spans.push((start..end, from..new.len()));
            at = end;
        }
        new.push_str(&OLD[at..]);
        let out = SourceFile::new("m.py", new.as_str());
        let again = reparse(&original, OLD, &out, &spans).map(|r| r.root).map_err(|e| e.to_string());
        let whole = parse_module(&out).map_err(|e| e.to_string());
        prop_assert!(again == whole, "{new:?}");
    }
}
