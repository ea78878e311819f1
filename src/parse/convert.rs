//! Conversion of rustpython-ast nodes into the crate's own [`Node`] tree.
//!
//! The order in which each node's children are written here is read in one place only,
//! `syntax::view` (its module doc lists it): a change of order here is a change there.

mod expr;
mod patterns;

use std::cell::Cell;
use std::ops::Range;

use rustpython_ast::{self as ast, Ranged};
use unicode_normalization::UnicodeNormalization;

use crate::syntax::{Node, ABSENT, LIST};

use expr::convert_expr;
use patterns::pattern;

/// How deep the conversion goes before it stops: past [`super::MAX_DEPTH`], so the depth check
/// that follows refuses the file, and far short of what the stack holds.
const CUTOFF: usize = super::MAX_DEPTH + 8;

thread_local! {
    /// Conversion calls open on this thread.
    static OPEN: Cell<usize> = const { Cell::new(0) };
}

/// One open conversion call; dropping it closes the call.
struct Nested;

impl Nested {
    /// Enters one more level, or `None` past [`CUTOFF`].
    fn enter() -> Option<Nested> {
        OPEN.with(|open| {
            let depth = open.get();
            (depth < CUTOFF).then(|| {
                open.set(depth + 1);
                Nested
            })
        })
    }
}

impl Drop for Nested {
    fn drop(&mut self) {
        OPEN.with(|open| open.set(open.get().saturating_sub(1)));
    }
}

/// What stands for a subtree past [`CUTOFF`]: it lies deeper than the depth check allows, so the
/// file is refused there.
fn too_deep(range: Range<usize>) -> Node {
    Node::new("TooDeep", range, None, Vec::new())
}

fn span(node: &impl Ranged) -> Range<usize> {
    let range = node.range();
    range.start().to_usize()..range.end().to_usize()
}

fn leaf(kind: &'static str, range: Range<usize>, label: impl Into<Box<str>>) -> Node {
    Node::new(kind, range, Some(label.into()), Vec::new())
}

fn absent(at: usize) -> Node {
    Node::new(ABSENT, at..at, None, Vec::new())
}

/// A list node over `items`; empty lists sit at `at`.
fn list(field: &'static str, items: Vec<Node>, at: usize) -> Node {
    let range = match (items.first(), items.last()) {
        (Some(first), Some(last)) => first.range().start..last.range().end,
        _ => at..at,
    };
    Node::new(LIST, range, Some(field.into()), items)
}

/// An identifier as CPython sees it: NFKC-normalized (PEP 3131).
fn name(identifier: &ast::Identifier) -> Box<str> {
    let text = identifier.as_str();
    if text.is_ascii() {
        text.into()
    } else {
        text.nfkc().collect::<String>().into()
    }
}

/// A dotted module path with every part normalized like an identifier.
fn dotted(path: &str) -> Box<str> {
    if path.is_ascii() {
        path.into()
    } else {
        path.nfkc().collect::<String>().into()
    }
}

fn ident(identifier: &ast::Identifier, at: usize) -> Node {
    Node::new("identifier", at..at, Some(name(identifier)), Vec::new())
}

fn opt_ident(name: Option<&ast::Identifier>, at: usize) -> Node {
    name.map_or_else(|| absent(at), |name| ident(name, at))
}

fn opt_expr(expr: Option<&ast::Expr>, at: usize) -> Node {
    expr.map_or_else(|| absent(at), convert_expr)
}

fn exprs(field: &'static str, items: &[ast::Expr], at: usize) -> Node {
    list(field, items.iter().map(convert_expr).collect(), at)
}

/// The statements of a block as a `list` node labelled `field`.
pub(crate) fn stmts(field: &'static str, items: &[ast::Stmt], at: usize) -> Node {
    list(field, items.iter().map(convert_stmt).collect(), at)
}

fn constant_label(value: &ast::Constant) -> String {
    match value {
        ast::Constant::None => "None".into(),
        ast::Constant::Bool(b) => if *b { "True" } else { "False" }.into(),
        ast::Constant::Str(s) => format!("str:{s}"),
        ast::Constant::Bytes(b) => format!("bytes:{b:?}"),
        ast::Constant::Int(i) => format!("int:{i}"),
        ast::Constant::Tuple(items) => {
            let parts: Vec<String> = items.iter().map(constant_label).collect();
            format!("tuple:({})", parts.join(","))
        }
        ast::Constant::Float(f) => format!("float:{f:?}"),
        ast::Constant::Complex { real, imag } => format!("complex:{real:?}+{imag:?}j"),
        ast::Constant::Ellipsis => "...".into(),
    }
}

fn arguments(args: &ast::Arguments, at: usize) -> Node {
    let with_default = |field: &'static str, items: &[ast::ArgWithDefault]| {
        let nodes = items
            .iter()
            .map(|item| {
                let arg = arg(&item.def);
                let end = arg.range().end;
                let default = opt_expr(item.default.as_deref(), end);
                let range = arg.range().start..default.range().end.max(end);
                Node::new("arg_with_default", range, None, vec![arg, default])
            })
            .collect();
        list(field, nodes, at)
    };
    let children = vec![
        with_default("posonlyargs", &args.posonlyargs),
        with_default("args", &args.args),
        args.vararg.as_deref().map_or_else(|| absent(at), arg),
        with_default("kwonlyargs", &args.kwonlyargs),
        args.kwarg.as_deref().map_or_else(|| absent(at), arg),
    ];
    let range = children
        .iter()
        .filter(|c| c.kind() != ABSENT && !c.range().is_empty())
        .fold(None, |acc: Option<Range<usize>>, c| {
            let r = c.range();
            Some(acc.map_or(r.clone(), |a| a.start.min(r.start)..a.end.max(r.end)))
        })
        .unwrap_or(at..at);
    Node::new("arguments", range, None, children)
}

fn arg(arg: &ast::Arg) -> Node {
    let range = span(arg);
    let annotation = opt_expr(arg.annotation.as_deref(), range.end);
    Node::new("arg", range, Some(name(&arg.arg)), vec![annotation])
}

fn keyword(kw: &ast::Keyword) -> Node {
    let range = span(kw);
    let label = kw.arg.as_ref().map(name);
    Node::new("keyword", range, label, vec![convert_expr(&kw.value)])
}

fn alias(alias: &ast::Alias) -> Node {
    let range = span(alias);
    let asname = opt_ident(alias.asname.as_ref(), range.end);
    Node::new("alias", range, Some(dotted(alias.name.as_str())), vec![asname])
}

fn type_params(items: &[ast::TypeParam], at: usize) -> Node {
    let nodes = items
        .iter()
        .map(|param| match param {
            ast::TypeParam::TypeVar(p) => {
                let r = span(p);
                Node::new(
                    "TypeVar",
                    r.clone(),
                    Some(name(&p.name)),
                    vec![opt_expr(p.bound.as_deref(), r.end)],
                )
            }
            ast::TypeParam::ParamSpec(p) => leaf("ParamSpec", span(p), name(&p.name)),
            ast::TypeParam::TypeVarTuple(p) => leaf("TypeVarTuple", span(p), name(&p.name)),
        })
        .collect();
    list("type_params", nodes, at)
}

fn function(kind: &'static str, range: Range<usize>, f: FunctionParts<'_>) -> Node {
    let children = vec![
        list(
            "decorator_list",
            f.decorators.iter().map(convert_expr).collect(),
            range.start,
        ),
        arguments(f.args, range.start),
        opt_expr(f.returns, range.start),
        type_params(f.type_params, range.start),
        stmts("body", f.body, range.end),
    ];
    Node::new(kind, range, Some(name(f.name)), children)
}

struct FunctionParts<'a> {
    name: &'a ast::Identifier,
    args: &'a ast::Arguments,
    body: &'a [ast::Stmt],
    decorators: &'a [ast::Expr],
    returns: Option<&'a ast::Expr>,
    type_params: &'a [ast::TypeParam],
}

fn with_items(items: &[ast::WithItem], at: usize) -> Node {
    let nodes = items
        .iter()
        .map(|item| {
            let ctx = convert_expr(&item.context_expr);
            let vars = opt_expr(item.optional_vars.as_deref(), ctx.range().end);
            let range = ctx.range().start..vars.range().end.max(ctx.range().end);
            Node::new("withitem", range, None, vec![ctx, vars])
        })
        .collect();
    list("items", nodes, at)
}

fn handlers(items: &[ast::ExceptHandler], at: usize) -> Node {
    let nodes = items
        .iter()
        .map(|ast::ExceptHandler::ExceptHandler(h)| {
            let r = span(h);
            let children = vec![
                opt_expr(h.type_.as_deref(), r.start),
                opt_ident(h.name.as_ref(), r.start),
                stmts("body", &h.body, r.end),
            ];
            Node::new("ExceptHandler", r, None, children)
        })
        .collect();
    list("handlers", nodes, at)
}

/// Converts one statement and everything under it.
pub(crate) fn convert_stmt(stmt: &ast::Stmt) -> Node {
    use ast::Stmt as S;
    let r = span(stmt);
    let Some(_nested) = Nested::enter() else {
        return too_deep(r);
    };
    let (s, e) = (r.start, r.end);
    match stmt {
        S::FunctionDef(f) => function(
            "FunctionDef",
            r,
            FunctionParts {
                name: &f.name,
                args: &f.args,
                body: &f.body,
                decorators: &f.decorator_list,
                returns: f.returns.as_deref(),
                type_params: &f.type_params,
            },
        ),
        S::AsyncFunctionDef(f) => function(
            "AsyncFunctionDef",
            r,
            FunctionParts {
                name: &f.name,
                args: &f.args,
                body: &f.body,
                decorators: &f.decorator_list,
                returns: f.returns.as_deref(),
                type_params: &f.type_params,
            },
        ),
        S::ClassDef(c) => {
            let children = vec![
                list("decorator_list", c.decorator_list.iter().map(convert_expr).collect(), s),
                exprs("bases", &c.bases, s),
                list("keywords", c.keywords.iter().map(keyword).collect(), s),
                type_params(&c.type_params, s),
                stmts("body", &c.body, e),
            ];
            Node::new("ClassDef", r, Some(name(&c.name)), children)
        }
        S::Return(x) => Node::new("Return", r, None, vec![opt_expr(x.value.as_deref(), e)]),
        S::Delete(x) => Node::new("Delete", r, None, vec![exprs("targets", &x.targets, e)]),
        S::Assign(x) => Node::new(
            "Assign",
            r,
            None,
            vec![exprs("targets", &x.targets, s), convert_expr(&x.value)],
        ),
        S::TypeAlias(x) => Node::new(
            "TypeAlias",
            r,
            None,
            vec![
                convert_expr(&x.name),
                type_params(&x.type_params, s),
                convert_expr(&x.value),
            ],
        ),
        S::AugAssign(x) => Node::new(
            "AugAssign",
            r,
            Some(format!("{:?}", x.op).into()),
            vec![convert_expr(&x.target), convert_expr(&x.value)],
        ),
        S::AnnAssign(x) => Node::new(
            "AnnAssign",
            r,
            Some(if x.simple { "simple" } else { "complex" }.into()),
            vec![
                convert_expr(&x.target),
                convert_expr(&x.annotation),
                opt_expr(x.value.as_deref(), e),
            ],
        ),
        S::For(x) => Node::new(
            "For",
            r,
            None,
            vec![
                convert_expr(&x.target),
                convert_expr(&x.iter),
                stmts("body", &x.body, e),
                stmts("orelse", &x.orelse, e),
            ],
        ),
        S::AsyncFor(x) => Node::new(
            "AsyncFor",
            r,
            None,
            vec![
                convert_expr(&x.target),
                convert_expr(&x.iter),
                stmts("body", &x.body, e),
                stmts("orelse", &x.orelse, e),
            ],
        ),
        S::While(x) => Node::new(
            "While",
            r,
            None,
            vec![
                convert_expr(&x.test),
                stmts("body", &x.body, e),
                stmts("orelse", &x.orelse, e),
            ],
        ),
        S::If(x) => Node::new(
            "If",
            r,
            None,
            vec![
                convert_expr(&x.test),
                stmts("body", &x.body, e),
                stmts("orelse", &x.orelse, e),
            ],
        ),
        S::With(x) => Node::new(
            "With",
            r,
            None,
            vec![with_items(&x.items, s), stmts("body", &x.body, e)],
        ),
        S::AsyncWith(x) => Node::new(
            "AsyncWith",
            r,
            None,
            vec![with_items(&x.items, s), stmts("body", &x.body, e)],
        ),
        S::Match(x) => {
            let cases = x
                .cases
                .iter()
                .map(|case| {
                    let pat = pattern(&case.pattern);
                    let guard = opt_expr(case.guard.as_deref(), pat.range().end);
                    let body = stmts("body", &case.body, pat.range().end);
                    let range = pat.range().start..body.range().end.max(pat.range().end);
                    Node::new("match_case", range, None, vec![pat, guard, body])
                })
                .collect();
            Node::new(
                "Match",
                r,
                None,
                vec![convert_expr(&x.subject), list("cases", cases, e)],
            )
        }
        S::Raise(x) => Node::new(
            "Raise",
            r,
            None,
            vec![opt_expr(x.exc.as_deref(), e), opt_expr(x.cause.as_deref(), e)],
        ),
        S::Try(x) => Node::new(
            "Try",
            r,
            None,
            vec![
                stmts("body", &x.body, e),
                handlers(&x.handlers, e),
                stmts("orelse", &x.orelse, e),
                stmts("finalbody", &x.finalbody, e),
            ],
        ),
        S::TryStar(x) => Node::new(
            "TryStar",
            r,
            None,
            vec![
                stmts("body", &x.body, e),
                handlers(&x.handlers, e),
                stmts("orelse", &x.orelse, e),
                stmts("finalbody", &x.finalbody, e),
            ],
        ),
        S::Assert(x) => Node::new(
            "Assert",
            r,
            None,
            vec![convert_expr(&x.test), opt_expr(x.msg.as_deref(), e)],
        ),
        S::Import(x) => Node::new(
            "Import",
            r,
            None,
            vec![list("names", x.names.iter().map(alias).collect(), e)],
        ),
        S::ImportFrom(x) => {
            let level = x.level.map_or(0, |l| l.to_u32());
            let module: Box<str> = x.module.as_ref().map_or_else(|| "".into(), |m| dotted(m.as_str()));
            Node::new(
                "ImportFrom",
                r,
                Some(format!("{}{module}", ".".repeat(level as usize)).into()),
                vec![list("names", x.names.iter().map(alias).collect(), e)],
            )
        }
        S::Global(x) => Node::new(
            "Global",
            r,
            None,
            vec![list("names", x.names.iter().map(|n| ident(n, e)).collect(), e)],
        ),
        S::Nonlocal(x) => Node::new(
            "Nonlocal",
            r,
            None,
            vec![list("names", x.names.iter().map(|n| ident(n, e)).collect(), e)],
        ),
        S::Expr(x) => Node::new("Expr", r, None, vec![convert_expr(&x.value)]),
        S::Pass(_) => Node::new("Pass", r, None, Vec::new()),
        S::Break(_) => Node::new("Break", r, None, Vec::new()),
        S::Continue(_) => Node::new("Continue", r, None, Vec::new()),
    }
}
