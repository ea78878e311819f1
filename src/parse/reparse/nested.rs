//! A run of the output that holds one top-level `class` whose edits all lie inside its body,
//! parsed a run of body statements at a time instead of the whole class (a class of a model file
//! is often a tenth of the file, and a hook edits one of its methods).
//!
//! Why this is the tree a whole parse gives: the body is cut the way the module is (at the start
//! of a line where a body statement begins after the previous one ended, the line before not
//! ending in a backslash). There the tokenizer is at a line start, outside any bracket or
//! string, with the indentation levels 0 and the body's. A run parsed as the block of `if 1:`
//! (a header at level 0) starts in that same state when its first line has exactly the body's
//! indentation; it must come back as that one `if` without an `else`, and a `pass` at the
//! body's indentation must still be able to follow it inside that block. Anything else: `None`, and the caller parses
//! the whole run.

use std::ops::Range;

use super::{ends_cleanly, extent, run_cuts, widen};
use crate::parse::parse_module;
use crate::source::SourceFile;
use crate::syntax::{kind, Node, LIST};

/// What a nested run is parsed inside of.
const HEADER: &str = "if 1:\n";
/// The statement that follows a nested run, at the body's indentation.
const SENTINEL: &str = "pass\n";

/// The output's node of `class` (a top-level statement of `old` in the run `region`), whose
/// text now starts at `start` of `new`, with the edits `spans` (old range, new range; sorted,
/// all inside `region`) made; `None` where the whole run must be parsed.
pub(super) fn class(
    class: &Node,
    old: &str,
    new: &str,
    region: &Range<usize>,
    start: usize,
    spans: &[(Range<usize>, Range<usize>)],
    name: &str,
) -> Option<Node> {
    let view = class.as_class_def()?;
    let body = view.body.children();
    let (first, last) = (body.first()?, body.last()?);
    // The body must begin on a line of its own, and the class end where its body does.
    let body_start = extent(first).start;
    let line = old[..body_start].rfind(['\n', '\r']).map_or(0, |i| i + 1);
    let indent = &old[line..body_start];
    if line <= class.range().start
        || indent.is_empty()
        || !indent.bytes().all(|b| b == b' ' || b == b'\t')
        || class.range().end != last.range().end
        || spans.iter().any(|(o, _)| o.start < line || o.end > region.end)
    {
        return None;
    }
    let cuts = run_cuts(body, old, line, region.end);
    let runs = widen(&cuts, spans, old)?;
    let delta0 = start as isize - region.start as isize;
    let mut out: Vec<Node> = Vec::with_capacity(body.len() + 4);
    let (mut delta, mut next_span, mut next_stmt) = (delta0, 0, 0);
    for run in runs {
        let from = run.start.checked_add_signed(delta)?;
        let before = delta;
        while let Some((range, to)) = spans.get(next_span).filter(|(r, _)| r.end <= run.end) {
            delta += to.len() as isize - range.len() as isize;
            next_span += 1;
        }
        let to = run.end.checked_add_signed(delta)?;
        let text = new.get(from..to)?;
        let rest = text.strip_prefix(indent)?;
        if !ends_cleanly(text) || rest.starts_with([' ', '\t', '\x0c', '\r', '\n']) {
            return None;
        }
        while body.get(next_stmt).is_some_and(|s| extent(s).end <= run.start) {
            out.push(body[next_stmt].shifted(before));
            next_stmt += 1;
        }
        while body.get(next_stmt).is_some_and(|s| extent(s).start < run.end) {
            next_stmt += 1;
        }
        // The sentinel proves the block is still open where the run ends (a line the
        // tokenizer takes for a dedent would have closed it: the class's next statement then
        // would not parse).
        let wrapped = format!("{HEADER}{text}{indent}{SENTINEL}");
        let module = parse_module(&SourceFile::new(name, wrapped)).ok()?;
        let [block] = module.module_body()?.children() else {
            return None;
        };
        let (kind::IF, [_, block_body, orelse]) = (block.kind(), block.children()) else {
            return None;
        };
        let (sentinel, stmts) = block_body.children().split_last()?;
        let sentinel_at = HEADER.len() + text.len() + indent.len();
        if !orelse.children().is_empty() || sentinel.kind() != kind::PASS || sentinel.range().start != sentinel_at {
            return None;
        }
        let at = from as isize - HEADER.len() as isize;
        out.extend(stmts.iter().map(|s| s.shifted(at)));
    }
    if next_span != spans.len() {
        return None;
    }
    out.extend(body[next_stmt..].iter().map(|s| s.shifted(delta)));
    let (new_first, new_last) = (out.first()?, out.last()?);
    let list_range = new_first.range().start..new_last.range().end;
    let end = new_last.range().end;
    let list = Node::new(LIST, list_range, view.body.label().map(Into::into), out);
    // Decorators, bases, keywords and type parameters: before the body, moved as the class.
    let (_, heads) = class.children().split_last()?;
    let mut children: Vec<Node> = heads.iter().map(|c| c.shifted(delta0)).collect();
    children.push(list);
    let range = class.range().start.checked_add_signed(delta0)?..end;
    Some(Node::new(class.kind(), range, class.label().map(Into::into), children))
}

#[cfg(test)]
mod tests;
