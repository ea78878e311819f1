//! `{param.N}`: `param.0` is the parameter a call binds (`self`, `cls`; none for a
//! `@staticmethod` or a function), `param.1` the first argument a caller passes, counting
//! positional-only, regular and keyword-only parameters in order; `*args` and `**kwargs` are never
//! counted (`{param.args}`, `{param.kwargs}`); a placeholder past them is a typed placement error.

use pysplice::{apply, ErrorKind, PlacementReason, SourceFile};

use crate::engine::{assert_invariants, inline_recipe};

const INPUT: &str = "\
class A:
    def method(self, a, b=1):
        return a

    @staticmethod
    def static(a, b):
        return a

    @classmethod
    def klass(cls, a):
        return a

    def posonly(self, a, /, b, *rest, c, **kw):
        return a


def function(a, *, b):
    return a
";

/// The code `code` renders to at the start of `target`, or the placement error.
fn rendered(target: &str, code: &str) -> Result<String, pysplice::Error> {
    let recipe = inline_recipe(&format!(
        "[[hook]]\nid = \"h\"\nsummary = \"s\"\nin = \"{target}\"\nat = \"start\"\ncode = '''{code}'''\n"
    ));
    let patched = apply(&recipe, SourceFile::new("m.py", INPUT))?;
    assert_invariants(&recipe, "m.py", INPUT, &patched);
    let out = patched.output();
    let line = out
        .lines()
        .skip_while(|line| !line.contains(">>> pysplice"))
        .nth(1)
        .unwrap_or_default();
    Ok(line.trim().to_string())
}

fn placement_reason(err: &pysplice::Error) -> &PlacementReason {
    match err.kind() {
        ErrorKind::Placement { reason } => reason,
        other => panic!("not a placement error: {other:?}"),
    }
}

#[test]
fn param_1_is_the_first_argument_a_caller_passes() {
    let code = "seen({param.1})";
    assert_eq!(rendered("A.method", code).unwrap(), "seen(a)");
    assert_eq!(rendered("A.static", code).unwrap(), "seen(a)");
    assert_eq!(rendered("A.klass", code).unwrap(), "seen(a)");
    assert_eq!(rendered("A.posonly", code).unwrap(), "seen(a)");
    assert_eq!(rendered("function", code).unwrap(), "seen(a)");
}

#[test]
fn param_0_is_the_bound_parameter() {
    assert_eq!(rendered("A.method", "seen({param.0})").unwrap(), "seen(self)");
    assert_eq!(rendered("A.klass", "seen({param.0})").unwrap(), "seen(cls)");
    for (target, what) in [("A.static", "static method"), ("function", "function")] {
        let err = rendered(target, "seen({param.0})").unwrap_err();
        assert_eq!(
            placement_reason(&err),
            &PlacementReason::NoBoundParameter {
                path: target.to_string(),
                what
            }
        );
        assert_eq!(err.hook(), Some("h"));
        assert!(err.to_string().contains("`{param.1}` is its first parameter"), "{err}");
    }
}

#[test]
fn keyword_only_parameters_count_and_stars_do_not() {
    assert_eq!(
        rendered("A.posonly", "seen({param.1}, {param.2}, {param.3})").unwrap(),
        "seen(a, b, c)"
    );
    assert_eq!(rendered("function", "seen({param.2})").unwrap(), "seen(b)");
    assert_eq!(
        rendered("A.posonly", "seen(*{param.args}, **{param.kwargs})").unwrap(),
        "seen(*rest, **kw)"
    );
    // `**kw` is not `{param.4}`: past the named parameters is an error, not the star parameter.
    let err = rendered("A.posonly", "seen({param.4})").unwrap_err();
    assert_eq!(
        placement_reason(&err),
        &PlacementReason::MissingParameter { index: 4, count: 3 }
    );
    assert_eq!(err.hook(), Some("h"));
    assert_eq!(err.location().line, 13);
    // A static method's second parameter is `{param.2}`; there is no third.
    assert_eq!(rendered("A.static", "seen({param.2})").unwrap(), "seen(b)");
    let err = rendered("A.static", "seen({param.3})").unwrap_err();
    assert_eq!(
        placement_reason(&err),
        &PlacementReason::MissingParameter { index: 3, count: 2 }
    );
}

#[test]
fn star_parameters_the_target_lacks_are_errors() {
    for key in ["args", "kwargs"] {
        let err = rendered("A.method", &format!("seen({{param.{key}}})")).unwrap_err();
        assert_eq!(
            placement_reason(&err),
            &PlacementReason::MissingStarParameter { key: key.to_string() }
        );
        assert!(
            err.to_string()
                .contains(if key == "args" { "no `*args`" } else { "no `**kwargs`" }),
            "{err}"
        );
    }
}

/// Regression: a count of one was printed with a plural noun ("has 1 named parameters").
#[test]
fn a_count_of_one_parameter_reads_in_the_singular() {
    let err = rendered("A.klass", "seen({param.2})").unwrap_err();
    assert_eq!(
        placement_reason(&err),
        &PlacementReason::MissingParameter { index: 2, count: 1 }
    );
    assert!(
        err.to_string().contains("the target has 1 named parameter after"),
        "{err}"
    );
    let err = rendered("A.posonly", "seen({param.4})").unwrap_err();
    assert!(
        err.to_string().contains("the target has 3 named parameters after"),
        "{err}"
    );
}
