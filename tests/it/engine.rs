//! One hand-written fixture per placement kind and style edge case (`tests/fixtures/engine/NAME.py`
//! with the recipe `NAME.toml`), applied by the engine and snapshotted in `snapshots/` as what
//! changed and where: per hook its status, lines and enclosing definition, then the changed lines
//! with one line of context. Every fixture also keeps the three invariants: the output parses,
//! applying twice equals applying once, and revert gives back the exact bytes.
//!
//! Snapshot notation: `→` is a tab, `␍` a carriage return, `<BOM>` the byte order mark, and
//! `⊘` marks a last line without a line break. Line numbers are old / new.
//!
//! Tests named `regression_*` pin behaviour that an earlier engine got wrong; each says what used
//! to happen.

use std::path::{Path, PathBuf};
use std::process::Command;

use pysplice::{
    apply, revert, Error, ErrorKind, HookOutcome, MarkerReason, ParsedFile, Patched, PlacementReason, Recipe,
    SkipReason, SourceFile, Status, VerifyReason,
};
use similar::{capture_diff_slices, group_diff_ops, Algorithm, ChangeTag};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/engine")
}

fn read(name: &str) -> String {
    let path = fixture_dir().join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    String::from_utf8(bytes).unwrap_or_else(|err| panic!("{name}: {err}"))
}

fn recipe(spec: &str) -> Recipe {
    Recipe::from_toml(spec, &read(spec)).unwrap_or_else(|err| panic!("{err}"))
}

/// A recipe from inline TOML hooks (with a standard `[recipe]` table, id `fx`).
pub(crate) fn inline_recipe(hooks: &str) -> Recipe {
    let text = format!("[recipe]\nid = \"fx\"\nsummary = \"inline\"\n\n{hooks}");
    Recipe::from_toml("inline.toml", &text).unwrap_or_else(|err| panic!("{err}\n{text}"))
}

// ---- invariants ------------------------------------------------------------------------------

/// Output parses; a second apply changes nothing and reports every hook as already applied or
/// skipped; revert gives back `input` byte for byte (and reverting the input is a no-op).
#[track_caller]
pub(crate) fn assert_invariants(recipe: &Recipe, name: &str, input: &str, patched: &Patched) {
    let output = patched.output();
    if let Err(err) = ParsedFile::parse(SourceFile::new(name, output)) {
        panic!("{name}: the output does not parse: {err}\n{output}");
    }
    let again =
        apply(recipe, SourceFile::new(name, output)).unwrap_or_else(|err| panic!("{name}: second apply: {err}"));
    assert!(
        !again.changed(),
        "{name}: a second apply changed the text:\n{}",
        again.output()
    );
    assert_eq!(again.output(), output);
    for (first, second) in patched.outcomes().iter().zip(again.outcomes()) {
        assert_eq!(first.hook, second.hook);
        let expected_ok = match &first.status {
            Status::Applied | Status::Updated | Status::AlreadyApplied => second.status == Status::AlreadyApplied,
            Status::Skipped { .. } => matches!(second.status, Status::Skipped { .. }),
            other => panic!("{name}: hook `{}` is {other:?} after a successful apply", first.hook),
        };
        assert!(
            expected_ok,
            "{name}: hook `{}` was {:?}, then {:?} on the second apply",
            first.hook, first.status, second.status
        );
        assert_eq!(first.lines, second.lines, "{name}: hook `{}` moved", first.hook);
    }
    let back = revert(recipe, SourceFile::new(name, output)).unwrap_or_else(|err| panic!("{name}: revert: {err}"));
    assert!(
        back.output().as_bytes() == input.as_bytes(),
        "{name}: revert does not give back the input:\n{}",
        render_diff(input, back.output())
    );
    let noop = revert(recipe, SourceFile::new(name, input)).unwrap_or_else(|err| panic!("{name}: revert: {err}"));
    assert!(!noop.changed(), "{name}: reverting an unpatched file changed it");
}

// ---- rendering -------------------------------------------------------------------------------

/// Lines with their line breaks (`\n`, `\r\n`, `\r`), as Python splits them.
fn split_lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let end = match bytes[i] {
            b'\n' => i + 1,
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => i + 2,
            b'\r' => i + 1,
            _ => {
                i += 1;
                continue;
            }
        };
        lines.push(&text[start..end]);
        start = end;
        i = end;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

fn visible(line: &str) -> String {
    let (body, eol) = if let Some(body) = line.strip_suffix("\r\n") {
        (body, "␍")
    } else if let Some(body) = line.strip_suffix('\n') {
        (body, "")
    } else if let Some(body) = line.strip_suffix('\r') {
        (body, "␍(CR only)")
    } else {
        (line, "⊘")
    };
    format!("{}{eol}", body.replace('\u{feff}', "<BOM>").replace('\t', "→"))
}

/// The changed lines of `old` → `new` with one line of context, numbered old / new.
fn render_diff(old: &str, new: &str) -> String {
    let (a, b) = (split_lines(old), split_lines(new));
    let ops = capture_diff_slices(Algorithm::Myers, &a, &b);
    let mut out = String::new();
    for group in group_diff_ops(ops, 1) {
        let (first, last) = (&group[0], &group[group.len() - 1]);
        let (o, n) = (first.old_range().start, first.new_range().start);
        let (oe, ne) = (last.old_range().end, last.new_range().end);
        out.push_str(&format!("@@ -{},{} +{},{} @@\n", o + 1, oe - o, n + 1, ne - n));
        for op in &group {
            for change in op.iter_changes(&a, &b) {
                let number = |i: Option<usize>| i.map_or("    ".to_string(), |i| format!("{:>4}", i + 1));
                let sign = match change.tag() {
                    ChangeTag::Equal => ' ',
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                };
                out.push_str(&format!(
                    "{} {} {sign}|{}\n",
                    number(change.old_index()),
                    number(change.new_index()),
                    visible(change.value())
                ));
            }
        }
    }
    out
}

fn status_text(status: &Status) -> String {
    match status {
        Status::Applied => "applied".into(),
        Status::AlreadyApplied => "already applied".into(),
        Status::Updated => "updated".into(),
        Status::Skipped { reason } => format!("skipped: {reason}"),
        Status::Failed { reason } => format!("FAILED: {reason}"),
        Status::Reverted => "reverted".into(),
        Status::NotPresent => "not present".into(),
        other => format!("{other:?}"),
    }
}

/// The innermost definition of `parsed` whose lines hold `line`, or `<module>`.
fn enclosing(parsed: &ParsedFile, line: usize) -> String {
    parsed
        .definitions()
        .iter()
        .rev()
        .find(|d| d.decorator_line().unwrap_or(d.line()) <= line && line <= d.end_line())
        .map_or_else(|| "<module>".to_string(), |d| d.path().to_string())
}

fn hook_rows(parsed: &ParsedFile, outcomes: &[HookOutcome]) -> String {
    let mut out = String::new();
    for o in outcomes {
        let place = match o.lines {
            Some((a, b)) => format!(" L{a}-{b} in {}", enclosing(parsed, a)),
            None => String::new(),
        };
        out.push_str(&format!("{}: {}{place}\n", o.hook, status_text(&o.status)));
    }
    out
}

fn style_text(source: &SourceFile) -> String {
    let style = source.style();
    let newline = match style.newline() {
        pysplice::Newline::Lf => "LF",
        pysplice::Newline::CrLf => "CRLF",
        pysplice::Newline::Cr => "CR",
    };
    let mut text = format!("{newline}, indent {:?}", style.indent_unit());
    if style.has_bom() {
        text.push_str(", BOM");
    }
    if !source.text().is_empty() && !source.text().ends_with(['\n', '\r']) {
        text.push_str(", no final newline");
    }
    text
}

/// What an apply changed and where, for a snapshot.
fn render(name: &str, patched: &Patched) -> String {
    let parsed = ParsedFile::parse(SourceFile::new(name, patched.output())).expect("checked before");
    format!(
        "file: {name} ({})\n--- hooks\n{}--- changes\n{}",
        style_text(&SourceFile::new(name, patched.input())),
        hook_rows(&parsed, patched.outcomes()),
        render_diff(patched.input(), patched.output())
    )
}

/// The snapshots taken besides one per fixture (`engine_NAME`), for the stale-snapshot check.
const NAMED_SNAPSHOTS: &[&str] = &[
    "engine_imports_shadowed",
    "engine_updated",
    "engine_hand_edited",
    "engine_missing_anchor",
    "engine_missing_target",
    "engine_conflict",
];

/// Every snapshot name this module takes: one per fixture and the named ones.
pub(crate) fn snapshot_names() -> Vec<String> {
    let fixtures = FIXTURES.iter().map(|name| format!("engine_{name}"));
    fixtures
        .chain(NAMED_SNAPSHOTS.iter().map(|name| name.to_string()))
        .collect()
}

#[track_caller]
fn snapshot(name: &str, value: &str) {
    // A name missing from the list would leave its file unaccounted for in the stale check.
    assert!(
        snapshot_names().iter().any(|known| known == name),
        "snapshot `{name}` is neither a fixture's nor in NAMED_SNAPSHOTS"
    );
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!(name, value);
    });
}

/// Applies `NAME.toml` to `NAME.py`, checks the invariants and returns the rendering.
#[track_caller]
fn run_fixture(name: &str) -> (Patched, String) {
    let file = format!("{name}.py");
    let input = read(&file);
    let recipe = recipe(&format!("{name}.toml"));
    let patched = apply(&recipe, SourceFile::new(&file, input.as_str())).unwrap_or_else(|err| panic!("{err}"));
    assert_invariants(&recipe, &file, &input, &patched);
    let text = render(&file, &patched);
    (patched, text)
}

/// A fixture whose recipe cannot be applied: the error, as text.
#[track_caller]
fn fixture_error(py: &str, spec: &str) -> Error {
    let input = read(py);
    match apply(&recipe(spec), SourceFile::new(py, input)) {
        Ok(patched) => panic!("{spec} applied:\n{}", patched.output()),
        Err(err) => err,
    }
}

macro_rules! fixture {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let name = stringify!($name);
                let (_, text) = run_fixture(name);
                snapshot(&format!("engine_{name}"), &text);
            }
        )*
        /// Every fixture, for the CPython check.
        const FIXTURES: &[&str] = &[$(stringify!($name)),*];
    };
}

fixture!(
    imports_placement,
    imports_after_docstring,
    imports_comment_header,
    imports_future_only,
    imports_all_present,
    module_code,
    module_no_final_newline,
    function_no_final_newline,
    body_start,
    body_end,
    anchors,
    captures,
    wrap_returns,
    replace,
    add_forwarder,
    conditions,
    decorators,
    async_def,
    nested_classes,
    tabs,
    crlf,
    bom,
    docstrings,
    backslash_continuations,
    ellipsis_bodies,
    one_line_suites,
    multiline_strings,
    non_ascii,
    two_space_indent,
    after_imports_strings,
    generators,
    return_brackets,
    conditional_imports,
    forwarder_bindings,
    one_line_hooks,
);

// ---- targeted expectations on the fixtures ----------------------------------------------------

#[test]
fn imports_only_the_missing_ones() {
    let (patched, _) = run_fixture("imports_placement");
    let out = patched.output();
    for added in [
        "import os\n",
        "import numpy as np\n",
        "from typing import Optional\n",
        "from os import path as osp\n",
    ] {
        assert_eq!(out.matches(added).count(), 1, "{added:?} once:\n{out}");
    }
    assert_eq!(out.matches("import sys\n").count(), 1, "present import not added again");
    let (patched, _) = run_fixture("imports_all_present");
    assert!(!patched.changed());
    let Status::Skipped { reason } = &patched.outcomes()[0].status else {
        panic!("{:?}", patched.outcomes())
    };
    assert!(
        matches!(reason.skip(), Some(SkipReason::AlreadyImported { .. })),
        "{reason}"
    );
}

#[test]
fn imports_shadowed_name_is_a_placement_error_naming_the_line() {
    let err = fixture_error("imports_shadowed.py", "imports_shadowed.toml");
    assert!(matches!(err.kind(), ErrorKind::Placement { .. }), "{err:?}");
    assert_eq!((err.location().line, err.location().column), (4, 1), "{err}");
    assert_eq!(err.hook(), Some("imports"));
    snapshot("engine_imports_shadowed", &err.to_string());
}

#[test]
fn crlf_inserted_lines_use_crlf() {
    let (patched, _) = run_fixture("crlf");
    let out = patched.output();
    assert!(
        !out.replace("\r\n", "").contains('\n'),
        "a bare LF in a CRLF file:\n{out:?}"
    );
    assert!(
        !out.replace("\r\n", "").contains('\r'),
        "a bare CR in a CRLF file:\n{out:?}"
    );
}

#[test]
fn tabs_inserted_code_uses_tabs() {
    let (patched, _) = run_fixture("tabs");
    for line in patched.output().lines() {
        assert!(!line.starts_with(' '), "space indentation in a tab file: {line:?}");
    }
}

#[test]
fn bom_stays_first() {
    let (patched, _) = run_fixture("bom");
    assert!(patched.output().starts_with('\u{feff}'));
    assert_eq!(patched.output().matches('\u{feff}').count(), 1);
}

#[test]
fn multiline_strings_in_code_are_not_reindented() {
    let (patched, _) = run_fixture("multiline_strings");
    let out = patched.output();
    assert!(
        out.contains("\n  second line, indented by two\nno indentation\n'''\n"),
        "{out}"
    );
    assert!(out.contains("\n    {self!r}\n\"\"\"\n"), "{out}");
}

#[test]
fn wrap_returns_leaves_nested_defs_and_lambdas_alone() {
    let (patched, _) = run_fixture("wrap_returns");
    let out = patched.output();
    assert!(out.contains("        return y + 1\n"), "{out}");
    assert!(out.contains("f = lambda z: z * 2\n"), "{out}");
    assert!(
        out.contains("return {\"hidden\": x}\n"),
        "unless-inside is left alone:\n{out}"
    );
    assert!(
        out.contains("return _w((x * 2, x))"),
        "a tuple gets parentheses:\n{out}"
    );
}

// ---- updates, hand edits and errors -----------------------------------------------------------

#[test]
fn changed_code_updates_the_old_block() {
    let input = read("body_start.py");
    let v1 = recipe("body_start.toml");
    let first = apply(&v1, SourceFile::new("body_start.py", input.as_str())).unwrap();
    let text = read("body_start.toml").replace("code = \"self.calls += 1\"", "code = \"self.calls += 2\"");
    let v2 = Recipe::from_toml("body_start.toml", &text).unwrap();
    let second = apply(&v2, SourceFile::new("body_start.py", first.output())).unwrap();
    let statuses: Vec<(&str, String)> = second
        .outcomes()
        .iter()
        .map(|o| (o.hook.as_str(), status_text(&o.status)))
        .collect();
    assert_eq!(
        statuses,
        [
            ("class", "already applied".to_string()),
            ("method", "updated".to_string()),
            ("comment", "already applied".to_string()),
            ("bare", "already applied".to_string()),
            ("function", "already applied".to_string()),
        ]
    );
    assert!(second.output().contains("self.calls += 2"));
    assert!(!second.output().contains("self.calls += 1"));
    assert_eq!(
        second.output(),
        apply(&v2, SourceFile::new("body_start.py", input.as_str()))
            .unwrap()
            .output(),
        "updating gives what a fresh apply of the new spec gives"
    );
    assert_invariants(&v2, "body_start.py", &input, &second);
    snapshot(
        "engine_updated",
        &format!(
            "{}--- changes from v1\n{}",
            hook_rows(&parsed(&second), second.outcomes()),
            render_diff(first.output(), second.output())
        ),
    );
}

fn parsed(patched: &Patched) -> ParsedFile {
    ParsedFile::parse(SourceFile::new(patched.name(), patched.output())).unwrap()
}

#[test]
fn hand_edited_block_is_refused_naming_the_line() {
    let input = read("body_start.py");
    let recipe = recipe("body_start.toml");
    let patched = apply(&recipe, SourceFile::new("body_start.py", input)).unwrap();
    let edited = patched.output().replace("self.calls += 1", "self.calls += 100");
    let marker_line = patched
        .output()
        .lines()
        .position(|l| l.contains("# >>> pysplice fx/method"))
        .unwrap()
        + 1;
    for result in [
        apply(&recipe, SourceFile::new("body_start.py", edited.as_str())),
        revert(&recipe, SourceFile::new("body_start.py", edited.as_str())),
    ] {
        let err = result.unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Marker { .. }), "{err:?}");
        assert_eq!(err.location().line, marker_line, "{err}");
        assert_eq!(err.hook(), Some("method"), "{err}");
    }
    // A removed closing marker and an edited inline change are caught too.
    let unclosed = patched.output().replace("    # <<< pysplice fx/bare\n", "");
    let err = apply(&recipe, SourceFile::new("body_start.py", unclosed)).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Marker {
                reason: MarkerReason::OpenBefore { .. }
            }
        ),
        "{err}"
    );
    let input = read("wrap_returns.py");
    let recipe = self::recipe("wrap_returns.toml");
    let patched = apply(&recipe, SourceFile::new("wrap_returns.py", input)).unwrap();
    let edited = patched
        .output()
        .replace("return _w(helper(f(x)))", "return _w(helper(f(x + 1)))");
    let err = apply(&recipe, SourceFile::new("wrap_returns.py", edited)).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Marker { .. }), "{err:?}");
    assert_eq!(err.hook(), Some("nested"));
    snapshot("engine_hand_edited", &err.to_string());
}

#[test]
fn missing_required_anchor_names_file_line_column_and_hook() {
    let err = fixture_error("missing_anchor.py", "missing_anchor.toml");
    assert!(matches!(err.kind(), ErrorKind::Placement { .. }), "{err:?}");
    assert_eq!(err.hook(), Some("norm"));
    let text = err.to_string();
    assert!(text.starts_with("missing_anchor.py:3:9: "), "{text}");
    assert!(text.contains("x = self.norm(x)"), "{text}");
    snapshot("engine_missing_anchor", &text);
}

#[test]
fn missing_target_lists_the_nearest_candidates() {
    let err = fixture_error("missing_anchor.py", "missing_target.toml");
    let ErrorKind::NotFound {
        candidates, members, ..
    } = err.kind()
    else {
        panic!("{err:?}")
    };
    assert_eq!(candidates.first().map(String::as_str), Some("Model.forward"));
    assert_eq!(&members[..], ["forward"]);
    assert_eq!(err.hook(), Some("typo"));
    snapshot("engine_missing_target", &err.to_string());
}

#[test]
fn conflicting_hooks_are_an_error_naming_both() {
    let err = fixture_error("conflict.py", "conflict.toml");
    let ErrorKind::Conflict { first, second, .. } = err.kind() else {
        panic!("{err:?}")
    };
    let mut pair = [first.as_str(), second.as_str()];
    pair.sort_unstable();
    assert_eq!(pair, ["first", "second"]);
    assert_eq!(err.location().file, "conflict.py");
    snapshot("engine_conflict", &err.to_string());
}

#[test]
fn optional_hooks_report_why_they_were_skipped() {
    let (patched, _) = run_fixture("conditions");
    let reason = |id: &str| match &patched.outcomes().iter().find(|o| o.hook == id).unwrap().status {
        Status::Skipped { reason } => reason.clone(),
        other => panic!("{id}: {other:?}"),
    };
    assert!(
        matches!(reason("when-no").skip(), Some(SkipReason::NotApplicable { .. })),
        "{}",
        reason("when-no")
    );
    assert!(
        matches!(reason("requires-no").skip(), Some(SkipReason::Requires { path }) if path.contains("Model.load_weights")),
        "{}",
        reason("requires-no")
    );
    assert!(reason("optional-target").contains("Model.backward"));
    assert!(reason("optional-anchor").contains("y = self.head(x)"));
}

#[test]
fn required_hook_failure_changes_nothing_and_keeps_other_hooks_out() {
    // One placeable hook and one that is not: the file is refused as a whole.
    let recipe = inline_recipe(
        "[[hook]]\nid = \"ok\"\nsummary = \"ok\"\nin = \"Model.forward\"\nat = \"start\"\ncode = \"pass\"\n\n\
         [[hook]]\nid = \"bad\"\nsummary = \"bad\"\nin = \"Model.forward\"\nat = { before = \"nothing()\" }\ncode = \"pass\"\n",
    );
    let err = apply(&recipe, SourceFile::new("m.py", read("missing_anchor.py"))).unwrap_err();
    assert_eq!(err.hook(), Some("bad"));
}

#[test]
fn empty_file_takes_imports_and_module_code() {
    let recipe = inline_recipe(
        "[[hook]]\nid = \"imports\"\nsummary = \"imports\"\nensure-imports = [\"os\"]\n\n\
         [[hook]]\nid = \"end\"\nsummary = \"end\"\nat = \"end\"\ncode = \"x = os.sep\"\n",
    );
    for input in ["", "\n", "# only a comment\n", "x = 1\n"] {
        let patched = apply(&recipe, SourceFile::new("e.py", input)).unwrap_or_else(|err| panic!("{input:?}: {err}"));
        assert_invariants(&recipe, "e.py", input, &patched);
    }
}

/// CPython compiles the output of every fixture.
#[test]
fn cpython_compiles_every_fixture_output() {
    let dir = std::env::temp_dir().join(format!("pysplice-engine-fixtures-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in FIXTURES {
        let (patched, _) = run_fixture(name);
        std::fs::write(dir.join(format!("{name}.py")), patched.output()).unwrap();
    }
    let script = "import pathlib, sys\n\
        bad = []\n\
        for p in sorted(pathlib.Path(sys.argv[1]).glob('*.py')):\n\
        \x20   try:\n\
        \x20       compile(p.read_bytes(), str(p), 'exec')\n\
        \x20   except SyntaxError as e:\n\
        \x20       bad.append(f'{p.name}:{e.lineno}: {e.msg}')\n\
        print('\\n'.join(bad))\n\
        sys.exit(1 if bad else 0)\n";
    let output = Command::new("python3")
        .args(["-c", script])
        .arg(&dir)
        .output()
        .expect("python3 runs");
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        output.status.success(),
        "CPython rejects:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

// ---- regressions: behaviour an earlier engine got wrong ---------------------------------------

/// Applies inline hooks to `input`, checks the invariants and returns the output.
#[track_caller]
fn apply_ok(input: &str, hooks: &str) -> String {
    let recipe = inline_recipe(hooks);
    let patched = apply(&recipe, SourceFile::new("t.py", input)).unwrap_or_else(|err| panic!("{err}"));
    assert_invariants(&recipe, "t.py", input, &patched);
    patched.output().to_string()
}

const WRAP_F: &str = "[[hook]]\nid = \"w\"\nsummary = \"wrap\"\nin = \"f\"\nwrap-returns = \"_w({value})\"\n";

#[test]
fn regression_wrap_returns_bare_return_wraps_none() {
    // Actual: `verification failed: without the inserted statements the syntax tree differs from
    // the original` (engine::equivalent looks for the original value, an `absent` node, inside
    // the new return and does not find it).
    let out = apply_ok("def f(x):\n    if x:\n        return\n    return 1\n", WRAP_F);
    assert!(out.contains("        return _w(None)\n"), "{out}");
}

#[test]
fn two_returns_on_one_line_are_refused() {
    // Inline markers describe the line below them, one change per line: two returns sharing a
    // line are refused with a placement error naming the line, and nothing is written.
    let recipe = inline_recipe(WRAP_F);
    let input = "def f(a):\n    if a: return 1\n    return 2; return 3\n";
    let err = apply(&recipe, SourceFile::new("t.py", input)).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Placement {
                reason: PlacementReason::ReturnsShareLine { line: 3 }
            }
        ),
        "{err}"
    );
}

#[test]
fn regression_wrap_returns_on_the_bom_line() {
    // Actual: verification failed, the patched text does not parse: the inline marker is
    // inserted at offset 0, before the BOM, which then sits inside the text.
    let out = apply_ok("\u{feff}def f(): return 1\n", WRAP_F);
    assert!(out.starts_with('\u{feff}'), "{out:?}");
}

#[test]
fn regression_anchor_on_the_bom_line() {
    // Actual: "the anchor statement shares its line with other code" (the BOM is taken for code
    // before the statement); the same for `replace`.
    let hooks = "[[hook]]\nid = \"a\"\nsummary = \"after\"\nat = { after = \"import os\" }\ncode = \"y = 2\"\n\n\
                 [[hook]]\nid = \"b\"\nsummary = \"before\"\nat = { before = \"import os\" }\ncode = \"z = 3\"\n";
    let out = apply_ok("\u{feff}import os\nx = 1\n", hooks);
    assert!(out.starts_with("\u{feff}# >>> pysplice fx/b"), "{out:?}");
}

#[test]
fn regression_end_after_a_trailing_semicolon() {
    // Actual: "the body's last statement shares its line with other code" for `x = 1;`.
    let out = apply_ok(
        "def f():\n    x = 1;\n",
        "[[hook]]\nid = \"e\"\nsummary = \"end\"\nin = \"f\"\nat = \"end\"\ncode = \"y = 2\"\n",
    );
    assert!(out.contains("    x = 1;\n    # >>> pysplice fx/e"), "{out}");
}

#[test]
fn regression_two_blocks_at_the_end_of_a_file_without_final_newline() {
    // Actual: verification failed, "removing the markers does not give back the original text":
    // both frames claim the line break between them when they are read back.
    let out = apply_ok(
        "x = 1",
        "[[hook]]\nid = \"a\"\nsummary = \"a\"\nat = \"end\"\ncode = \"y = 2\"\n\n\
         [[hook]]\nid = \"b\"\nsummary = \"b\"\nat = \"end\"\ncode = \"z = 3\"\n",
    );
    assert!(out.ends_with("# <<< pysplice fx/b"), "{out:?}");
    // The same with imports and module code in a file holding only a comment.
    apply_ok(
        "# only a comment",
        "[[hook]]\nid = \"a\"\nsummary = \"a\"\nensure-imports = [\"os\"]\n\n\
         [[hook]]\nid = \"b\"\nsummary = \"b\"\nat = \"end\"\ncode = \"z = 3\"\n",
    );
}

#[test]
fn regression_blocks_at_the_same_offset_go_deepest_first() {
    // Actual: verification failed, "unexpected indent": both blocks go in at the end of the
    // file in hook order, so `f`'s block lands after the module-level one, outside `f`. Blocks
    // inserted at one offset should be ordered by decreasing indentation (the deeper one closes
    // the inner block first), whatever the hook order.
    let out = apply_ok(
        "def f():\n    x = 0\n",
        "[[hook]]\nid = \"module\"\nsummary = \"m\"\nat = \"end\"\ncode = \"y = 1\"\n\n\
         [[hook]]\nid = \"function\"\nsummary = \"f\"\nin = \"f\"\nat = \"end\"\ncode = \"z = 2\"\n",
    );
    assert!(
        out.contains("    z = 2\n    # <<< pysplice fx/function\n# >>> pysplice fx/module"),
        "{out}"
    );
    // The same inside a function: the end of `f` and after the last statement of its `if`.
    apply_ok(
        "def f(x):\n    if x:\n        y = 1\nz = 2\n",
        "[[hook]]\nid = \"end\"\nsummary = \"e\"\nin = \"f\"\nat = \"end\"\ncode = \"a = 1\"\n\n\
         [[hook]]\nid = \"after\"\nsummary = \"a\"\nin = \"f\"\nat = { after = \"y = 1\" }\ncode = \"b = 2\"\n",
    );
}

#[test]
fn regression_a_moved_block_is_reported_updated() {
    // The anchor moved (edited by hand outside the block): apply moves the block, so the file
    // changes. Actual: the hook is reported `AlreadyApplied` (the CLI prints "Already up to date"
    // and then rewrites the file; `check` prints "up to date" and exits 1).
    let recipe = inline_recipe(
        "[[hook]]\nid = \"after\"\nsummary = \"after x\"\nin = \"f\"\nat = { after = \"x = 1\" }\ncode = \"z = 3\"\n",
    );
    let moved = "def f():\n    # >>> pysplice fx/after 4a491043\n    z = 3\n    # <<< pysplice fx/after\n    y = 2\n    x = 1\n";
    let patched = apply(&recipe, SourceFile::new("t.py", moved)).unwrap();
    assert!(patched.changed());
    assert_eq!(patched.outcomes()[0].status, Status::Updated, "{}", patched.output());
}

#[test]
fn regression_marker_after_the_bom_on_the_first_line() {
    // Actual: ErrorKind::Marker "closing marker without an opening marker" on the verification
    // scan: the opening marker follows the BOM on line 1 and marker::scan does not skip the BOM.
    let (patched, _) = run_fixture("bom_first_line");
    assert!(patched.output().starts_with("\u{feff}# >>> pysplice fx/imports"));
}

#[test]
fn regression_import_of_a_submodule_is_not_shadowing() {
    // Actual: "`import os.path` would shadow `os`, which the module already binds differently".
    // `import os.path` binds `os` to the same package as the existing `import os`.
    let out = apply_ok(
        "import os\n\nx = 1\n",
        "[[hook]]\nid = \"i\"\nsummary = \"imports\"\nensure-imports = [\"os.path\"]\n",
    );
    assert!(out.contains("import os\n"), "{out}");
}

#[test]
fn regression_start_of_a_body_whose_first_statement_is_decorated() {
    // Actual: the block lands between `@property` and `def x`; verification fails (the output
    // does not parse). The statement's range starts at `def`, not at its first decorator.
    let start_in = |target: &str| {
        format!("[[hook]]\nid = \"s\"\nsummary = \"start\"\nin = \"{target}\"\nat = \"start\"\ncode = \"y = 1\"\n")
    };
    let out = apply_ok(
        "class A:\n    @property\n    def x(self):\n        return 1\n",
        &start_in("A"),
    );
    assert!(out.starts_with("class A:\n    # >>> pysplice fx/s"), "{out}");
    let out = apply_ok("@dec\ndef f():\n    return 1\n", &start_in("module"));
    assert!(out.starts_with("# >>> pysplice fx/s"), "{out}");
}

#[test]
fn regression_before_and_replace_a_decorated_definition() {
    // Actual: both place their code between the decorator and `def`; verification fails.
    let input = "class A:\n    y = 0\n    @property\n    def x(self):\n        return 1\n";
    let out = apply_ok(
        input,
        "[[hook]]\nid = \"b\"\nsummary = \"before\"\nin = \"A\"\nat = { before = \"@property\\ndef x(self):\\n    $$$\" }\ncode = \"z = 1\"\n",
    );
    assert!(out.contains("    y = 0\n    # >>> pysplice fx/b"), "{out}");
    let out = apply_ok(
        input,
        "[[hook]]\nid = \"r\"\nsummary = \"replace\"\nin = \"A\"\nreplace = \"@property\\ndef x(self):\\n    $$$\"\ncode = \"x = 1\"\n",
    );
    assert!(!out.contains("@property\n    x = 1"), "{out}");
}

#[test]
fn regression_before_an_elif_branch() {
    // Actual: verification failed (the block is put before the `elif` line, cutting the chain).
    // An `elif` is not a statement of its own: the anchor should be refused with a clear
    // placement error (or placed inside the `else` it stands for), never produce invalid code.
    let recipe = inline_recipe(
        "[[hook]]\nid = \"b\"\nsummary = \"before\"\nin = \"f\"\nat = { before = \"if x == 2:\\n    $$$\" }\ncode = \"y = 1\"\n",
    );
    let input = "def f(x):\n    if x == 1:\n        a = 1\n    elif x == 2:\n        a = 2\n    return a\n";
    match apply(&recipe, SourceFile::new("t.py", input)) {
        Ok(patched) => assert_invariants(&recipe, "t.py", input, &patched),
        Err(err) => assert!(matches!(err.kind(), ErrorKind::Placement { .. }), "{err}"),
    }
}

#[test]
fn regression_insert_after_a_statement_and_replace_the_next_one() {
    // Actual: ErrorKind::Conflict between `a` and `b`: the replacement starts at the line break
    // before its statement, where the insertion after the previous statement goes.
    let out = apply_ok(
        "import torch\nlogger = make_logger()\n",
        "[[hook]]\nid = \"a\"\nsummary = \"imports\"\nensure-imports = [\"os\"]\n\n\
         [[hook]]\nid = \"b\"\nsummary = \"replace\"\nreplace = \"logger = $_\"\ncode = \"logger = None\"\n",
    );
    assert!(out.contains("import os\n"), "{out}");
}

#[test]
fn regression_ensure_imports_sees_guarded_imports() {
    // Actual: `import numpy as np` is added unconditionally above the try block, which defeats
    // the guard (the module now fails to import without numpy). The name is bound at module
    // level inside `try`: it should count as present (or as bound differently: an error).
    let recipe = inline_recipe("[[hook]]\nid = \"i\"\nsummary = \"imports\"\nensure-imports = [\"numpy as np\"]\n");
    let input = "try:\n    import numpy as np\nexcept ImportError:\n    np = None\n";
    match apply(&recipe, SourceFile::new("t.py", input)) {
        Ok(patched) => assert!(!patched.changed(), "{}", patched.output()),
        Err(err) => assert!(matches!(err.kind(), ErrorKind::Placement { .. }), "{err}"),
    }
}

#[test]
fn regression_implicitly_concatenated_strings_are_reindented() {
    // Actual: the second line of `("a"\n "b")` is taken for the inside of a multi-line string and
    // kept at its column in the spec, so it is not indented with the rest of the block.
    let out = apply_ok(
        "def f():\n    pass\n",
        "[[hook]]\nid = \"s\"\nsummary = \"s\"\nin = \"f\"\nat = \"end\"\ncode = '''\nmsg = (\"a\"\n       \"b\")\n'''\n",
    );
    assert!(out.contains("    msg = (\"a\"\n           \"b\")\n"), "{out}");
}

#[test]
fn regression_spec_with_unicode_whitespace_line_does_not_panic() {
    // Actual: panic in spec::dedent, `&l[common..]` slices inside a U+00A0 on a blank line.
    let text = "[recipe]\nid = \"r\"\nsummary = \"s\"\n[[hook]]\nid = \"h\"\nsummary = \"s\"\nin = \"f\"\nat = \"start\"\ncode = \"   x = 1\\n\u{a0}\u{a0}\\n   y = 2\"\n";
    let result = std::panic::catch_unwind(|| Recipe::from_toml("t.toml", text).map(|_| ()));
    assert!(result.is_ok(), "Recipe::from_toml panicked");
}

#[test]
fn regression_stacked_recipes_keep_each_other_intact() {
    // Actual: recipe `b` puts its block inside recipe `a`'s frame (after `a`'s opening marker,
    // before `a`'s code), so `a` can no longer be applied again nor reverted (ErrorKind::Marker).
    let spec = |id: &str, code: &str| {
        Recipe::from_toml(
            "s.toml",
            &format!("[recipe]\nid = \"{id}\"\nsummary = \"s\"\n[[hook]]\nid = \"s\"\nsummary = \"s\"\nin = \"f\"\nat = \"start\"\ncode = \"{code}\"\n\n[[hook]]\nid = \"e\"\nsummary = \"e\"\nin = \"f\"\nat = \"end\"\ncode = \"{code}\"\n"),
        )
        .unwrap()
    };
    let (a, b) = (spec("a", "x = 1"), spec("b", "y = 2"));
    let input = "def f():\n    return 1\n";
    let with_a = apply(&a, SourceFile::new("t.py", input)).unwrap();
    let with_ab = apply(&b, SourceFile::new("t.py", with_a.output())).unwrap();
    let again = apply(&a, SourceFile::new("t.py", with_ab.output()))
        .unwrap_or_else(|err| panic!("{err}\n{}", with_ab.output()));
    assert!(!again.changed());
    let without_a = revert(&a, SourceFile::new("t.py", with_ab.output())).unwrap();
    let without_both = revert(&b, SourceFile::new("t.py", without_a.output())).unwrap();
    assert_eq!(without_both.output(), input);
}

// ---- placement on real code: each class with exact expectations -----------------------------

#[test]
fn after_imports_goes_below_a_second_string_literal_and_its_imports_first() {
    // Actual before: the block went between the two string literals, above `import os`, and
    // above the import block of the later `imports` hook: NameError on import.
    let (patched, _) = run_fixture("after_imports_strings");
    let out = patched.output();
    let imports = out.find("\nimport sys\n").expect("sys imported");
    let setup = out.find("\n_SEP = os.sep + sys.platform\n").expect("setup placed");
    let last_import = out.find("\nfrom typing import Any\n").expect("original import");
    assert!(last_import < imports && imports < setup, "{out}");
}

#[test]
fn generators_keep_their_bare_returns() {
    let (patched, _) = run_fixture("generators");
    let out = patched.output();
    assert!(out.contains("    if n < 0:\n        return\n"), "{out}");
    assert!(out.contains("    return _w(n)\n"), "{out}");
    assert!(!out.contains("_w(None)\n        yield"), "{out}");
    assert!(out.contains("        return _w(None)\n"), "{out}");
    assert!(out.contains("\n    return _w((await get(url)))\n"), "{out}");
    let Status::Skipped { reason } = &patched.outcomes()[1].status else {
        panic!("{:?}", patched.outcomes())
    };
    assert!(reason.contains("is a bare return of a generator"), "{reason}");
    assert!(!out.contains("return None"), "{out}");
}

#[test]
fn returned_values_keep_their_brackets() {
    let (patched, _) = run_fixture("return_brackets");
    let out = patched.output();
    for expected in [
        "    return _w(((a), b))\n",
        "    return _w((\"hello \"\n            \"world, \" + name))\n",
        "    return (\n        x.strip()\n        .lower()\n    )\n",
        "    return (\"a\"\n            \"b\") if _on else None\n",
        "    return _w([\n        x,\n        x,\n    ])\n",
    ] {
        assert!(out.contains(expected), "{expected:?} in\n{out}");
    }
}

#[test]
fn conditional_imports_are_not_present() {
    let (patched, _) = run_fixture("conditional_imports");
    let out = patched.output();
    let expected = "from typing import TYPE_CHECKING\n\
                    # >>> pysplice fx/imports ";
    assert!(out.contains(expected), "{out}");
    let block = out.split("# >>> pysplice fx/imports").nth(1).unwrap();
    let block = block.split("# <<< pysplice").next().unwrap();
    assert!(block.ends_with("\nimport os\nimport yaml\nimport json\n"), "{block:?}");
    assert!(!block.contains("numpy"), "{block:?}");
}

#[test]
fn class_level_bindings_count_as_present_for_forwarders() {
    // Actual before: `get_embed_and_head = helper` was overridden by an added forwarder.
    let (patched, _) = run_fixture("forwarder_bindings");
    let statuses: Vec<String> = patched.outcomes().iter().map(|o| status_text(&o.status)).collect();
    assert_eq!(
        statuses,
        [
            "skipped: already present: `Assigned.get_embed_and_head` (line 6)",
            "skipped: already present: `Imported.get_embed_and_head` (line 13)",
            "skipped: already present: `Decorated.get_embed_and_head` (line 21)",
            "skipped: already present: `Annotated.get_embed_and_head` (line 29)",
            "applied",
        ]
    );
    let present: Vec<(String, usize)> = patched
        .outcomes()
        .iter()
        .filter_map(|o| match &o.status {
            Status::Skipped { reason } => match reason.skip() {
                Some(SkipReason::AlreadyPresent { path, line }) => Some((path.clone(), *line)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(present.len(), 4, "{present:?}");
    assert_eq!(present[0], ("Assigned.get_embed_and_head".to_string(), 6));
}

#[test]
fn verification_refuses_what_cpython_would_refuse_and_writes_nothing() {
    // The parser accepts each output; CPython's compiler (or the module on import) would not.
    // (Code nested deeper than CPython's limits never gets this far: the parser's pre-scan
    // refuses it when the recipe is compiled, see tests/hostile_input.rs.)
    let cases: [(&str, &str, &str, &str); 8] = [
        ("x = 1\n", "module", "\"await y\"", "'await' outside function"),
        (
            "def f():\n    pass\n",
            "f",
            "\"nonlocal z\"",
            "no binding for nonlocal 'z' found",
        ),
        (
            "async def g():\n    yield 1\n",
            "g",
            "\"return 5\"",
            "'return' with value in async generator",
        ),
        ("x = 1\n", "module", "\"return 1\"", "'return' outside function"),
        ("x = 1\n", "module", "\"yield 1\"", "'yield' outside function"),
        (
            "def f():\n    y = 1\n",
            "f",
            "\"global y\"",
            "name 'y' is assigned to before global declaration",
        ),
        (
            "def f():\n    pass\n",
            "f",
            "\"async with a:\\n    pass\"",
            "'async with' outside async function",
        ),
        ("import os\n", "module", "\"_sep = os.sep\"", "uses `os` before line"),
    ];
    for (input, target, code, message) in cases {
        let at = if target == "module" && message.contains("before line") {
            "start"
        } else {
            "end"
        };
        let recipe = inline_recipe(&format!(
            "[[hook]]\nid = \"h\"\nsummary = \"h\"\nin = \"{target}\"\nat = \"{at}\"\ncode = {code}\n"
        ));
        let err = match apply(&recipe, SourceFile::new("t.py", input)) {
            Ok(patched) => panic!("{message}: applied\n{}", patched.output()),
            Err(err) => err,
        };
        match err.kind() {
            ErrorKind::Verify {
                reason: VerifyReason::CompilerRefuses { message: refused },
            } => assert_eq!(refused, message, "{err}"),
            ErrorKind::EarlyNameUse { name, .. } => assert_eq!(name, "os", "{err}"),
            _ => panic!("{message}: {err:?}"),
        }
        assert_eq!(err.hook(), Some("h"), "{err}");
    }
}

#[test]
fn a_file_that_cpython_refuses_already_is_still_patched() {
    // The self-check compares with the original: an error the input already has is not new.
    let out = apply_ok(
        "def f():\n    nonlocal q\n    return 1\n",
        "[[hook]]\nid = \"h\"\nsummary = \"h\"\nin = \"f\"\nat = \"end\"\ncode = \"pass\"\n",
    );
    assert!(out.contains("    pass\n"), "{out}");
}

#[test]
fn several_hooks_on_a_one_line_def_compose() {
    // Actual before: "hooks `start` and `end` edit overlapping text".
    let (patched, _) = run_fixture("one_line_hooks");
    let out = patched.output();
    let f = "def f(x):\n\
             \x20   # >>> pysplice fx/start ";
    assert!(out.starts_with(f), "{out}");
    let body: Vec<&str> = out.lines().skip(2).take(7).map(str::trim).collect();
    assert_eq!(
        body,
        [
            "x = x + 1",
            "# ~~~ pysplice fx/wrap sha256:1158eb69dd1b3900933f5996610df33615007e568790099a2568c0c78a1dc055 at=4 len=12 was=\"return x\"",
            "return _w(x)",
            "# >>> pysplice fx/end sha256:82dfcf139bc9ccb8db5a9138fd66dadcb0cbebcc2573b3b7aa026a0ea2b21e89",
            "unreachable = True",
            "# <<< pysplice fx/end",
            "# <<< pysplice fx/start",
        ]
    );
    assert!(out.contains("    return _w((await get(url)))  # fetch\n"), "{out}");
    assert!(
        patched.outcomes().iter().all(|o| o.status == Status::Applied),
        "{:?}",
        patched.outcomes()
    );
}

#[test]
fn hooks_of_stacked_recipes_compose_on_a_one_line_def() {
    let spec = |id: &str| {
        Recipe::from_toml(
            "s.toml",
            &format!(
                "[recipe]\nid = \"{id}\"\nsummary = \"s\"\n\
                 [[hook]]\nid = \"s\"\nsummary = \"s\"\nin = \"f\"\nat = \"start\"\ncode = \"x = x + 1\"\n\
                 [[hook]]\nid = \"e\"\nsummary = \"e\"\nin = \"f\"\nat = \"end\"\ncode = \"done = True\"\n\
                 [[hook]]\nid = \"w\"\nsummary = \"w\"\nin = \"f\"\nwrap-returns = \"_{id}({{value}})\"\n"
            ),
        )
        .unwrap()
    };
    let (a, b) = (spec("a"), spec("b"));
    let input = "def f(x): return x\n";
    let with_a = apply(&a, SourceFile::new("t.py", input)).unwrap();
    let with_ab =
        apply(&b, SourceFile::new("t.py", with_a.output())).unwrap_or_else(|err| panic!("{err}\n{}", with_a.output()));
    let out = with_ab.output();
    assert!(out.contains("    return _b(_a(x))\n"), "{out}");
    // b's code is inside the def: its start before the return, its end before a's closing marker.
    let start_b = out.find("# >>> pysplice b/s").unwrap();
    let ret = out.find("return _b(").unwrap();
    let end_b = out.find("# >>> pysplice b/e").unwrap();
    let close_a = out.find("# <<< pysplice a/s").unwrap();
    assert!(start_b < ret && ret < end_b && end_b < close_a, "{out}");
    assert!(!apply(&b, SourceFile::new("t.py", out)).unwrap().changed());
    // Taking `a` out from under `b` would drop b's changes: refused, naming `b`.
    for err in [
        revert(&a, SourceFile::new("t.py", out)).unwrap_err(),
        apply(&a, SourceFile::new("t.py", out)).unwrap_err(),
    ] {
        assert!(
            matches!(err.kind(), ErrorKind::Marker { reason: MarkerReason::StackedInsideSuite { other } } if other == "b"),
            "{err}"
        );
    }
    // In order, both come out exactly.
    let without_b = revert(&b, SourceFile::new("t.py", out)).unwrap();
    assert_eq!(without_b.output(), with_a.output());
    assert_eq!(
        revert(&a, SourceFile::new("t.py", without_b.output()))
            .unwrap()
            .output(),
        input
    );
}

#[test]
fn regression_nested_code_follows_the_block_indentation_not_the_file_unit() {
    // Actual: "Tabs not allowed as part of indentation after spaces": the file's first block
    // is indented with a tab (so its unit is a tab), the class with spaces, and the forwarder's
    // `return` line got the spaces of the class body plus a tab (seen in SymPy's ANTLR parsers).
    let out = apply_ok(
        "if x:\n\timport y\n\n\nclass A:\n    def __init__(self, m):\n        self.m = m\n",
        "[[hook]]\nid = \"f\"\nsummary = \"f\"\nin = \"A\"\nadd-forwarder = \"g\"\nvia = \"m\"\n",
    );
    assert!(
        out.contains("    def g(self, *args, **kwargs):\n        return self.m.g(*args, **kwargs)\n"),
        "{out}"
    );
}

#[test]
fn an_error_the_inserted_code_causes_in_original_code_names_the_hook() {
    // `yield` at the start of an async def makes it an async generator: its original
    // `return 1` is then refused by CPython, outside the inserted block.
    let recipe = inline_recipe("[[hook]]\nid = \"y\"\nsummary = \"y\"\nin = \"f\"\nat = \"start\"\ncode = \"yield\"\n");
    let err = apply(&recipe, SourceFile::new("t.py", "async def f():\n    return 1\n")).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Verify { reason: VerifyReason::CompilerRefuses { message } }
                if message == "'return' with value in async generator"
        ),
        "{err}"
    );
    assert_eq!(err.hook(), Some("y"), "{err}");
    assert_eq!(err.location().line, 5, "{err}");
}
