//! What both walks of a module read the same way: the module a file is (for relative imports),
//! import statements, dotted names and assignment targets.

use super::{Binding, Import};
use crate::syntax::{kind, Node};

/// The module of a file, for relative imports.
pub(crate) struct ModuleContext<'a> {
    pub module: &'a str,
    pub is_package: bool,
    /// The variable listing entry classes ([`crate::spec::Conventions::entry_list`]).
    pub entry_list: Option<&'a str>,
}

impl ModuleContext<'_> {
    /// The absolute module named by `level` leading dots and `rest`, or `None` above the top.
    pub(super) fn absolute(&self, level: usize, rest: &str) -> Option<String> {
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

/// The names an assignment target binds (`a`, `a, b`, `[a, b]`).
pub(super) fn target_names(target: &Node) -> Vec<String> {
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

/// The imports of one `Import` / `ImportFrom` statement with the binding each makes
/// (`None` for a star import).
pub(super) fn imports(
    stmt: &Node,
    ctx: &ModuleContext<'_>,
    line: usize,
    conditional: bool,
) -> Vec<(Import, Option<Binding>)> {
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
