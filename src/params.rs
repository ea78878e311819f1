//! The parameters of a hook's target function as templates count them (`{param.N}`, see
//! [`Parameters`]): the parameter a call binds is `param.0`, the named ones after it count from 1,
//! `*args` and `**kwargs` apart.

use crate::error::PlacementReason;
use crate::outline::{DefKind, Definition, ParsedFile};
use crate::syntax::{kind, Node, ABSENT};
use crate::template::{Parameters, Template};

/// The parameters of `def` in `file`: none for a class.
pub(crate) fn parameters(file: &ParsedFile, def: &Definition) -> Parameters {
    let node = file.node(def);
    let binds_first = match def.kind() {
        DefKind::Method => !is_static(node),
        DefKind::Function | DefKind::Class => false,
    };
    of_function(node, binds_first)
}

/// Refuses the first `{param.KEY}` of `template` that `params` (those of `def`, or of the module
/// when `None`) has no parameter for.
pub(crate) fn check(params: &Parameters, template: &Template, def: Option<&Definition>) -> Result<(), PlacementReason> {
    let Some(key) = template.param_keys().into_iter().find(|key| params.get(key).is_none()) else {
        return Ok(());
    };
    Err(match (key, def.map(Definition::kind)) {
        ("args" | "kwargs", _) => PlacementReason::MissingStarParameter { key: key.to_string() },
        ("0", Some(kind @ (DefKind::Method | DefKind::Function))) => PlacementReason::NoBoundParameter {
            path: def.map_or("", Definition::path).to_string(),
            what: if kind == DefKind::Method {
                "static method"
            } else {
                "function"
            },
        },
        (digits, _) => PlacementReason::MissingParameter {
            index: digits.parse().unwrap_or(usize::MAX),
            count: params.named.len(),
        },
    })
}

/// The parameters of the function node `def`; `binds_first`: whether a call binds its first
/// positional parameter (`self`, `cls`).
fn of_function(def: &Node, binds_first: bool) -> Parameters {
    let Some(args) = def.children().iter().find(|c| c.is(kind::ARGUMENTS)) else {
        return Parameters::default();
    };
    // `posonlyargs`, `args`, `*vararg`, `kwonlyargs`, `**kwarg`, in this order.
    let [posonly, regular, vararg, kwonly, kwarg] = args.children() else {
        return Parameters::default();
    };
    let names = |list: &Node| -> Vec<String> {
        list.children()
            .iter()
            .filter_map(|item| item.children().first().and_then(Node::label).map(str::to_string))
            .collect()
    };
    let mut named = names(posonly);
    named.extend(names(regular));
    let bound = if binds_first && !named.is_empty() {
        Some(named.remove(0))
    } else {
        None
    };
    named.extend(names(kwonly));
    let star = |node: &Node| {
        (node.kind() != ABSENT)
            .then(|| node.label().map(str::to_string))
            .flatten()
    };
    Parameters {
        bound,
        named,
        args: star(vararg),
        kwargs: star(kwarg),
    }
}

/// Whether a method is decorated `@staticmethod` (also `@builtins.staticmethod`).
fn is_static(def: &Node) -> bool {
    def.field("decorator_list").is_some_and(|decorators| {
        decorators
            .children()
            .iter()
            .any(|d| d.as_name() == Some("staticmethod") || d.as_attribute().is_some_and(|a| a.attr == "staticmethod"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SourceFile;

    fn params(code: &str, path: &str) -> Parameters {
        let file = ParsedFile::parse(SourceFile::new("t.py", code)).unwrap();
        parameters(&file, file.locate(path).unwrap())
    }

    #[test]
    fn the_bound_parameter_is_param_0_and_stars_are_apart() {
        let code = "class A:\n    def m(self, a, /, b, *rest, c, **kw): pass\n    @staticmethod\n    def s(a, b): pass\n    @classmethod\n    def c(cls, a): pass\ndef f(a, *, b): pass\n";
        let m = params(code, "A.m");
        assert_eq!(m.bound.as_deref(), Some("self"));
        assert_eq!(m.named, ["a", "b", "c"]);
        assert_eq!((m.args.as_deref(), m.kwargs.as_deref()), (Some("rest"), Some("kw")));
        let s = params(code, "A.s");
        assert_eq!(
            (s.bound.as_deref(), s.named.as_slice()),
            (None, &["a".to_string(), "b".to_string()][..])
        );
        let c = params(code, "A.c");
        assert_eq!(
            (c.bound.as_deref(), c.named.as_slice()),
            (Some("cls"), &["a".to_string()][..])
        );
        let f = params(code, "f");
        assert_eq!(
            (f.bound, f.named, f.args, f.kwargs),
            (None, vec!["a".into(), "b".into()], None, None)
        );
    }
}
