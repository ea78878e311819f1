//! `match` patterns.

use rustpython_ast as ast;

use crate::syntax::Node;

use super::{absent, constant_label, convert_expr, exprs, ident, leaf, list, opt_ident, span, too_deep, Nested};

pub(super) fn pattern(p: &ast::Pattern) -> Node {
    let Some(_nested) = Nested::enter() else {
        return too_deep(span(p));
    };
    match p {
        ast::Pattern::MatchValue(m) => Node::new("MatchValue", span(m), None, vec![convert_expr(&m.value)]),
        ast::Pattern::MatchSingleton(m) => leaf("MatchSingleton", span(m), constant_label(&m.value)),
        ast::Pattern::MatchSequence(m) => {
            let r = span(m);
            Node::new(
                "MatchSequence",
                r.clone(),
                None,
                vec![patterns("patterns", &m.patterns, r.end)],
            )
        }
        ast::Pattern::MatchMapping(m) => {
            let r = span(m);
            let children = vec![
                exprs("keys", &m.keys, r.end),
                patterns("patterns", &m.patterns, r.end),
                opt_ident(m.rest.as_ref(), r.end),
            ];
            Node::new("MatchMapping", r, None, children)
        }
        ast::Pattern::MatchClass(m) => {
            let r = span(m);
            let attrs = m.kwd_attrs.iter().map(|a| ident(a, r.end)).collect();
            let children = vec![
                convert_expr(&m.cls),
                patterns("patterns", &m.patterns, r.end),
                list("kwd_attrs", attrs, r.end),
                patterns("kwd_patterns", &m.kwd_patterns, r.end),
            ];
            Node::new("MatchClass", r, None, children)
        }
        ast::Pattern::MatchStar(m) => {
            let r = span(m);
            Node::new("MatchStar", r.clone(), None, vec![opt_ident(m.name.as_ref(), r.end)])
        }
        ast::Pattern::MatchAs(m) => {
            let r = span(m);
            let inner = m.pattern.as_deref().map_or_else(|| absent(r.end), pattern);
            Node::new(
                "MatchAs",
                r.clone(),
                None,
                vec![inner, opt_ident(m.name.as_ref(), r.end)],
            )
        }
        ast::Pattern::MatchOr(m) => {
            let r = span(m);
            Node::new(
                "MatchOr",
                r.clone(),
                None,
                vec![patterns("patterns", &m.patterns, r.end)],
            )
        }
    }
}

fn patterns(field: &'static str, items: &[ast::Pattern], at: usize) -> Node {
    list(field, items.iter().map(pattern).collect(), at)
}
