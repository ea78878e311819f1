//! Bounded expansion: a recipe whose code grows when its placeholders are filled in (a large
//! variable used many times, a long parameter name or return value, code repeated at every
//! match, a long indentation times many lines) is refused with a typed error before the text is
//! built; the file is left untouched.

use pysplice::limits::{MAX_RECIPE_CODE_BYTES, MAX_RENDERED_BYTES};
use pysplice::{Error, ErrorKind, Recipe, SourceFile};
use pysplice_test_support::recipe_text::{hook_at_module_end, recipe_with_big_var};

const MIB: usize = 1 << 20;

/// The spec error's cause: its (bytes, limit) when it is an [`ErrorKind::Oversized`].
fn oversized_cause(err: &Error) -> Option<(Option<usize>, usize)> {
    let ErrorKind::Spec { cause: Some(cause), .. } = err.kind() else {
        return None;
    };
    match cause.kind() {
        ErrorKind::Oversized { bytes, limit, .. } => Some((*bytes, *limit)),
        _ => None,
    }
}

fn line_of(text: &str, needle: &str) -> usize {
    text[..text.find(needle).expect("the needle is in the text")]
        .lines()
        .count()
        + 1
}

/// The case: a 1 MB variable used 1,000 times in one hook aborted the process in
/// `Recipe::compile` (an allocation of a gigabyte failed).
#[test]
fn a_variable_used_a_thousand_times_is_a_spec_error_at_the_hook() {
    let text = recipe_with_big_var(
        MIB,
        &hook_at_module_end("big", &format!("x = '{}'", "{big}".repeat(1000))),
    );
    let err = Recipe::from_toml("r.toml", &text).unwrap_err();
    assert_eq!(
        oversized_cause(&err),
        Some((Some(1000 * MIB + 6), MAX_RENDERED_BYTES)),
        "{err:?}"
    );
    assert_eq!(err.hook(), Some("big"));
    assert_eq!(err.location().line, line_of(&text, "code = "));
    assert!(err.is_input_error());
}

/// Each hook under the per-hook limit, together over the recipe's: refused at the first hook
/// that passes it.
#[test]
fn hooks_together_are_bounded_by_the_recipe_limit() {
    // Comments: cheap to parse, so the five 15 MiB hooks cost little.
    let code = format!("# {}\npass", "{big}".repeat(15));
    let hooks: String = (0..5).map(|i| hook_at_module_end(&format!("h{i}"), &code)).collect();
    let text = recipe_with_big_var(MIB, &hooks);
    let err = Recipe::from_toml("r.toml", &text).unwrap_err();
    let per_hook = 15 * MIB + 7;
    assert!(4 * per_hook <= MAX_RECIPE_CODE_BYTES && 5 * per_hook > MAX_RECIPE_CODE_BYTES);
    assert_eq!(
        oversized_cause(&err),
        Some((Some(5 * per_hook), MAX_RECIPE_CODE_BYTES)),
        "{err:?}"
    );
    assert_eq!(err.hook(), Some("h4"));
    assert_eq!(err.location().line, line_of(&text, "id = \"h4\"") + 4);
    // Four of them are fine.
    let hooks: String = (0..4).map(|i| hook_at_module_end(&format!("h{i}"), &code)).collect();
    assert_eq!(
        Recipe::from_toml("r.toml", &recipe_with_big_var(MIB, &hooks))
            .unwrap()
            .hooks
            .len(),
        4
    );
}

/// The apply-time error of one hook: (bytes, limit) of an [`ErrorKind::Oversized`].
fn oversized(err: &Error) -> Option<(Option<usize>, usize)> {
    match err.kind() {
        ErrorKind::Oversized { bytes, limit, .. } => Some((*bytes, *limit)),
        _ => None,
    }
}

/// Placeholders bound only in the file: a 1 MB parameter name used 100 times, a 1 MB return
/// value wrapped by a template using it 100 times. Fine when compiled, refused when applied.
#[test]
fn parameters_and_return_values_are_bounded_when_applied() {
    let name = "p".repeat(MIB);
    // A function, not a method: `self` is the first argument a caller passes, `{param.1}`.
    let file = format!("def f(self, {name}):\n    return {name}\n");
    let spec = format!(
        "[recipe]\nid = \"grow\"\nsummary = \"s\"\n\n[[hook]]\nid = \"params\"\nsummary = \"s\"\nin = \"f\"\nat = \"start\"\ncode = \"x = [{}]\"\n",
        "{param.2}, ".repeat(100)
    );
    let recipe = Recipe::from_toml("r.toml", &spec).unwrap();
    let err = pysplice::apply(&recipe, SourceFile::new("m.py", file.clone())).unwrap_err();
    assert_eq!(
        oversized(&err),
        Some((Some(100 * (MIB + 2) + 6), MAX_RENDERED_BYTES)),
        "{err:?}"
    );
    assert_eq!(err.hook(), Some("params"));
    assert_eq!(err.location().line, 1);

    let spec = format!(
        "[recipe]\nid = \"grow\"\nsummary = \"s\"\n\n[[hook]]\nid = \"wrap\"\nsummary = \"s\"\nin = \"f\"\nwrap-returns = \"g({})\"\n",
        "{value}, ".repeat(100)
    );
    let recipe = Recipe::from_toml("r.toml", &spec).unwrap();
    let err = pysplice::apply(&recipe, SourceFile::new("m.py", file)).unwrap_err();
    assert_eq!(
        oversized(&err),
        Some((Some(100 * (MIB + 2) + 3), MAX_RENDERED_BYTES)),
        "{err:?}"
    );
    assert_eq!((err.hook(), err.location().line), (Some("wrap"), 2));
}

/// Code repeated at every match (`nth = "all"`) and code indented by a long indentation: what
/// the hook adds to the file is bounded by the file limit, counted before it is built.
#[test]
fn repeated_and_indented_code_is_bounded_by_the_file_limit() {
    let file = "x = 1\n".repeat(20_000);
    let spec = format!(
        "[recipe]\nid = \"grow\"\nsummary = \"s\"\n\n[[hook]]\nid = \"every\"\nsummary = \"s\"\nin = \"module\"\nat = {{ after = \"x = 1\", nth = \"all\" }}\ncode = \"y = '{}'\"\n",
        "a".repeat(1000)
    );
    let recipe = Recipe::from_toml("r.toml", &spec).unwrap();
    let err = pysplice::apply(&recipe, SourceFile::new("m.py", file)).unwrap_err();
    let (bytes, limit) = oversized(&err).unwrap_or_else(|| panic!("{err:?}"));
    assert_eq!(limit, MAX_RENDERED_BYTES);
    assert!(bytes.is_some_and(|b| b > limit && b < limit + 2000), "{bytes:?}");
    assert_eq!(err.hook(), Some("every"));

    // 1 MiB of indentation times 100 lines of code.
    let file = format!("if x:\n{}y = 1\n", " ".repeat(MIB));
    let spec = format!(
        "[recipe]\nid = \"grow\"\nsummary = \"s\"\n\n[[hook]]\nid = \"deep\"\nsummary = \"s\"\nin = \"module\"\nat = {{ after = \"y = 1\", depth = \"nested\" }}\ncode = \"\"\"{}\"\"\"\n",
        "z = 1\n".repeat(100)
    );
    let recipe = Recipe::from_toml("r.toml", &spec).unwrap();
    let err = pysplice::apply(&recipe, SourceFile::new("m.py", file)).unwrap_err();
    let (bytes, limit) = oversized(&err).unwrap_or_else(|| panic!("{err:?}"));
    assert!(bytes.is_some_and(|b| b > limit && b <= limit + MIB + 7), "{bytes:?}");
    assert_eq!(err.hook(), Some("deep"));
}
