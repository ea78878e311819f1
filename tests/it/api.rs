//! The library's flow from parse to write as a caller sees it: a plan holds what it was made
//! from and says what applying would do, applying it says what happened, a plan of another text
//! is refused by type, and recipes built in code are order-free and refused in builder terms.

use std::path::Path;

use pysplice::{
    apply, plan, Anchor, BuilderReason, Depth, Error, ErrorKind, Hook, HookOutcome, Nth, ParsedFile, Pattern, Recipe,
    SourceFile, SpecReason, Status,
};

const MODEL: &str = "import os\n\nclass Model:\n    def forward(self, x):\n        y = x + 1\n        return y\n";

/// A recipe of four hooks: imports, a log at the start, a note after `y = ...`, and one that
/// never applies here (`when` matches nothing).
fn recipe(log: &str, with_note: bool) -> Recipe {
    let note = if with_note {
        "[[hook]]\nid = \"note\"\nsummary = \"Noted y\"\nin = \"Model.forward\"\nat = { after = \"y = $$$\" }\ncode = \"seen = y\"\n"
    } else {
        ""
    };
    let text = format!(
        r#"[recipe]
id = "trace"
summary = "Trace"
[[hook]]
id = "imports"
summary = "Imported logging"
ensure-imports = ["logging"]
[[hook]]
id = "log"
summary = "Logged calls"
in = "Model.forward"
at = "start"
code = "{log}"
{note}[[hook]]
id = "never"
summary = "Never here"
in = "Model.forward"
at = "end"
code = "pass"
when = "raise $E"
"#
    );
    Recipe::from_toml("trace.toml", &text).unwrap_or_else(|err| panic!("{err}"))
}

fn parsed(text: &str) -> ParsedFile {
    ParsedFile::parse(SourceFile::new("m.py", text)).unwrap()
}

/// Per hook, its id and status, skip and failure reasons left out.
fn statuses(outcomes: &[HookOutcome]) -> Vec<(String, Status)> {
    outcomes
        .iter()
        .map(|o| {
            let status = match &o.status {
                Status::Skipped { .. } => Status::NotPresent,
                other => other.clone(),
            };
            (o.hook.clone(), status)
        })
        .collect()
}

fn pairs(expected: &[(&str, Status)]) -> Vec<(String, Status)> {
    expected.iter().map(|(h, s)| ((*h).to_string(), s.clone())).collect()
}

#[test]
fn a_fresh_file_would_apply_then_is_applied() {
    let recipe = recipe("logging.debug('forward')", true);
    let file = parsed(MODEL);
    let planned = plan(&recipe, &file).unwrap();
    assert_eq!(
        planned.source().text(),
        MODEL,
        "the plan holds the text it was made from"
    );
    let before = planned.outcomes();
    assert!(matches!(before[3].status, Status::Skipped { .. }), "{before:?}");
    assert_eq!(
        statuses(&before),
        pairs(&[
            ("imports", Status::WouldApply),
            ("log", Status::WouldApply),
            ("note", Status::WouldApply),
            ("never", Status::NotPresent),
        ])
    );
    let patched = planned.apply().unwrap();
    assert_eq!(
        statuses(patched.outcomes()),
        pairs(&[
            ("imports", Status::Applied),
            ("log", Status::Applied),
            ("note", Status::Applied),
            ("never", Status::NotPresent),
        ])
    );
    assert_eq!(
        patched.output(),
        apply(&recipe, SourceFile::new("m.py", MODEL)).unwrap().output()
    );
}

#[test]
fn a_file_carrying_the_recipe_is_already_applied_before_and_after() {
    let recipe = recipe("logging.debug('forward')", true);
    let applied = apply(&recipe, SourceFile::new("m.py", MODEL)).unwrap();
    let file = parsed(applied.output());
    let planned = plan(&recipe, &file).unwrap();
    let expected = pairs(&[
        ("imports", Status::AlreadyApplied),
        ("log", Status::AlreadyApplied),
        ("note", Status::AlreadyApplied),
        ("never", Status::NotPresent),
    ]);
    assert_eq!(statuses(&planned.outcomes()), expected);
    assert!(!planned.outcomes().iter().any(|o| o.status.is_pending()));
    let again = planned.apply().unwrap();
    assert!(!again.changed(), "{}", again.diff());
    assert!(again.is_up_to_date());
    assert_eq!(statuses(again.outcomes()), expected);
}

#[test]
fn a_file_patched_by_an_older_recipe_would_update_and_is_updated() {
    let older = recipe("logging.debug('forward')", true);
    let newer = recipe("logging.info('forward')", false);
    let applied = apply(&older, SourceFile::new("m.py", MODEL)).unwrap();
    let file = parsed(applied.output());
    let planned = plan(&newer, &file).unwrap();
    assert_eq!(
        statuses(&planned.outcomes()),
        pairs(&[
            ("imports", Status::AlreadyApplied),
            ("log", Status::WouldUpdate),
            ("never", Status::NotPresent),
            ("note", Status::WouldRemove),
        ])
    );
    let updated = planned.apply().unwrap();
    assert_eq!(
        statuses(updated.outcomes()),
        pairs(&[
            ("imports", Status::AlreadyApplied),
            ("log", Status::Updated),
            ("never", Status::NotPresent),
            ("note", Status::Reverted),
        ])
    );
    let fresh = apply(&newer, SourceFile::new("m.py", MODEL)).unwrap();
    assert_eq!(updated.output(), fresh.output());
    assert!(
        updated.diff().contains("+        logging.info('forward')\n"),
        "{}",
        updated.diff()
    );
}

#[test]
fn a_plan_applied_to_another_text_is_a_plan_mismatch() {
    let recipe = recipe("logging.debug('forward')", true);
    let file = parsed(MODEL);
    let other = SourceFile::new("m.py", MODEL.replace("x + 1", "x + 2"));
    let err = plan(&recipe, &file).unwrap().apply_to(&other).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::PlanMismatch { planned } if planned == "m.py"),
        "{err:?}"
    );
    assert_eq!((err.location().line, err.location().column), (5, 17), "{err}");
    assert_eq!(
        err.to_string(),
        "m.py:5:17: this is not the text the plan was made from (`m.py` as planned); plan this text and apply that plan"
    );
    // A text only longer, and the same text under another name, are other texts too.
    let longer = SourceFile::new("m.py", format!("{MODEL}z = 1\n"));
    let err = plan(&recipe, &file).unwrap().apply_to(&longer).unwrap_err();
    assert_eq!((err.location().line, err.location().column), (7, 1), "{err}");
    let renamed = SourceFile::new("n.py", MODEL);
    let err = plan(&recipe, &file).unwrap().apply_to(&renamed).unwrap_err();
    assert!(err.to_string().starts_with("n.py:1:1: this is not the text"), "{err}");
    // The same text, read again, takes the plan.
    let same = SourceFile::new("m.py", MODEL.to_string());
    let patched = plan(&recipe, &file).unwrap().apply_to(&same).unwrap();
    assert_eq!(
        patched.output(),
        plan(&recipe, &file).unwrap().apply().unwrap().output()
    );
}

/// The builder error of `hook` in an otherwise fine recipe.
fn builder_error(hook: pysplice::HookBuilder) -> Error {
    Recipe::builder("r", "s").var("v", "1").hook(hook).build().unwrap_err()
}

fn pattern(text: &str) -> Pattern {
    Pattern::parse(text).unwrap()
}

#[test]
fn builder_errors_name_the_hook_and_the_call_with_no_place_in_a_file() {
    let cases: Vec<(pysplice::HookBuilder, &str)> = vec![
        (
            Hook::builder("log", "l").target("f").at(Anchor::Start),
            "hook \"log\": the placement needs code: call .code(...)",
        ),
        (
            Hook::builder("log", "l"),
            "hook \"log\": the hook needs a placement: call one of .at(...), .replace(...), .wrap_returns(...), .ensure_imports(...), .add_forwarder(...)",
        ),
        (
            Hook::builder("log", "l").target("f").wrap_returns("g({value})").at(Anchor::End).code("x"),
            "hook \"log\": the hook has two placements, .wrap_returns(...) and .at(...): keep one",
        ),
        (
            Hook::builder("log", "l").target("f").code("x").at(Anchor::End).code("y"),
            "hook \"log\": .code(...) is called twice; call it once",
        ),
        (
            Hook::builder("log", "l").target("f").at(Anchor::End).code("x").nth(Nth::Last),
            "hook \"log\": .nth(...) is only used with .at(Anchor::before(...)), .at(Anchor::after(...)) or .replace(...)",
        ),
        (
            Hook::builder("log", "l").ensure_imports(["os"]).code("x"),
            "hook \"log\": .code(...) is only used with .at(...) or .replace(...)",
        ),
        (
            Hook::builder("log", "l").wrap_returns("g({value})"),
            "hook \"log\": .wrap_returns(...) needs a function: call .target(...)",
        ),
        (
            Hook::builder("log", "l").target("f").ensure_imports(["os"]),
            "hook \"log\": .ensure_imports(...) works on the module: drop .target(...)",
        ),
        (
            Hook::builder("log", "l").target("f").at(Anchor::Start).code("print({w})"),
            "hook \"log\": `{w}` names no variable: call .var(\"w\", ...) on the recipe, or write `{{w}}` for literal braces",
        ),
        (
            Hook::builder("log", "l").target("f").at(Anchor::Start).code("print({value})"),
            "hook \"log\": `{value}` (the returned value) exists only in .wrap_returns(...)",
        ),
        (
            Hook::builder("log", "l").target("f").wrap_returns("g(x)"),
            "hook \"log\": .wrap_returns(...): the template must use `{value}` (the returned value)",
        ),
        (
            Hook::builder("log", "l").target("A.1f").at(Anchor::Start).code("x"),
            "hook \"log\": .target(...): bad target path `A.1f`: `1f` is not a Python name",
        ),
        (
            Hook::builder("log", "l").target("f").at(Anchor::Start).code("x").requires("2g"),
            "hook \"log\": .requires(...): bad target path `2g`: `2g` is not a Python name",
        ),
    ];
    for (hook, expected) in cases {
        let err = builder_error(hook);
        let text = err.to_string();
        assert!(text.starts_with(expected), "got      {text}\nexpected {expected}");
        assert!(
            matches!(err.kind(), ErrorKind::Builder { recipe, .. } if recipe == "r"),
            "{err:?}"
        );
        assert_eq!(err.hook(), Some("log"));
        assert!(!err.location().is_somewhere(), "{:?}", err.location());
        assert!(!text.contains("[hook") && !text.contains(":1:1"), "{text}");
    }
    // Typed: a caller tells the reasons apart by variant.
    let err = builder_error(Hook::builder("log", "l").target("f").at(Anchor::Start));
    assert!(matches!(
        err.kind(),
        ErrorKind::Builder {
            reason: BuilderReason::Rule(SpecReason::CodeMissing),
            ..
        }
    ));
    // The same rule broken by a TOML recipe is the same reason.
    assert_eq!(err.kind().spec_reason(), Some(&SpecReason::CodeMissing));
    let toml =
        "[recipe]\nid = \"r\"\nsummary = \"s\"\n[[hook]]\nid = \"log\"\nsummary = \"l\"\nin = \"f\"\nat = \"start\"\n";
    let spec = Recipe::from_toml("r.toml", toml).unwrap_err();
    assert_eq!(spec.kind().spec_reason(), Some(&SpecReason::CodeMissing), "{spec}");
    // Code that does not parse keeps the parser's error as the source.
    let err = builder_error(Hook::builder("log", "l").target("f").at(Anchor::Start).code("x = ("));
    assert!(
        err.to_string()
            .starts_with("hook \"log\": .code(...): code does not parse as Python: invalid Python"),
        "{err}"
    );
    let source = std::error::Error::source(&err).and_then(|s| s.downcast_ref::<Error>());
    assert!(
        matches!(source.map(Error::kind), Some(ErrorKind::Syntax { .. })),
        "{source:?}"
    );
    // Recipe-level errors name the recipe.
    let err = Recipe::builder("r", "s")
        .var("v", "1")
        .var("v", "2")
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "recipe \"r\": .var(name, ...) for one name is called twice; call it once"
    );
    assert_eq!(err.hook(), None);
}

/// Every permutation of `0..n`, in lexicographic order.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for rest in permutations(n - 1) {
        for at in 0..=rest.len() {
            let mut p = rest.clone();
            p.insert(at, n - 1);
            out.push(p);
        }
    }
    out
}

#[test]
fn builder_calls_in_any_order_build_the_same_recipe() {
    type Call = fn(pysplice::HookBuilder) -> pysplice::HookBuilder;
    let anchored: [Call; 6] = [
        |h| h.target("Model.forward"),
        |h| h.at(Anchor::after(pattern("y = $$$"))),
        |h| h.nth(Nth::All),
        |h| h.depth(Depth::Top),
        |h| h.code("seen = y"),
        |h| h.when(pattern("return $X")),
    ];
    let replacing: [Call; 5] = [
        |h| h.target("Model.forward"),
        |h| h.replace(pattern("y = $X")),
        |h| h.nth(Nth::Last),
        |h| h.code("y = 0"),
        |h| h.optional(),
    ];
    let toml = r#"[recipe]
id = "r"
summary = "s"
[[hook]]
id = "h"
summary = "h"
in = "Model.forward"
at = { after = "y = $$$", nth = "all", depth = "top" }
code = "seen = y"
when = "return $X"
[[hook]]
id = "h"
summary = "h"
in = "Model.forward"
replace = "y = $X"
nth = "last"
code = "y = 0"
optional = true
"#;
    let (first, second) = toml.split_at(toml.rfind("[[hook]]").unwrap());
    let head = &first[..first.find("[[hook]]").unwrap()];
    for (calls, spec) in [
        (&anchored[..], first.to_string()),
        (&replacing[..], format!("{head}{second}")),
    ] {
        let expected = Recipe::from_toml("r.toml", &spec).unwrap();
        let expected = (
            format!("{:?}", expected.hooks[0].action),
            apply(&expected, SourceFile::new("m.py", MODEL)),
        );
        for order in permutations(calls.len()) {
            let hook = order.iter().fold(Hook::builder("h", "h"), |h, &i| calls[i](h));
            let built = Recipe::builder("r", "s")
                .hook(hook)
                .build()
                .unwrap_or_else(|err| panic!("{order:?}: {err}"));
            let got = format!("{:?}", built.hooks[0].action);
            assert_eq!(got, expected.0, "{order:?}");
            let patched = apply(&built, SourceFile::new("m.py", MODEL));
            assert_eq!(
                patched
                    .as_ref()
                    .map(|p| p.output().to_string())
                    .map_err(ToString::to_string),
                expected
                    .1
                    .as_ref()
                    .map(|p| p.output().to_string())
                    .map_err(ToString::to_string),
                "{order:?}"
            );
        }
    }
}

/// The Rust code of the first ```` ```rust ```` block after `heading` in a Markdown text.
fn markdown_block(text: &str, heading: &str) -> String {
    let from = text.find(heading).expect("the heading");
    let start = text[from..].find("```rust\n").expect("a rust block") + from + "```rust\n".len();
    let end = text[start..].find("```\n").expect("the block's end") + start;
    text[start..end].to_string()
}

/// The code of the first doc test of the crate root, without rustdoc's hidden lines.
fn crate_doc_test(lib: &str) -> String {
    let lines: Vec<&str> = lib
        .lines()
        .map_while(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect();
    let start = lines.iter().position(|l| *l == "```").expect("a doc test") + 1;
    let end = lines[start..].iter().position(|l| *l == "```").expect("its end") + start;
    lines[start..end]
        .iter()
        .filter(|l| !l.starts_with("# "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The part of `examples/folder.rs` between its `// [folder run]` and `// [end]` lines, out of
/// `main`'s indentation.
fn folder_example(example: &str) -> String {
    let lines: Vec<&str> = example.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim() == "// [folder run]")
        .expect("the start")
        + 1;
    let end = lines.iter().position(|l| l.trim() == "// [end]").expect("the end");
    lines[start..end]
        .iter()
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
        .collect()
}

#[test]
fn the_library_docs_show_the_folder_example_that_ci_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let example = folder_example(&std::fs::read_to_string(root.join("examples/folder.rs")).unwrap());
    assert!(
        example.contains("Batch::run_with(") && example.contains(".write()"),
        "{example}"
    );
    let docs = std::fs::read_to_string(root.join("docs/library.md")).unwrap();
    assert_eq!(
        markdown_block(&docs, "## Folders and packages"),
        example,
        "docs/library.md must show examples/folder.rs as it is"
    );
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert_eq!(
        markdown_block(&readme, "### Folder runs"),
        example,
        "the README must show examples/folder.rs as it is"
    );
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(ci.contains("cargo run --quiet --example folder"), "CI runs the example");
}

#[test]
fn the_library_docs_show_the_crate_doc_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/library.md")).unwrap();
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let shown = markdown_block(&docs, "## Applying and reverting a recipe");
    let tested = crate_doc_test(&lib);
    assert!(
        tested.contains("plan(&recipe, &parsed)?") && tested.contains("revert("),
        "{tested}"
    );
    assert_eq!(
        shown, tested,
        "docs/library.md must show the crate root's doc test as it is"
    );
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert_eq!(
        markdown_block(&readme, "## Library use"),
        tested,
        "the README must show the crate root's doc test as it is"
    );
}

/// Regression: the examples returned their errors from `main`, which prints the `Debug` dump of
/// an error (`Error(Parts { kind: ...`) instead of its message; they print `{err}` and exit.
#[test]
fn the_examples_print_errors_as_their_message() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for entry in std::fs::read_dir(root.join("examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("fn main() -> ExitCode {") && text.contains("eprintln!(\"error: {err}\");"),
            "{} must print its error with `{{err}}`, not return it from main",
            path.display()
        );
    }
    assert!(seen >= 3);
    let docs = std::fs::read_to_string(root.join("docs/library.md")).unwrap();
    let shown = markdown_block(&docs, "## Showing an error");
    assert!(shown.contains("eprintln!(\"error: {err}\");"), "{shown}");
}
