//! Expressions, comprehensions included.

use rustpython_ast as ast;

use crate::syntax::Node;

use super::{arguments, constant_label, exprs, keyword, leaf, list, name, opt_expr, span, too_deep, Nested};

/// Converts one expression and everything under it.
pub(crate) fn convert_expr(expr: &ast::Expr) -> Node {
    use ast::Expr as E;
    let r = span(expr);
    let Some(_nested) = Nested::enter() else {
        return too_deep(r);
    };
    let e = r.end;
    match expr {
        E::BoolOp(x) => Node::new(
            "BoolOp",
            r,
            Some(format!("{:?}", x.op).into()),
            vec![exprs("values", &x.values, e)],
        ),
        E::NamedExpr(x) => Node::new(
            "NamedExpr",
            r,
            None,
            vec![convert_expr(&x.target), convert_expr(&x.value)],
        ),
        E::BinOp(x) => Node::new(
            "BinOp",
            r,
            Some(format!("{:?}", x.op).into()),
            vec![convert_expr(&x.left), convert_expr(&x.right)],
        ),
        E::UnaryOp(x) => Node::new(
            "UnaryOp",
            r,
            Some(format!("{:?}", x.op).into()),
            vec![convert_expr(&x.operand)],
        ),
        E::Lambda(x) => Node::new(
            "Lambda",
            r.clone(),
            None,
            vec![arguments(&x.args, r.start), convert_expr(&x.body)],
        ),
        E::IfExp(x) => Node::new(
            "IfExp",
            r,
            None,
            vec![convert_expr(&x.test), convert_expr(&x.body), convert_expr(&x.orelse)],
        ),
        E::Dict(x) => {
            let keys = x.keys.iter().map(|k| opt_expr(k.as_ref(), e)).collect();
            Node::new(
                "Dict",
                r,
                None,
                vec![list("keys", keys, e), exprs("values", &x.values, e)],
            )
        }
        E::Set(x) => Node::new("Set", r, None, vec![exprs("elts", &x.elts, e)]),
        E::ListComp(x) => Node::new(
            "ListComp",
            r,
            None,
            vec![convert_expr(&x.elt), comprehensions(&x.generators, e)],
        ),
        E::SetComp(x) => Node::new(
            "SetComp",
            r,
            None,
            vec![convert_expr(&x.elt), comprehensions(&x.generators, e)],
        ),
        E::DictComp(x) => Node::new(
            "DictComp",
            r,
            None,
            vec![
                convert_expr(&x.key),
                convert_expr(&x.value),
                comprehensions(&x.generators, e),
            ],
        ),
        E::GeneratorExp(x) => Node::new(
            "GeneratorExp",
            r,
            None,
            vec![convert_expr(&x.elt), comprehensions(&x.generators, e)],
        ),
        E::Await(x) => Node::new("Await", r, None, vec![convert_expr(&x.value)]),
        E::Yield(x) => Node::new("Yield", r, None, vec![opt_expr(x.value.as_deref(), e)]),
        E::YieldFrom(x) => Node::new("YieldFrom", r, None, vec![convert_expr(&x.value)]),
        E::Compare(x) => {
            let ops: Vec<String> = x.ops.iter().map(|op| format!("{op:?}")).collect();
            Node::new(
                "Compare",
                r,
                Some(ops.join(",").into()),
                vec![convert_expr(&x.left), exprs("comparators", &x.comparators, e)],
            )
        }
        E::Call(x) => Node::new(
            "Call",
            r,
            None,
            vec![
                convert_expr(&x.func),
                exprs("args", &x.args, e),
                list("keywords", x.keywords.iter().map(keyword).collect(), e),
            ],
        ),
        E::FormattedValue(x) => Node::new(
            "FormattedValue",
            r,
            Some(format!("{:?}", x.conversion).into()),
            vec![convert_expr(&x.value), opt_expr(x.format_spec.as_deref(), e)],
        ),
        E::JoinedStr(x) => Node::new("JoinedStr", r, None, vec![exprs("values", &x.values, e)]),
        E::Constant(x) => leaf("Constant", r, constant_label(&x.value)),
        E::Attribute(x) => Node::new("Attribute", r, Some(name(&x.attr)), vec![convert_expr(&x.value)]),
        E::Subscript(x) => Node::new(
            "Subscript",
            r,
            None,
            vec![convert_expr(&x.value), convert_expr(&x.slice)],
        ),
        E::Starred(x) => Node::new("Starred", r, None, vec![convert_expr(&x.value)]),
        E::Name(x) => leaf("Name", r, name(&x.id)),
        E::List(x) => Node::new("List", r, None, vec![exprs("elts", &x.elts, e)]),
        E::Tuple(x) => Node::new("Tuple", r, None, vec![exprs("elts", &x.elts, e)]),
        E::Slice(x) => Node::new(
            "Slice",
            r,
            None,
            vec![
                opt_expr(x.lower.as_deref(), e),
                opt_expr(x.upper.as_deref(), e),
                opt_expr(x.step.as_deref(), e),
            ],
        ),
    }
}

fn comprehensions(items: &[ast::Comprehension], at: usize) -> Node {
    let nodes = items
        .iter()
        .map(|c| {
            let target = convert_expr(&c.target);
            let iter = convert_expr(&c.iter);
            let range = target.range().start..iter.range().end;
            let ifs = exprs("ifs", &c.ifs, range.end);
            let label = if c.is_async { "async" } else { "sync" };
            Node::new("comprehension", range, Some(label.into()), vec![target, iter, ifs])
        })
        .collect();
    list("generators", nodes, at)
}
