//! Checks on a patched file beyond "it parses": what CPython's compiler would refuse
//! (`compile`), and inserted import-time code that uses a module-level name before it is bound
//! (`names`). pysplice cannot run CPython, so these follow its rules on the crate's own syntax
//! tree.

pub(crate) mod brackets;
mod compile;
mod names;
mod reason;
mod scopes;

use std::ops::Range;

use crate::syntax::Node;

pub use reason::VerifyReason;
pub(crate) use scopes::Problem;

/// A module's scopes and what CPython's compiler would refuse in it.
pub(crate) struct Checked<'t> {
    scopes: Vec<scopes::SymbolTable<'t>>,
    /// What CPython's compiler would refuse, in source order.
    pub problems: Vec<Problem>,
}

/// Checks the module `root` parsed from `text`.
pub(crate) fn check<'t>(root: &'t Node, text: &str) -> Checked<'t> {
    let (scopes, found) = scopes::analyze(root);
    let problems = compile::problems(root, text, &scopes, found);
    Checked { scopes, problems }
}

impl Checked<'_> {
    /// The first import-time use, inside `inserted`, of a module-level name before the
    /// statement that binds it: the use's offset, the name and the 1-based line binding it
    /// (`line_of` gives an offset's line).
    pub(crate) fn early_name_use(
        &self,
        inserted: &[Range<usize>],
        line_of: &dyn Fn(usize) -> usize,
    ) -> Option<(usize, String, usize)> {
        names::early_use(&self.scopes, inserted).map(|early| (early.offset, early.name, line_of(early.bound_at)))
    }
}

/// The problems of `after` that `before` does not have (compared by message, as multisets).
pub(crate) fn new_problems(before: &[Problem], after: &[Problem]) -> Vec<Problem> {
    let mut remaining: Vec<&str> = before.iter().map(|p| p.message.as_str()).collect();
    after
        .iter()
        .filter(|p| match remaining.iter().position(|m| *m == p.message) {
            Some(i) => {
                remaining.swap_remove(i);
                false
            }
            None => true,
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests;
