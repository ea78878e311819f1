//! A run of the output that holds one top-level `class` whose edits all lie inside its body,
//! parsed a run of body statements at a time instead of the whole class, and a level deeper
//! where such a run is one `def` or `class` edited inside its own body (a class of a model file
//! is often a tenth of the file, and a hook edits a few lines of one of its methods).
//!
//! Why this is the tree a whole parse gives: a body is cut the way the module is (at the start
//! of a line where a body statement begins after the previous one ended, the line before not
//! ending in a backslash). There the tokenizer is at a line start, outside any bracket or
//! string, with the indentation levels of the enclosing blocks. A run parsed inside one `if 1:`
//! per enclosing block (each header at that block's statement's indentation) starts in that
//! same state when its first line has exactly the body's indentation; it must come back as
//! those nested `if`s, each alone and without an `else`, and a `pass` at the body's indentation
//! must still be able to follow it inside the innermost one. Anything else: `None`, and the
//! caller parses the whole run.

use std::ops::Range;

use super::{ends_cleanly, extent, run_cuts, widen};
use crate::parse::parse_module;
use crate::source::SourceFile;
use crate::syntax::{kind, Node, LIST};

/// What a nested run is parsed inside of, once per enclosing block.
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
    if class.kind() != kind::CLASS_DEF {
        return None;
    }
    block(&Texts { old, new, name }, class, "", region, start, spans)
}

/// The old and new texts, and the file's name.
struct Texts<'t> {
    old: &'t str,
    new: &'t str,
    name: &'t str,
}

/// [`class`] for a `class` or `def` statement `stmt` at any depth: `outer` opens the blocks
/// around it (an `if 1:` line at the indentation of each enclosing statement).
fn block(
    texts: &Texts<'_>,
    stmt: &Node,
    outer: &str,
    region: &Range<usize>,
    start: usize,
    spans: &[(Range<usize>, Range<usize>)],
) -> Option<Node> {
    let (old, new) = (texts.old, texts.new);
    if !matches!(
        stmt.kind(),
        kind::CLASS_DEF | kind::FUNCTION_DEF | kind::ASYNC_FUNCTION_DEF
    ) {
        return None;
    }
    let (body_list, heads) = stmt.children().split_last()?;
    let body = body_list.children();
    let (first, last) = (body.first()?, body.last()?);
    // The statement must start its line, its body begin on a line of its own, deeper, and
    // the statement end where its body does.
    let own = extent(stmt).start;
    let own_indent = &old[old[..own].rfind(['\n', '\r']).map_or(0, |i| i + 1)..own];
    let body_start = extent(first).start;
    let line = old[..body_start].rfind(['\n', '\r']).map_or(0, |i| i + 1);
    let indent = &old[line..body_start];
    let blank = |s: &str| s.bytes().all(|b| b == b' ' || b == b'\t');
    if body_list.kind() != LIST
        || line <= stmt.range().start
        || indent.len() <= own_indent.len()
        || !indent.starts_with(own_indent)
        || !blank(indent)
        || !blank(own_indent)
        || stmt.range().end != last.range().end
        || spans.iter().any(|(o, _)| o.start < line || o.end > region.end)
    {
        return None;
    }
    let header = format!("{outer}{own_indent}{HEADER}");
    let cuts = run_cuts(body, old, line, region.end);
    let runs = widen(&cuts, spans, old)?;
    let delta0 = start as isize - region.start as isize;
    let mut out: Vec<Node> = Vec::with_capacity(body.len() + 4);
    let (mut delta, mut next_span, mut next_stmt) = (delta0, 0, 0);
    for run in runs {
        let from = run.start.checked_add_signed(delta)?;
        let before = delta;
        let first_span = next_span;
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
        let first_stmt = next_stmt;
        while body.get(next_stmt).is_some_and(|s| extent(s).start < run.end) {
            next_stmt += 1;
        }
        // One `def` or `class` edited inside its own body: a level deeper.
        if let [inner] = &body[first_stmt..next_stmt] {
            if let Some(node) = block(texts, inner, &header, &run, from, &spans[first_span..next_span]) {
                out.push(node);
                continue;
            }
        }
        out.extend(parse_run(texts.name, &header, indent, text, from)?);
    }
    if next_span != spans.len() {
        return None;
    }
    out.extend(body[next_stmt..].iter().map(|s| s.shifted(delta)));
    let (new_first, new_last) = (out.first()?, out.last()?);
    let list_range = new_first.range().start..new_last.range().end;
    let end = new_last.range().end;
    let list = Node::new(LIST, list_range, body_list.label().map(Into::into), out);
    // Decorators, bases, parameters...: before the body, moved as the statement.
    let mut children: Vec<Node> = heads.iter().map(|c| c.shifted(delta0)).collect();
    children.push(list);
    let range = stmt.range().start.checked_add_signed(delta0)?..end;
    Some(Node::new(stmt.kind(), range, stmt.label().map(Into::into), children))
}

/// The statements of the run `text` (at `from` in the new text): a block at `indent` inside
/// the blocks `header` opens; `None` unless it parses as exactly that (see the module).
fn parse_run(name: &str, header: &str, indent: &str, text: &str, from: usize) -> Option<Vec<Node>> {
    // The sentinel proves the block is still open where the run ends (a line the tokenizer
    // takes for a dedent would have closed it: the next statement then would not parse).
    let wrapped = format!("{header}{text}{indent}{SENTINEL}");
    let module = parse_module(&SourceFile::new(name, wrapped)).ok()?;
    let mut list = module.module_body()?;
    for _ in 0..header.matches(HEADER).count() {
        let [block] = list.children() else {
            return None;
        };
        let (kind::IF, [_, block_body, orelse]) = (block.kind(), block.children()) else {
            return None;
        };
        if !orelse.children().is_empty() {
            return None;
        }
        list = block_body;
    }
    let (sentinel, stmts) = list.children().split_last()?;
    if sentinel.kind() != kind::PASS || sentinel.range().start != header.len() + text.len() + indent.len() {
        return None;
    }
    let at = from as isize - header.len() as isize;
    Some(stmts.iter().map(|s| s.shifted(at)).collect())
}

#[cfg(test)]
mod tests;
