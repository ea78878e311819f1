//! What the output of an apply must satisfy before it is returned (see [`verify`]).

use std::ops::Range;

use crate::edit::EditMap;
use crate::error::{Error, ErrorKind};
use crate::marker::{self, Frame};
use crate::outline::ParsedFile;
use crate::source::SourceFile;
use crate::spec::Recipe;
use crate::syntax::{Node, ABSENT, LIST};
use crate::verify::VerifyReason;

/// Checks the output of an apply: it parses; CPython's compiler would accept it (or refuses the
/// original as well); inserted import-time code uses no module-level name before its binding;
/// bytes outside the edits are unchanged; its frames strip back to the original exactly;
/// without the inserted statements it has the original's syntax tree. Returns the output's frames
/// and where each sits in the original.
pub(super) fn verify(
    recipe: &Recipe,
    original: &ParsedFile,
    output: &SourceFile,
    map: &EditMap,
) -> Result<(Vec<Frame>, Vec<usize>), Error> {
    // The hook whose edit holds `offset`, else the one whose edit is nearest (a `yield` inserted
    // into a function makes its original `return value` an error there, outside the edit).
    let hook_at = |offset: usize| {
        map.spans
            .iter()
            .find(|(_, new, _)| new.start <= offset && offset <= new.end)
            .or_else(|| {
                map.spans
                    .iter()
                    .min_by_key(|(_, new, _)| new.start.abs_diff(offset).min(new.end.abs_diff(offset)))
            })
            .map(|(_, _, hook)| hook.clone())
    };
    let refuse = |offset: usize, kind: ErrorKind| {
        let err = kind.at(output.location(offset));
        match hook_at(offset) {
            Some(hook) => err.with_hook(&hook),
            None => err,
        }
    };
    let fail = |offset: usize, reason: VerifyReason| refuse(offset, ErrorKind::Verify { reason });
    let (old, new) = (original.source().text(), output.text());
    // Only the top-level statements holding an edit are parsed again (see `parse::reparse`).
    let spans: Vec<(Range<usize>, Range<usize>)> = map.spans.iter().map(|(o, n, _)| (o.clone(), n.clone())).collect();
    let reparsed = crate::parse::reparse::reparse(original.root(), old, output, &spans).map_err(|err| {
        let err = Error::from(err);
        let offset = output.lines().line_start(err.location().line).unwrap_or(0);
        fail(
            offset,
            VerifyReason::Unparsable {
                message: err.to_string(),
            },
        )
    })?;
    // What CPython's compiler (not only its parser) would refuse, unless the original has it too.
    let checked = crate::verify::check(&reparsed.root, new);
    if !checked.problems.is_empty() {
        let before = crate::verify::check(original.root(), old).problems;
        if let Some(problem) = crate::verify::new_problems(&before, &checked.problems).first() {
            return Err(fail(
                problem.offset,
                VerifyReason::CompilerRefuses {
                    message: problem.message.clone(),
                },
            ));
        }
    }
    let line_of = |offset: usize| output.lines().line_of(offset);
    if let Some((offset, name, bound_line)) = checked.early_name_use(&map.inserted, &line_of) {
        return Err(refuse(offset, ErrorKind::EarlyNameUse { name, bound_line }));
    }
    let (mut at_old, mut at_new) = (0, 0);
    for (old_range, new_range, _) in &map.spans {
        if old.get(at_old..old_range.start) != new.get(at_new..new_range.start) {
            return Err(fail(at_new, VerifyReason::OutsideChanged));
        }
        (at_old, at_new) = (old_range.end, new_range.end);
    }
    if old.get(at_old..) != new.get(at_new..) {
        return Err(fail(at_new, VerifyReason::OutsideChanged));
    }
    let frames = marker::scan(output, &recipe.id)?;
    let (stripped, anchors) = marker::strip_with_anchors(new, &frames);
    if stripped != old {
        return Err(fail(0, VerifyReason::NotReversible));
    }
    let sorted = |ranges: &[Range<usize>]| {
        let mut ranges = ranges.to_vec();
        ranges.sort_by_key(|r| r.start);
        ranges
    };
    let rewritten: std::collections::HashSet<(usize, usize, usize, usize)> = map
        .rewritten
        .iter()
        .map(|(old, new)| (old.start, old.end, new.start, new.end))
        .collect();
    // Outside the parts parsed anew the statements are the original's (the bytes are, and so is
    // the tokenizer's state where the parts begin and end): only those parts are compared.
    let compare = Comparison {
        removed: sorted(&map.removed),
        inserted: sorted(&map.inserted),
        rewritten,
    };
    for (old_range, new_range) in &reparsed.regions {
        let before = kept_in(true, statements(original.root(), old_range), &compare.removed);
        let after = kept_in(true, statements(&reparsed.root, new_range), &compare.inserted);
        if !compare.all_equivalent(before, after) {
            return Err(fail(0, VerifyReason::TreeChanged));
        }
    }
    Ok((frames, anchors))
}

/// The top-level statements of `root` that begin inside `range`.
fn statements<'n>(root: &'n Node, range: &Range<usize>) -> &'n [Node] {
    let body = root.module_body().map_or(&[][..], Node::children);
    let first = body.partition_point(|s| s.range().start < range.start);
    let end = body.partition_point(|s| s.range().start < range.end);
    &body[first..end.max(first)]
}

/// A copy of `node` without the statements lying inside `ranges` (disjoint, sorted by start).
fn strip_statements(node: &Node, ranges: &[Range<usize>]) -> Node {
    let children = kept(node, ranges)
        .map(|child| strip_statements(child, ranges))
        .collect();
    Node::new(node.kind(), node.range(), node.label().map(Into::into), children)
}

/// The children of `node` that stay once the statements lying inside `ranges` (disjoint,
/// sorted by start) are taken out.
fn kept<'n>(node: &'n Node, ranges: &'n [Range<usize>]) -> impl Iterator<Item = &'n Node> {
    kept_in(node.kind() == LIST, node.children(), ranges)
}

/// [`kept`] for the `children` of a list (`list`) or of another node.
fn kept_in<'n>(list: bool, children: &'n [Node], ranges: &'n [Range<usize>]) -> impl Iterator<Item = &'n Node> {
    let inside = |n: &Node| {
        let r = n.range();
        let before = ranges.partition_point(|x| x.start <= r.start);
        before > 0 && r.end <= ranges[before - 1].end
    };
    let list = list && !ranges.is_empty();
    children
        .iter()
        .filter(move |child| !(list && inside(child) && is_statement(child)))
}

fn is_statement(node: &Node) -> bool {
    !matches!(node.kind(), LIST | ABSENT) && node.kind().chars().next().is_some_and(char::is_uppercase)
}

/// The original's tree without the removed statements against the output's without the
/// inserted ones, compared in place (neither tree is copied).
struct Comparison {
    removed: Vec<Range<usize>>,
    inserted: Vec<Range<usize>>,
    rewritten: std::collections::HashSet<(usize, usize, usize, usize)>,
}

impl Comparison {
    /// Same shape, where a rewritten statement counts as equal when it keeps the original's
    /// kind and contains the original's value.
    fn equivalent(&self, before: &Node, after: &Node) -> bool {
        let (old, new) = (before.range(), after.range());
        if is_statement(before) && self.rewritten.contains(&(old.start, old.end, new.start, new.end)) {
            let after = strip_statements(after, &self.inserted);
            let value = kept(before, &self.removed).next();
            // A bare `return` has no value to find again.
            let mut contains = value.is_none_or(|v| v.kind() == ABSENT);
            if let Some(value) = value {
                let value = strip_statements(value, &self.removed);
                after.walk(&mut |n| {
                    contains |= n.same_shape(&value);
                    !contains
                });
            }
            return before.kind() == after.kind() && contains;
        }
        if before.kind() != after.kind() || before.label() != after.label() {
            return false;
        }
        self.all_equivalent(kept(before, &self.removed), kept(after, &self.inserted))
    }

    /// Whether both sequences have the same length and are equivalent pairwise.
    fn all_equivalent<'n>(&self, mut a: impl Iterator<Item = &'n Node>, mut b: impl Iterator<Item = &'n Node>) -> bool {
        loop {
            match (a.next(), b.next()) {
                (None, None) => return true,
                (Some(x), Some(y)) if self.equivalent(x, y) => {}
                _ => return false,
            }
        }
    }
}
