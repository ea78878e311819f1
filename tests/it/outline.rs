//! One hand-written fixture per edge case of the outline (`tests/fixtures/outline/*.py`), each with
//! exact expectations, and every fixture compared with CPython's `ast` through `tests/it/python/py_outline.py`.
//!
//! An outline row reads `[async ]kind path Lline-end_line[ @decorator_line] indent=".."[ one-line][ doc=".."]`.

use std::path::{Path, PathBuf};
use std::process::Command;

use pysplice::{DefKind, Definition, Error, ErrorKind, LineColumn, Newline, ParsedFile, SourceFile};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/outline")
}

fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture_dir().join(name)).unwrap_or_else(|err| panic!("fixture {name}: {err}"))
}

/// Reads and parses a fixture, named by its file name in messages.
fn try_parse(name: &str) -> Result<ParsedFile, Error> {
    SourceFile::from_bytes(name, fixture_bytes(name)).and_then(ParsedFile::parse)
}

fn parse(name: &str) -> ParsedFile {
    try_parse(name).unwrap_or_else(|err| panic!("{err}"))
}

fn row(parsed: &ParsedFile, d: &Definition) -> String {
    let mut row = format!(
        "{}{} {} L{}-{}",
        if d.is_async() { "async " } else { "" },
        d.kind().as_str(),
        d.path(),
        d.line(),
        d.end_line()
    );
    if let Some(line) = d.decorator_line() {
        row.push_str(&format!(" @{line}"));
    }
    row.push_str(&format!(" indent={:?}", d.body_indent()));
    if d.is_one_line_suite() {
        row.push_str(" one-line");
    }
    if let Some(doc) = d.docstring() {
        row.push_str(&format!(" doc={:?}", parsed.source().slice(doc)));
    }
    row
}

fn rows(parsed: &ParsedFile) -> Vec<String> {
    parsed.definitions().iter().map(|d| row(parsed, d)).collect()
}

/// Parses fixture `name` and checks its outline row by row.
fn assert_outline(name: &str, expected: &[&str]) -> ParsedFile {
    let parsed = parse(name);
    assert_eq!(rows(&parsed), expected, "outline of {name}");
    parsed
}

fn body_text<'a>(parsed: &'a ParsedFile, path: &str) -> &'a str {
    let d = parsed.locate(path).unwrap();
    parsed.source().slice(d.body_range())
}

#[test]
fn decorators() {
    let parsed = assert_outline(
        "decorators.py",
        &[
            r#"function plain L4-5 indent="    ""#,
            r#"function one L9-10 @8 indent="    ""#,
            r#"function several L17-18 @13 indent="    ""#,
            // `@(` is on line 21; like CPython, the decorator line is that of the expression.
            r#"function parenthesized L24-25 @22 indent="    ""#,
            r#"class Decorated L31-40 @28 indent="    ""#,
            r#"method Decorated.static L33-34 @32 indent="        ""#,
            r#"method Decorated.prop L39-40 @36 indent="        ""#,
        ],
    );
    // The range starts at the keyword, not at the decorators.
    for (path, start) in [
        ("several", "def several():"),
        ("parenthesized", "def parenthesized():"),
        ("Decorated", "class Decorated:"),
    ] {
        let d = parsed.locate(path).unwrap();
        let text = parsed.source().slice(d.range());
        assert!(text.starts_with(start), "{path}: {text:?}");
    }
    let node = parsed.node(parsed.locate("several").unwrap());
    assert_eq!(node.kind(), "FunctionDef");
    assert_eq!(node.field("decorator_list").map(|list| list.children().len()), Some(3));
}

#[test]
fn async_def() {
    let parsed = assert_outline(
        "async_def.py",
        &[
            r#"async function top L4-5 indent="    ""#,
            r#"class Server L8-27 indent="    ""#,
            r#"async method Server.handle L9-13 indent="        ""#,
            r#"async function Server.handle.<locals>.inner L10-11 indent="            ""#,
            r#"async method Server.decorated L16-17 @15 indent="        ""#,
            r#"async method Server.stream L19-27 indent="        ""#,
            r#"function Server.stream.<locals>.each L21-22 indent="                ""#,
            r#"async function Server.stream.<locals>.under_with L26-27 indent="                ""#,
        ],
    );
    let top = parsed.locate("top").unwrap();
    assert!(parsed.source().slice(top.range()).starts_with("async def top"));
    assert_eq!(parsed.node(top).kind(), "AsyncFunctionDef");
}

#[test]
fn nested_classes() {
    let parsed = assert_outline(
        "nested_classes.py",
        &[
            r#"class Outer L1-13 indent="    " doc="\"\"\"Outer doc.\"\"\"""#,
            r#"class Outer.Inner L4-10 indent="        ""#,
            r#"class Outer.Inner.Deepest L5-7 indent="            ""#,
            r#"method Outer.Inner.Deepest.method L6-7 indent="                ""#,
            r#"method Outer.Inner.inner_method L9-10 indent="            ""#,
            r#"method Outer.outer_method L12-13 indent="        ""#,
            r#"class Second L16-17 indent="    ""#,
        ],
    );
    let parents: Vec<Option<usize>> = parsed.definitions().iter().map(Definition::parent).collect();
    assert_eq!(parents, [None, Some(0), Some(1), Some(2), Some(1), Some(0), None]);
    assert_eq!(parsed.locate("Outer.Inner.Deepest.method").unwrap().name(), "method");
    let err = parsed.locate("Outer.Deepest").unwrap_err();
    let ErrorKind::NotFound {
        candidates, members, ..
    } = err.kind()
    else {
        panic!("{err}")
    };
    let location = err.location();
    assert_eq!((location.line, location.column), (1, 1));
    assert_eq!(&members[..], ["Inner", "outer_method"]);
    assert_eq!(
        candidates.first().map(String::as_str),
        Some("Outer.Inner.Deepest"),
        "{err}"
    );
}

#[test]
fn function_in_method_and_class_in_function() {
    let parsed = assert_outline(
        "locals.py",
        &[
            r#"class C L1-10 indent="    ""#,
            r#"method C.m L2-10 indent="        ""#,
            r#"function C.m.<locals>.f L3-7 indent="            ""#,
            r#"function C.m.<locals>.f.<locals>.g L4-5 indent="                ""#,
            r#"function factory L13-21 indent="    ""#,
            r#"class factory.<locals>.K L14-19 indent="        ""#,
            r#"method factory.<locals>.K.method L15-16 indent="            ""#,
            r#"class factory.<locals>.K.Nested L18-19 indent="            ""#,
        ],
    );
    let parents: Vec<Option<usize>> = parsed.definitions().iter().map(Definition::parent).collect();
    assert_eq!(
        parents,
        [None, Some(0), Some(1), Some(2), None, Some(4), Some(5), Some(5)]
    );
    assert_eq!(parsed.locate("C.m.<locals>.f").unwrap().line(), 3);
    assert_eq!(
        parsed.locate("factory.<locals>.K.method").unwrap().kind(),
        DefKind::Method
    );
    assert_eq!(parsed.locate("C.m.<locals>.f.<locals>.g#1").unwrap().name(), "g");
}

#[test]
fn definitions_under_compound_statements() {
    assert_outline(
        "blocks.py",
        &[
            r#"function from_try L4-5 indent="        ""#,
            r#"function from_except L7-8 indent="        ""#,
            r#"function from_else L10-11 indent="        ""#,
            r#"function from_finally L13-14 indent="        ""#,
            r#"function from_except_star L19-20 indent="        ""#,
            r#"function in_for L23-24 indent="        ""#,
            r#"function for_else L26-27 indent="        ""#,
            r#"function in_while L30-31 indent="        ""#,
            r#"function in_with L34-35 indent="        ""#,
            r#"function in_case L39-40 indent="            ""#,
            r#"class InCase L42-43 indent="            ""#,
            r#"class Guarded L46-54 indent="    ""#,
            r#"method Guarded.tried L48-49 indent="            ""#,
            r#"method Guarded.withed L53-54 indent="            ""#,
        ],
    );
}

#[test]
fn one_line_suites() {
    let parsed = assert_outline(
        "one_line_suites.py",
        &[
            r#"function f L1-1 indent="    " one-line"#,
            r#"class A L4-4 indent="    " one-line"#,
            r#"class B L7-9 indent="    ""#,
            r#"method B.m L8-8 indent="        " one-line"#,
            r#"method B.n L9-9 indent="        " one-line"#,
            r#"function g L12-12 indent="    " one-line"#,
        ],
    );
    assert_eq!(body_text(&parsed, "f"), "return x");
    assert_eq!(body_text(&parsed, "A"), "pass");
    assert_eq!(body_text(&parsed, "B.n"), "x = 1; return x");
    let g = parsed.locate("g").unwrap();
    // The trailing comment is not part of the definition.
    assert_eq!(parsed.source().slice(g.range()), "def g(): pass");
    assert_eq!(
        parsed.source().position(g.body_range().start),
        LineColumn { line: 12, column: 10 }
    );
}

#[test]
fn tabs() {
    let parsed = assert_outline(
        "tabs.py",
        &[
            r#"class Tabbed L1-6 indent="\t""#,
            r#"method Tabbed.method L2-4 indent="\t\t""#,
            r#"method Tabbed.other L6-6 indent="\t\t" one-line"#,
            r#"function tab_body L9-10 indent="\t""#,
        ],
    );
    assert_eq!(parsed.source().style().indent_unit(), "\t");
    assert_eq!(parsed.source().style().newline(), Newline::Lf);
}

#[test]
fn crlf() {
    let bytes = fixture_bytes("crlf.py");
    let crlf = bytes.windows(2).filter(|w| w == b"\r\n").count();
    let lf = bytes.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(
        (crlf, lf),
        (8, 8),
        "crlf.py must keep its CRLF line endings (check git's autocrlf)"
    );
    let parsed = assert_outline(
        "crlf.py",
        &[
            r#"class Windows L1-8 indent="    " doc="\"\"\"Written on Windows.\"\"\"""#,
            r#"method Windows.method L4-5 indent="        ""#,
            r#"method Windows.other L7-8 indent="        ""#,
        ],
    );
    assert_eq!(parsed.source().style().newline(), Newline::CrLf);
    let method = parsed.locate("Windows.method").unwrap();
    assert_eq!(
        parsed.source().slice(method.range()),
        "def method(self):\r\n        return 1"
    );
    assert_eq!(
        parsed.source().position(method.range().start),
        LineColumn { line: 4, column: 5 }
    );
}

#[test]
fn carriage_return_only() {
    let parsed = assert_outline(
        "cr_only.py",
        &[
            r#"class OldMac L1-3 indent="    ""#,
            r#"method OldMac.method L2-3 indent="        ""#,
            r#"function after L6-7 indent="    ""#,
        ],
    );
    assert_eq!(parsed.source().style().newline(), Newline::Cr);
    assert!(!parsed.source().text().contains('\n'));
}

#[test]
fn byte_order_mark() {
    let parsed = assert_outline(
        "bom.py",
        &[
            r#"class Marked L1-3 indent="    ""#,
            r#"method Marked.method L2-3 indent="        ""#,
        ],
    );
    assert!(parsed.source().style().has_bom());
    let marked = parsed.locate("Marked").unwrap();
    assert_eq!(marked.range().start, 3, "the class starts after the 3 bytes of the BOM");
    assert!(parsed.source().slice(marked.range()).starts_with("class Marked:"));
    let method = parsed.locate("Marked.method").unwrap();
    assert_eq!(
        parsed.source().position(method.range().start),
        LineColumn { line: 2, column: 5 }
    );
}

#[test]
fn byte_order_mark_is_not_counted_in_columns() {
    let parsed = parse("bom.py");
    let marked = parsed.locate("Marked").unwrap();
    assert_eq!(
        parsed.source().position(marked.range().start),
        LineColumn { line: 1, column: 1 }
    );
    assert_eq!(
        parsed.source().position_utf16(marked.range().start),
        LineColumn { line: 1, column: 1 }
    );
}

#[test]
fn docstrings() {
    let parsed = assert_outline(
        "docstrings.py",
        &[
            r#"function single L1-3 indent="    " doc="'Single-quoted docstring.'""#,
            concat!(
                r#"function triple L6-11 indent="    " "#,
                r#"doc="\"\"\"Triple-quoted\n    docstring spanning lines.\n    \"\"\"""#
            ),
            r#"class WithDoc L14-18 indent="    " doc="r'''Raw docstring with a \\\\ backslash.'''""#,
            r#"method WithDoc.method L17-18 indent="        " doc="\"Double-quoted.\"""#,
            r#"function not_bytes L21-23 indent="    ""#,
            r#"function not_fstring L26-27 indent="    ""#,
            // Implicit concatenation makes one string constant, as in CPython.
            r#"function concatenated L30-32 indent="    " doc="\"implicitly \" \"concatenated\"""#,
            // The range of the string leaves its parentheses out.
            r#"function parenthesized L35-36 indent="    " doc="\"parenthesized docstring\"""#,
        ],
    );
    // The body starts with the docstring; the first statement after it is where code goes.
    let after_docstring = |path: &str| {
        let d = parsed.locate(path).unwrap();
        assert_eq!(d.body_range().start, d.docstring().unwrap().start, "{path}");
        let body = parsed.node(d).field("body").unwrap().children();
        parsed.source().position(body[1].range().start)
    };
    assert_eq!(after_docstring("single"), LineColumn { line: 3, column: 5 });
    assert_eq!(after_docstring("triple"), LineColumn { line: 10, column: 5 });
    assert_eq!(after_docstring("WithDoc"), LineColumn { line: 17, column: 5 });
    assert_eq!(after_docstring("WithDoc.method"), LineColumn { line: 18, column: 27 });
    assert_eq!(
        parsed
            .source()
            .position(parsed.locate("triple").unwrap().docstring().unwrap().end),
        LineColumn { line: 9, column: 8 }
    );
}

#[test]
fn form_feed() {
    let parsed = assert_outline(
        "form_feed.py",
        &[
            r#"function after_form_feed L3-4 indent="    ""#,
            r#"class Paged L7-9 indent="    ""#,
            r#"method Paged.method L8-9 indent="        ""#,
        ],
    );
    let source = parsed.source();
    assert_eq!(source.slice(source.line_range(2)), "\x0c");
    assert_eq!(source.slice(source.line_range(8)), "\x0c    def method(self):");
    let method = parsed.locate("Paged.method").unwrap();
    assert_eq!(source.position(method.range().start), LineColumn { line: 8, column: 6 });
}

#[test]
fn ellipsis_bodies() {
    let parsed = assert_outline(
        "ellipsis_body.py",
        &[
            r#"class Proto L4-4 indent="    " one-line"#,
            r#"class Stub L7-8 indent="    ""#,
            r#"class Methods L11-15 indent="    ""#,
            r#"method Methods.f L12-12 indent="        " one-line"#,
            r#"method Methods.g L14-15 indent="        ""#,
        ],
    );
    for path in ["Proto", "Stub", "Methods.f", "Methods.g"] {
        assert_eq!(body_text(&parsed, path), "...", "{path}");
    }
}

#[test]
fn methods_in_both_arms_of_an_if_are_ambiguous() {
    let parsed = assert_outline(
        "if_arms.py",
        &[
            r#"class Platform L4-13 indent="    ""#,
            r#"method Platform.path L6-7 indent="            ""#,
            r#"method Platform.path L9-10 indent="            ""#,
            r#"method Platform.other L12-13 indent="        ""#,
            r#"function helper L17-18 indent="        ""#,
            r#"function helper L20-21 indent="        ""#,
        ],
    );
    let err = parsed.locate("Platform.path").unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Ambiguous { lines, .. } if lines == &[6, 9]),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "if_arms.py:6:9: `Platform.path` is defined 2 times (lines 6, 9); add an ordinal such as `Platform.path#1`"
    );
    assert_eq!(parsed.locate("Platform.path#1").unwrap().line(), 6);
    assert_eq!(parsed.locate("Platform.path#2").unwrap().line(), 9);
    assert!(matches!(
        parsed.locate("Platform.path#3").as_ref().map_err(Error::kind),
        Err(ErrorKind::BadPath { .. })
    ));
    assert!(
        matches!(parsed.locate("helper").as_ref().map_err(Error::kind), Err(ErrorKind::Ambiguous { lines, .. }) if *lines == [17, 20])
    );
    assert_eq!(parsed.locate("helper#2").unwrap().line(), 20);
    assert_eq!(parsed.locate("Platform.other").unwrap().line(), 12);
    assert_eq!(parsed.find_all("Platform.path").len(), 2);
}

#[test]
fn non_ascii_identifiers_and_strings() {
    let parsed = assert_outline(
        "non_ascii.py",
        &[
            r#"class Ψυχή L4-7 indent="    " doc="\"\"\"Ελληνικά: docstring.\"\"\"""#,
            r#"method Ψυχή.größe L7-7 indent="        " one-line"#,
            r#"function 函数 L10-11 indent="    ""#,
        ],
    );
    let source = parsed.source();
    let method = parsed.locate("Ψυχή.größe").unwrap();
    assert_eq!(method.name(), "größe");
    // `    def größe(self): return "😀 ✓"`: ö and ß take 2 bytes but 1 UTF-16 unit, 😀 4 bytes and 2
    // units, ✓ 3 bytes and 1 unit.
    let body = method.body_range();
    assert_eq!(source.slice(body.clone()), "return \"😀 ✓\"");
    assert_eq!(source.position(body.start), LineColumn { line: 7, column: 24 });
    assert_eq!(source.position_utf16(body.start), LineColumn { line: 7, column: 22 });
    assert_eq!(source.position(method.range().end), LineColumn { line: 7, column: 41 });
    assert_eq!(
        source.position_utf16(method.range().end),
        LineColumn { line: 7, column: 35 }
    );
    assert_eq!(source.offset_of_utf16(LineColumn { line: 7, column: 22 }), body.start);
    // Before any non-ASCII text on a line, both columns agree.
    assert_eq!(
        source.position(method.range().start),
        source.position_utf16(method.range().start)
    );
    assert_eq!(parsed.locate("函数").unwrap().line(), 10);
}

#[test]
fn identifier_characters_that_are_not_alphanumeric() {
    // U+2118 (℘) is Other_ID_Start, U+00B7 (·) Other_ID_Continue, U+0662 (٢) an Arabic-Indic digit.
    let parsed = assert_outline(
        "xid_names.py",
        &[
            r#"class ℘eierstrass L1-6 indent="    ""#,
            r#"method ℘eierstrass.a·b L2-3 indent="        ""#,
            r#"method ℘eierstrass._٢ L5-6 indent="        ""#,
        ],
    );
    for d in parsed.definitions() {
        assert_eq!(parsed.locate(d.path()).unwrap().line(), d.line(), "{}", d.path());
    }
}

#[test]
fn multiline_headers_and_continuations() {
    let parsed = assert_outline(
        "multiline_headers.py",
        &[
            r#"function long_signature L1-7 indent="    ""#,
            r#"class Base L10-16 indent="    ""#,
            r#"method Base.method L13-16 indent="        ""#,
            r#"function continued L19-21 indent="    ""#,
        ],
    );
    assert_eq!(body_text(&parsed, "continued"), "return a + b");
    assert_eq!(body_text(&parsed, "Base.method"), "pass");
    assert!(!parsed.locate("long_signature").unwrap().is_one_line_suite());
}

#[test]
fn end_lines_leave_trailing_comments_and_blank_lines_out() {
    let parsed = assert_outline(
        "end_lines.py",
        &[
            r#"function trailing_comment L1-2 indent="    ""#,
            r#"function nested_block L8-14 indent="    ""#,
            r#"function string_at_end L17-21 indent="    ""#,
            r#"class Last L24-26 indent="    ""#,
            r#"method Last.method L25-26 indent="        ""#,
        ],
    );
    let d = parsed.locate("trailing_comment").unwrap();
    assert_eq!(parsed.source().slice(d.range()), "def trailing_comment():\n    x = 1");
}

#[test]
fn files_without_definitions() {
    let empty = assert_outline("empty.py", &[]);
    assert!(empty.module_body().is_empty());
    assert_eq!(empty.source().lines().line_count(), 1);
    let comments = assert_outline("comments_only.py", &[]);
    assert_eq!(comments.module_body().len(), 1);
    assert!(
        matches!(comments.locate("anything").as_ref().map_err(Error::kind), Err(ErrorKind::NotFound { candidates, .. }) if candidates.is_empty())
    );
}

#[test]
fn syntax_error_names_line_and_column() {
    let err = try_parse("syntax_error.py").unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Syntax { .. }), "{err:?}");
    assert_eq!((err.location().line, err.location().column), (9, 5));
    assert_eq!(
        err.to_string(),
        "syntax_error.py:9:5: invalid Python: invalid syntax. Got unexpected token 'pass'"
    );
}

#[test]
fn non_utf8_bytes_name_line_column_and_byte() {
    let err = try_parse("non_utf8.py").unwrap_err();
    let ErrorKind::NotUtf8 { byte } = err.kind() else {
        panic!("{err:?}")
    };
    let location = err.location();
    assert_eq!(
        (location.file.as_str(), location.line, location.column, *byte),
        ("non_utf8.py", 4, 12, 0xe9)
    );
    assert_eq!(
        err.to_string(),
        "non_utf8.py:4:12: the file is not valid UTF-8 (byte 0xe9); Python source must be UTF-8 encoded"
    );
}

/// Fixtures where pysplice knowingly disagrees with CPython; each has an ignored test below that
/// states CPython's answer. When one is fixed, remove it here and un-ignore its test.
const KNOWN_DIFFERENCES: &[&str] = &[];

#[test]
fn global_declaration_outline() {
    // A def whose name is declared `global` in its enclosing scope gets a bare `__qualname__`.
    assert_outline(
        "global_qualname.py",
        &[
            r#"function outer L1-7 indent="    ""#,
            r#"function helper L4-5 indent="        ""#,
            r#"class Registry L10-15 indent="    ""#,
            r#"class Plugin L13-15 indent="        ""#,
            r#"method Plugin.run L14-15 indent="            ""#,
        ],
    );
}

#[test]
fn global_declaration_gives_a_bare_qualname() {
    let parsed = parse("global_qualname.py");
    let paths: Vec<&str> = parsed.definitions().iter().map(Definition::path).collect();
    assert_eq!(paths, ["outer", "helper", "Registry", "Plugin", "Plugin.run"]);
}

#[test]
fn identifiers_are_nfkc_normalized() {
    let parsed = parse("nfkc_names.py");
    let paths: Vec<&str> = parsed.definitions().iter().map(Definition::path).collect();
    assert_eq!(paths, ["file", "\u{c5}ngstrom", "\u{c5}ngstrom.\u{e9}t\u{e9}"]);
    // A path written as in the file finds the same definition.
    assert_eq!(parsed.locate("\u{212b}ngstrom.e\u{301}te\u{301}").unwrap().line(), 6);
    assert_eq!(parsed.locate("\u{fb01}le").unwrap().path(), "file");
}

type Outline = Vec<(String, String, usize, usize, Option<usize>, bool)>;

fn cpython_outlines(files: &[PathBuf]) -> serde_json::Value {
    let output = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/python/py_outline.py"))
        .args(files)
        .output()
        .expect("python3 runs tests/it/python/py_outline.py");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("the helper prints JSON")
}

#[test]
fn every_fixture_agrees_with_cpython() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "py"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "only {} fixtures", files.len());
    let expected = cpython_outlines(&files);
    let mut problems = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_str().unwrap();
        let want = &expected[file.to_str().unwrap()];
        let got = try_parse(name);
        let known = KNOWN_DIFFERENCES.contains(&name);
        match (got, want.as_array()) {
            (Ok(parsed), Some(want)) => {
                let got: Outline = parsed
                    .definitions()
                    .iter()
                    .map(|d| {
                        let kind = d.kind().as_str().to_string();
                        (
                            d.path().to_string(),
                            kind,
                            d.line(),
                            d.end_line(),
                            d.decorator_line(),
                            d.is_async(),
                        )
                    })
                    .collect();
                let want: Outline = want
                    .iter()
                    .map(|d| {
                        (
                            d["path"].as_str().unwrap().to_string(),
                            d["kind"].as_str().unwrap().to_string(),
                            d["line"].as_u64().unwrap() as usize,
                            d["end_line"].as_u64().unwrap() as usize,
                            d["decorator_line"].as_u64().map(|l| l as usize),
                            d["async"].as_bool().unwrap(),
                        )
                    })
                    .collect();
                match (got == want, known) {
                    (false, false) => problems.push(format!("{name}: pysplice {got:?}\n  CPython {want:?}")),
                    (true, true) => problems.push(format!(
                        "{name} now agrees with CPython: drop it from KNOWN_DIFFERENCES"
                    )),
                    _ => {}
                }
            }
            (Err(_), None) => {}
            (Err(err), Some(_)) => problems.push(format!("{name}: pysplice fails ({err}), CPython parses")),
            (Ok(_), None) => problems.push(format!("{name}: CPython fails ({want}), pysplice parses")),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Both refuse the two broken fixtures.
    assert!(expected[fixture_dir().join("syntax_error.py").to_str().unwrap()]["error"].is_string());
    assert!(expected[fixture_dir().join("non_utf8.py").to_str().unwrap()]["error"].is_string());
}

/// A definition of another file does not panic: it gives the node at the same place when the
/// file has one, else the module.
#[test]
fn node_of_a_foreign_definition() {
    let deep = ParsedFile::parse(SourceFile::new(
        "deep.py",
        "x = 1\ny = 2\nclass A:\n    class B:\n        def f(self):\n            pass\n",
    ))
    .unwrap();
    let small = ParsedFile::parse(SourceFile::new("small.py", "def g():\n    pass\n")).unwrap();
    let foreign = deep.locate("A.B.f").unwrap();
    assert_eq!(deep.node(foreign).kind(), "FunctionDef");
    assert!(std::ptr::eq(small.node(foreign), small.root()));
    assert_eq!(small.node(foreign).kind(), "Module");
    // Same place in both files: that node.
    let top = ParsedFile::parse(SourceFile::new("top.py", "def h():\n    pass\n")).unwrap();
    assert_eq!(top.node(small.locate("g").unwrap()).kind(), "FunctionDef");
}
