//! What CPython's compiler refuses although its parser accepts it, checked without CPython:
//! the symbol-table errors of [`super::scopes`], a value returned in an async generator,
//! `nonlocal` names with no binding, brackets nested more than 200 deep and more than 100
//! levels of indentation. Each check is conservative: it never refuses what CPython compiles.

use std::collections::HashSet;

use super::brackets;
use super::scopes::{Kind, Problem, SymbolTable, Use};
use crate::syntax::Node;

/// CPython's tokenizer refuses brackets nested deeper than this.
const MAX_BRACKETS: usize = 200;
/// CPython's tokenizer refuses this many levels of indentation.
const MAX_INDENT: usize = 100;

/// Everything CPython's compiler would refuse in the module `root` (the tree of `text`) whose
/// scopes are `scopes`, added to `found` (the walk's own findings), in source order.
pub(crate) fn problems(root: &Node, text: &str, scopes: &[SymbolTable<'_>], mut found: Vec<Problem>) -> Vec<Problem> {
    for scope in scopes {
        if scope.kind
            == (Kind::Function {
                is_async: true,
                lambda: false,
            })
            && !scope.yields.is_empty()
        {
            for &at in &scope.value_returns {
                found.push(Problem {
                    offset: at,
                    message: "'return' with value in async generator".into(),
                });
            }
        }
    }
    nonlocal_bindings(scopes, &mut found);
    if let Some(at) = brackets::deeper_than(text, MAX_BRACKETS) {
        found.push(Problem {
            offset: at,
            message: "too many nested parentheses".into(),
        });
    }
    if let Some(at) = indented_deeper_than(root, text, MAX_INDENT - 1) {
        found.push(Problem {
            offset: at,
            message: "too many levels of indentation".into(),
        });
    }
    found.sort_by_key(|p| p.offset);
    found
}

/// Every `nonlocal` name must be bound in an enclosing function (CPython's rule: a function
/// passes down its own bindings and what it was passed, minus its `global` names; a class
/// passes down only what it was passed).
fn nonlocal_bindings(scopes: &[SymbolTable<'_>], found: &mut Vec<Problem>) {
    if !scopes
        .iter()
        .any(|s| s.events.iter().any(|(_, _, u)| *u == Use::Nonlocal))
    {
        return;
    }
    // Scopes are created parents first, so one forward pass computes what each one is passed.
    let mut passed: Vec<HashSet<&str>> = Vec::with_capacity(scopes.len());
    let mut gives: Vec<HashSet<&str>> = Vec::with_capacity(scopes.len());
    for scope in scopes {
        let mut bound = scope.parent.map(|p| gives[p].clone()).unwrap_or_default();
        let declared = |kind: Use| -> HashSet<&str> {
            scope
                .events
                .iter()
                .filter(|(_, _, u)| *u == kind)
                .map(|(_, n, _)| &**n)
                .collect()
        };
        let globals = declared(Use::Global);
        let nonlocals = declared(Use::Nonlocal);
        for (at, name, use_) in &scope.events {
            if *use_ == Use::Nonlocal && (!bound.contains(&**name) || globals.contains(&**name)) {
                found.push(Problem {
                    offset: *at,
                    message: format!("no binding for nonlocal '{name}' found"),
                });
            }
        }
        bound.retain(|name| !globals.contains(name));
        let mut mine = bound.clone();
        if !matches!(scope.kind, Kind::Class | Kind::Module) {
            mine.extend(
                scope
                    .events
                    .iter()
                    .filter(|(_, n, u)| {
                        matches!(u, Use::Store | Use::Import | Use::Param)
                            && !globals.contains(&**n)
                            && !nonlocals.contains(&**n)
                    })
                    .map(|(_, n, _)| &**n),
            );
        }
        passed.push(bound);
        gives.push(mine);
    }
}

/// The start of a statement more than `limit` indented blocks deep, found without recursion.
/// A block counts when its first statement starts its own line (a suite on the header's line,
/// `if x: y`, adds no indentation).
fn indented_deeper_than(root: &Node, text: &str, limit: usize) -> Option<usize> {
    let body = root.children().first()?;
    let mut stack: Vec<(&Node, usize)> = body.children().iter().map(|s| (s, 0)).collect();
    while let Some((stmt, depth)) = stack.pop() {
        if depth > limit {
            return Some(stmt.range().start);
        }
        for block in stmt.blocks() {
            let own_line = block.children().first().is_some_and(|first| {
                let start = first.range().start;
                let line_start = text[..start].rfind(['\n', '\r']).map_or(0, |i| i + 1);
                text[line_start..start]
                    .chars()
                    .all(|c| matches!(c, ' ' | '\t' | '\x0c' | '\u{feff}'))
            });
            let inner = depth + usize::from(own_line);
            stack.extend(block.children().iter().map(|s| (s, inner)));
        }
    }
    None
}
