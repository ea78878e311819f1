//! Scopes of a parsed file, as CPython's symbol table sees them: which names each scope binds,
//! uses and declares, in source order, plus the errors CPython's compiler (not its parser) finds
//! while walking the tree (`return` outside a function, `await` outside `async def`, misplaced
//! `break`, `from __future__` after code...).

use crate::syntax::{Node, ABSENT, LIST};

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
pub(crate) struct Scope<'t> {
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
pub(crate) fn analyze(root: &Node) -> (Vec<Scope<'_>>, Vec<Problem>) {
    let mut walker = Walker {
        scopes: vec![Scope::new(Kind::Module, None)],
        problems: Vec::new(),
        lazy_annotations: false,
    };
    if let Some(body) = root.children().first() {
        walker.future_imports(body);
        walker.block(body, 0, Ctx::default());
    }
    (walker.scopes, walker.problems)
}

impl Scope<'_> {
    fn new<'t>(kind: Kind, parent: Option<usize>) -> Scope<'t> {
        Scope {
            kind,
            parent,
            events: Vec::new(),
            yields: Vec::new(),
            value_returns: Vec::new(),
        }
    }
}

struct Walker<'t> {
    scopes: Vec<Scope<'t>>,
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
        self.scopes.push(Scope::new(kind, Some(parent)));
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
            let is_future = stmt.kind() == "ImportFrom" && stmt.label() == Some("__future__");
            let is_docstring = i == 0
                && stmt.kind() == "Expr"
                && stmt.children()[0].kind() == "Constant"
                && stmt.children()[0].label().is_some_and(|l| l.starts_with("str:"));
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
        let c = stmt.children();
        match stmt.kind() {
            "FunctionDef" | "AsyncFunctionDef" => {
                self.exprs(&c[0], scope);
                let is_async = stmt.kind() == "AsyncFunctionDef";
                let inner = self.new_scope(
                    Kind::Function {
                        is_async,
                        lambda: false,
                    },
                    scope,
                );
                self.arguments(&c[1], scope, inner);
                self.annotation(&c[2], scope);
                self.exprs(&c[3], scope);
                self.event(scope, at, stmt.label().unwrap_or_default(), Use::Store);
                self.block(&c[4], inner, Ctx::default());
            }
            "ClassDef" => {
                self.exprs(&c[0], scope);
                self.exprs(&c[1], scope);
                self.exprs(&c[2], scope);
                self.exprs(&c[3], scope);
                let inner = self.new_scope(Kind::Class, scope);
                self.block(&c[4], inner, Ctx::default());
                self.event(scope, at, stmt.label().unwrap_or_default(), Use::Store);
            }
            "Return" => {
                let (owner, _) = self.enclosing_non_comprehension(scope);
                match self.scopes[owner].kind {
                    Kind::Function { .. } => {
                        if c[0].kind() != ABSENT {
                            self.scopes[owner].value_returns.push(at);
                        }
                    }
                    _ => self.problem(at, "'return' outside function"),
                }
                self.expr(&c[0], scope);
            }
            "Delete" => self.targets(&c[0], scope),
            "Assign" => {
                self.expr(&c[1], scope);
                self.targets(&c[0], scope);
            }
            "AugAssign" => {
                if c[0].kind() == "Name" {
                    self.event(scope, at, c[0].label().unwrap_or_default(), Use::AugLoad);
                }
                self.expr(&c[1], scope);
                self.target(&c[0], scope);
            }
            "AnnAssign" => {
                self.expr(&c[2], scope);
                self.annotation(&c[1], scope);
                if c[0].kind() == "Name" && stmt.label() == Some("simple") {
                    let name = c[0].label().unwrap_or_default();
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
                    self.event(scope, c[0].range().start, name, Use::Annotated);
                    if c[2].kind() != ABSENT {
                        self.event(scope, c[0].range().start, name, Use::Store);
                    }
                } else {
                    self.target(&c[0], scope);
                }
            }
            "TypeAlias" => {
                self.target(&c[0], scope);
                self.exprs(&c[1], scope);
                self.expr(&c[2], scope);
            }
            "For" | "AsyncFor" => {
                if stmt.kind() == "AsyncFor" {
                    self.needs_async(scope, at, "'async for' outside async function");
                }
                self.expr(&c[1], scope);
                self.target(&c[0], scope);
                self.nested(&c[2], scope, ctx, true);
                self.nested(&c[3], scope, ctx, false);
            }
            "While" => {
                self.expr(&c[0], scope);
                self.nested(&c[1], scope, ctx, true);
                self.nested(&c[2], scope, ctx, false);
            }
            "If" => {
                self.expr(&c[0], scope);
                self.block(&c[1], scope, ctx);
                self.block(&c[2], scope, ctx);
            }
            "With" | "AsyncWith" => {
                if stmt.kind() == "AsyncWith" {
                    self.needs_async(scope, at, "'async with' outside async function");
                }
                for item in c[0].children() {
                    self.expr(&item.children()[0], scope);
                    self.target(&item.children()[1], scope);
                }
                self.nested(&c[1], scope, ctx, false);
            }
            "Match" => {
                self.expr(&c[0], scope);
                for case in c[1].children() {
                    self.pattern(&case.children()[0], scope);
                    self.expr(&case.children()[1], scope);
                    self.block(&case.children()[2], scope, ctx);
                }
            }
            "Try" | "TryStar" => {
                self.nested(&c[0], scope, ctx, false);
                let handlers = c[1].children();
                for (i, handler) in handlers.iter().enumerate() {
                    let h = handler.children();
                    if h[0].kind() == ABSENT && i + 1 < handlers.len() {
                        self.problem(handler.range().start, "default 'except:' must be last");
                    }
                    self.expr(&h[0], scope);
                    if h[1].kind() != ABSENT {
                        self.event(
                            scope,
                            handler.range().start,
                            h[1].label().unwrap_or_default(),
                            Use::Store,
                        );
                    }
                    self.nested(&h[2], scope, ctx, false);
                }
                self.nested(&c[2], scope, ctx, false);
                self.nested(&c[3], scope, ctx, false);
            }
            "Import" | "ImportFrom" => {
                let from_future = stmt.kind() == "ImportFrom" && stmt.label() == Some("__future__");
                if from_future && scope != 0 {
                    self.problem(at, "from __future__ imports must occur at the beginning of the file");
                }
                for alias in c[0].children() {
                    let full = alias.label().unwrap_or_default();
                    if full == "*" {
                        if self.scopes[scope].kind != Kind::Module {
                            self.problem(at, "import * only allowed at module level");
                        }
                        self.event(scope, at, "*", Use::StarImport);
                        continue;
                    }
                    let bound = match alias.children().first().and_then(Node::label) {
                        Some(asname) => asname,
                        None if stmt.kind() == "Import" => full.split('.').next().unwrap_or(full),
                        None => full,
                    };
                    self.event(scope, at, bound, Use::Import);
                }
            }
            "Global" | "Nonlocal" => self.declaration(stmt, scope),
            "Break" | "Continue" if !ctx.in_loop => {
                let message = if stmt.kind() == "Break" {
                    "'break' outside loop"
                } else {
                    "'continue' not properly in loop"
                };
                self.problem(at, message);
            }
            _ => {
                for child in c {
                    self.expr(child, scope);
                }
            }
        }
    }

    fn declaration(&mut self, stmt: &'t Node, scope: usize) {
        let at = stmt.range().start;
        let global = stmt.kind() == "Global";
        let kind = self.scopes[scope].kind;
        if !global && kind == Kind::Module {
            self.problem(at, "nonlocal declaration not allowed at module level");
            return;
        }
        let word = if global { "global" } else { "nonlocal" };
        for name in stmt.children()[0].children() {
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
    fn needs_async(&mut self, scope: usize, at: usize, message: &str) {
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
                    } else if message.starts_with("'await'") && matches!(kind, Kind::Module | Kind::Class) {
                        "'await' outside function"
                    } else {
                        message
                    };
                    self.problem(at, message);
                    return;
                }
            }
        }
    }

    fn arguments(&mut self, args: &'t Node, outer: usize, inner: usize) {
        let mut seen: Vec<&'t str> = Vec::new();
        for child in args.children() {
            let items: Vec<(&'t Node, Option<&'t Node>)> = match child.kind() {
                LIST => child
                    .children()
                    .iter()
                    .map(|item| (&item.children()[0], Some(&item.children()[1])))
                    .collect(),
                "arg" => vec![(child, None)],
                _ => Vec::new(),
            };
            for (arg, default) in items {
                if let Some(default) = default {
                    self.expr(default, outer);
                }
                self.annotation(&arg.children()[0], outer);
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
    }

    /// An annotation: evaluated where it stands, unless annotations are lazy.
    fn annotation(&mut self, node: &'t Node, scope: usize) {
        if !self.lazy_annotations {
            self.expr(node, scope);
        }
    }

    fn exprs(&mut self, list: &'t Node, scope: usize) {
        for child in list.children() {
            self.expr(child, scope);
        }
    }

    /// An assignment target: names in it are stored, the rest (`a.b`, `a[i]`) is loaded.
    fn target(&mut self, node: &'t Node, scope: usize) {
        match node.kind() {
            "Name" => self.event(scope, node.range().start, node.label().unwrap_or_default(), Use::Store),
            "Tuple" | "List" | LIST => {
                for child in node.children() {
                    self.target(child, scope);
                }
            }
            "Starred" => self.target(&node.children()[0], scope),
            _ => self.expr(node, scope),
        }
    }

    fn targets(&mut self, list: &'t Node, scope: usize) {
        for child in list.children() {
            self.target(child, scope);
        }
    }

    fn pattern(&mut self, node: &'t Node, scope: usize) {
        match node.kind() {
            "identifier" => self.event(scope, node.range().start, node.label().unwrap_or_default(), Use::Store),
            "MatchValue" => self.expr(&node.children()[0], scope),
            "MatchClass" => {
                let c = node.children();
                self.expr(&c[0], scope);
                self.pattern(&c[1], scope);
                self.pattern(&c[3], scope);
            }
            "MatchMapping" => {
                let c = node.children();
                self.exprs(&c[0], scope);
                self.pattern(&c[1], scope);
                self.pattern(&c[2], scope);
            }
            _ => {
                for child in node.children() {
                    self.pattern(child, scope);
                }
            }
        }
    }

    fn comprehension(&mut self, node: &'t Node, scope: usize, kind: Kind) {
        let c = node.children();
        let generators = c.last().expect("comprehensions have generators");
        let inner = self.new_scope(kind, scope);
        for (i, generator) in generators.children().iter().enumerate() {
            let g = generator.children();
            // The first iterable is evaluated in the enclosing scope.
            self.expr(&g[1], if i == 0 { scope } else { inner });
            if generator.label() == Some("async") {
                self.needs_async(
                    inner,
                    generator.range().start,
                    "asynchronous comprehension outside of an asynchronous function",
                );
            }
            self.target(&g[0], inner);
            self.exprs(&g[2], inner);
        }
        for element in &c[..c.len() - 1] {
            self.expr(element, inner);
        }
    }

    fn expr(&mut self, node: &'t Node, scope: usize) {
        stacker::maybe_grow(64 * 1024, 1 << 20, || self.expr_inner(node, scope));
    }

    fn expr_inner(&mut self, node: &'t Node, scope: usize) {
        let at = node.range().start;
        match node.kind() {
            "Name" => self.event(scope, at, node.label().unwrap_or_default(), Use::Load),
            "Lambda" => {
                let inner = self.new_scope(
                    Kind::Function {
                        is_async: false,
                        lambda: true,
                    },
                    scope,
                );
                self.arguments(&node.children()[0], scope, inner);
                self.expr(&node.children()[1], inner);
            }
            "ListComp" => self.comprehension(
                node,
                scope,
                Kind::Comprehension {
                    genexp: false,
                    what: "list comprehension",
                },
            ),
            "SetComp" => self.comprehension(
                node,
                scope,
                Kind::Comprehension {
                    genexp: false,
                    what: "set comprehension",
                },
            ),
            "DictComp" => self.comprehension(
                node,
                scope,
                Kind::Comprehension {
                    genexp: false,
                    what: "dict comprehension",
                },
            ),
            "GeneratorExp" => self.comprehension(
                node,
                scope,
                Kind::Comprehension {
                    genexp: true,
                    what: "generator expression",
                },
            ),
            "NamedExpr" => {
                self.expr(&node.children()[1], scope);
                // The target binds in the innermost scope that is not a comprehension.
                let (owner, _) = self.enclosing_non_comprehension(scope);
                self.target(&node.children()[0], owner);
            }
            "Await" => {
                self.needs_async(scope, at, "'await' outside async function");
                self.expr(&node.children()[0], scope);
            }
            "Yield" | "YieldFrom" => {
                let word = if node.kind() == "Yield" { "yield" } else { "yield from" };
                match self.scopes[scope].kind {
                    Kind::Module | Kind::Class => self.problem(at, format!("'{word}' outside function")),
                    Kind::Comprehension { what, .. } => self.problem(at, format!("'{word}' inside {what}")),
                    Kind::Function { is_async, .. } => {
                        if is_async && node.kind() == "YieldFrom" {
                            self.problem(at, "'yield from' inside async function");
                        }
                        self.scopes[scope].yields.push(at);
                    }
                }
                self.expr(&node.children()[0], scope);
            }
            _ => {
                for child in node.children() {
                    self.expr(child, scope);
                }
            }
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
