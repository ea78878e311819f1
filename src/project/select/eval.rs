//! Which classes an expression stands for: a constructor call, a method's return value, a class
//! attribute, an `__init__` parameter (bound by its default or a subclass's `super().__init__`
//! call) or a local variable, followed through the files that define them.

use super::*;

impl Resolver<'_, '_> {
    /// The classes an assigned value constructs. `c` is the instance's class (for `self.m`
    /// lookups), `k` the class whose method `method` holds the value.
    pub(super) fn eval(
        &mut self,
        c: ClassId,
        k: ClassId,
        method: &Node,
        value: &Node,
        notes: &mut Vec<String>,
        depth: usize,
    ) -> Vec<ClassId> {
        if depth > 8 {
            return Vec::new();
        }
        match value.kind() {
            kind::CALL => match value.as_call() {
                Some(call) => self.callee(c, k, method, call.func, notes, depth),
                None => Vec::new(),
            },
            kind::IF_EXP => {
                let mut out = Vec::new();
                for branch in value.if_exp_branches().unwrap_or_default() {
                    out.extend(self.eval(c, k, method, branch, notes, depth + 1));
                }
                out
            }
            kind::BOOL_OP => value
                .bool_op_values()
                .unwrap_or_default()
                .iter()
                .flat_map(|v| self.eval(c, k, method, v, notes, depth + 1))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The classes a called expression denotes.
    fn callee(
        &mut self,
        c: ClassId,
        k: ClassId,
        method: &Node,
        func: &Node,
        notes: &mut Vec<String>,
        depth: usize,
    ) -> Vec<ClassId> {
        let file = self.graph.class(k).key.file;
        let text = dotted(func).unwrap_or_default();
        // self.m(...): a method returning an instance, or a class attribute holding a class.
        if let Some(m) = text.strip_prefix("self.").filter(|m| !m.contains('.')) {
            if let Some(owner) = self.graph.owner_of(c, m) {
                let owner_file = self.graph.class(owner).key.file;
                let path = format!("{}.{m}", self.graph.class(owner).name);
                let returns: Vec<(Node, Node)> = self
                    .tree(owner_file)
                    .map(|p| {
                        p.find_all(&path)
                            .iter()
                            .flat_map(|d| {
                                let fn_node = p.node(d).clone();
                                returned_values(&fn_node).into_iter().map(move |v| (v, fn_node.clone()))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                return returns
                    .iter()
                    .flat_map(|(v, fn_node)| self.eval(c, owner, fn_node, v, notes, depth + 1))
                    .collect();
            }
            for &base in self.graph.mro(c).to_vec().iter() {
                let bfile = self.graph.class(base).key.file;
                let class_path = self.graph.class(base).name.clone();
                let Some(expr) = self.tree(bfile).and_then(|p| class_attribute(p, &class_path, m)) else {
                    continue;
                };
                return self.class_expr(&[(expr, bfile)], method, notes);
            }
            notes.push(format!("`{text}` is neither a method nor a class attribute"));
            return Vec::new();
        }
        if let Some(name) = func.as_name() {
            if let Some(local) = local_value(method, name) {
                let found = self.class_expr(&[(local.clone(), file)], method, notes);
                if found.is_empty() {
                    let text = self.project.file(file).text().get(local.range()).unwrap_or("?");
                    notes.push(format!(
                        "`{name}` is computed when the model is built (`{name} = {text}`)"
                    ));
                }
                return found;
            }
            if param_names(method).iter().any(|p| p == name) {
                let exprs = self.parameter_values(c, k, method, name);
                if exprs.is_empty() {
                    notes.push(format!("parameter `{name}` has no default and no subclass passes it"));
                }
                return self.class_expr(&exprs, method, notes);
            }
        }
        if text.is_empty() || text.starts_with("self.") {
            return Vec::new();
        }
        self.resolve(file, method, &text, notes)
    }

    /// Classes denoted by class expressions (`A`, `mod.A`, `A if c else B`).
    fn class_expr(&mut self, exprs: &[ClassExpr], method: &Node, notes: &mut Vec<String>) -> Vec<ClassId> {
        let mut out = Vec::new();
        for (expr, file) in exprs {
            match expr.kind() {
                kind::IF_EXP => {
                    let branches: Vec<ClassExpr> = expr
                        .if_exp_branches()
                        .unwrap_or_default()
                        .into_iter()
                        .map(|branch| (branch.clone(), *file))
                        .collect();
                    out.extend(self.class_expr(&branches, method, notes));
                }
                kind::NAME | kind::ATTRIBUTE => {
                    if let Some(text) = dotted(expr) {
                        out.extend(self.resolve(*file, method, &text, notes));
                    }
                }
                _ => {}
            }
        }
        out
    }

    fn resolve(&mut self, file: usize, method: &Node, text: &str, notes: &mut Vec<String>) -> Vec<ClassId> {
        // Method-local imports (`from .x import A` inside `__init__`) shadow module names.
        let locals = self
            .project
            .facts(file)
            .ok()
            .and_then(|facts| {
                let name = method.label()?;
                let line = self
                    .project
                    .file(file)
                    .text()
                    .get(..method.range().start)?
                    .matches('\n')
                    .count()
                    + 1;
                facts
                    .classes
                    .iter()
                    .flat_map(|c| &c.methods)
                    .filter(|m| m.name == name && m.line <= line)
                    .max_by_key(|m| m.line)
                    .map(|m| m.locals.clone())
            })
            .unwrap_or_default();
        let mut out = Vec::new();
        for r in self.project.resolve(file, &locals, text) {
            match r {
                Resolved::Class(key) => {
                    if let Some(id) = self.graph.id_of(key) {
                        out.push(id);
                    }
                }
                Resolved::External(e) => notes.push(format!("`{text}` is `{e}`, outside the package")),
                Resolved::Module(m) => notes.push(format!("`{text}` is module `{m}`")),
                Resolved::Unresolved(why) => notes.push(format!("`{text}`: {why}")),
            }
        }
        out
    }

    /// The expressions a parameter of `k`'s method takes when an instance of `c` is built: the
    /// value a subclass's `super().<method>(...)` passes for it, or its default.
    fn parameter_values(&mut self, c: ClassId, k: ClassId, method: &Node, param: &str) -> Vec<ClassExpr> {
        let name = method.label().unwrap_or_default().to_string();
        let k_file = self.graph.class(k).key.file;
        let own_default = || {
            param_default(method, param)
                .map(|d| vec![(d, k_file)])
                .unwrap_or_default()
        };
        // The definers of the method between c and k, most derived first.
        let mro: Vec<ClassId> = self.graph.mro(c).to_vec();
        let Some(end) = mro.iter().position(|&x| x == k) else {
            return own_default();
        };
        let definers: Vec<ClassId> = mro[..=end]
            .iter()
            .copied()
            .filter(|&x| self.graph.facts(x).defines(&name))
            .collect();
        if definers.len() < 2 {
            return own_default();
        }
        // env: parameter -> expression, evaluated from the most derived definer down to k.
        let mut env: HashMap<String, ClassExpr> = HashMap::new();
        let mut previous: Option<(Node, usize)> = None;
        for &d in &definers {
            let d_file = self.graph.class(d).key.file;
            let path = format!("{}.{name}", self.graph.class(d).name);
            let Some(fn_node) = self
                .tree(d_file)
                .and_then(|p| p.find_all(&path).first().map(|def| p.node(def).clone()))
            else {
                return own_default();
            };
            let params = param_names(&fn_node);
            let mut next: HashMap<String, ClassExpr> = HashMap::new();
            for p in &params {
                if let Some(default) = param_default(&fn_node, p) {
                    next.insert(p.clone(), (default, d_file));
                }
            }
            if let Some((prev_fn, prev_file)) = &previous {
                if let Some(call) = super_call(prev_fn, &name).as_ref().and_then(Node::as_call) {
                    for (i, arg) in call.args.iter().enumerate() {
                        if let Some(p) = params.get(i + 1) {
                            next.insert(p.clone(), bind(arg, &env, *prev_file));
                        }
                    }
                    for kw in call.keywords.iter().filter_map(Node::as_keyword) {
                        if let Some(label) = kw.arg {
                            next.insert(label.to_string(), bind(kw.value, &env, *prev_file));
                        }
                    }
                }
            }
            env = next;
            previous = Some((fn_node, d_file));
        }
        env.get(param).cloned().map(|e| vec![e]).unwrap_or_default()
    }
}

/// An argument expression in the caller's environment: a caller parameter stands for its value.
fn bind(arg: &Node, env: &HashMap<String, ClassExpr>, file: usize) -> ClassExpr {
    if let Some(value) = arg.as_name().and_then(|n| env.get(n)) {
        return value.clone();
    }
    (arg.clone(), file)
}

/// The `super().<name>(...)` call in a method body (not in nested definitions).
fn super_call(fn_node: &Node, name: &str) -> Option<Node> {
    let mut found = None;
    fn_node.field("body")?.walk(&mut |n| {
        if found.is_some() || n.is_definition() {
            return false;
        }
        if n.as_call().is_some_and(|call| is_super_method(call.func, name)) {
            found = Some(n.clone());
            return false;
        }
        true
    });
    found
}

/// Whether `func` is `super().<name>`.
pub(super) fn is_super_method(func: &Node, name: &str) -> bool {
    func.as_attribute().is_some_and(|attr| {
        attr.attr == name
            && attr
                .value
                .as_call()
                .is_some_and(|inner| dotted(inner.func).as_deref() == Some("super"))
    })
}

/// `self.<attr> = value` statements of a method body (branches included, nested defs not).
pub(super) fn self_assignments(body: &Node) -> Vec<(String, &Node)> {
    let mut out = Vec::new();
    body.walk(&mut |n| {
        if n.is_definition() {
            return false;
        }
        let (targets, value): (Vec<&Node>, Option<&Node>) = if let Some(assign) = n.as_assign() {
            (assign.targets.iter().collect(), Some(assign.value))
        } else if let Some(ann) = n.as_ann_assign() {
            (vec![ann.target], ann.value)
        } else {
            return true;
        };
        if let Some(value) = value {
            for attr in targets.iter().filter_map(|t| t.as_attribute()) {
                if attr.value.as_name() == Some("self") {
                    out.push((attr.attr.to_string(), value));
                }
            }
        }
        false
    });
    out
}

/// The values of a function's `return` statements (nested definitions excluded).
pub(super) fn returned_values(fn_node: &Node) -> Vec<Node> {
    let mut out = Vec::new();
    if let Some(body) = fn_node.field("body") {
        body.walk(&mut |n| {
            if n.is_definition() {
                return false;
            }
            if let Some(Some(value)) = n.as_return() {
                out.push(value.clone());
            }
            true
        });
    }
    out
}

/// The value of the last `name = value` in a method body (nested definitions excluded).
fn local_value(fn_node: &Node, name: &str) -> Option<Node> {
    let mut found = None;
    fn_node.field("body")?.walk(&mut |n| {
        if n.is_definition() {
            return false;
        }
        if let Some(assign) = n.as_assign() {
            if assign.targets.iter().any(|t| t.as_name() == Some(name)) {
                found = Some(assign.value.clone());
            }
            return false;
        }
        true
    });
    found
}

/// `name = value` in the body of class `class_path` of a parsed file.
fn class_attribute(parsed: &ParsedFile, class_path: &str, name: &str) -> Option<Node> {
    let def = parsed
        .find_all(class_path)
        .into_iter()
        .find(|d| d.kind() == DefKind::Class)?;
    let body = parsed.node(def).field("body")?;
    body.children().iter().rev().find_map(|stmt| {
        let assign = stmt.as_assign()?;
        assign
            .targets
            .iter()
            .any(|t| t.as_name() == Some(name))
            .then(|| assign.value.clone())
    })
}

fn arguments(fn_node: &Node) -> Option<&Node> {
    fn_node.children().iter().find(|c| c.is(kind::ARGUMENTS))
}

/// Positional and keyword parameter names of a function, `self` included.
fn param_names(fn_node: &Node) -> Vec<String> {
    let mut out = Vec::new();
    let Some(args) = arguments(fn_node) else { return out };
    for list in args.children().iter().filter(|c| c.kind() == LIST) {
        for item in list.children() {
            let arg = item.as_arg_with_default().map_or(item, |(arg, _)| arg);
            if let Some(name) = arg.label() {
                out.push(name.to_string());
            }
        }
    }
    out
}

fn param_default(fn_node: &Node, param: &str) -> Option<Node> {
    let args = arguments(fn_node)?;
    args.children()
        .iter()
        .filter(|c| c.kind() == LIST)
        .flat_map(Node::children)
        .filter_map(Node::as_arg_with_default)
        .find(|(arg, _)| arg.label() == Some(param))
        .and_then(|(_, default)| default.cloned())
}
