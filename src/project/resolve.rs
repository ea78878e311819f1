//! Name resolution across modules: what a dotted name in a module denotes (a class of the
//! project, a module, something outside, or nothing), following imports and re-bindings.

use super::facts::{self, Binding, ModuleFacts, NameBinding};
use super::{ClassKey, Project, Resolved};

const BUILTINS: &[&str] = &[
    "object",
    "type",
    "int",
    "float",
    "str",
    "bytes",
    "list",
    "dict",
    "set",
    "tuple",
    "frozenset",
    "bool",
    "Exception",
    "BaseException",
    "ValueError",
    "TypeError",
    "RuntimeError",
    "KeyError",
    "IndexError",
    "AttributeError",
    "NotImplementedError",
    "OSError",
    "ImportError",
    "StopIteration",
    "AssertionError",
    "Warning",
    "UserWarning",
    "DeprecationWarning",
    "property",
    "staticmethod",
    "classmethod",
    "super",
    "range",
    "enumerate",
    "zip",
    "map",
    "filter",
    "len",
    "print",
    "isinstance",
    "getattr",
    "setattr",
    "hasattr",
    "dataclass",
];

impl Project {
    /// Resolves a dotted name as seen from file `file`, consulting method-local bindings first.
    pub(crate) fn resolve(&self, file: usize, locals: &[NameBinding], dotted: &str) -> Vec<Resolved> {
        let mut trail = Vec::new();
        let mut parts = dotted.split('.');
        let first = parts.next().unwrap_or_default();
        let module = self.files[file].module.clone();
        let local = facts::latest_bindings(locals, first);
        let mut current: Vec<Resolved> = if local.is_empty() {
            self.lookup(&module, first, &mut trail, true)
        } else {
            local
                .into_iter()
                .flat_map(|b| self.interpret(file, b, &mut trail))
                .collect()
        };
        for part in parts {
            current = current
                .into_iter()
                .flat_map(|r| self.attribute(r, part, &mut trail))
                .collect();
        }
        dedup(current)
    }

    /// What binding `b` of file `file` denotes.
    fn interpret(&self, file: usize, b: &Binding, trail: &mut Vec<(String, String)>) -> Vec<Resolved> {
        match b {
            Binding::Class(i) => vec![Resolved::Class(ClassKey { file, class: *i })],
            Binding::Module(m) => vec![self.module_ref(m)],
            Binding::From { module, name } => {
                if module.is_empty() {
                    return vec![Resolved::Unresolved(format!(
                        "`{name}` is imported relative to a package above the scanned top level"
                    ))];
                }
                self.lookup(module, name, trail, false)
            }
            Binding::Alias(d) => {
                let module = self.files[file].module.clone();
                let mut parts = d.split('.');
                let mut current = self.lookup(&module, parts.next().unwrap_or_default(), trail, true);
                for part in parts {
                    current = current
                        .into_iter()
                        .flat_map(|r| self.attribute(r, part, trail))
                        .collect();
                }
                current
            }
            Binding::Opaque => vec![Resolved::Unresolved("bound to a value that is not a class".into())],
        }
    }

    fn module_ref(&self, module: &str) -> Resolved {
        if self.modules.contains_key(module) || self.namespaces.contains(module) {
            Resolved::Module(module.to_string())
        } else {
            Resolved::External(module.to_string())
        }
    }

    fn attribute(&self, r: Resolved, part: &str, trail: &mut Vec<(String, String)>) -> Vec<Resolved> {
        match r {
            Resolved::Module(m) => self.lookup(&m, part, trail, false),
            Resolved::External(d) => vec![Resolved::External(format!("{d}.{part}"))],
            Resolved::Class(key) => {
                let Ok(facts) = self.facts(key.file) else {
                    return vec![Resolved::Unresolved("the module failed to parse".into())];
                };
                let inner = format!("{}.{part}", facts.classes[key.class].name);
                match facts.classes.iter().rposition(|c| c.name == inner) {
                    Some(i) => vec![Resolved::Class(ClassKey {
                        file: key.file,
                        class: i,
                    })],
                    None => vec![Resolved::Unresolved(format!(
                        "`{inner}` is not a class nested in `{}`",
                        facts.classes[key.class].name
                    ))],
                }
            }
            u @ Resolved::Unresolved(_) => vec![u],
        }
    }

    /// Looks `name` up in module `module`'s namespace (its bindings, then its star imports, then
    /// its submodules). `own` marks a lookup from inside the module (builtins apply).
    fn lookup(&self, module: &str, name: &str, trail: &mut Vec<(String, String)>, own: bool) -> Vec<Resolved> {
        let key = (module.to_string(), name.to_string());
        if trail.contains(&key) || trail.len() > 24 {
            let mut cycle: Vec<String> = trail.iter().map(|(m, n)| format!("{m}.{n}")).collect();
            cycle.push(format!("{module}.{name}"));
            return vec![Resolved::Unresolved(format!("import cycle: {}", cycle.join(" -> ")))];
        }
        let Some(&file) = self.modules.get(module) else {
            if self.namespaces.contains(module) {
                let sub = format!("{module}.{name}");
                return vec![if self.modules.contains_key(&sub) || self.namespaces.contains(&sub) {
                    Resolved::Module(sub)
                } else {
                    Resolved::Unresolved(format!("`{sub}` is not in the scanned directory"))
                }];
            }
            if self.is_inside_package(module) {
                return vec![Resolved::Unresolved(format!(
                    "module `{module}` is not in the scanned directory"
                ))];
            }
            return vec![Resolved::External(format!("{module}.{name}"))];
        };
        let Ok(facts) = self.facts(file) else {
            return vec![Resolved::Unresolved(format!("module `{module}` failed to parse"))];
        };
        trail.push(key);
        let bindings = facts.candidates(name);
        let mut out: Vec<Resolved> = bindings
            .into_iter()
            .flat_map(|b| self.interpret(file, b, trail))
            .collect();
        if out.is_empty() {
            let exported = |star_facts: Option<&ModuleFacts>| match star_facts.and_then(|f| f.all.as_ref()) {
                Some(all) => all.iter().any(|a| a == name),
                None => !name.starts_with('_'),
            };
            for star in facts.stars.iter().rev() {
                let star_file = self.modules.get(star.as_str()).copied();
                let star_facts = star_file.and_then(|f| self.facts(f).ok());
                if star_file.is_some() && !exported(star_facts) {
                    continue;
                }
                let found = self.lookup(star, name, trail, false);
                if found
                    .iter()
                    .any(|r| matches!(r, Resolved::Class(_) | Resolved::Module(_)))
                {
                    out = found;
                    break;
                }
                if star_file.is_none() && !self.is_inside_package(star) {
                    out = vec![Resolved::External(format!("{star}.{name}"))];
                }
            }
        }
        if out.is_empty() {
            let sub = format!("{module}.{name}");
            if self.modules.contains_key(&sub) {
                out.push(Resolved::Module(sub));
            } else if own && BUILTINS.contains(&name) {
                out.push(Resolved::External(format!("builtins.{name}")));
            } else {
                out.push(Resolved::Unresolved(format!(
                    "`{name}` is not defined or imported in `{module}`"
                )));
            }
        }
        trail.pop();
        out
    }

    fn is_inside_package(&self, module: &str) -> bool {
        !self.package.is_empty() && (module == self.package || module.starts_with(&format!("{}.", self.package)))
    }
}

fn dedup(items: Vec<Resolved>) -> Vec<Resolved> {
    let mut out: Vec<Resolved> = Vec::with_capacity(items.len());
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}
