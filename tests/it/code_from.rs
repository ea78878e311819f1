//! `code-from`: a hook's code taken from Python files beside the recipe: what each kind of entry
//! takes, how the parts join, where the files may be, and the errors, each at the entry in the
//! recipe and naming the hook.

use std::collections::BTreeMap;
use std::path::Path;

use pysplice::{apply, Action, CodeFolder, CodeFromProblem, Error, ErrorKind, Recipe, SourceFile, SpecReason};

const HEAD: &str = "[recipe]\nid = \"r\"\nsummary = \"s\"\n";

/// A recipe of one hook `h` at the end of `A.f`, with `more` (TOML lines: `code`, `code-from`).
fn recipe_text(more: &str) -> String {
    format!("{HEAD}\n[[hook]]\nid = \"h\"\nsummary = \"x\"\nin = \"A.f\"\nat = \"end\"\n{more}\n")
}

/// The code of hook `h` of `recipe` (as compiled: dedented, trimmed).
fn code(recipe: &Recipe) -> &str {
    match &recipe.hooks[0].action {
        Action::Insert { code, .. } => code.text(),
        other => panic!("not an insertion: {other:?}"),
    }
}

/// The recipe `more` makes, its files taken from `files`.
fn with_files(more: &str, files: &[(&str, &str)]) -> Result<Recipe, Error> {
    let files: BTreeMap<&str, &str> = files.iter().copied().collect();
    Recipe::from_toml_with("dir/r.toml", &recipe_text(more), &files)
}

/// The code of hook `h` that `more` gives with `files`.
fn code_with(more: &str, files: &[(&str, &str)]) -> String {
    code(&with_files(more, files).unwrap()).to_string()
}

/// The problem of the `code-from` error of `err`, with the entry's file.
fn problem(err: &Error) -> (String, CodeFromProblem) {
    match err.kind() {
        ErrorKind::Spec {
            reason: SpecReason::CodeFrom { file, problem },
            ..
        } => (file.clone(), problem.clone()),
        other => panic!("not a code-from error: {other:?} ({err})"),
    }
}

/// The cause of a spec error.
fn cause(err: &Error) -> &Error {
    match err.kind() {
        ErrorKind::Spec { cause: Some(cause), .. } => cause,
        other => panic!("no cause: {other:?}"),
    }
}

const HELPERS: &str = "\"\"\"Helpers.\"\"\"\nimport os\n\n\ndef helper_a(x):\n    return x + 1\n    # the end of helper_a\n\n\n# about b\nasync def helper_b():\n    await os.sleep(0)\n\n\n@dataclass\n@other(\n    1,\n)\nclass Box:\n    size: int = 0\n\n    def grow(self):\n        self.size += 1\n\t# a tab-indented comment\n\n# a comment at the top level, after Box\nVALUE = 1\n";

#[test]
fn def_takes_the_definition_with_its_decorators_and_the_comments_ending_its_body() {
    let files = [("helpers.py", HELPERS)];
    let take = |name: &str| {
        code_with(
            &format!("code-from = [{{ file = \"helpers.py\", def = \"{name}\" }}]"),
            &files,
        )
    };
    assert_eq!(
        take("helper_a"),
        "def helper_a(x):\n    return x + 1\n    # the end of helper_a"
    );
    // The comment above a definition is not its own.
    assert_eq!(take("helper_b"), "async def helper_b():\n    await os.sleep(0)");
    assert_eq!(
        take("Box"),
        "@dataclass\n@other(\n    1,\n)\nclass Box:\n    size: int = 0\n\n    def grow(self):\n        self.size += 1\n\t# a tab-indented comment"
    );
}

#[test]
fn the_parts_join_by_two_blank_lines_after_the_inline_code() {
    let files = [("helpers.py", HELPERS), ("extra.py", "EXTRA = 2\n\n\n\n")];
    let text = code_with(
        "code = '''\n# a header\n'''\ncode-from = [\n  { file = \"helpers.py\", def = \"helper_b\" },\n  { file = \"extra.py\" },\n]",
        &files,
    );
    assert_eq!(
        text,
        "# a header\n\n\nasync def helper_b():\n    await os.sleep(0)\n\n\nEXTRA = 2"
    );
    // Without inline code, the pieces alone; `./` names the same folder.
    let text = code_with(
        "code-from = [{ file = \"./extra.py\" }, { file = \"extra.py\" }]",
        &files,
    );
    assert_eq!(text, "EXTRA = 2\n\n\nEXTRA = 2");
}

#[test]
fn no_def_or_body_takes_the_whole_file() {
    let files = [("sub/whole.py", "import os\n\nprint(os.sep)\n")];
    assert_eq!(
        code_with("code-from = [{ file = \"sub/whole.py\" }]", &files),
        "import os\n\nprint(os.sep)"
    );
}

const HOOKS: &str = "def init(self, config, layers=None, *args, flag=False, **kw):\n    self.config = config\n    x.config = 'config'  # config stays in a comment\n    if layers:\n        print(config.size, f'{{config}}', layers, flag, args, kw)\n    # the end\n\n\ndef tail(self, config): return config\n\n\ndef wrapped(self,\n            config):\n    pass\n\n\ndef shallow(self):\n  return 1\n\n\nasync def waits(self):\n    pass\n\n\nclass K:\n    pass\n";

#[test]
fn body_dedents_and_writes_the_parameters_after_the_first_as_slots() {
    let files = [("hooks.py", HOOKS)];
    let text = code_with("code-from = [{ file = \"hooks.py\", body = \"init\" }]", &files);
    assert_eq!(
        text,
        "self.config = {param.1}\nx.config = 'config'  # config stays in a comment\nif {param.2}:\n    print({param.1}.size, f'{{config}}', {param.2}, {param.3}, args, kw)\n# the end"
    );
}

#[test]
fn body_needs_a_plain_function_with_a_one_line_signature_and_a_4_space_body() {
    let files = [("hooks.py", HOOKS)];
    let fail = |name: &str| {
        with_files(
            &format!("code-from = [{{ file = \"hooks.py\", body = \"{name}\" }}]"),
            &files,
        )
        .unwrap_err()
    };
    let at = |line| pysplice::Location::new("dir/hooks.py", line, 1);
    assert_eq!(
        problem(&fail("tail")).1,
        CodeFromProblem::SignatureSpansLines {
            name: "tail".into(),
            at: at(9)
        }
    );
    assert_eq!(
        problem(&fail("wrapped")).1,
        CodeFromProblem::SignatureSpansLines {
            name: "wrapped".into(),
            at: at(12)
        }
    );
    assert_eq!(problem(&fail("shallow")).1, CodeFromProblem::NotIndented { at: at(18) });
    for name in ["waits", "K"] {
        assert_eq!(
            problem(&fail(name)).1,
            CodeFromProblem::BodyNeedsFunction { name: name.into() }
        );
    }
    let both = fail("init\", def = \"init");
    assert_eq!(problem(&both).1, CodeFromProblem::DefAndBody);
}

#[test]
fn a_name_the_file_does_not_define_at_its_top_level_is_an_error_listing_those_it_does() {
    let files = [("helpers.py", HELPERS)];
    let err = with_files("code-from = [{ file = \"helpers.py\", def = \"grow\" }]", &files).unwrap_err();
    assert_eq!(
        problem(&err),
        (
            "helpers.py".into(),
            CodeFromProblem::NotDefined {
                key: "def",
                name: "grow".into(),
                defined: vec!["helper_a".into(), "helper_b".into(), "Box".into()],
            }
        )
    );
    // At the entry in the recipe (line 10, its `{`), naming the hook.
    assert_eq!(
        (err.location().file.as_str(), err.location().line, err.location().column),
        ("dir/r.toml", 10, 14)
    );
    assert_eq!(err.hook(), Some("h"));
    assert!(
        err.to_string()
            .starts_with("dir/r.toml:10:14: bad spec: code-from `helpers.py`"),
        "{err}"
    );
}

#[test]
fn a_code_file_that_does_not_parse_names_its_own_line_and_column() {
    let files = [("bad.py", "x = 1\ndef f(:\n    pass\n")];
    let err = with_files("code-from = [{ file = \"bad.py\" }]", &files).unwrap_err();
    let (_, found) = problem(&err);
    assert_eq!(
        found,
        CodeFromProblem::Unparsable {
            at: pysplice::Location::new("dir/bad.py", 2, 7)
        }
    );
    assert!(matches!(cause(&err).kind(), ErrorKind::Syntax { .. }));
    let text = err.to_string();
    assert!(text.contains("dir/bad.py:2:7") && text.ends_with("[hook h]"), "{text}");
}

#[test]
fn a_recipe_read_without_its_folder_cannot_take_code_from_files() {
    let err = Recipe::from_toml("r.toml", &recipe_text("code-from = [{ file = \"hooks.py\" }]")).unwrap_err();
    assert_eq!(problem(&err).1, CodeFromProblem::NeedsFolder);
    assert_eq!((err.location().line, err.hook()), (10, Some("h")));
    let err = Recipe::from_bundled_toml("r.toml", &recipe_text("code-from = [{ file = \"hooks.py\" }]")).unwrap_err();
    assert_eq!(problem(&err).1, CodeFromProblem::NeedsFolder);
}

#[test]
fn code_from_needs_a_placement_that_takes_code() {
    let text = format!("{HEAD}\n[[hook]]\nid = \"h\"\nsummary = \"x\"\nensure-imports = [\"os\"]\ncode-from = [{{ file = \"x.py\" }}]\n");
    let err = Recipe::from_toml_with("r.toml", &text, &BTreeMap::<&str, &str>::new()).unwrap_err();
    assert_eq!(err.kind().spec_reason(), Some(&SpecReason::CodeUnused));
    assert_eq!(err.location().line, 9);
}

/// A folder holding `r.toml` (whose hook takes `entry`) and the files `files`.
fn folder(entry: &str, files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let recipes = dir.path().join("recipes");
    std::fs::create_dir(&recipes).unwrap();
    std::fs::write(recipes.join("r.toml"), recipe_text(&format!("code-from = [{entry}]"))).unwrap();
    for (name, bytes) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    dir
}

/// Reads `recipes/r.toml` of `dir`.
fn read(dir: &tempfile::TempDir) -> Result<Recipe, Error> {
    Recipe::from_file(&dir.path().join("recipes/r.toml"))
}

#[test]
fn a_missing_or_unreadable_file_is_an_error_at_the_entry_with_the_reading_s_reason() {
    let dir = folder("{ file = \"missing.py\" }", &[("recipes/folder.py/x", b"")]);
    let err = read(&dir).unwrap_err();
    assert_eq!(problem(&err), ("missing.py".into(), CodeFromProblem::Unreadable));
    assert!(
        matches!(cause(&err).kind(), ErrorKind::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
        "{err}"
    );
    let recipe = dir.path().join("recipes/r.toml").display().to_string();
    assert_eq!(
        (err.location().file.as_str(), err.location().line),
        (recipe.as_str(), 10)
    );
    assert_eq!(err.hook(), Some("h"));
    assert!(err.to_string().contains("missing.py"), "{err}");
    // A folder is no file to read.
    std::fs::write(
        dir.path().join("recipes/r.toml"),
        recipe_text("code-from = [{ file = \"folder.py\" }]"),
    )
    .unwrap();
    let err = read(&dir).unwrap_err();
    assert_eq!(problem(&err).1, CodeFromProblem::Unreadable);
    assert!(matches!(cause(&err).kind(), ErrorKind::NotRegular { .. }), "{err}");
}

#[test]
fn a_file_that_is_not_utf8_is_an_error_naming_the_bad_byte() {
    let dir = folder(
        "{ file = \"latin.py\" }",
        &[("recipes/latin.py", b"x = 1\ny = '\xe9'\n")],
    );
    let err = read(&dir).unwrap_err();
    let at = dir.path().join("recipes/latin.py").display().to_string();
    assert_eq!(
        problem(&err).1,
        CodeFromProblem::NotText {
            at: pysplice::Location::new(at, 2, 6)
        }
    );
    assert!(matches!(cause(&err).kind(), ErrorKind::NotUtf8 { byte: 0xe9 }));
}

#[test]
fn paths_that_leave_the_recipe_s_folder_are_refused_before_anything_is_read() {
    let dir = folder("{ file = \"../outside.py\" }", &[("outside.py", b"x = 1\n")]);
    assert_eq!(problem(&read(&dir).unwrap_err()).1, CodeFromProblem::OutsideFolder);
    let absolute = dir.path().join("outside.py");
    let entry = format!("{{ file = '{}' }}", absolute.display());
    std::fs::write(
        dir.path().join("recipes/r.toml"),
        recipe_text(&format!("code-from = [{entry}]")),
    )
    .unwrap();
    assert_eq!(problem(&read(&dir).unwrap_err()).1, CodeFromProblem::Absolute);
    // Climbing out and back in is no way out.
    std::fs::write(
        dir.path().join("recipes/r.toml"),
        recipe_text("code-from = [{ file = \"sub/../../recipes/x.py\" }]"),
    )
    .unwrap();
    assert_eq!(problem(&read(&dir).unwrap_err()).1, CodeFromProblem::OutsideFolder);
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_that_points_out_of_the_folder_is_refused_and_one_inside_followed() {
    let dir = folder(
        "{ file = \"link.py\" }",
        &[("outside.py", b"OUT = 1\n"), ("recipes/real.py", b"IN = 1\n")],
    );
    std::os::unix::fs::symlink(dir.path().join("outside.py"), dir.path().join("recipes/link.py")).unwrap();
    std::os::unix::fs::symlink("real.py", dir.path().join("recipes/inside.py")).unwrap();
    assert_eq!(problem(&read(&dir).unwrap_err()).1, CodeFromProblem::OutsideFolder);
    std::fs::write(
        dir.path().join("recipes/r.toml"),
        recipe_text("code-from = [{ file = \"inside.py\" }]"),
    )
    .unwrap();
    assert_eq!(code(&read(&dir).unwrap()), "IN = 1");
}

#[test]
fn a_recipe_file_applies_with_its_code_taken_from_files_as_if_written_inline() {
    let hooks = "def count(self, step):\n    self.calls = getattr(self, 'calls', 0) + step\n    self.step = step\n";
    let dir = folder(
        "{ file = \"hooks/count.py\", body = \"count\" }",
        &[("recipes/hooks/count.py", hooks.as_bytes())],
    );
    let recipe = read(&dir).unwrap();
    let target = "class A:\n    def f(self, n):\n        return n\n";
    // The same hook with its code written inline, slot for slot.
    let inline = Recipe::from_toml(
        "inline.toml",
        &recipe_text("code = '''\nself.calls = getattr(self, 'calls', 0) + {param.1}\nself.step = {param.1}\n'''"),
    )
    .unwrap();
    let from_files = apply(&recipe, SourceFile::new("m.py", target)).unwrap();
    let written = apply(&inline, SourceFile::new("m.py", target)).unwrap();
    assert_eq!(from_files.output(), written.output());
    assert!(
        from_files
            .output()
            .contains("self.calls = getattr(self, 'calls', 0) + n\n"),
        "{}",
        from_files.output()
    );
    assert_ne!(from_files.output(), target);
    // The folder of a bare recipe name is the current folder; of a path, its parent.
    assert_eq!(CodeFolder::of_recipe(Path::new("r.toml")), CodeFolder::new(""));
    assert_eq!(CodeFolder::of_recipe(Path::new("a/r.toml")), CodeFolder::new("a"));
}
