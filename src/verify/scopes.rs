//! Scopes of a parsed file, as CPython's symbol table sees them: which names each scope binds,
//! uses and declares, in source order, plus the errors CPython's compiler (not its parser) finds
//! while walking the tree (`return` outside a function, `await` outside `async def`, misplaced
//! `break`, `from __future__` after code...).

mod exprs;

use crate::syntax::{kind, Node};

/// A kind of scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Module,
    Class,
    /// A `def` (`is_async`) or a `lambda`.
    Function {
        is_async: bool,
        lambda: bool,
    },
    /// A list, set or dict comprehension, or a generator expression (`genexp`).
    Comprehension {
        genexp: bool,
        what: &'static str,
    },
}

/// How a name occurs in a scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Use {
    Load,
    /// The read of an augmented assignment's target (`x += 1`): a read at run time, but not a
    /// use for CPython's symbol table.
    AugLoad,
    Store,
    /// Bound by an import (which, unlike other bindings, may precede a `global` declaration).
    Import,
    Param,
    Annotated,
    Global,
    Nonlocal,
    /// `from m import *` (the name is `*`).
    StarImport,
}

/// One scope: its kind, its parent, and its name events in source order.
#[derive(Debug)]
pub(crate) struct SymbolTable<'t> {
    pub kind: Kind,
    pub parent: Option<usize>,
    pub events: Vec<(usize, &'t str, Use)>,
    /// Offsets of `yield` / `yield from` in this scope.
    pub yields: Vec<usize>,
    /// Offsets of `return` statements with a value.
    pub value_returns: Vec<usize>,
}

/// An error CPython's compiler would report, at an offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Problem {
    pub offset: usize,
    pub message: String,
}

/// Statement context while walking: inside a loop body, how many blocks are statically nested.
#[derive(Clone, Copy, Default)]
struct Ctx {
    in_loop: bool,
    blocks: usize,
}

/// CPython refuses more than 20 statically nested blocks (loops, `try`, `with`) in one scope.
const MAX_BLOCKS: usize = 20;

/// The scopes of a module node (`Module` with its `body` list), with the problems found.
pub(crate) fn analyze(root: &Node) -> (Vec<SymbolTable<'_>>, Vec<Problem>) {
    let mut walker = Walker {
        scopes: vec![SymbolTable::new(Kind::Module, None)],
        problems: Vec::new(),
        lazy_annotations: false,
    };
    if let Some(body) = root.module_body() {
        walker.future_imports(body);
        walker.block(body, 0, Ctx::default());
    }
    (walker.scopes, walker.problems)
}

impl SymbolTable<'_> {
    fn new<'t>(kind: Kind, parent: Option<usize>) -> SymbolTable<'t> {
        SymbolTable {
            kind,
            parent,
            events: Vec::new(),
            yields: Vec::new(),
            value_returns: Vec::new(),
        }
    }
}

struct Walker<'t> {
    scopes: Vec<SymbolTable<'t>>,
    problems: Vec<Problem>,
    /// `from __future__ import annotations`: annotations are never evaluated.
    lazy_annotations: bool,
}

impl<'t> Walker<'t> {
    fn problem(&mut self, offset: usize, message: impl Into<String>) {
        self.problems.push(Problem {
            offset,
            message: message.into(),
        });
    }

    fn event(&mut self, scope: usize, offset: usize, name: &'t str, kind: Use) {
        if matches!(kind, Use::Store | Use::Param) && name == "__debug__" {
            self.problem(offset, "cannot assign to __debug__");
        }
        self.scopes[scope].events.push((offset, name, kind));
    }

    fn new_scope(&mut self, kind: Kind, parent: usize) -> usize {
        self.scopes.push(SymbolTable::new(kind, Some(parent)));
        self.scopes.len() - 1
    }

    /// The innermost scope that is not a comprehension, and whether one was crossed on the way.
    fn enclosing_non_comprehension(&self, mut scope: usize) -> (usize, Option<Kind>) {
        let mut crossed = None;
        while let Kind::Comprehension { .. } = self.scopes[scope].kind {
            crossed.get_or_insert(self.scopes[scope].kind);
            match self.scopes[scope].parent {
                Some(parent) => scope = parent,
                None => break,
            }
        }
        (scope, crossed)
    }

    /// `from __future__` imports: only after the docstring and other future imports, and only
    /// features CPython knows.
    fn future_imports(&mut self, body: &'t Node) {
        let mut leading = true;
        for (i, stmt) in body.children().iter().enumerate() {
            let is_future = stmt.is(kind::IMPORT_FROM) && stmt.label() == Some("__future__");
            let is_docstring = i == 0 && crate::syntax::is_docstring(stmt);
            if is_future && !leading {
                self.problem(
                    stmt.range().start,
                    "from __future__ imports must occur at the beginning of the file",
                );
            } else if is_future {
                for alias in stmt.field("names").map(Node::children).unwrap_or_default() {
                    let feature = alias.label().unwrap_or_default();
                    self.lazy_annotations |= feature == "annotations";
                    if feature == "braces" {
                        self.problem(stmt.range().start, "not a chance");
                    } else if !FUTURE_FEATURES.contains(&feature) {
                        self.problem(stmt.range().start, format!("future feature {feature} is not defined"));
                    }
                }
            } else if !is_docstring {
                leading = false;
            }
        }
    }

    fn block(&mut self, list: &'t Node, scope: usize, ctx: Ctx) {
        for stmt in list.children() {
            stacker::maybe_grow(64 * 1024, 1 << 20, || self.stmt(stmt, scope, ctx));
        }
    }

    fn nested(&mut self, list: &'t Node, scope: usize, ctx: Ctx, is_loop: bool) {
        let inner = Ctx {
            in_loop: ctx.in_loop || is_loop,
            blocks: ctx.blocks + 1,
        };
        if inner.blocks > MAX_BLOCKS {
            if let Some(first) = list.children().first() {
                self.problem(first.range().start, "too many statically nested blocks");
            }
        }
        self.block(list, scope, inner);
    }

    #[allow(clippy::too_many_lines)]
    fn stmt(&mut self, stmt: &'t Node, scope: usize, ctx: Ctx) {
        let at = stmt.range().start;
        if let Some(f) = stmt.as_function_def() {
            self.exprs(f.decorators, scope);
            let inner = self.new_scope(
                Kind::Function {
                    is_async: f.is_async,
                    lambda: false,
                },
                scope,
            );
            self.arguments(f.args, scope, inner);
            if let Some(returns) = f.returns {
                self.annotation(returns, scope);
            }
            self.exprs(f.type_params, scope);
            self.event(scope, at, f.name, Use::Store);
            self.block(f.body, inner, Ctx::default());
        } else if let Some(class) = stmt.as_class_def() {
            self.exprs(class.decorators, scope);
            self.exprs(class.bases, scope);
            self.exprs(class.keywords, scope);
            self.exprs(class.type_params, scope);
            let inner = self.new_scope(Kind::Class, scope);
            self.block(class.body, inner, Ctx::default());
            self.event(scope, at, class.name, Use::Store);
        } else if let Some(value) = stmt.as_return() {
            let (owner, _) = self.enclosing_non_comprehension(scope);
            match self.scopes[owner].kind {
                Kind::Function { .. } => {
                    if value.is_some() {
                        self.scopes[owner].value_returns.push(at);
                    }
                }
                _ => self.problem(at, "'return' outside function"),
            }
            if let Some(value) = value {
                self.expr(value, scope);
            }
        } else if let (kind::DELETE, Some(targets)) = (stmt.kind(), stmt.items()) {
            self.targets(targets, scope);
        } else if let Some(assign) = stmt.as_assign() {
            self.expr(assign.value, scope);
            self.targets(assign.targets, scope);
        } else if let Some(aug) = stmt.as_aug_assign() {
            if let Some(name) = aug.target.as_name() {
                self.event(scope, at, name, Use::AugLoad);
            }
            self.expr(aug.value, scope);
            self.target(aug.target, scope);
        } else if let Some(ann) = stmt.as_ann_assign() {
            if let Some(value) = ann.value {
                self.expr(value, scope);
            }
            self.annotation(ann.annotation, scope);
            match ann.target.as_name() {
                Some(name) if stmt.label() == Some("simple") => {
                    let declared = self.scopes[scope]
                        .events
                        .iter()
                        .find(|(_, n, u)| &**n == name && matches!(u, Use::Global | Use::Nonlocal))
                        .map(|(_, _, u)| *u);
                    // At module level a `global` declaration changes nothing: no error there.
                    if let Some(kind) = declared.filter(|_| scope != 0) {
                        let what = if kind == Use::Global { "global" } else { "nonlocal" };
                        self.problem(at, format!("annotated name '{name}' can't be {what}"));
                    }
                    self.event(scope, ann.target.range().start, name, Use::Annotated);
                    if ann.value.is_some() {
                        self.event(scope, ann.target.range().start, name, Use::Store);
                    }
                }
                _ => self.target(ann.target, scope),
            }
        } else if let Some((name, params, value)) = stmt.as_type_alias() {
            self.target(name, scope);
            self.exprs(params, scope);
            self.expr(value, scope);
        } else if let Some(f) = stmt.as_for() {
            if stmt.is(kind::ASYNC_FOR) {
                self.needs_async(scope, at, AsyncUse::For);
            }
            self.expr(f.iter, scope);
            self.target(f.target, scope);
            self.nested(f.body, scope, ctx, true);
            self.nested(f.orelse, scope, ctx, false);
        } else if let Some(cond) = stmt.as_conditional() {
            self.expr(cond.test, scope);
            if stmt.is(kind::WHILE) {
                self.nested(cond.body, scope, ctx, true);
                self.nested(cond.orelse, scope, ctx, false);
            } else {
                self.block(cond.body, scope, ctx);
                self.block(cond.orelse, scope, ctx);
            }
        } else if let Some(with) = stmt.as_with() {
            if stmt.is(kind::ASYNC_WITH) {
                self.needs_async(scope, at, AsyncUse::With);
            }
            for item in with.items.iter().filter_map(Node::as_with_item) {
                self.expr(item.context, scope);
                if let Some(vars) = item.vars {
                    self.target(vars, scope);
                }
            }
            self.nested(with.body, scope, ctx, false);
        } else if let Some((subject, cases)) = stmt.as_match() {
            self.expr(subject, scope);
            for case in cases.iter().filter_map(Node::as_match_case) {
                self.pattern(case.pattern, scope);
                if let Some(guard) = case.guard {
                    self.expr(guard, scope);
                }
                self.block(case.body, scope, ctx);
            }
        } else if let Some(t) = stmt.as_try() {
            self.nested(t.body, scope, ctx, false);
            for (i, handler) in t.handlers.iter().enumerate() {
                let Some(h) = handler.as_except_handler() else {
                    continue;
                };
                if h.type_.is_none() && i + 1 < t.handlers.len() {
                    self.problem(handler.range().start, "default 'except:' must be last");
                }
                if let Some(type_) = h.type_ {
                    self.expr(type_, scope);
                }
                if let Some(name) = h.name {
                    self.event(scope, handler.range().start, name, Use::Store);
                }
                self.nested(h.body, scope, ctx, false);
            }
            self.nested(t.orelse, scope, ctx, false);
            self.nested(t.finalbody, scope, ctx, false);
        } else {
            self.simple_stmt(stmt, scope, ctx);
        }
    }

    /// Imports, declarations, `break`/`continue` and the statements that only hold expressions.
    fn simple_stmt(&mut self, stmt: &'t Node, scope: usize, ctx: Ctx) {
        let at = stmt.range().start;
        match stmt.kind() {
            kind::IMPORT | kind::IMPORT_FROM => {
                let from_future = stmt.is(kind::IMPORT_FROM) && stmt.label() == Some("__future__");
                if from_future && scope != 0 {
                    self.problem(at, "from __future__ imports must occur at the beginning of the file");
                }
                for alias in stmt.items().unwrap_or_default() {
                    let full = alias.label().unwrap_or_default();
                    if full == "*" {
                        if self.scopes[scope].kind != Kind::Module {
                            self.problem(at, "import * only allowed at module level");
                        }
                        self.event(scope, at, "*", Use::StarImport);
                        continue;
                    }
                    let bound = match alias.asname() {
                        Some(asname) => asname,
                        None if stmt.is(kind::IMPORT) => full.split('.').next().unwrap_or(full),
                        None => full,
                    };
                    self.event(scope, at, bound, Use::Import);
                }
            }
            kind::GLOBAL | kind::NONLOCAL => self.declaration(stmt, scope),
            kind::BREAK | kind::CONTINUE if !ctx.in_loop => {
                let message = if stmt.is(kind::BREAK) {
                    "'break' outside loop"
                } else {
                    "'continue' not properly in loop"
                };
                self.problem(at, message);
            }
            _ => {
                for child in stmt.children() {
                    self.expr(child, scope);
                }
            }
        }
    }

    fn declaration(&mut self, stmt: &'t Node, scope: usize) {
        let at = stmt.range().start;
        let global = stmt.is(kind::GLOBAL);
        let kind = self.scopes[scope].kind;
        if !global && kind == Kind::Module {
            self.problem(at, "nonlocal declaration not allowed at module level");
            return;
        }
        let word = if global { "global" } else { "nonlocal" };
        for name in stmt.items().unwrap_or_default() {
            let name = name.label().unwrap_or_default();
            // CPython's order: a parameter, then a use, then an annotation, then a binding.
            let (mut param, mut used, mut annotated, mut bound, mut other) = (false, false, false, false, false);
            for (_, n, u) in &self.scopes[scope].events {
                if &**n == name {
                    match u {
                        Use::Param => param = true,
                        Use::Load => used = true,
                        Use::Annotated => annotated = true,
                        Use::Store => bound = true,
                        Use::Global if !global => other = true,
                        Use::Nonlocal if global => other = true,
                        _ => {}
                    }
                }
            }
            let message = if param {
                Some(format!("name '{name}' is parameter and {word}"))
            } else if used {
                Some(format!("name '{name}' is used prior to {word} declaration"))
            } else if annotated {
                Some(format!("annotated name '{name}' can't be {word}"))
            } else if bound {
                Some(format!("name '{name}' is assigned to before {word} declaration"))
            } else if other {
                Some(format!("name '{name}' is nonlocal and global"))
            } else {
                None
            };
            if let Some(message) = message {
                self.problem(at, message);
            }
            self.event(scope, at, name, if global { Use::Global } else { Use::Nonlocal });
        }
    }

    /// `await`, `async for`, `async with` and async comprehensions need an `async def`.
    fn needs_async(&mut self, scope: usize, at: usize, what: AsyncUse) {
        let mut current = scope;
        let mut through_comprehension = false;
        loop {
            match self.scopes[current].kind {
                Kind::Comprehension { genexp: true, .. } => return,
                Kind::Comprehension { genexp: false, .. } => {
                    through_comprehension = true;
                    match self.scopes[current].parent {
                        Some(parent) => current = parent,
                        None => return,
                    }
                }
                Kind::Function {
                    is_async: true,
                    lambda: false,
                } => return,
                kind => {
                    let message = if through_comprehension {
                        "asynchronous comprehension outside of an asynchronous function"
                    } else if what == AsyncUse::Await && matches!(kind, Kind::Module | Kind::Class) {
                        "'await' outside function"
                    } else {
                        what.outside_async()
                    };
                    self.problem(at, message);
                    return;
                }
            }
        }
    }
}

/// What needs an `async def` around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AsyncUse {
    /// `await`.
    Await,
    /// `async for`.
    For,
    /// `async with`.
    With,
    /// An asynchronous comprehension.
    Comprehension,
}

impl AsyncUse {
    /// CPython's message when it is outside an `async def`.
    fn outside_async(self) -> &'static str {
        match self {
            AsyncUse::Await => "'await' outside async function",
            AsyncUse::For => "'async for' outside async function",
            AsyncUse::With => "'async with' outside async function",
            AsyncUse::Comprehension => "asynchronous comprehension outside of an asynchronous function",
        }
    }
}

/// The features `from __future__ import` accepts in CPython 3.
const FUTURE_FEATURES: &[&str] = &[
    "nested_scopes",
    "generators",
    "division",
    "absolute_import",
    "with_statement",
    "print_function",
    "unicode_literals",
    "barry_as_FLUFL",
    "generator_stop",
    "annotations",
];
