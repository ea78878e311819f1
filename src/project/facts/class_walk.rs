//! Reading a class body: methods, attributes, compositions (`self.attr = Class(...)`) and
//! delegation uses (`self.attr.method(...)`).

use super::names::{dotted, imports, target_names};
use super::*;
use crate::source::SourceFile;
use crate::syntax::{kind, Node};

pub(super) struct ClassWalker<'a, 'b, 'n> {
    pub(super) source: &'a SourceFile,
    pub(super) ctx: &'a ModuleContext<'b>,
    pub(super) facts: ClassFacts,
    pub(super) nested: Vec<&'n Node>,
}

impl<'n> ClassWalker<'_, '_, 'n> {
    fn line(&self, offset: usize) -> usize {
        self.source.lines().line_of(offset)
    }

    pub(super) fn body(&mut self, list: &'n Node) {
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
