//! Typed views of the nodes the crate reads field by field.
//!
//! `parse::convert` writes each node's children in a fixed order; this module is the one place
//! that reads that order, so the rest of the crate names fields instead of indexing children.
//! The child order of every viewed kind (list fields are `list` nodes, optional fields are
//! `absent` nodes when missing):
//!
//! | kind | children |
//! |---|---|
//! | `Module` | `body` |
//! | `FunctionDef`, `AsyncFunctionDef` (label: name) | `decorator_list`, `arguments`, returns?, `type_params`, `body` |
//! | `ClassDef` (label: name) | `decorator_list`, `bases`, `keywords`, `type_params`, `body` |
//! | `Return` | value? |
//! | `Assign` | `targets`, value |
//! | `AugAssign` (label: operator) | target, value |
//! | `AnnAssign` (label: `simple`/`complex`) | target, annotation, value? |
//! | `If`, `While` | test, `body`, `orelse` |
//! | `For`, `AsyncFor` | target, iter, `body`, `orelse` |
//! | `With`, `AsyncWith` | `items` (of `withitem`), `body` |
//! | `withitem` | context, vars? |
//! | `Try`, `TryStar` | `body`, `handlers` (of `ExceptHandler`), `orelse`, `finalbody` |
//! | `ExceptHandler` | type?, name? (`identifier`), `body` |
//! | `Match` | subject, `cases` (of `match_case`) |
//! | `match_case` | pattern, guard?, `body` |
//! | `TypeAlias` | name, `type_params`, value |
//! | `Delete` | `targets` |
//! | `Import`, `ImportFrom`, `Global`, `Nonlocal` | `names` |
//! | `arguments` | `posonlyargs`, `args`, vararg?, `kwonlyargs`, kwarg? |
//! | `arg_with_default` | `arg`, default? |
//! | `arg` (label: name) | annotation? |
//! | `alias` (label: dotted name) | asname? (`identifier`) |
//! | `Lambda` | `arguments`, body |
//! | `NamedExpr` | target, value |
//! | `ListComp`, `SetComp`, `GeneratorExp` | elt, `generators` |
//! | `DictComp` | key, value, `generators` |
//! | `comprehension` (label: `async`/`sync`) | target, iter, `ifs` |
//! | `Expr` | value |
//! | `Call` | func, `args`, `keywords` |
//! | `Attribute` (label: attribute) | value |
//! | `keyword` (label: name, none for `**`) | value |
//! | `Subscript` | value, slice |
//! | `Starred`, `Await`, `YieldFrom` | value |
//! | `Yield` | value? |
//! | `Tuple`, `List`, `Set` | `elts` |
//!
//! A view is `None` for a node of another kind, and for a node cut short by the depth limit,
//! so reading a view never panics.

use super::{kind, Node, ABSENT};

/// `Some(node)` unless it stands for a missing optional field.
fn present(node: &Node) -> Option<&Node> {
    (node.kind() != ABSENT).then_some(node)
}

/// A `def` or `async def` statement.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FunctionDef<'a> {
    /// The function's name.
    pub name: &'a str,
    /// Decorator expressions, top first.
    pub decorators: &'a [Node],
    /// The `arguments` node.
    pub args: &'a Node,
    /// The return annotation.
    pub returns: Option<&'a Node>,
    /// Type parameters (PEP 695).
    pub type_params: &'a [Node],
    /// The `body` list node.
    pub body: &'a Node,
    /// Whether it is `async def`.
    pub is_async: bool,
}

/// A `class` statement.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ClassDef<'a> {
    /// The class's name.
    pub name: &'a str,
    /// Decorator expressions, top first.
    pub decorators: &'a [Node],
    /// Base class expressions.
    pub bases: &'a [Node],
    /// `keyword` nodes (`metaclass=...`).
    pub keywords: &'a [Node],
    /// Type parameters (PEP 695).
    pub type_params: &'a [Node],
    /// The `body` list node.
    pub body: &'a Node,
}

/// An `a = b = value` statement.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Assign<'a> {
    /// Assignment targets, left to right.
    pub targets: &'a [Node],
    /// The assigned expression.
    pub value: &'a Node,
}

/// An `a: T = value` statement.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AnnAssign<'a> {
    /// The single target.
    pub target: &'a Node,
    /// The annotation.
    pub annotation: &'a Node,
    /// The assigned expression, if any.
    pub value: Option<&'a Node>,
}

/// An `a += value` statement.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AugAssign<'a> {
    /// The single target.
    pub target: &'a Node,
    /// The right-hand side.
    pub value: &'a Node,
}

/// An `if` or `while` statement.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Conditional<'a> {
    /// The condition.
    pub test: &'a Node,
    /// The `body` list node.
    pub body: &'a Node,
    /// The `orelse` list node.
    pub orelse: &'a Node,
}

/// A `for` or `async for` statement.
#[derive(Clone, Copy, Debug)]
pub(crate) struct For<'a> {
    /// The loop target.
    pub target: &'a Node,
    /// The iterated expression.
    pub iter: &'a Node,
    /// The `body` list node.
    pub body: &'a Node,
    /// The `orelse` list node.
    pub orelse: &'a Node,
}

/// A `with` or `async with` statement.
#[derive(Clone, Copy, Debug)]
pub(crate) struct With<'a> {
    /// `withitem` nodes.
    pub items: &'a [Node],
    /// The `body` list node.
    pub body: &'a Node,
}

/// One item of a `with`: `context as vars`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WithItem<'a> {
    /// The context manager expression.
    pub context: &'a Node,
    /// The `as` target, if any.
    pub vars: Option<&'a Node>,
}

/// A `try` statement (with `except` or `except*`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Try<'a> {
    /// The `body` list node.
    pub body: &'a Node,
    /// `ExceptHandler` nodes.
    pub handlers: &'a [Node],
    /// The `orelse` list node.
    pub orelse: &'a Node,
    /// The `finalbody` list node.
    pub finalbody: &'a Node,
}

/// One `except` clause.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ExceptHandler<'a> {
    /// The caught type, absent for a bare `except:`.
    pub type_: Option<&'a Node>,
    /// The `as` name.
    pub name: Option<&'a str>,
    /// The `body` list node.
    pub body: &'a Node,
}

/// One `case` of a `match`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MatchCase<'a> {
    /// The pattern.
    pub pattern: &'a Node,
    /// The `if` guard.
    pub guard: Option<&'a Node>,
    /// The `body` list node.
    pub body: &'a Node,
}

impl Node {
    /// Whether this node is of `kind` (one of [`kind`]'s constants).
    #[must_use]
    pub(crate) fn is(&self, kind: &str) -> bool {
        self.kind() == kind
    }

    /// Whether this node is an expression that may stand in parentheses (not a slice, a starred
    /// item or the field of an f-string).
    #[must_use]
    pub(crate) fn is_expression(&self) -> bool {
        matches!(
            self.kind(),
            kind::BOOL_OP
                | kind::NAMED_EXPR
                | kind::BIN_OP
                | kind::UNARY_OP
                | kind::LAMBDA
                | kind::IF_EXP
                | kind::DICT
                | kind::SET
                | kind::LIST_COMP
                | kind::SET_COMP
                | kind::DICT_COMP
                | kind::GENERATOR_EXP
                | kind::AWAIT
                | kind::YIELD
                | kind::YIELD_FROM
                | kind::COMPARE
                | kind::CALL
                | kind::JOINED_STR
                | kind::CONSTANT
                | kind::ATTRIBUTE
                | kind::SUBSCRIPT
                | kind::NAME
                | kind::LIST_DISPLAY
                | kind::TUPLE
        )
    }

    /// The `body` list of a `Module`.
    #[must_use]
    pub(crate) fn module_body(&self) -> Option<&Node> {
        match (self.kind(), self.children()) {
            (kind::MODULE, [body]) => Some(body),
            _ => None,
        }
    }

    /// The view of a `def` or `async def`.
    #[must_use]
    pub(crate) fn as_function_def(&self) -> Option<FunctionDef<'_>> {
        let is_async = match self.kind() {
            kind::FUNCTION_DEF => false,
            kind::ASYNC_FUNCTION_DEF => true,
            _ => return None,
        };
        match self.children() {
            [decorators, args, returns, type_params, body] => Some(FunctionDef {
                name: self.label()?,
                decorators: decorators.children(),
                args,
                returns: present(returns),
                type_params: type_params.children(),
                body,
                is_async,
            }),
            _ => None,
        }
    }

    /// The view of a `class`.
    #[must_use]
    pub(crate) fn as_class_def(&self) -> Option<ClassDef<'_>> {
        match (self.kind(), self.children()) {
            (kind::CLASS_DEF, [decorators, bases, keywords, type_params, body]) => Some(ClassDef {
                name: self.label()?,
                decorators: decorators.children(),
                bases: bases.children(),
                keywords: keywords.children(),
                type_params: type_params.children(),
                body,
            }),
            _ => None,
        }
    }

    /// The value of a `return`: `Some(None)` for a bare `return`.
    #[must_use]
    pub(crate) fn as_return(&self) -> Option<Option<&Node>> {
        match (self.kind(), self.children()) {
            (kind::RETURN, [value]) => Some(present(value)),
            _ => None,
        }
    }

    /// The view of an `Assign`.
    #[must_use]
    pub(crate) fn as_assign(&self) -> Option<Assign<'_>> {
        match (self.kind(), self.children()) {
            (kind::ASSIGN, [targets, value]) => Some(Assign {
                targets: targets.children(),
                value,
            }),
            _ => None,
        }
    }

    /// The view of an `AnnAssign`.
    #[must_use]
    pub(crate) fn as_ann_assign(&self) -> Option<AnnAssign<'_>> {
        match (self.kind(), self.children()) {
            (kind::ANN_ASSIGN, [target, annotation, value]) => Some(AnnAssign {
                target,
                annotation,
                value: present(value),
            }),
            _ => None,
        }
    }

    /// The view of an `AugAssign`.
    #[must_use]
    pub(crate) fn as_aug_assign(&self) -> Option<AugAssign<'_>> {
        match (self.kind(), self.children()) {
            (kind::AUG_ASSIGN, [target, value]) => Some(AugAssign { target, value }),
            _ => None,
        }
    }

    /// The view of an `if` or `while`.
    #[must_use]
    pub(crate) fn as_conditional(&self) -> Option<Conditional<'_>> {
        match (self.kind(), self.children()) {
            (kind::IF | kind::WHILE, [test, body, orelse]) => Some(Conditional { test, body, orelse }),
            _ => None,
        }
    }

    /// The view of a `for` or `async for`.
    #[must_use]
    pub(crate) fn as_for(&self) -> Option<For<'_>> {
        match (self.kind(), self.children()) {
            (kind::FOR | kind::ASYNC_FOR, [target, iter, body, orelse]) => Some(For {
                target,
                iter,
                body,
                orelse,
            }),
            _ => None,
        }
    }

    /// The view of a `with` or `async with`.
    #[must_use]
    pub(crate) fn as_with(&self) -> Option<With<'_>> {
        match (self.kind(), self.children()) {
            (kind::WITH | kind::ASYNC_WITH, [items, body]) => Some(With {
                items: items.children(),
                body,
            }),
            _ => None,
        }
    }

    /// The view of a `withitem`.
    #[must_use]
    pub(crate) fn as_with_item(&self) -> Option<WithItem<'_>> {
        match (self.kind(), self.children()) {
            (kind::WITH_ITEM, [context, vars]) => Some(WithItem {
                context,
                vars: present(vars),
            }),
            _ => None,
        }
    }

    /// The view of a `try`.
    #[must_use]
    pub(crate) fn as_try(&self) -> Option<Try<'_>> {
        match (self.kind(), self.children()) {
            (kind::TRY | kind::TRY_STAR, [body, handlers, orelse, finalbody]) => Some(Try {
                body,
                handlers: handlers.children(),
                orelse,
                finalbody,
            }),
            _ => None,
        }
    }

    /// The view of an `ExceptHandler`.
    #[must_use]
    pub(crate) fn as_except_handler(&self) -> Option<ExceptHandler<'_>> {
        match (self.kind(), self.children()) {
            (kind::EXCEPT_HANDLER, [type_, name, body]) => Some(ExceptHandler {
                type_: present(type_),
                name: present(name).and_then(Node::label),
                body,
            }),
            _ => None,
        }
    }

    /// The subject and `match_case` nodes of a `match`.
    #[must_use]
    pub(crate) fn as_match(&self) -> Option<(&Node, &[Node])> {
        match (self.kind(), self.children()) {
            (kind::MATCH, [subject, cases]) => Some((subject, cases.children())),
            _ => None,
        }
    }

    /// The view of a `match_case`.
    #[must_use]
    pub(crate) fn as_match_case(&self) -> Option<MatchCase<'_>> {
        match (self.kind(), self.children()) {
            (kind::MATCH_CASE, [pattern, guard, body]) => Some(MatchCase {
                pattern,
                guard: present(guard),
                body,
            }),
            _ => None,
        }
    }

    /// The name, type parameters and value of a `type X = ...`.
    #[must_use]
    pub(crate) fn as_type_alias(&self) -> Option<(&Node, &[Node], &Node)> {
        match (self.kind(), self.children()) {
            (kind::TYPE_ALIAS, [name, params, value]) => Some((name, params.children(), value)),
            _ => None,
        }
    }

    /// The items of the single list field of `Delete` (targets), `Import`, `ImportFrom`,
    /// `Global` and `Nonlocal` (names).
    #[must_use]
    pub(crate) fn items(&self) -> Option<&[Node]> {
        match (self.kind(), self.children()) {
            (kind::DELETE | kind::IMPORT | kind::IMPORT_FROM | kind::GLOBAL | kind::NONLOCAL, [list]) => {
                Some(list.children())
            }
            _ => None,
        }
    }
}

mod expr;

#[cfg(test)]
mod tests;
