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
pub struct FunctionDef<'a> {
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
pub struct ClassDef<'a> {
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
pub struct Assign<'a> {
    /// Assignment targets, left to right.
    pub targets: &'a [Node],
    /// The assigned expression.
    pub value: &'a Node,
}

/// An `a: T = value` statement.
#[derive(Clone, Copy, Debug)]
pub struct AnnAssign<'a> {
    /// The single target.
    pub target: &'a Node,
    /// The annotation.
    pub annotation: &'a Node,
    /// The assigned expression, if any.
    pub value: Option<&'a Node>,
}

/// An `a += value` statement.
#[derive(Clone, Copy, Debug)]
pub struct AugAssign<'a> {
    /// The single target.
    pub target: &'a Node,
    /// The right-hand side.
    pub value: &'a Node,
}

/// An `if` or `while` statement.
#[derive(Clone, Copy, Debug)]
pub struct Conditional<'a> {
    /// The condition.
    pub test: &'a Node,
    /// The `body` list node.
    pub body: &'a Node,
    /// The `orelse` list node.
    pub orelse: &'a Node,
}

/// A `for` or `async for` statement.
#[derive(Clone, Copy, Debug)]
pub struct For<'a> {
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
pub struct With<'a> {
    /// `withitem` nodes.
    pub items: &'a [Node],
    /// The `body` list node.
    pub body: &'a Node,
}

/// One item of a `with`: `context as vars`.
#[derive(Clone, Copy, Debug)]
pub struct WithItem<'a> {
    /// The context manager expression.
    pub context: &'a Node,
    /// The `as` target, if any.
    pub vars: Option<&'a Node>,
}

/// A `try` statement (with `except` or `except*`).
#[derive(Clone, Copy, Debug)]
pub struct Try<'a> {
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
pub struct ExceptHandler<'a> {
    /// The caught type, absent for a bare `except:`.
    pub type_: Option<&'a Node>,
    /// The `as` name.
    pub name: Option<&'a str>,
    /// The `body` list node.
    pub body: &'a Node,
}

/// One `case` of a `match`.
#[derive(Clone, Copy, Debug)]
pub struct MatchCase<'a> {
    /// The pattern.
    pub pattern: &'a Node,
    /// The `if` guard.
    pub guard: Option<&'a Node>,
    /// The `body` list node.
    pub body: &'a Node,
}

/// A comprehension's `for target in iter if ...` clause.
#[derive(Clone, Copy, Debug)]
pub struct Generator<'a> {
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
pub struct Call<'a> {
    /// The called expression.
    pub func: &'a Node,
    /// Positional arguments (`Starred` for `*x`).
    pub args: &'a [Node],
    /// `keyword` nodes.
    pub keywords: &'a [Node],
}

/// An attribute access `value.attr`.
#[derive(Clone, Copy, Debug)]
pub struct Attribute<'a> {
    /// The object expression.
    pub value: &'a Node,
    /// The attribute name.
    pub attr: &'a str,
}

/// A keyword argument `arg=value`, or `**value` when `arg` is `None`.
#[derive(Clone, Copy, Debug)]
pub struct Keyword<'a> {
    /// The keyword's name.
    pub arg: Option<&'a str>,
    /// The passed expression.
    pub value: &'a Node,
}

/// A subscript `value[slice]`.
#[derive(Clone, Copy, Debug)]
pub struct Subscript<'a> {
    /// The subscripted expression.
    pub value: &'a Node,
    /// The index or slice.
    pub slice: &'a Node,
}

impl Node {
    /// Whether this node is of `kind` (one of [`kind`]'s constants).
    #[must_use]
    pub fn is(&self, kind: &str) -> bool {
        self.kind() == kind
    }

    /// The `body` list of a `Module`.
    #[must_use]
    pub fn module_body(&self) -> Option<&Node> {
        match (self.kind(), self.children()) {
            (kind::MODULE, [body]) => Some(body),
            _ => None,
        }
    }

    /// The view of a `def` or `async def`.
    #[must_use]
    pub fn as_function_def(&self) -> Option<FunctionDef<'_>> {
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
    pub fn as_class_def(&self) -> Option<ClassDef<'_>> {
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
    pub fn as_return(&self) -> Option<Option<&Node>> {
        match (self.kind(), self.children()) {
            (kind::RETURN, [value]) => Some(present(value)),
            _ => None,
        }
    }

    /// The view of an `Assign`.
    #[must_use]
    pub fn as_assign(&self) -> Option<Assign<'_>> {
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
    pub fn as_ann_assign(&self) -> Option<AnnAssign<'_>> {
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
    pub fn as_aug_assign(&self) -> Option<AugAssign<'_>> {
        match (self.kind(), self.children()) {
            (kind::AUG_ASSIGN, [target, value]) => Some(AugAssign { target, value }),
            _ => None,
        }
    }

    /// The view of an `if` or `while`.
    #[must_use]
    pub fn as_conditional(&self) -> Option<Conditional<'_>> {
        match (self.kind(), self.children()) {
            (kind::IF | kind::WHILE, [test, body, orelse]) => Some(Conditional { test, body, orelse }),
            _ => None,
        }
    }

    /// The view of a `for` or `async for`.
    #[must_use]
    pub fn as_for(&self) -> Option<For<'_>> {
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
    pub fn as_with(&self) -> Option<With<'_>> {
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
    pub fn as_with_item(&self) -> Option<WithItem<'_>> {
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
    pub fn as_try(&self) -> Option<Try<'_>> {
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
    pub fn as_except_handler(&self) -> Option<ExceptHandler<'_>> {
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
    pub fn as_match(&self) -> Option<(&Node, &[Node])> {
        match (self.kind(), self.children()) {
            (kind::MATCH, [subject, cases]) => Some((subject, cases.children())),
            _ => None,
        }
    }

    /// The view of a `match_case`.
    #[must_use]
    pub fn as_match_case(&self) -> Option<MatchCase<'_>> {
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
    pub fn as_type_alias(&self) -> Option<(&Node, &[Node], &Node)> {
        match (self.kind(), self.children()) {
            (kind::TYPE_ALIAS, [name, params, value]) => Some((name, params.children(), value)),
            _ => None,
        }
    }

    /// The items of the single list field of `Delete` (targets), `Import`, `ImportFrom`,
    /// `Global` and `Nonlocal` (names).
    #[must_use]
    pub fn items(&self) -> Option<&[Node]> {
        match (self.kind(), self.children()) {
            (kind::DELETE | kind::IMPORT | kind::IMPORT_FROM | kind::GLOBAL | kind::NONLOCAL, [list]) => {
                Some(list.children())
            }
            _ => None,
        }
    }

    /// The parameters of an `arguments` node in order (positional-only, regular, `*args`,
    /// keyword-only, `**kwargs`), each an `arg` node with its default.
    #[must_use]
    pub fn parameters(&self) -> Option<Vec<(&Node, Option<&Node>)>> {
        if self.kind() != kind::ARGUMENTS {
            return None;
        }
        let mut out = Vec::new();
        for child in self.children() {
            match child.kind() {
                super::LIST => {
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
    pub fn positional_parameters(&self) -> Option<Vec<&Node>> {
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
    pub fn as_arg_with_default(&self) -> Option<(&Node, Option<&Node>)> {
        match (self.kind(), self.children()) {
            (kind::ARG_WITH_DEFAULT, [arg, default]) => Some((arg, present(default))),
            _ => None,
        }
    }

    /// The `as` name of an `alias` (an imported name).
    #[must_use]
    pub fn asname(&self) -> Option<&str> {
        match (self.kind(), self.children()) {
            (kind::ALIAS, [asname]) => present(asname).and_then(Node::label),
            _ => None,
        }
    }

    /// The annotation of an `arg`.
    #[must_use]
    pub fn annotation(&self) -> Option<&Node> {
        match (self.kind(), self.children()) {
            (kind::ARG, [annotation]) => present(annotation),
            _ => None,
        }
    }

    /// The `arguments` node and body of a `lambda`.
    #[must_use]
    pub fn as_lambda(&self) -> Option<(&Node, &Node)> {
        match (self.kind(), self.children()) {
            (kind::LAMBDA, [args, body]) => Some((args, body)),
            _ => None,
        }
    }

    /// The target and value of `(target := value)`.
    #[must_use]
    pub fn as_named_expr(&self) -> Option<(&Node, &Node)> {
        match (self.kind(), self.children()) {
            (kind::NAMED_EXPR, [target, value]) => Some((target, value)),
            _ => None,
        }
    }

    /// The element expressions (`elt`, or `key` and `value`) and the generators of a
    /// comprehension or generator expression.
    #[must_use]
    pub fn as_comprehension(&self) -> Option<(&[Node], Vec<Generator<'_>>)> {
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
    pub fn match_pattern_parts(&self) -> Option<(Vec<&Node>, Vec<&Node>)> {
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
    pub fn if_exp_branches(&self) -> Option<Vec<&Node>> {
        match (self.kind(), self.children()) {
            (kind::IF_EXP, [_test, body, orelse]) => Some(vec![body, orelse]),
            _ => None,
        }
    }

    /// The two operands of a binary operation.
    #[must_use]
    pub fn bin_op_operands(&self) -> Option<Vec<&Node>> {
        match (self.kind(), self.children()) {
            (kind::BIN_OP, [left, right]) => Some(vec![left, right]),
            _ => None,
        }
    }

    /// The operands of `a and b` or `a or b`.
    #[must_use]
    pub fn bool_op_values(&self) -> Option<&[Node]> {
        match (self.kind(), self.children()) {
            (kind::BOOL_OP, [values]) => Some(values.children()),
            _ => None,
        }
    }

    /// The expression of an expression statement.
    #[must_use]
    pub fn as_expr_stmt(&self) -> Option<&Node> {
        match (self.kind(), self.children()) {
            (kind::EXPR, [value]) => Some(value),
            _ => None,
        }
    }

    /// The view of a `Call`.
    #[must_use]
    pub fn as_call(&self) -> Option<Call<'_>> {
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
    pub fn as_attribute(&self) -> Option<Attribute<'_>> {
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
    pub fn as_keyword(&self) -> Option<Keyword<'_>> {
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
    pub fn as_subscript(&self) -> Option<Subscript<'_>> {
        match (self.kind(), self.children()) {
            (kind::SUBSCRIPT, [value, slice]) => Some(Subscript { value, slice }),
            _ => None,
        }
    }

    /// The identifier of a `Name`.
    #[must_use]
    pub fn as_name(&self) -> Option<&str> {
        if self.kind() == kind::NAME {
            self.label()
        } else {
            None
        }
    }

    /// The single operand of `Starred`, `Await`, `YieldFrom` or `Yield` (absent for a bare `yield`).
    #[must_use]
    pub fn operand(&self) -> Option<&Node> {
        match (self.kind(), self.children()) {
            (kind::STARRED | kind::AWAIT | kind::YIELD_FROM | kind::YIELD, [value]) => present(value),
            _ => None,
        }
    }

    /// The items of a `Tuple`, `List` or `Set` display.
    #[must_use]
    pub fn elements(&self) -> Option<&[Node]> {
        match (self.kind(), self.children()) {
            (kind::TUPLE | kind::LIST_DISPLAY | kind::SET, [elts]) => Some(elts.children()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::parse::parse_snippet;
    use crate::syntax::Node;

    fn one(text: &str) -> Node {
        let mut body = parse_snippet("t.py", text).expect("valid snippet");
        assert_eq!(body.len(), 1, "{text}");
        body.remove(0)
    }

    fn expr(text: &str) -> Node {
        one(text).as_expr_stmt().expect("expression statement").clone()
    }

    fn name(node: &Node) -> &str {
        node.as_name().expect("a name")
    }

    #[test]
    fn function_def_fields() {
        let node = one("@d\nasync def f(a, b=1) -> int:\n    pass\n    return a\n");
        let f = node.as_function_def().expect("def");
        assert_eq!(f.name, "f");
        assert!(f.is_async);
        assert_eq!(f.decorators.len(), 1);
        assert_eq!(name(&f.decorators[0]), "d");
        assert_eq!(f.args.kind(), "arguments");
        assert_eq!(name(f.returns.expect("annotated")), "int");
        assert_eq!(f.body.children().len(), 2);
        let plain = one("def g(): pass\n");
        let g = plain.as_function_def().expect("def");
        assert!(!g.is_async && g.returns.is_none() && g.decorators.is_empty());
        assert!(plain.as_class_def().is_none());
    }

    #[test]
    fn class_def_fields() {
        let node = one("@dec\nclass C(A, B, metaclass=M):\n    x = 1\n");
        let c = node.as_class_def().expect("class");
        assert_eq!(c.name, "C");
        assert_eq!(c.decorators.len(), 1);
        assert_eq!(c.bases.iter().map(name).collect::<Vec<_>>(), ["A", "B"]);
        assert_eq!(c.keywords.len(), 1);
        assert_eq!(c.keywords[0].as_keyword().expect("keyword").arg, Some("metaclass"));
        assert_eq!(c.body.children().len(), 1);
        assert!(node.as_function_def().is_none());
    }

    #[test]
    fn return_value_is_optional() {
        let node = one("return x\n");
        assert_eq!(node.as_return().expect("return").map(name), Some("x"));
        assert_eq!(one("return\n").as_return().expect("return").map(name), None);
        assert!(one("x\n").as_return().is_none());
    }

    #[test]
    fn assignments() {
        let node = one("a = b = c\n");
        let assign = node.as_assign().expect("assign");
        assert_eq!(assign.targets.iter().map(name).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(name(assign.value), "c");

        let node = one("a: int = 1\n");
        let ann = node.as_ann_assign().expect("annotated");
        assert_eq!(name(ann.target), "a");
        assert_eq!(name(ann.annotation), "int");
        assert_eq!(ann.value.and_then(Node::label), Some("int:1"));
        assert!(one("a: int\n").as_ann_assign().expect("annotated").value.is_none());

        let node = one("a += b\n");
        let aug = node.as_aug_assign().expect("augmented");
        assert_eq!((name(aug.target), name(aug.value)), ("a", "b"));
        assert!(node.as_assign().is_none());
    }

    #[test]
    fn conditionals_and_loops() {
        let node = one("if t:\n    a\nelse:\n    b\n    c\n");
        let cond = node.as_conditional().expect("if");
        assert_eq!(name(cond.test), "t");
        assert_eq!((cond.body.children().len(), cond.orelse.children().len()), (1, 2));
        let node = one("while w:\n    a\n");
        assert_eq!(name(node.as_conditional().expect("while").test), "w");
        let node = one("for i in xs:\n    a\nelse:\n    b\n");
        let f = node.as_for().expect("for");
        assert_eq!((name(f.target), name(f.iter)), ("i", "xs"));
        assert_eq!((f.body.children().len(), f.orelse.children().len()), (1, 1));
    }

    #[test]
    fn with_fields() {
        let node = one("async with a as b, c:\n    x\n");
        let with = node.as_with().expect("with");
        assert_eq!(with.body.children().len(), 1);
        let items: Vec<_> = with.items.iter().map(|i| i.as_with_item().expect("item")).collect();
        assert_eq!((name(items[0].context), items[0].vars.map(name)), ("a", Some("b")));
        assert_eq!((name(items[1].context), items[1].vars.map(name)), ("c", None));
        assert!(node.as_conditional().is_none());
    }

    #[test]
    fn try_and_handlers() {
        let node = one("try:\n    a\nexcept E as e:\n    b\nexcept:\n    c\nelse:\n    d\nfinally:\n    f\n");
        let t = node.as_try().expect("try");
        assert_eq!(t.body.children().len(), 1);
        assert_eq!((t.orelse.children().len(), t.finalbody.children().len()), (1, 1));
        let h: Vec<_> = t
            .handlers
            .iter()
            .map(|h| h.as_except_handler().expect("handler"))
            .collect();
        assert_eq!((h[0].type_.map(name), h[0].name), (Some("E"), Some("e")));
        assert_eq!((h[1].type_.map(name), h[1].name), (None, None));
        assert_eq!(h[1].body.children().len(), 1);
    }

    #[test]
    fn match_cases() {
        let node = one("match s:\n    case 1 if g:\n        a\n    case _:\n        b\n");
        let (subject, cases) = node.as_match().expect("match");
        assert_eq!(name(subject), "s");
        let first = cases[0].as_match_case().expect("case");
        assert_eq!(first.pattern.kind(), "MatchValue");
        assert_eq!(first.guard.map(name), Some("g"));
        assert_eq!(first.body.children().len(), 1);
        assert!(cases[1].as_match_case().expect("case").guard.is_none());
    }

    #[test]
    fn lists_of_names_and_targets() {
        let names = |n: &Node| {
            n.items()
                .expect("items")
                .iter()
                .map(|a| a.label().unwrap_or_default().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&one("import a.b, c\n")), ["a.b", "c"]);
        assert_eq!(names(&one("from m import x\n")), ["x"]);
        let node = one("import a.b as c, d\n");
        let aliases = node.items().expect("import");
        assert_eq!((aliases[0].asname(), aliases[1].asname()), (Some("c"), None));
        assert_eq!(names(&one("global g, h\n")), ["g", "h"]);
        assert_eq!(one("del a, b\n").items().expect("del").len(), 2);
        let node = one("type T[X] = list[X]\n");
        let (alias, params, value) = node.as_type_alias().expect("type alias");
        assert_eq!((name(alias), params.len(), value.kind()), ("T", 1, "Subscript"));
    }

    #[test]
    fn parameters_and_lambdas() {
        let node = one("def f(a, /, b: int = 1, *c, d, **e): pass\n");
        let params = node
            .as_function_def()
            .expect("def")
            .args
            .parameters()
            .expect("arguments");
        let names: Vec<_> = params.iter().map(|(arg, _)| arg.label().unwrap_or_default()).collect();
        assert_eq!(names, ["a", "b", "c", "d", "e"]);
        assert_eq!(params[1].1.and_then(Node::label), Some("int:1"));
        assert_eq!(params[1].0.annotation().map(name), Some("int"));
        assert!(params[0].1.is_none() && params[0].0.annotation().is_none());
        let args = node.as_function_def().expect("def").args;
        let positional = args.positional_parameters().expect("arguments");
        assert_eq!(
            positional
                .iter()
                .map(|a| a.label().unwrap_or_default())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        let lists = args.children();
        let (arg, default) = lists[1].children()[0].as_arg_with_default().expect("parameter");
        assert_eq!((arg.label(), default.and_then(Node::label)), (Some("b"), Some("int:1")));
        let node = expr("lambda x: x\n");
        let (args, body) = node.as_lambda().expect("lambda");
        assert_eq!(args.parameters().expect("arguments").len(), 1);
        assert_eq!(name(body), "x");
        let node = expr("(y := z)\n");
        let (target, value) = node.as_named_expr().expect("walrus");
        assert_eq!((name(target), name(value)), ("y", "z"));
    }

    #[test]
    fn conditional_and_boolean_expressions() {
        let node = expr("a if t else b\n");
        let branches = node.if_exp_branches().expect("if expression");
        assert_eq!(branches.into_iter().map(name).collect::<Vec<_>>(), ["a", "b"]);
        let node = expr("a or b or c\n");
        let values = node.bool_op_values().expect("or");
        assert_eq!(values.iter().map(name).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert!(node.if_exp_branches().is_none());
        let node = expr("a | b\n");
        let operands = node.bin_op_operands().expect("binary operation");
        assert_eq!(operands.into_iter().map(name).collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn comprehensions() {
        let node = expr("{k: v async for k in a if c for v in b}\n");
        let (elements, generators) = node.as_comprehension().expect("dict comprehension");
        assert_eq!(elements.iter().map(name).collect::<Vec<_>>(), ["k", "v"]);
        assert_eq!(generators.len(), 2);
        assert!(generators[0].is_async && !generators[1].is_async);
        assert_eq!((name(generators[0].target), name(generators[0].iter)), ("k", "a"));
        assert_eq!(generators[0].ifs.len(), 1);
        assert_eq!(expr("[x for x in y]\n").as_comprehension().expect("list").0.len(), 1);
    }

    #[test]
    fn call_fields() {
        let node = expr("f(a, *b, k=1, **m)\n");
        let call = node.as_call().expect("call");
        assert_eq!(name(call.func), "f");
        assert_eq!(call.args.len(), 2);
        assert_eq!(name(&call.args[0]), "a");
        assert_eq!(name(call.args[1].operand().expect("starred")), "b");
        let keywords: Vec<_> = call.keywords.iter().map(|k| k.as_keyword().expect("keyword")).collect();
        assert_eq!(keywords[0].arg, Some("k"));
        assert_eq!(keywords[0].value.label(), Some("int:1"));
        assert_eq!((keywords[1].arg, name(keywords[1].value)), (None, "m"));
        assert!(node.as_attribute().is_none());
    }

    #[test]
    fn attribute_and_subscript() {
        let node = expr("self.x\n");
        let attr = node.as_attribute().expect("attribute");
        assert_eq!((name(attr.value), attr.attr), ("self", "x"));
        let node = expr("a[i]\n");
        let sub = node.as_subscript().expect("subscript");
        assert_eq!((name(sub.value), name(sub.slice)), ("a", "i"));
    }

    #[test]
    fn operands_and_elements() {
        assert_eq!(name(expr("await x\n").operand().expect("await")), "x");
        assert!(expr("(yield)\n").operand().is_none());
        assert_eq!(name(expr("(yield from g)\n").operand().expect("yield from")), "g");
        for text in ["(a, b)\n", "[a, b]\n", "{a, b}\n"] {
            let node = expr(text);
            let items = node.elements().expect("display");
            assert_eq!(items.iter().map(name).collect::<Vec<_>>(), ["a", "b"], "{text}");
        }
        assert!(expr("x\n").elements().is_none());
    }

    #[test]
    fn module_body_and_kinds() {
        let file = crate::source::SourceFile::new("t.py", "a\nb\n");
        let root = crate::parse::parse_module(&file).expect("valid");
        assert!(root.is(crate::syntax::kind::MODULE));
        assert_eq!(root.module_body().expect("module").children().len(), 2);
        assert!(one("a\n").module_body().is_none());
    }
}
