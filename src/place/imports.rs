//! Imports a recipe needs: which the module already binds unconditionally, which would
//! shadow another binding, and the block of the missing ones.

use crate::edit::Edit;
use crate::error::PlacementReason;
use crate::marker;
use crate::pattern::{visit_statements, Depth};
use crate::spec::ImportLine;
use crate::syntax::{kind, Node, LIST};

use super::{refuse, Placer, Refusal};

impl Placer<'_> {
    /// Frames the imports of `wanted` that the module lacks, after its leading imports.
    pub(crate) fn ensure_imports(&self, wanted: &[ImportLine]) -> Result<(Vec<Edit>, Vec<String>), Refusal> {
        let body = self.file.module_block();
        let mut module_level = Vec::new();
        visit_statements(body, Depth::Nested, &mut |stmt| module_level.push(stmt));
        // Imports inside other recipes' blocks are theirs: reverting one must not take away an
        // import this recipe uses, so they do not count as present.
        let foreign = marker::block_ranges(self.source());
        let own: Vec<&Node> = module_level
            .iter()
            .copied()
            .filter(|stmt| !marker::covers(&foreign, &stmt.range()))
            .collect();
        // Only the module's own top-level statements can bind a name unconditionally.
        let own_top_level: Vec<&Node> = body
            .children()
            .iter()
            .filter(|stmt| !marker::covers(&foreign, &stmt.range()))
            .collect();
        let mut missing = Vec::new();
        let mut present = Vec::new();
        for import in wanted {
            if has_import(&own_top_level, import) {
                present.push(import.statement.clone());
                continue;
            }
            // The same import in another recipe's block binds the same thing: no conflict.
            let theirs: Vec<&Node> = module_level
                .iter()
                .copied()
                .filter(|stmt| marker::covers(&foreign, &stmt.range()))
                .collect();
            let shadowed = binding_of(&own, import).or_else(|| {
                (!has_import(&theirs, import))
                    .then(|| binding_of(&theirs, import))
                    .flatten()
            });
            if let Some(stmt) = shadowed {
                return Err(refuse(
                    stmt.range().start,
                    PlacementReason::Shadows {
                        import: import.statement.clone(),
                        name: import.bound_name().to_string(),
                    },
                ));
            }
            missing.push(import.statement.clone());
        }
        if missing.is_empty() {
            return Ok((Vec::new(), present));
        }
        let code = missing.join("\n");
        let place = self.module_start(true)?;
        // Before other blocks at the same place (after-imports code that uses these names).
        let block = self.frame(&place, &code)?.first_at_offset();
        Ok((vec![block], present))
    }
}

/// Whether the module has this import and binds its name unconditionally: a top-level import,
/// or a statement holding the import that binds the name on every path (`try: import x` with
/// an `except` fallback that binds `x` too). An import under `if TYPE_CHECKING:`, in one arm of
/// an `if` or in a function does not count: code placed after the imports would not find it.
fn has_import(statements: &[&Node], import: &ImportLine) -> bool {
    let name = import.bound_name();
    statements
        .iter()
        .any(|stmt| holds_import(stmt, import) && always_binds(stmt, name))
}

/// Whether `stmt` is, or holds in its blocks (not in nested defs or classes), this import.
fn holds_import(stmt: &Node, import: &ImportLine) -> bool {
    if is_same_import(stmt, import) {
        return true;
    }
    let mut holds = false;
    if !stmt.is_definition() {
        for block in stmt.blocks() {
            visit_statements(block, Depth::Nested, &mut |inner| {
                holds |= is_same_import(inner, import)
            });
        }
    }
    holds
}

/// Whether running `stmt` binds `name` on every path that goes on after it (a path that raises
/// does not go on).
fn always_binds(stmt: &Node, name: &str) -> bool {
    let block = |field: &str| stmt.field(field).is_some_and(|b| block_binds(b, name));
    match stmt.kind() {
        kind::RAISE => true,
        kind::IMPORT | kind::IMPORT_FROM => stmt.field("names").is_some_and(|names| {
            names.children().iter().any(|alias| {
                let full = alias.label().unwrap_or_default();
                let bound = match alias.asname() {
                    Some(asname) => asname,
                    None if stmt.is(kind::IMPORT) => full.split('.').next().unwrap_or(full),
                    None => full,
                };
                bound == name
            })
        }),
        kind::FUNCTION_DEF | kind::ASYNC_FUNCTION_DEF | kind::CLASS_DEF => stmt.label() == Some(name),
        kind::ASSIGN => stmt
            .as_assign()
            .is_some_and(|a| a.targets.iter().any(|t| target_binds(t, name))),
        kind::ANN_ASSIGN => stmt
            .as_ann_assign()
            .is_some_and(|a| a.value.is_some() && target_binds(a.target, name)),
        kind::IF => block("body") && block("orelse"),
        kind::WITH | kind::ASYNC_WITH => block("body"),
        kind::TRY | kind::TRY_STAR => {
            let handlers = stmt.field("handlers").map(Node::children).unwrap_or_default();
            block("finalbody")
                || ((block("body") || block("orelse"))
                    && handlers
                        .iter()
                        .all(|h| h.field("body").is_some_and(|b| block_binds(b, name))))
        }
        _ => false,
    }
}

/// Whether `stmt` itself binds `name` in its scope (an assignment, import, `def`, `class`,
/// `for` or `with` target), whether or not it always runs.
pub(crate) fn binds_name(stmt: &Node, name: &str) -> bool {
    match stmt.kind() {
        kind::AUG_ASSIGN => stmt.as_aug_assign().is_some_and(|a| target_binds(a.target, name)),
        kind::FOR | kind::ASYNC_FOR => stmt.as_for().is_some_and(|f| target_binds(f.target, name)),
        kind::ANN_ASSIGN => stmt.as_ann_assign().is_some_and(|a| target_binds(a.target, name)),
        kind::WITH | kind::ASYNC_WITH => stmt.as_with().is_some_and(|with| {
            with.items.iter().any(|item| {
                item.as_with_item()
                    .and_then(|item| item.vars)
                    .is_some_and(|vars| target_binds(vars, name))
            })
        }),
        kind::IF | kind::TRY | kind::TRY_STAR | kind::RAISE => false,
        _ => always_binds(stmt, name),
    }
}

fn block_binds(block: &Node, name: &str) -> bool {
    block.children().iter().any(|stmt| always_binds(stmt, name))
}

fn target_binds(target: &Node, name: &str) -> bool {
    match target.kind() {
        kind::NAME => target.label() == Some(name),
        kind::TUPLE | kind::LIST_DISPLAY | LIST => target.children().iter().any(|t| target_binds(t, name)),
        kind::STARRED => target.operand().is_some_and(|value| target_binds(value, name)),
        _ => false,
    }
}

/// Whether `stmt` is an import statement holding exactly `import` (`import os.path` counts for
/// `import os`: it binds `os` to the same package).
fn is_same_import(stmt: &Node, import: &ImportLine) -> bool {
    let names = stmt.field("names").map(Node::children).unwrap_or_default();
    let alias_of = |a: &Node| a.asname().map(str::to_string);
    match (stmt.kind(), &import.from) {
        (kind::IMPORT, None) => names.iter().any(|a| {
            let name = a.label().unwrap_or_default();
            let alias = alias_of(a);
            match &import.alias {
                Some(want) => name == import.name && alias.as_deref() == Some(want),
                None => {
                    alias.is_none()
                        && (name == import.name
                            || (!import.name.contains('.') && name.starts_with(&format!("{}.", import.name))))
                }
            }
        }),
        (kind::IMPORT_FROM, Some(from)) => {
            stmt.label() == Some(from.as_str())
                && names
                    .iter()
                    .any(|a| a.label() == Some(import.name.as_str()) && alias_of(a) == import.alias)
        }
        _ => false,
    }
}

/// A module-level statement that binds the name `import` would bind to something else.
fn binding_of<'n>(module_level: &[&'n Node], import: &ImportLine) -> Option<&'n Node> {
    let name = import.bound_name();
    // `import a.b` and `import a` bind `a` to the same package.
    let same_package = import.from.is_none() && import.alias.is_none();
    module_level.iter().copied().find(|stmt| match stmt.kind() {
        kind::FUNCTION_DEF | kind::ASYNC_FUNCTION_DEF | kind::CLASS_DEF => stmt.label() == Some(name),
        // The same import, only conditional (`if TYPE_CHECKING:`), binds the same thing.
        kind::IMPORT | kind::IMPORT_FROM if is_same_import(stmt, import) => false,
        kind::IMPORT | kind::IMPORT_FROM => stmt.field("names").is_some_and(|names| {
            names.children().iter().any(|a| {
                let alias = a.asname();
                let full = a.label().unwrap_or_default();
                let plain = stmt.is(kind::IMPORT) && alias.is_none();
                let bound = alias.unwrap_or_else(|| {
                    if plain {
                        full.split('.').next().unwrap_or(full)
                    } else {
                        full
                    }
                });
                bound == name && !(same_package && plain)
            })
        }),
        kind::ASSIGN | kind::ANN_ASSIGN | kind::AUG_ASSIGN => {
            let mut found = false;
            let targets: Vec<&Node> = if let Some(assign) = stmt.as_assign() {
                assign.targets.iter().collect()
            } else {
                stmt.as_ann_assign()
                    .map(|a| a.target)
                    .or_else(|| stmt.as_aug_assign().map(|a| a.target))
                    .into_iter()
                    .collect()
            };
            for target in targets {
                target.walk(&mut |n| {
                    if n.as_name() == Some(name) {
                        found = true;
                    }
                    !matches!(n.kind(), kind::ATTRIBUTE | kind::SUBSCRIPT)
                });
            }
            found
        }
        _ => false,
    })
}
