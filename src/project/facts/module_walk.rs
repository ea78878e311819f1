//! Reading a module's top level: imports, bindings, `__all__`, the entry list, and where its
//! classes start (their bodies are read by [`super::class_walk`]).

use super::class_walk::ClassWalker;
use super::names::{dotted, imports};
use super::*;
use crate::source::SourceFile;
use crate::syntax::{kind, Node};

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
    for (i, b) in facts.bindings.iter().enumerate() {
        facts.by_name.entry(b.name.clone()).or_default().push(i);
    }
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
                _ if self.ctx.entry_list == Some(name) => {
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
            facts: ClassFacts::empty(name.clone()),
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

/// Items of an entry list's value: a name, a list or tuple of names, branches of `a if c else b`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_module;

    fn facts(module: &str, is_package: bool, text: &str) -> ModuleFacts {
        let source = SourceFile::new("t.py", text);
        let root = parse_module(&source).unwrap();
        let ctx = ModuleContext {
            module,
            is_package,
            entry_list: Some("EntryClass"),
        };
        extract(&source, &root, &ctx)
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
