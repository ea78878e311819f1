//! Expressions, parameters, assignment targets and patterns: the names they bind and use,
//! the scopes lambdas and comprehensions open, and the compiler errors found inside them.

use crate::syntax::{kind, Node, LIST};

use super::{AsyncUse, Kind, Use, Walker};

impl<'t> Walker<'t> {
    pub(super) fn arguments(&mut self, args: &'t Node, outer: usize, inner: usize) {
        let mut seen: Vec<&'t str> = Vec::new();
        for (arg, default) in args.parameters().unwrap_or_default() {
            if let Some(default) = default {
                self.expr(default, outer);
            }
            if let Some(annotation) = arg.annotation() {
                self.annotation(annotation, outer);
            }
            let name = arg.label().unwrap_or_default();
            if seen.contains(&name) {
                self.problem(
                    arg.range().start,
                    format!("duplicate argument '{name}' in function definition"),
                );
            }
            seen.push(name);
            self.event(inner, arg.range().start, name, Use::Param);
        }
    }

    /// An annotation: evaluated where it stands, unless annotations are lazy.
    pub(super) fn annotation(&mut self, node: &'t Node, scope: usize) {
        if !self.lazy_annotations {
            self.expr(node, scope);
        }
    }

    pub(super) fn exprs(&mut self, items: &'t [Node], scope: usize) {
        for child in items {
            self.expr(child, scope);
        }
    }

    /// An assignment target: names in it are stored, the rest (`a.b`, `a[i]`) is loaded.
    pub(super) fn target(&mut self, node: &'t Node, scope: usize) {
        match node.kind() {
            kind::NAME => self.event(scope, node.range().start, node.label().unwrap_or_default(), Use::Store),
            kind::TUPLE | kind::LIST_DISPLAY | LIST => {
                for child in node.children() {
                    self.target(child, scope);
                }
            }
            kind::STARRED => {
                if let Some(value) = node.operand() {
                    self.target(value, scope);
                }
            }
            _ => self.expr(node, scope),
        }
    }

    pub(super) fn targets(&mut self, items: &'t [Node], scope: usize) {
        for child in items {
            self.target(child, scope);
        }
    }

    pub(super) fn pattern(&mut self, node: &'t Node, scope: usize) {
        match node.kind() {
            kind::IDENTIFIER => self.event(scope, node.range().start, node.label().unwrap_or_default(), Use::Store),
            kind::MATCH_VALUE | kind::MATCH_CLASS | kind::MATCH_MAPPING => {
                let (exprs, patterns) = node.match_pattern_parts().unwrap_or_default();
                for expr in exprs {
                    self.expr(expr, scope);
                }
                for pattern in patterns {
                    self.pattern(pattern, scope);
                }
            }
            _ => {
                for child in node.children() {
                    self.pattern(child, scope);
                }
            }
        }
    }

    pub(super) fn comprehension(&mut self, node: &'t Node, scope: usize, kind: Kind) {
        let (elements, generators) = node.as_comprehension().unwrap_or_default();
        let inner = self.new_scope(kind, scope);
        for (i, generator) in generators.iter().enumerate() {
            // The first iterable is evaluated in the enclosing scope.
            self.expr(generator.iter, if i == 0 { scope } else { inner });
            if generator.is_async {
                self.needs_async(inner, generator.at, AsyncUse::Comprehension);
            }
            self.target(generator.target, inner);
            self.exprs(generator.ifs, inner);
        }
        for element in elements {
            self.expr(element, inner);
        }
    }

    pub(super) fn expr(&mut self, node: &'t Node, scope: usize) {
        stacker::maybe_grow(64 * 1024, 1 << 20, || self.expr_inner(node, scope));
    }

    pub(super) fn expr_inner(&mut self, node: &'t Node, scope: usize) {
        let at = node.range().start;
        match node.kind() {
            kind::NAME => self.event(scope, at, node.label().unwrap_or_default(), Use::Load),
            kind::LAMBDA => {
                let Some((args, body)) = node.as_lambda() else {
                    return;
                };
                let inner = self.new_scope(
                    Kind::Function {
                        is_async: false,
                        lambda: true,
                    },
                    scope,
                );
                self.arguments(args, scope, inner);
                self.expr(body, inner);
            }
            kind::LIST_COMP => self.comprehension(
                node,
                scope,
                Kind::Comprehension {
                    genexp: false,
                    what: "list comprehension",
                },
            ),
            kind::SET_COMP => self.comprehension(
                node,
                scope,
                Kind::Comprehension {
                    genexp: false,
                    what: "set comprehension",
                },
            ),
            kind::DICT_COMP => self.comprehension(
                node,
                scope,
                Kind::Comprehension {
                    genexp: false,
                    what: "dict comprehension",
                },
            ),
            kind::GENERATOR_EXP => self.comprehension(
                node,
                scope,
                Kind::Comprehension {
                    genexp: true,
                    what: "generator expression",
                },
            ),
            kind::NAMED_EXPR => {
                let Some((target, value)) = node.as_named_expr() else {
                    return;
                };
                self.expr(value, scope);
                // The target binds in the innermost scope that is not a comprehension.
                let (owner, _) = self.enclosing_non_comprehension(scope);
                self.target(target, owner);
            }
            kind::AWAIT => {
                self.needs_async(scope, at, AsyncUse::Await);
                if let Some(value) = node.operand() {
                    self.expr(value, scope);
                }
            }
            kind::YIELD | kind::YIELD_FROM => {
                let word = if node.is(kind::YIELD) { "yield" } else { "yield from" };
                match self.scopes[scope].kind {
                    Kind::Module | Kind::Class => self.problem(at, format!("'{word}' outside function")),
                    Kind::Comprehension { what, .. } => self.problem(at, format!("'{word}' inside {what}")),
                    Kind::Function { is_async, .. } => {
                        if is_async && node.is(kind::YIELD_FROM) {
                            self.problem(at, "'yield from' inside async function");
                        }
                        self.scopes[scope].yields.push(at);
                    }
                }
                if let Some(value) = node.operand() {
                    self.expr(value, scope);
                }
            }
            _ => {
                for child in node.children() {
                    self.expr(child, scope);
                }
            }
        }
    }
}
