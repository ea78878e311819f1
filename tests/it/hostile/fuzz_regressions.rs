//! Inputs found by the fuzz targets in `fuzz/` (see `fuzz/README.md`), minimized by hand. Each
//! test states the invariant that broke.

use pysplice::Document;
use pysplice::{apply, revert, ErrorKind, Recipe, SourceFile};

fn imports_recipe() -> Recipe {
    Recipe::from_toml(
        "imports.toml",
        "[recipe]\nid = \"f\"\nsummary = \"s\"\n[[hook]]\nid = \"imports\"\nsummary = \"i\"\nensure-imports = [\"os\"]\n",
    )
    .unwrap()
}

/// Apply, apply again, revert: a no-op the second time and the original bytes at the end.
fn round_trip(recipe: &Recipe, text: &str) {
    let patched = apply(recipe, SourceFile::new("m.py", text)).unwrap_or_else(|err| panic!("{text:?}: {err}"));
    let again = apply(recipe, SourceFile::new("m.py", patched.output())).unwrap();
    assert_eq!(again.output(), patched.output(), "{text:?}");
    let reverted = revert(recipe, SourceFile::new("m.py", patched.output())).unwrap();
    assert_eq!(reverted.output(), text, "{text:?}");
    let doc = Document::new("m.py", text);
    assert!(doc.plan(recipe).is_ok(), "{text:?}");
}

/// Found by `structured` (style CR, `0\n\n` inserted into the seed). The file's newline is `\r`
/// (its first line break); a block inserted at the start of an empty `\n` line ends with `\r`,
/// which joins that `\n` into one `\r\n` line break. The closing marker line then owns the `\n`,
/// revert removes it, and verification refuses the apply ("removing the markers does not give
/// back the original text"). Nothing is corrupted, but the recipe cannot be applied.
#[test]
fn mixed_cr_and_lf_newlines() {
    let recipe = imports_recipe();
    round_trip(&recipe, "\"\"\"D.\"\"\"\rimport sys\n\nb\r");
    round_trip(&recipe, "\"\"\"D.\"\"\"\rfrom __future__ import a\n\nb\r\rimport sys\r");
}

/// Found by `structured` (`def helper(x):\n    return \n`, and `return#c`). `wrap-returns` rewrites a
/// bare `return` as `return (None)` (the template around `None`), but verification's syntax tree
/// check wants the rewritten statement to contain the original's value, and a bare `return` has
/// none: "without the inserted statements the syntax tree differs from the original". Every
/// wrap-returns hook on a function with a bare `return` fails.
#[test]
fn bare_return_wrapped() {
    let recipe = Recipe::from_toml(
        "wrap.toml",
        "[recipe]\nid = \"w\"\nsummary = \"s\"\n[[hook]]\nid = \"wrap\"\nsummary = \"w\"\nin = \"helper\"\nwrap-returns = \"({value})\"\n",
    )
    .unwrap();
    for text in [
        "def helper(x):\n    return\n",
        "def helper(x):\n    return  # done\n",
        "def helper(x):\n    return;\n",
        "def helper(x):\n    if x:\n        return\n    return x\n",
    ] {
        round_trip(&recipe, text);
    }
}

/// Found by `pipeline` (`""`, `#c`, a docstring alone: any text without a final line break).
/// One block inserted at the end of such a text is framed as `\n` + block (no final break) and
/// reverts exactly. Two blocks at that end (here the imports and a module-end block) become
/// `\n` + block 1 + `\n` + block 2: the scan sees block 1's closing marker followed by a line break
/// and removes block 1 with that break, as for a block inside the text, leaving the `\n` before
/// it behind. Verification refuses the apply ("removing the markers does not give back the
/// original text").
#[test]
fn two_blocks_at_end_without_final_newline() {
    let recipe = Recipe::from_toml(
        "two.toml",
        "[recipe]\nid = \"t\"\nsummary = \"s\"\n\n[[hook]]\nid = \"imports\"\nsummary = \"i\"\nensure-imports = [\"os\"]\n\n[[hook]]\nid = \"end\"\nsummary = \"e\"\nin = \"module\"\nat = \"end\"\ncode = \"x = 1\"\n",
    )
    .unwrap();
    // One block at that end works.
    let mut one = recipe.clone();
    one.hooks.truncate(1);
    round_trip(&one, "\"\"\"Doc.\"\"\"");
    for text in ["\"\"\"Doc.\"\"\"", "# comment", "\"\"\"Doc.\"\"\"\r\n# c"] {
        round_trip(&recipe, text);
    }
}

/// Found by `pipeline`. When the target of an `at = "end"` hook is the last definition of the
/// file, its block and a module-level `at = "end"` block are insertions at one offset (the end of
/// the file), applied in hook order. With the module-level hook first, the function's block
/// lands after the new module-level code and becomes part of it: "without the inserted
/// statements the syntax tree differs from the original". Insertions at one offset should go
/// innermost (most indented) first. The bundled SGLang recipe has this shape (`dump-helpers` at
/// the module end before `init` and `capture` at the end of `__init__` methods); it works only
/// because those classes are not last in `deepseek_v2.py`.
#[test]
fn body_end_and_module_end_at_one_offset() {
    let recipe = Recipe::from_toml(
        "ends.toml",
        "[recipe]\nid = \"e\"\nsummary = \"s\"\n\n[[hook]]\nid = \"module-end\"\nsummary = \"m\"\nin = \"module\"\nat = \"end\"\ncode = \"def added():\\n    pass\\n\"\n\n[[hook]]\nid = \"body-end\"\nsummary = \"b\"\nin = \"C.last\"\nat = \"end\"\ncode = \"self.done = True\"\n",
    )
    .unwrap();
    round_trip(&recipe, "class C:\n    def last(self):\n        pass\n");
    round_trip(&recipe, "class C:\n    def last(self):\n        pass  # the end\n");
}

/// The same hooks, where the two offsets differ, work.
#[test]
fn body_end_and_module_end_at_two_offsets() {
    let recipe = Recipe::from_toml(
        "ends.toml",
        "[recipe]\nid = \"e\"\nsummary = \"s\"\n\n[[hook]]\nid = \"module-end\"\nsummary = \"m\"\nin = \"module\"\nat = \"end\"\ncode = \"def added():\\n    pass\\n\"\n\n[[hook]]\nid = \"body-end\"\nsummary = \"b\"\nin = \"C.last\"\nat = \"end\"\ncode = \"self.done = True\"\n",
    )
    .unwrap();
    round_trip(&recipe, "class C:\n    def last(self):\n        pass\n\n\nx = 1\n");
    round_trip(
        &recipe,
        "class C:\n    def last(self):\n        pass\n\n# trailing comment\n",
    );
}

/// Neighbours of the case above that already work: keep them working.
#[test]
fn mixed_newlines_that_work() {
    let recipe = imports_recipe();
    for text in [
        "import sys\r\nx = 1\r",
        "import sys\rx = 1\n",
        "x = 1\ry = 2\n\nz = 3\r",
        "from __future__ import a\n\nb\r",
        "import sys\n\nb\r",
        "b\rimport sys\n",
    ] {
        round_trip(&recipe, text);
    }
}

/// Found by `pipeline`: the whole file is one docstring whose text looks like a block indented
/// with spaces and form feeds (`def helper(x):\r\n    \x0c\x0c...`). The file's indentation unit was
/// read off that line, form feeds included, so code inserted at the end of the module was
/// indented with form feeds and did not parse. A unit is now all spaces or all tabs.
#[test]
fn indentation_unit_from_a_docstring_with_form_feeds() {
    let recipe = Recipe::from_toml(
        "end.toml",
        "[recipe]\nid = \"f\"\nsummary = \"s\"\n[[hook]]\nid = \"helper\"\nsummary = \"h\"\nin = \"module\"\nat = \"end\"\ncode = '''\ndef _w(value):\n    return value\n'''\n",
    )
    .unwrap();
    let text = "\"\"\"M\rlpe\n\n.W,tiFalse\r\nimport sys\r\n\r\ndef helper(x):\r\n    \u{c}\u{c}\u{c}orwWn.\"\"\"\u{c}";
    round_trip(&recipe, text);
}

/// Found by `pipeline`: a docstring holding a line that looks like a marker comment
/// (`   # >>> pysplice ...`). Insertions right after the docstring stepped up over it as if it
/// were another recipe's block, into the string. Lines inside string literals are never markers,
/// for placement and for reading markers back alike.
#[test]
fn marker_lookalike_inside_a_docstring() {
    let text = "\"\"\"Module.\n   # >>> pysplice other/h 00000000\n   # <<< pysplice fuzz/imports\n\"\"\"\rW\ng";
    round_trip(&imports_recipe(), text);
    let text = "x = 1\ns = '''\n# >>> pysplice f/imports 12345678\n'''\n";
    round_trip(&imports_recipe(), text);
}

/// Found by `pipeline`: mixed line breaks (`\r\n`, lone `\r`, `\n`). The scan for string literals
/// ended a comment only at `\n`, so a marker comment ending in `\r` swallowed the opening quotes
/// on the next line; every later line looked inside a string and the module-end block was not
/// read back ("removing the markers does not give back the original text").
#[test]
fn comment_ending_in_a_lone_carriage_return() {
    let recipe = Recipe::from_toml(
        "two.toml",
        "[recipe]\nid = \"f\"\nsummary = \"s\"\n[[hook]]\nid = \"imports\"\nsummary = \"i\"\nensure-imports = [\"os\"]\n[[hook]]\nid = \"end\"\nsummary = \"e\"\nin = \"module\"\nat = \"end\"\ncode = \"x = 1\"\n",
    )
    .unwrap();
    round_trip(
        &recipe,
        "\"\"\"D.\"\"\"\r\nfrom __future__ import annotations\r\"\"\"M\rd\n\"\"\"\r\nf\"\"\"a\r\n\"\"\"\rW\nf",
    );
}

/// Found by `pipeline` (`def helper(x):\r\n    \\\n return ...`): the body's first statement
/// sits on a backslash continuation line, indented by one space, while its logical line (and so
/// the block) is indented by four. Code placed at the end of the body took the one space, and
/// verification refused the unindented result.
#[test]
fn body_on_a_continuation_line() {
    let recipe = Recipe::from_toml(
        "end.toml",
        "[recipe]\nid = \"e\"\nsummary = \"s\"\n[[hook]]\nid = \"end\"\nsummary = \"e\"\nin = \"helper\"\nat = \"end\"\ncode = \"_x = 1\"\n",
    )
    .unwrap();
    for text in [
        "def helper(x):\r\n    \\\n return 1\r\n",
        "def helper(x):\n    \\\n  \\\n return x\n",
    ] {
        round_trip(&recipe, text);
    }
}

/// Found by `pipeline` (`def helper(x):\n    return *x\n`): the parser takes a bare starred
/// `return` value, which CPython refuses; `wrap-returns` then produced code that does not parse
/// and verification refused it. Such files are now invalid Python from the start.
#[test]
fn bare_starred_return_value() {
    for text in ["def helper(x):\n    return *x\n", "*x\n", "y = *x\n"] {
        let err = pysplice::ParsedFile::parse(SourceFile::new("m.py", text)).unwrap_err();
        assert!(err.to_string().contains("cannot use starred expression here"), "{err}");
    }
    for text in [
        "def helper(x):\n    return *x, 1\n",
        "y = *x, 1\n",
        "*a, b = x\n",
        "f(*x)\n",
    ] {
        assert!(
            pysplice::ParsedFile::parse(SourceFile::new("m.py", text)).is_ok(),
            "{text}"
        );
    }
}

/// Found by `pipeline` on `tations\n\nimport os\n\n  `: the module's only `import os` comes after
/// other module code, so `ensure-imports` counts it as present and after-imports code (placed
/// above `tations`) would use `os` before it is bound. The apply is refused with the documented
/// reason (docs/spec.md "Limitations") instead of writing a module that raises NameError on import.
#[test]
fn after_imports_code_before_a_late_import_is_refused() {
    let recipe = Recipe::from_toml(
        "late.toml",
        "[recipe]\nid = \"f\"\nsummary = \"s\"\n\
         [[hook]]\nid = \"imports\"\nsummary = \"i\"\nensure-imports = [\"os\"]\n\
         [[hook]]\nid = \"after-imports\"\nsummary = \"a\"\nin = \"module\"\nat = \"after-imports\"\ncode = \"HOME = os.environ.get('HOME')\"\n",
    )
    .unwrap();
    let text = "tations\n\nimport os\n\n  ";
    let err = apply(&recipe, SourceFile::new("m.py", text)).unwrap_err();
    let ErrorKind::EarlyNameUse { name, bound_line } = err.kind() else {
        panic!("{err}")
    };
    assert_eq!(name, "os", "{err}");
    assert_eq!(err.hook(), Some("after-imports"), "{err}");
    let shown = err.to_string();
    let said = format!("uses `os` before line {bound_line} binds it");
    assert!(
        shown.contains(&said) && shown.ends_with("[hook after-imports]"),
        "{shown}"
    );
}
