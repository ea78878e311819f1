//! Views of expressions, parameters and patterns (the child order is listed in the parent
//! module's doc).

use super::present;
use crate::syntax::{kind, Node, LIST};

/// A comprehension's `for target in iter if ...` clause.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Generator<'a> {
    /// The loop target.
    pub target: &'a Node,
    /// The iterated expression.
    pub iter: &'a Node,
    /// `if` conditions.
    pub ifs: &'a [Node],
    /// Whether it is `async for`.
    pub is_async: bool,
    /// Where the clause starts.
    pub at: usize,
}

/// A call `func(args, keywords)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Call<'a> {
    /// The called expression.
    pub func: &'a Node,
    /// Positional arguments (`Starred` for `*x`).
    pub args: &'a [Node],
    /// `keyword` nodes.
    pub keywords: &'a [Node],
}

/// An attribute access `value.attr`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Attribute<'a> {
    /// The object expression.
    pub value: &'a Node,
    /// The attribute name.
    pub attr: &'a str,
}

/// A keyword argument `arg=value`, or `**value` when `arg` is `None`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Keyword<'a> {
    /// The keyword's name.
    pub arg: Option<&'a str>,
    /// The passed expression.
    pub value: &'a Node,
}

/// A subscript `value[slice]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Subscript<'a> {
    /// The subscripted expression.
    pub value: &'a Node,
    /// The index or slice (the view is whole; only its tests read this part yet).
    #[allow(dead_code)]
    pub slice: &'a Node,
}

impl Node {
    /// The parameters of an `arguments` node in order (positional-only, regular, `*args`,
    /// keyword-only, `**kwargs`), each an `arg` node with its default.
    #[must_use]
    pub(crate) fn parameters(&self) -> Option<Vec<(&Node, Option<&Node>)>> {
        if self.kind() != kind::ARGUMENTS {
            return None;
        }
        let mut out = Vec::new();
        for child in self.children() {
            match child.kind() {
                LIST => {
                    for item in child.children() {
                        if let [arg, default] = item.children() {
                            out.push((arg, present(default)));
                        }
                    }
                }
                kind::ARG => out.push((child, None)),
                _ => {}
            }
        }
        Some(out)
    }

    /// The `arg` nodes of the positional parameters (positional-only, then regular) of an
    /// `arguments` node.
    #[must_use]
    pub(crate) fn positional_parameters(&self) -> Option<Vec<&Node>> {
        match (self.kind(), self.children()) {
            (kind::ARGUMENTS, [posonly, args, ..]) => Some(
                posonly
                    .children()
                    .iter()
                    .chain(args.children())
                    .filter_map(|item| item.as_arg_with_default().map(|(arg, _)| arg))
                    .collect(),
            ),
            _ => None,
        }
    }

    /// The `arg` node and default of an `arg_with_default` (an item of a parameter list).
    #[must_use]
    pub(crate) fn as_arg_with_default(&self) -> Option<(&Node, Option<&Node>)> {
        match (self.kind(), self.children()) {
            (kind::ARG_WITH_DEFAULT, [arg, default]) => Some((arg, present(default))),
            _ => None,
        }
    }

    /// The `as` name of an `alias` (an imported name).
    #[must_use]
    pub(crate) fn asname(&self) -> Option<&str> {
        match (self.kind(), self.children()) {
            (kind::ALIAS, [asname]) => present(asname).and_then(Node::label),
            _ => None,
        }
    }

    /// The annotation of an `arg`.
    #[must_use]
    pub(crate) fn annotation(&self) -> Option<&Node> {
        match (self.kind(), self.children()) {
            (kind::ARG, [annotation]) => present(annotation),
            _ => None,
        }
    }

    /// The `arguments` node and body of a `lambda`.
    #[must_use]
    pub(crate) fn as_lambda(&self) -> Option<(&Node, &Node)> {
        match (self.kind(), self.children()) {
            (kind::LAMBDA, [args, body]) => Some((args, body)),
            _ => None,
        }
    }

    /// The target and value of `(target := value)`.
    #[must_use]
    pub(crate) fn as_named_expr(&self) -> Option<(&Node, &Node)> {
        match (self.kind(), self.children()) {
            (kind::NAMED_EXPR, [target, value]) => Some((target, value)),
            _ => None,
        }
    }

    /// The element expressions (`elt`, or `key` and `value`) and the generators of a
    /// comprehension or generator expression.
    #[must_use]
    pub(crate) fn as_comprehension(&self) -> Option<(&[Node], Vec<Generator<'_>>)> {
        if !matches!(
            self.kind(),
            kind::LIST_COMP | kind::SET_COMP | kind::DICT_COMP | kind::GENERATOR_EXP
        ) {
            return None;
        }
        let (generators, elements) = self.children().split_last()?;
        let generators = generators
            .children()
            .iter()
            .filter_map(|g| match g.children() {
                [target, iter, ifs] => Some(Generator {
                    target,
                    iter,
                    ifs: ifs.children(),
                    is_async: g.label() == Some("async"),
                    at: g.range().start,
                }),
                _ => None,
            })
            .collect();
        Some((elements, generators))
    }

    /// The expressions and sub-patterns of a `MatchValue` (value), `MatchClass` (class;
    /// positional and keyword patterns) or `MatchMapping` (keys; value patterns and the
    /// `**rest` identifier), in the order they are evaluated.
    #[must_use]
    pub(crate) fn match_pattern_parts(&self) -> Option<(Vec<&Node>, Vec<&Node>)> {
        match (self.kind(), self.children()) {
            (kind::MATCH_VALUE, [value]) => Some((vec![value], Vec::new())),
            (kind::MATCH_CLASS, [class, patterns, _attrs, kwd_patterns]) => {
                Some((vec![class], vec![patterns, kwd_patterns]))
            }
            (kind::MATCH_MAPPING, [keys, patterns, rest]) => {
                Some((keys.children().iter().collect(), vec![patterns, rest]))
            }
            _ => None,
        }
    }

    /// The two branches (`body`, `orelse`) of `body if test else orelse`.
    #[must_use]
    pub(crate) fn if_exp_branches(&self) -> Option<Vec<&Node>> {
        match (self.kind(), self.children()) {
            (kind::IF_EXP, [_test, body, orelse]) => Some(vec![body, orelse]),
            _ => None,
        }
    }

    /// The two operands of a binary operation.
    #[must_use]
    pub(crate) fn bin_op_operands(&self) -> Option<Vec<&Node>> {
        match (self.kind(), self.children()) {
            (kind::BIN_OP, [left, right]) => Some(vec![left, right]),
            _ => None,
        }
    }

    /// The operands of `a and b` or `a or b`.
    #[must_use]
    pub(crate) fn bool_op_values(&self) -> Option<&[Node]> {
        match (self.kind(), self.children()) {
            (kind::BOOL_OP, [values]) => Some(values.children()),
            _ => None,
        }
    }

    /// The expression of an expression statement.
    #[must_use]
    pub(crate) fn as_expr_stmt(&self) -> Option<&Node> {
        match (self.kind(), self.children()) {
            (kind::EXPR, [value]) => Some(value),
            _ => None,
        }
    }

    /// The view of a `Call`.
    #[must_use]
    pub(crate) fn as_call(&self) -> Option<Call<'_>> {
        match (self.kind(), self.children()) {
            (kind::CALL, [func, args, keywords]) => Some(Call {
                func,
                args: args.children(),
                keywords: keywords.children(),
            }),
            _ => None,
        }
    }

    /// The view of an `Attribute`.
    #[must_use]
    pub(crate) fn as_attribute(&self) -> Option<Attribute<'_>> {
        match (self.kind(), self.children()) {
            (kind::ATTRIBUTE, [value]) => Some(Attribute {
                value,
                attr: self.label()?,
            }),
            _ => None,
        }
    }

    /// The view of a `keyword`.
    #[must_use]
    pub(crate) fn as_keyword(&self) -> Option<Keyword<'_>> {
        match (self.kind(), self.children()) {
            (kind::KEYWORD, [value]) => Some(Keyword {
                arg: self.label(),
                value,
            }),
            _ => None,
        }
    }

    /// The view of a `Subscript`.
    #[must_use]
    pub(crate) fn as_subscript(&self) -> Option<Subscript<'_>> {
        match (self.kind(), self.children()) {
            (kind::SUBSCRIPT, [value, slice]) => Some(Subscript { value, slice }),
            _ => None,
        }
    }

    /// The identifier of a `Name`.
    #[must_use]
    pub(crate) fn as_name(&self) -> Option<&str> {
        if self.kind() == kind::NAME {
            self.label()
        } else {
            None
        }
    }

    /// The single operand of `Starred`, `Await`, `YieldFrom` or `Yield` (absent for a bare `yield`).
    #[must_use]
    pub(crate) fn operand(&self) -> Option<&Node> {
        match (self.kind(), self.children()) {
            (kind::STARRED | kind::AWAIT | kind::YIELD_FROM | kind::YIELD, [value]) => present(value),
            _ => None,
        }
    }

    /// The items of a `Tuple`, `List` or `Set` display.
    #[must_use]
    pub(crate) fn elements(&self) -> Option<&[Node]> {
        match (self.kind(), self.children()) {
            (kind::TUPLE | kind::LIST_DISPLAY | kind::SET, [elts]) => Some(elts.children()),
            _ => None,
        }
    }
}
