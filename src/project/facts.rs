//! Facts about one module, read off the crate's syntax tree once and kept instead of the tree:
//! the import table and other top-level bindings, every class (bases, methods, attributes,
//! compositions, delegation uses) and the `EntryClass` list.

use crate::source::SourceFile;
use crate::syntax::{kind, Node};

/// One import statement's binding, as written and resolved to an absolute module.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[non_exhaustive]
pub struct Import {
    /// 1-based line of the statement.
    pub line: usize,
    /// The module as written (`os.path`, `.deepseek_v2`, `..`).
    pub written: String,
    /// The absolute module name (relative imports resolved); empty when a relative import climbs
    /// above the top-level package.
    pub module: String,
    /// For `from m import name`: the imported name; `None` for `import m`.
    pub name: Option<String>,
    /// The name bound in the importing module (`*` for a star import).
    pub local: String,
    /// Whether the statement sits inside an `if`, `try`, `with` or loop at module level.
    pub conditional: bool,
}

/// What a top-level name is bound to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Binding {
    /// A class of this module (index into [`ModuleFacts::classes`]).
    Class(usize),
    /// A module (`import a.b as c`, `import a`).
    Module(String),
    /// `from module import name`.
    From { module: String, name: String },
    /// `X = a.b.Y`: another (dotted) name of this module's scope.
    Alias(String),
    /// Anything else (functions, other values): shadows earlier bindings, resolves to nothing.
    Opaque,
}

/// A name bound at module level (or in a method, for method-local imports and aliases).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NameBinding {
    pub name: String,
    pub binding: Binding,
    pub conditional: bool,
}

/// How a method is defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum MethodKind {
    /// A plain `def`.
    Method,
    /// Decorated with `@property`, `@cached_property` or `@x.setter` / `@x.deleter`.
    Property,
    /// `@classmethod`.
    Classmethod,
    /// `@staticmethod`.
    Staticmethod,
}

/// One `def` in a class body.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MethodFacts {
    /// The method's name.
    pub name: String,
    /// 1-based line of the `def`.
    pub line: usize,
    /// Plain method, property, classmethod or staticmethod.
    pub kind: MethodKind,
    /// Methods called through `super().m(...)` / `super(C, self).m(...)`.
    pub super_calls: Vec<String>,
    /// Explicit base calls `Base.m(self, ...)`: (dotted base, method).
    pub explicit_calls: Vec<(String, String)>,
    pub(crate) locals: Vec<NameBinding>,
}

/// Where an attribute name of a class comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum AttributeKind {
    /// Assigned in the class body (`x = ...`).
    Class,
    /// Assigned on the instance in a method (`self.x = ...`).
    Instance,
}

/// A name assigned on a class or its instances.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AttributeFacts {
    /// The attribute name.
    pub name: String,
    /// 1-based line of the assignment.
    pub line: usize,
    /// Class body or instance.
    pub kind: AttributeKind,
    /// The method assigning it (instance attributes).
    pub method: Option<String>,
    /// Whether the value assigned is the constant `None`.
    pub is_none: bool,
}

/// `self.<attr> = <Class>(...)` (or a class constructed anywhere inside the assigned value).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompositionFacts {
    /// The instance attribute.
    pub attr: String,
    /// The callee as written, dotted (`DeepseekV3ForCausalLM`, `deepseek_v2.DeepseekV2Model`),
    /// local class aliases substituted.
    pub callee: String,
    /// 1-based line of the assignment.
    pub line: usize,
    /// The method holding the assignment.
    pub method: String,
    /// Whether the call is the assigned value itself (or a branch of `a if c else b`, `a or b`),
    /// rather than a call nested inside it (`nn.ModuleList([A(...) for ...])`, lambdas).
    pub direct: bool,
    /// Whether the assignment sits in a branch, loop, `try` or `with` block of the method.
    pub conditional: bool,
    /// The identifiers this callee may denote (last segment; the original name of a
    /// method-local `from m import A as B`): what a text prefilter must look for.
    pub names: Vec<String>,
}

/// How a class uses one of its instance attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(tag = "kind", rename_all = "snake_case"))]
pub enum UseKind {
    /// `self.attr(...)`.
    Call,
    /// `self.attr.method(...)`.
    MethodCall {
        /// The method called on the attribute.
        method: String,
    },
    /// `self.attr` passed to a call, positionally or by keyword.
    Argument {
        /// The callee, dotted when it is a plain name (`general_mm_embed_routine`), `?` otherwise.
        callee: String,
        /// The keyword, when passed by keyword.
        keyword: Option<String>,
    },
    /// `return self.attr` (a property or accessor handing the attribute out).
    Returned,
}

/// One delegation use of an instance attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct UseFacts {
    /// The instance attribute, `x` in `self.x`.
    pub attr: String,
    /// How it is used: called, a method called on it, passed on, or returned.
    pub kind: UseKind,
    /// 1-based line.
    pub line: usize,
    /// The method where it happens.
    pub method: String,
}

/// One base class expression.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BaseFacts {
    /// The expression as a dotted name (`nn.Module`; `Generic` for `Generic[T]`), or the source
    /// text when it is no name.
    pub text: String,
    /// Whether `text` is a dotted name that can be resolved.
    pub is_name: bool,
    /// 1-based line.
    pub line: usize,
}

/// One class of a module.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClassFacts {
    /// Qualified name within the module (`Outer.Inner`).
    pub name: String,
    /// 1-based line of the `class` keyword.
    pub line: usize,
    /// 1-based last line.
    pub end_line: usize,
    /// Base class expressions, in order.
    pub bases: Vec<BaseFacts>,
    /// Methods defined in the body (also under `if` in the body), in source order.
    pub methods: Vec<MethodFacts>,
    /// Class-level and instance attributes.
    pub attributes: Vec<AttributeFacts>,
    /// Instance attributes holding constructed objects.
    pub compositions: Vec<CompositionFacts>,
    /// Delegation uses of instance attributes.
    pub uses: Vec<UseFacts>,
}

impl ClassFacts {
    /// The simple name (last segment of [`ClassFacts::name`]).
    #[must_use]
    pub fn simple_name(&self) -> &str {
        self.name.rsplit('.').next().unwrap_or(&self.name)
    }

    /// The definitions of method `name` (several when defined in different branches).
    pub fn methods_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a MethodFacts> + 'a {
        self.methods.iter().filter(move |m| m.name == name)
    }

    /// Whether the class body defines method `name`.
    #[must_use]
    pub fn defines(&self, name: &str) -> bool {
        self.methods.iter().any(|m| m.name == name)
    }
}

/// Everything the project keeps of one parsed module.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModuleFacts {
    /// The import table, module-level imports in source order.
    pub imports: Vec<Import>,
    /// Classes at module level (also in `if`/`try` blocks) and nested in class bodies.
    pub classes: Vec<ClassFacts>,
    /// `EntryClass` items as dotted names with their lines.
    pub entry_classes: Vec<(String, usize)>,
    /// `__all__`, when it is a literal list of strings.
    pub all: Option<Vec<String>>,
    pub(crate) bindings: Vec<NameBinding>,
    pub(crate) stars: Vec<String>,
}

impl ModuleFacts {
    /// The bindings a lookup of `name` may produce: the last unconditional binding and every
    /// conditional one after it (Python's later-binding-wins, with both branches of an `if`).
    pub(crate) fn candidates(&self, name: &str) -> Vec<&Binding> {
        latest_bindings(&self.bindings, name)
    }
}

/// Later bindings shadow earlier ones; conditional ones add to the set.
pub(crate) fn latest_bindings<'a>(bindings: &'a [NameBinding], name: &str) -> Vec<&'a Binding> {
    let mut out = Vec::new();
    for b in bindings.iter().filter(|b| b.name == name) {
        if !b.conditional {
            out.clear();
        }
        out.push(&b.binding);
    }
    out
}

/// The module of a file, for relative imports.
pub(crate) struct ModuleContext<'a> {
    pub module: &'a str,
    pub is_package: bool,
}

impl ModuleContext<'_> {
    /// The absolute module named by `level` leading dots and `rest`, or `None` above the top.
    fn absolute(&self, level: usize, rest: &str) -> Option<String> {
        if level == 0 {
            return Some(rest.to_string());
        }
        let mut parts: Vec<&str> = if self.module.is_empty() {
            Vec::new()
        } else {
            self.module.split('.').collect()
        };
        let drop = if self.is_package { level - 1 } else { level };
        if drop > parts.len() {
            return None;
        }
        parts.truncate(parts.len() - drop);
        if !rest.is_empty() {
            parts.push(rest);
        }
        if parts.is_empty() {
            return None;
        }
        Some(parts.join("."))
    }
}

/// Reads the facts of a parsed module.
pub(crate) fn extract(source: &SourceFile, root: &Node, ctx: &ModuleContext<'_>) -> ModuleFacts {
    let mut facts = ModuleFacts::default();
    let Some(body) = root.module_body() else {
        return facts;
    };
    let mut walker = ModuleWalker {
        source,
        ctx,
        facts: &mut facts,
    };
    walker.block(body, false);
    facts
}

struct ModuleWalker<'a, 'b> {
    source: &'a SourceFile,
    ctx: &'a ModuleContext<'b>,
    facts: &'a mut ModuleFacts,
}

impl ModuleWalker<'_, '_> {
    fn line(&self, offset: usize) -> usize {
        self.source.lines().line_of(offset)
    }

    fn block(&mut self, list: &Node, conditional: bool) {
        for stmt in list.children() {
            self.statement(stmt, conditional);
        }
    }

    fn bind(&mut self, name: &str, binding: Binding, conditional: bool) {
        self.facts.bindings.push(NameBinding {
            name: name.to_string(),
            binding,
            conditional,
        });
    }

    fn statement(&mut self, stmt: &Node, conditional: bool) {
        match stmt.kind() {
            kind::CLASS_DEF => {
                let index = self.class(stmt, "");
                self.bind(stmt.label().unwrap_or_default(), Binding::Class(index), conditional);
            }
            kind::FUNCTION_DEF | kind::ASYNC_FUNCTION_DEF => {
                self.bind(stmt.label().unwrap_or_default(), Binding::Opaque, conditional);
            }
            kind::IMPORT | kind::IMPORT_FROM => {
                let line = self.line(stmt.range().start);
                for (import, binding) in imports(stmt, self.ctx, line, conditional) {
                    match &binding {
                        Some(binding) => self.bind(&import.local, binding.clone(), conditional),
                        None => self.facts.stars.push(import.module.clone()),
                    }
                    self.facts.imports.push(import);
                }
            }
            kind::ASSIGN | kind::ANN_ASSIGN | kind::AUG_ASSIGN => self.assignment(stmt, conditional),
            _ => {
                for block in stmt.blocks() {
                    self.block(block, true);
                }
            }
        }
    }

    fn assignment(&mut self, stmt: &Node, conditional: bool) {
        let (targets, value): (Vec<&Node>, Option<&Node>) = if let Some(assign) = stmt.as_assign() {
            (assign.targets.iter().collect(), Some(assign.value))
        } else if let Some(ann) = stmt.as_ann_assign() {
            (vec![ann.target], ann.value)
        } else if let Some(aug) = stmt.as_aug_assign() {
            (vec![aug.target], Some(aug.value))
        } else {
            (Vec::new(), None)
        };
        let augmented = stmt.is(kind::AUG_ASSIGN);
        for target in targets {
            let Some(name) = target.as_name() else {
                continue;
            };
            match name {
                "EntryClass" => {
                    if !augmented {
                        self.facts.entry_classes.clear();
                    }
                    if let Some(value) = value {
                        let mut items = Vec::new();
                        entry_items(value, &mut items);
                        for item in items {
                            let line = self.line(item.range().start);
                            if let Some(d) = dotted(item) {
                                self.facts.entry_classes.push((d, line));
                            }
                        }
                    }
                }
                "__all__" => {
                    let names: Option<Vec<String>> = value.and_then(string_list);
                    match (augmented, names) {
                        (true, Some(more)) => self.facts.all.get_or_insert_with(Vec::new).extend(more),
                        (false, names) => self.facts.all = names,
                        (true, None) => {}
                    }
                }
                _ => {}
            }
            if augmented {
                continue;
            }
            let binding = match value.and_then(dotted) {
                Some(d) if d != name => Binding::Alias(d),
                _ => Binding::Opaque,
            };
            self.bind(name, binding, conditional);
        }
    }

    /// Records the class `stmt` (and classes nested in its body); returns its index.
    fn class(&mut self, stmt: &Node, prefix: &str) -> usize {
        let name = format!("{prefix}{}", stmt.label().unwrap_or_default());
        let range = stmt.range();
        let bases = stmt
            .field("bases")
            .map(|list| {
                list.children()
                    .iter()
                    .map(|b| {
                        let named = b.as_subscript().map_or(b, |s| s.value);
                        let (text, is_name) = match dotted(named) {
                            Some(d) => (d, true),
                            None => (self.source.slice(b.range()).to_string(), false),
                        };
                        BaseFacts {
                            text,
                            is_name,
                            line: self.line(b.range().start),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        let index = self.facts.classes.len();
        self.facts.classes.push(ClassFacts {
            name: name.clone(),
            line: self.line(range.start),
            end_line: self.line(range.end.saturating_sub(1).max(range.start)),
            bases,
            methods: Vec::new(),
            attributes: Vec::new(),
            compositions: Vec::new(),
            uses: Vec::new(),
        });
        let mut class = ClassWalker {
            source: self.source,
            ctx: self.ctx,
            facts: ClassFacts {
                name: name.clone(),
                line: 0,
                end_line: 0,
                bases: Vec::new(),
                methods: Vec::new(),
                attributes: Vec::new(),
                compositions: Vec::new(),
                uses: Vec::new(),
            },
            nested: Vec::new(),
        };
        if let Some(body) = stmt.field("body") {
            class.body(body);
        }
        let ClassWalker { facts, nested, .. } = class;
        let slot = &mut self.facts.classes[index];
        slot.methods = facts.methods;
        slot.attributes = facts.attributes;
        slot.compositions = facts.compositions;
        slot.uses = facts.uses;
        let inner_prefix = format!("{name}.");
        for inner in nested {
            self.class(inner, &inner_prefix);
        }
        index
    }
}

struct ClassWalker<'a, 'b, 'n> {
    source: &'a SourceFile,
    ctx: &'a ModuleContext<'b>,
    facts: ClassFacts,
    nested: Vec<&'n Node>,
}

impl<'n> ClassWalker<'_, '_, 'n> {
    fn line(&self, offset: usize) -> usize {
        self.source.lines().line_of(offset)
    }

    fn body(&mut self, list: &'n Node) {
        for stmt in list.children() {
            match stmt.kind() {
                kind::FUNCTION_DEF | kind::ASYNC_FUNCTION_DEF => self.method(stmt),
                kind::CLASS_DEF => self.nested.push(stmt),
                kind::ASSIGN | kind::ANN_ASSIGN => {
                    let (targets, value): (Vec<&Node>, Option<&Node>) = if let Some(assign) = stmt.as_assign() {
                        (assign.targets.iter().collect(), Some(assign.value))
                    } else if let Some(ann) = stmt.as_ann_assign() {
                        (vec![ann.target], ann.value)
                    } else {
                        (Vec::new(), None)
                    };
                    for target in targets {
                        for name in target_names(target) {
                            self.facts.attributes.push(AttributeFacts {
                                name,
                                line: self.line(target.range().start),
                                kind: AttributeKind::Class,
                                method: None,
                                is_none: value.is_some_and(is_none),
                            });
                        }
                    }
                }
                _ => {
                    for block in stmt.blocks() {
                        self.body(block);
                    }
                }
            }
        }
    }

    fn method(&mut self, def: &Node) {
        let name = def.label().unwrap_or_default().to_string();
        let kind = method_kind(def);
        let self_name = def
            .as_function_def()
            .and_then(|f| f.args.positional_parameters())
            .and_then(|params| params.first().and_then(|arg| arg.label()))
            .filter(|_| kind != MethodKind::Staticmethod)
            .map(str::to_string);
        let mut method = MethodFacts {
            name: name.clone(),
            line: self.line(def.range().start),
            kind,
            super_calls: Vec::new(),
            explicit_calls: Vec::new(),
            locals: Vec::new(),
        };
        let Some(body) = def.field("body") else {
            self.facts.methods.push(method);
            return;
        };
        if let Some(me) = self_name.as_deref() {
            let mut scan = MethodScan {
                walker: self,
                me,
                method: &name,
                locals: Vec::new(),
                aliases: Vec::new(),
            };
            scan.block(body, false);
            let locals = std::mem::take(&mut scan.locals);
            method.locals = locals;
            let mut uses = Vec::new();
            let mut supers = Vec::new();
            let mut explicit = Vec::new();
            body.walk(&mut |node| {
                match node.kind() {
                    kind::CALL => call_facts(node, me, &mut uses, &mut supers, &mut explicit),
                    kind::RETURN => {
                        if let Some(attr) = node.as_return().flatten().and_then(|v| self_attr(v, me)) {
                            uses.push((attr.to_string(), UseKind::Returned, node.range().start));
                        }
                    }
                    _ => {}
                }
                true
            });
            for (attr, kind, offset) in uses {
                let line = self.line(offset);
                self.facts.uses.push(UseFacts {
                    attr,
                    kind,
                    line,
                    method: name.clone(),
                });
            }
            method.super_calls = supers;
            method.explicit_calls = explicit;
        }
        self.facts.methods.push(method);
    }
}

/// Assignment scan of one method body: compositions, instance attributes, local aliases.
struct MethodScan<'w, 'a, 'b, 'n> {
    walker: &'w mut ClassWalker<'a, 'b, 'n>,
    me: &'w str,
    method: &'w str,
    locals: Vec<NameBinding>,
    /// Local names bound to class expressions: `cls = A if c else B`.
    aliases: Vec<(String, Vec<String>)>,
}

impl MethodScan<'_, '_, '_, '_> {
    fn block(&mut self, list: &Node, conditional: bool) {
        for stmt in list.children() {
            match stmt.kind() {
                kind::FUNCTION_DEF | kind::ASYNC_FUNCTION_DEF | kind::CLASS_DEF => {}
                kind::ASSIGN => {
                    if let Some(assign) = stmt.as_assign() {
                        for target in assign.targets {
                            self.assign(target, assign.value, conditional);
                        }
                    }
                }
                kind::ANN_ASSIGN => {
                    if let Some(ann) = stmt.as_ann_assign() {
                        if let Some(value) = ann.value {
                            self.assign(ann.target, value, conditional);
                        }
                    }
                }
                kind::IMPORT | kind::IMPORT_FROM => {
                    let line = self.walker.line(stmt.range().start);
                    for (import, binding) in imports(stmt, self.walker.ctx, line, true) {
                        if let Some(binding) = binding {
                            self.locals.push(NameBinding {
                                name: import.local,
                                binding,
                                conditional,
                            });
                        }
                    }
                }
                _ => {
                    for block in stmt.blocks() {
                        self.block(block, true);
                    }
                }
            }
        }
    }

    fn assign(&mut self, target: &Node, value: &Node, conditional: bool) {
        match target.kind() {
            kind::TUPLE | kind::LIST_DISPLAY => {
                let targets = target.elements().unwrap_or_default();
                let values = value
                    .elements()
                    .filter(|_| matches!(value.kind(), kind::TUPLE | kind::LIST_DISPLAY));
                match values {
                    Some(values) if values.len() == targets.len() => {
                        for (t, v) in targets.iter().zip(values) {
                            self.assign(t, v, conditional);
                        }
                    }
                    _ => {
                        // `self.layers, self.start, self.end = make_layers(..., lambda: Layer(...))`:
                        // each attribute may hold what the value constructs, none of it directly.
                        for t in targets {
                            if let Some(attr) = self_attr(t, self.me) {
                                self.attribute(attr, t, false);
                                self.compositions(attr, value, conditional, false);
                            }
                        }
                    }
                }
            }
            kind::NAME => {
                let name = target.label().unwrap_or_default().to_string();
                let mut classes = Vec::new();
                class_exprs(value, &mut classes);
                self.aliases.retain(|(n, _)| *n != name);
                if !classes.is_empty() {
                    self.aliases
                        .push((name, classes.into_iter().filter_map(dotted).collect()));
                }
            }
            _ => {
                if let Some(attr) = self_attr(target, self.me) {
                    self.attribute(attr, target, is_none(value));
                    self.compositions(attr, value, conditional, true);
                }
            }
        }
    }

    fn attribute(&mut self, attr: &str, target: &Node, is_none: bool) {
        let line = self.walker.line(target.range().start);
        self.walker.facts.attributes.push(AttributeFacts {
            name: attr.to_string(),
            line,
            kind: AttributeKind::Instance,
            method: Some(self.method.to_string()),
            is_none,
        });
    }

    /// Records the classes `value` may construct as compositions of `attr`; with
    /// `whole == false` the value is not the attribute's alone (a tuple unpacking), so no call
    /// counts as direct.
    fn compositions(&mut self, attr: &str, value: &Node, conditional: bool, whole: bool) {
        let line = self.walker.line(value.range().start);
        let mut direct = Vec::new();
        if whole {
            direct_calls(value, &mut direct);
        }
        let mut seen: Vec<&Node> = Vec::new();
        for call in &direct {
            seen.push(call);
        }
        let mut nested = Vec::new();
        value.walk(&mut |node| {
            if node.is(kind::CALL) && !seen.iter().any(|s| std::ptr::eq(*s, node)) {
                nested.push(node);
            }
            true
        });
        let calls = direct
            .iter()
            .map(|c| (*c, true))
            .chain(nested.iter().map(|c| (*c, false)));
        for (call, is_direct) in calls {
            let Some(callee) = call.as_call().and_then(|call| dotted(call.func)) else {
                continue;
            };
            if callee.split('.').next() == Some(self.me) || callee == "super" {
                continue;
            }
            for callee in self.substitute(&callee) {
                let mut names = vec![callee.rsplit('.').next().unwrap_or(&callee).to_string()];
                let first = callee.split('.').next().unwrap_or(&callee);
                for b in latest_bindings(&self.locals, first) {
                    if let Binding::From { name, .. } = b {
                        if !names.contains(name) {
                            names.push(name.clone());
                        }
                    }
                }
                let fact = CompositionFacts {
                    attr: attr.to_string(),
                    callee,
                    line,
                    method: self.method.to_string(),
                    direct: is_direct,
                    conditional,
                    names,
                };
                if !self.walker.facts.compositions.contains(&fact) {
                    self.walker.facts.compositions.push(fact);
                }
            }
        }
    }

    /// `cls(...)` where `cls = A if c else B` earlier in the method: `A`, `B`.
    fn substitute(&self, callee: &str) -> Vec<String> {
        let (first, rest) = callee.split_once('.').map_or((callee, ""), |(f, r)| (f, r));
        match self.aliases.iter().rev().find(|(n, _)| n == first) {
            Some((_, targets)) => targets
                .iter()
                .map(|t| {
                    if rest.is_empty() {
                        t.clone()
                    } else {
                        format!("{t}.{rest}")
                    }
                })
                .collect(),
            None => vec![callee.to_string()],
        }
    }
}

/// The calls that are the value itself or a branch of it (`a if c else b`, `a or b`, `(a)`).
fn direct_calls<'n>(value: &'n Node, out: &mut Vec<&'n Node>) {
    match value.kind() {
        kind::CALL => out.push(value),
        kind::IF_EXP => {
            for branch in value.if_exp_branches().unwrap_or_default() {
                direct_calls(branch, out);
            }
        }
        kind::BOOL_OP => {
            for v in value.bool_op_values().unwrap_or_default() {
                direct_calls(v, out);
            }
        }
        kind::NAMED_EXPR => {
            if let Some((_, inner)) = value.as_named_expr() {
                direct_calls(inner, out);
            }
        }
        _ => {}
    }
}

/// Class-like expressions a local may be bound to: names, dotted names, branches of them.
fn class_exprs<'n>(value: &'n Node, out: &mut Vec<&'n Node>) {
    match value.kind() {
        kind::NAME | kind::ATTRIBUTE if dotted(value).is_some() => out.push(value),
        kind::IF_EXP => {
            for branch in value.if_exp_branches().unwrap_or_default() {
                class_exprs(branch, out);
            }
        }
        kind::BOOL_OP => {
            for v in value.bool_op_values().unwrap_or_default() {
                class_exprs(v, out);
            }
        }
        _ => {}
    }
}

/// Uses, super calls and explicit base calls found at one `Call` node.
fn call_facts(
    call_node: &Node,
    me: &str,
    uses: &mut Vec<(String, UseKind, usize)>,
    supers: &mut Vec<String>,
    explicit: &mut Vec<(String, String)>,
) {
    let Some(call) = call_node.as_call() else {
        return;
    };
    let func = call.func;
    let at = call_node.range().start;
    if let Some(attribute) = func.as_attribute() {
        let inner = attribute.value;
        let method = attribute.attr;
        if let Some(attr) = self_attr(func, me) {
            uses.push((attr.to_string(), UseKind::Call, at));
        } else if let Some(attr) = self_attr(inner, me) {
            uses.push((
                attr.to_string(),
                UseKind::MethodCall {
                    method: method.to_string(),
                },
                at,
            ));
        } else if inner
            .as_call()
            .is_some_and(|inner| dotted(inner.func).as_deref() == Some("super"))
        {
            if !supers.iter().any(|s| s == method) {
                supers.push(method.to_string());
            }
        } else if let Some(base) = dotted(inner) {
            if call.args.first().is_some_and(|a| a.as_name() == Some(me)) {
                let pair = (base, method.to_string());
                if !explicit.contains(&pair) {
                    explicit.push(pair);
                }
            }
        }
    }
    let callee = dotted(func).unwrap_or_else(|| "?".to_string());
    if INTROSPECTION.contains(&callee.as_str()) {
        return;
    }
    for arg in call.args {
        if let Some(attr) = self_attr(arg, me) {
            uses.push((
                attr.to_string(),
                UseKind::Argument {
                    callee: callee.clone(),
                    keyword: None,
                },
                arg.range().start,
            ));
        }
    }
    for kw in call.keywords {
        if let Some(attr) = kw.as_keyword().and_then(|k| self_attr(k.value, me)) {
            uses.push((
                attr.to_string(),
                UseKind::Argument {
                    callee: callee.clone(),
                    keyword: kw.label().map(str::to_string),
                },
                kw.range().start,
            ));
        }
    }
}

/// Builtins that look at an object without delegating to it.
const INTROSPECTION: &[&str] = &[
    "hasattr",
    "getattr",
    "setattr",
    "delattr",
    "isinstance",
    "issubclass",
    "id",
    "type",
    "print",
    "repr",
    "str",
    "len",
    "callable",
    "vars",
    "dir",
];

/// `attr` when `node` is `<me>.attr`.
fn self_attr<'n>(node: &'n Node, me: &str) -> Option<&'n str> {
    let attribute = node.as_attribute()?;
    (attribute.value.as_name() == Some(me)).then_some(attribute.attr)
}

fn is_none(node: &Node) -> bool {
    node.is(kind::CONSTANT) && node.label() == Some("None")
}

/// `a.b.c` for a chain of attributes over a name.
pub(crate) fn dotted(node: &Node) -> Option<String> {
    match node.kind() {
        kind::NAME => node.label().map(str::to_string),
        kind::ATTRIBUTE => {
            let attribute = node.as_attribute()?;
            let base = dotted(attribute.value)?;
            Some(format!("{base}.{}", attribute.attr))
        }
        _ => None,
    }
}

fn target_names(target: &Node) -> Vec<String> {
    match target.kind() {
        kind::NAME => target.label().map(str::to_string).into_iter().collect(),
        kind::TUPLE | kind::LIST_DISPLAY => target
            .elements()
            .unwrap_or_default()
            .iter()
            .flat_map(target_names)
            .collect(),
        _ => Vec::new(),
    }
}

/// Items of an `EntryClass` value: a name, a list or tuple of names, branches of `a if c else b`.
fn entry_items<'n>(value: &'n Node, out: &mut Vec<&'n Node>) {
    match value.kind() {
        kind::LIST_DISPLAY | kind::TUPLE | kind::SET => {
            for item in value.elements().unwrap_or_default() {
                entry_items(item, out);
            }
        }
        kind::IF_EXP => {
            for branch in value.if_exp_branches().unwrap_or_default() {
                entry_items(branch, out);
            }
        }
        kind::BIN_OP => {
            for operand in value.bin_op_operands().unwrap_or_default() {
                entry_items(operand, out);
            }
        }
        kind::NAME | kind::ATTRIBUTE => out.push(value),
        _ => {}
    }
}

fn string_list(value: &Node) -> Option<Vec<String>> {
    if !matches!(value.kind(), kind::LIST_DISPLAY | kind::TUPLE) {
        return None;
    }
    value
        .elements()?
        .iter()
        .map(|item| {
            item.is(kind::CONSTANT)
                .then(|| item.label().and_then(|l| l.strip_prefix("str:")).map(str::to_string))
                .flatten()
        })
        .collect()
}

fn method_kind(def: &Node) -> MethodKind {
    let Some(decorators) = def.field("decorator_list") else {
        return MethodKind::Method;
    };
    for d in decorators.children() {
        let target = d.as_call().map_or(d, |call| call.func);
        let Some(name) = dotted(target) else { continue };
        let last = name.rsplit('.').next().unwrap_or(&name);
        match last {
            "property" | "cached_property" | "setter" | "getter" | "deleter" => return MethodKind::Property,
            "classmethod" => return MethodKind::Classmethod,
            "staticmethod" => return MethodKind::Staticmethod,
            _ => {}
        }
    }
    MethodKind::Method
}

/// The imports of one `Import` / `ImportFrom` statement with the binding each makes
/// (`None` for a star import).
fn imports(stmt: &Node, ctx: &ModuleContext<'_>, line: usize, conditional: bool) -> Vec<(Import, Option<Binding>)> {
    let mut out = Vec::new();
    let Some(names) = stmt.field("names") else {
        return out;
    };
    if stmt.is(kind::IMPORT) {
        for alias in names.children() {
            let module = alias.label().unwrap_or_default().to_string();
            let asname = alias.asname();
            let (local, bound) = match asname {
                Some(local) => (local.to_string(), module.clone()),
                None => {
                    let top = module.split('.').next().unwrap_or(&module).to_string();
                    (top.clone(), top)
                }
            };
            out.push((
                Import {
                    line,
                    written: module.clone(),
                    module,
                    name: None,
                    local,
                    conditional,
                },
                Some(Binding::Module(bound)),
            ));
        }
        return out;
    }
    let written = stmt.label().unwrap_or_default().to_string();
    let level = written.len() - written.trim_start_matches('.').len();
    let module = ctx.absolute(level, &written[level..]).unwrap_or_default();
    for alias in names.children() {
        let name = alias.label().unwrap_or_default().to_string();
        let local = alias
            .children()
            .first()
            .and_then(Node::label)
            .unwrap_or(&name)
            .to_string();
        let binding = (name != "*").then(|| Binding::From {
            module: module.clone(),
            name: name.clone(),
        });
        out.push((
            Import {
                line,
                written: written.clone(),
                module: module.clone(),
                name: Some(name),
                local,
                conditional,
            },
            binding,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_module;

    fn facts(module: &str, is_package: bool, text: &str) -> ModuleFacts {
        let source = SourceFile::new("t.py", text);
        let root = parse_module(&source).unwrap();
        extract(&source, &root, &ModuleContext { module, is_package })
    }

    #[test]
    fn relative_imports_resolve_against_the_package() {
        let f = facts(
            "p.q.m",
            false,
            "from . import a\nfrom ..b import C as D\nfrom .... import x\nimport os.path\nimport n.o as p\nfrom z import *\n",
        );
        let got: Vec<(String, Option<String>, String)> = f
            .imports
            .iter()
            .map(|i| (i.module.clone(), i.name.clone(), i.local.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("p.q".into(), Some("a".into()), "a".into()),
                ("p.b".into(), Some("C".into()), "D".into()),
                (String::new(), Some("x".into()), "x".into()),
                ("os.path".into(), None, "os".into()),
                ("n.o".into(), None, "p".into()),
                ("z".into(), Some("*".into()), "*".into()),
            ]
        );
        assert_eq!(f.stars, ["z"]);
        let pkg = facts("p", true, "from .a import B\n");
        assert_eq!(pkg.imports[0].module, "p.a");
    }

    #[test]
    fn compositions_cover_branches_conditionals_and_nesting() {
        let text = "\
class W(base.M):
    def __init__(self, c):
        self.lm = None
        if c:
            self.lm = A(c)
        else:
            self.lm = B(c) if c.x else None
        cls = C if c.y else D
        self.m = cls(c)
        self.layers = make([E(i) for i in range(3)])
        self.lm2, self.k = F(), 3
        self.blocks, self.first = build(lambda i: G(i))

    @property
    def model(self):
        return self.lm

    def forward(self, x):
        y = self.lm(x)
        self.lm.set_layers(1)
        return route(x, language_model=self.lm)
";
        let f = facts("m", false, text);
        let class = &f.classes[0];
        assert_eq!(class.bases[0].text, "base.M");
        let comps: Vec<(&str, &str, bool, bool)> = class
            .compositions
            .iter()
            .map(|c| (c.attr.as_str(), c.callee.as_str(), c.direct, c.conditional))
            .collect();
        assert_eq!(
            comps,
            [
                ("lm", "A", true, true),
                ("lm", "B", true, true),
                ("m", "C", true, false),
                ("m", "D", true, false),
                ("layers", "make", true, false),
                ("layers", "E", false, false),
                ("layers", "range", false, false),
                ("lm2", "F", true, false),
                ("blocks", "build", false, false),
                ("blocks", "G", false, false),
                ("first", "build", false, false),
                ("first", "G", false, false),
            ]
        );
        assert!(class.attributes.iter().any(|a| a.name == "lm" && a.is_none));
        let uses: Vec<(&str, &UseKind)> = class.uses.iter().map(|u| (u.attr.as_str(), &u.kind)).collect();
        assert_eq!(uses.len(), 4);
        assert_eq!(uses[0], ("lm", &UseKind::Returned));
        assert_eq!(uses[1], ("lm", &UseKind::Call));
        assert!(matches!(uses[2].1, UseKind::MethodCall { method } if method == "set_layers"));
        assert!(
            matches!(uses[3].1, UseKind::Argument { callee, keyword: Some(k) } if callee == "route" && k == "language_model")
        );
        assert_eq!(class.methods[1].kind, MethodKind::Property);
    }

    #[test]
    fn entry_class_all_and_super_calls() {
        let text = "\
class A(nn.Module):
    def __init__(self):
        super().__init__()
        nn.Module.__init__(self)
class B: pass
EntryClass = [A, B]
EntryClass += [m.C]
__all__ = ['A']
";
        let f = facts("m", false, text);
        assert_eq!(
            f.entry_classes,
            [("A".to_string(), 6), ("B".to_string(), 6), ("m.C".to_string(), 7)]
        );
        assert_eq!(f.all.as_deref(), Some(&["A".to_string()][..]));
        let init = &f.classes[0].methods[0];
        assert_eq!(init.super_calls, ["__init__"]);
        assert_eq!(init.explicit_calls, [("nn.Module".to_string(), "__init__".to_string())]);
    }
}
