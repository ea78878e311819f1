//! Inserted code that runs while the module is imported (module level, class bodies, decorators,
//! default values) must not use a module-level name before the statement that binds it: the
//! module would raise `NameError` on import.

use std::collections::HashMap;
use std::ops::Range;

use super::scopes::{Kind, SymbolTable, Use};

/// A use of `name` at `offset` that runs before the first statement binding it, at `bound_at`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EarlyUse {
    pub offset: usize,
    pub name: String,
    pub bound_at: usize,
}

/// The first use, inside `inserted`, of a module-level name before its binding, if any.
pub(crate) fn early_use(scopes: &[SymbolTable<'_>], inserted: &[Range<usize>]) -> Option<EarlyUse> {
    if inserted.is_empty() {
        return None;
    }
    let module = scopes.first()?;
    let mut first_binding: HashMap<&str, usize> = HashMap::new();
    let mut first_star = usize::MAX;
    for (at, name, use_) in &module.events {
        match use_ {
            Use::Store | Use::Import => {
                first_binding.entry(&**name).or_insert(*at);
            }
            Use::StarImport => first_star = first_star.min(*at),
            _ => {}
        }
    }
    // Scopes run at import time: the module, and classes and comprehensions run by them.
    let mut at_import: Vec<bool> = Vec::with_capacity(scopes.len());
    for scope in scopes {
        let parent_runs = scope.parent.is_none_or(|p| at_import[p]);
        at_import.push(parent_runs && !matches!(scope.kind, Kind::Function { .. }));
    }
    let inside = |at: usize| inserted.iter().any(|r| r.start <= at && at < r.end);
    let mut found: Option<EarlyUse> = None;
    for (index, scope) in scopes.iter().enumerate() {
        if !at_import[index] {
            continue;
        }
        for (at, name, use_) in &scope.events {
            if !matches!(use_, Use::Load | Use::AugLoad)
                || !inside(*at)
                || found.as_ref().is_some_and(|f| f.offset <= *at)
            {
                continue;
            }
            if bound_locally(scopes, index, name, *at) {
                continue;
            }
            match first_binding.get(&**name) {
                Some(&bound_at) if bound_at > *at && first_star > *at => {
                    found = Some(EarlyUse {
                        offset: *at,
                        name: name.to_string(),
                        bound_at,
                    });
                }
                _ => {}
            }
        }
    }
    found
}

/// Whether `name`, used at `at` in scope `index`, is bound by that scope or an enclosing class
/// or comprehension before it reaches the module.
fn bound_locally(scopes: &[SymbolTable<'_>], mut index: usize, name: &str, at: usize) -> bool {
    loop {
        let scope = &scopes[index];
        match scope.kind {
            Kind::Module => return false,
            Kind::Comprehension { .. } => {
                if scope
                    .events
                    .iter()
                    .any(|(_, n, u)| &**n == name && matches!(u, Use::Store | Use::Import))
                {
                    return true;
                }
            }
            // A class body sees its own earlier bindings, then the module's.
            Kind::Class => {
                return scope
                    .events
                    .iter()
                    .any(|(offset, n, u)| &**n == name && matches!(u, Use::Store | Use::Import) && *offset < at);
            }
            Kind::Function { .. } => return true,
        }
        match scope.parent {
            Some(parent) => index = parent,
            None => return false,
        }
    }
}
