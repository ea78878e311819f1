//! Unified diffs of a patch whose edits are known: only the lines around each edit are diffed
//! (with `similar`, as a whole-text diff would diff them), not the whole file, and the hunks
//! are written the way `similar`'s unified diff writes them.

use std::fmt::Write;
use std::ops::Range;

use similar::{Algorithm, DiffOp};

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// Unchanged lines kept on each side of an edit in the window diffed with `similar`, beyond
/// the context: room for `similar` to slide a change the way it would in the whole text.
const MARGIN: usize = 2 * CONTEXT + 2;

/// The unified diff of `old` and `new` (`a/name`, `b/name` headers; empty when equal), where
/// `new` is `old` with the edits `changes` made: (range in `old`, range in `new`), disjoint,
/// outside of which the texts are the same bytes. `None` when `changes` does not describe the
/// two texts (the caller then diffs them whole).
pub(crate) fn unified(name: &str, old: &str, new: &str, changes: &[(Range<usize>, Range<usize>)]) -> Option<String> {
    if old == new {
        return Some(String::new());
    }
    let mut changes = changes.to_vec();
    changes.sort_by_key(|(o, _)| (o.start, o.end));
    let (old_lines, new_lines) = (Lines::new(old), Lines::new(new));
    // Each edit widened to whole lines on both sides (byte ranges); touching ones merged.
    let mut spans: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    let (mut at_old, mut at_new) = (0, 0);
    for (o, n) in &changes {
        // The bytes between edits must be the same on both sides, or these are not the edits.
        if o.start < at_old || old.get(at_old..o.start)? != new.get(at_new..n.start)? {
            return None;
        }
        (at_old, at_new) = (o.end, n.end);
        // From the start of the line before the edit's (a line break inserted right after a
        // `\r` would join it), to the line start after the edit's end, outside the edit.
        let line = old_lines.line_of(o.start);
        let at_start = old_lines.starts.get(line) == Some(&o.start);
        let first = old_lines
            .starts
            .get(line.saturating_sub(usize::from(at_start)))
            .copied()
            .unwrap_or(0);
        let last = old_lines
            .starts
            .get(old_lines.line_of(o.end) + 1)
            .copied()
            .unwrap_or(old.len());
        let end = n.end + (last - o.end);
        match spans.last_mut() {
            Some((la, lb)) if first <= la.end => {
                la.end = last;
                lb.end = end;
            }
            _ => spans.push((first..last, n.start.checked_sub(o.start - first)?..end)),
        }
    }
    if old.get(at_old..)? != new.get(at_new..)? {
        return None;
    }
    // In lines, widened by the margin; windows that then meet merged.
    let mut windows: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    for (a, b) in spans {
        let (a, b) = (old_lines.exact(a)?, new_lines.exact(b)?);
        let before = MARGIN.min(a.start).min(b.start);
        let after = MARGIN.min(old_lines.len() - a.end).min(new_lines.len() - b.end);
        let (a, b) = (a.start - before..a.end + after, b.start - before..b.end + after);
        match windows.last_mut() {
            Some((la, lb)) if a.start <= la.end => {
                if la.end - a.start != lb.end.checked_sub(b.start)? {
                    return None;
                }
                la.end = a.end;
                lb.end = b.end;
            }
            _ => windows.push((a, b)),
        }
    }
    let mut ops: Vec<DiffOp> = Vec::new();
    let (mut next_old, mut next_new) = (0, 0);
    for (a, b) in &windows {
        if a.start < next_old || a.start - next_old != b.start.checked_sub(next_new)? {
            return None;
        }
        push(&mut ops, equal(next_old, next_new, a.start - next_old));
        let window = similar::capture_diff_slices(
            Algorithm::Myers,
            &old_lines.lines[a.clone()],
            &new_lines.lines[b.clone()],
        );
        for op in window {
            push(&mut ops, shifted(op, a.start, b.start));
        }
        (next_old, next_new) = (a.end, b.end);
    }
    if old_lines.len() - next_old != new_lines.len().checked_sub(next_new)? {
        return None;
    }
    push(&mut ops, equal(next_old, next_new, old_lines.len() - next_old));
    Some(render(name, &old_lines.lines, &new_lines.lines, ops))
}

/// A text's lines, each with its line break (`\n`, `\r\n` or `\r`), as `similar` splits them.
struct Lines<'t> {
    lines: Vec<&'t str>,
    starts: Vec<usize>,
    text_len: usize,
}

impl<'t> Lines<'t> {
    fn new(text: &'t str) -> Lines<'t> {
        let mut starts = crate::source::LineIndex::new(text).into_starts();
        if starts.last() == Some(&text.len()) {
            starts.pop();
        }
        let lines = (0..starts.len())
            .map(|k| &text[starts[k]..starts.get(k + 1).copied().unwrap_or(text.len())])
            .collect();
        Lines {
            lines,
            starts,
            text_len: text.len(),
        }
    }

    fn len(&self) -> usize {
        self.lines.len()
    }

    /// The index of the line holding byte `offset` (the last line for the end of the text).
    fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset).saturating_sub(1)
    }

    /// The lines of a byte range that begins and ends at line starts (or the end), else `None`.
    fn exact(&self, range: Range<usize>) -> Option<Range<usize>> {
        let index = |at: usize| match self.starts.binary_search(&at) {
            Ok(i) => Some(i),
            Err(i) => (i == self.starts.len() && at == self.text_len).then_some(i),
        };
        Some(index(range.start)?..index(range.end)?)
    }
}

fn equal(old_index: usize, new_index: usize, len: usize) -> DiffOp {
    DiffOp::Equal {
        old_index,
        new_index,
        len,
    }
}

fn shifted(op: DiffOp, old: usize, new: usize) -> DiffOp {
    match op {
        DiffOp::Equal {
            old_index,
            new_index,
            len,
        } => equal(old_index + old, new_index + new, len),
        DiffOp::Delete {
            old_index,
            old_len,
            new_index,
        } => DiffOp::Delete {
            old_index: old_index + old,
            old_len,
            new_index: new_index + new,
        },
        DiffOp::Insert {
            old_index,
            new_index,
            new_len,
        } => DiffOp::Insert {
            old_index: old_index + old,
            new_index: new_index + new,
            new_len,
        },
        DiffOp::Replace {
            old_index,
            old_len,
            new_index,
            new_len,
        } => DiffOp::Replace {
            old_index: old_index + old,
            old_len,
            new_index: new_index + new,
            new_len,
        },
    }
}

/// Appends `op`, joining it to a preceding `Equal` (as one whole-text diff reports it).
fn push(ops: &mut Vec<DiffOp>, op: DiffOp) {
    if let DiffOp::Equal { len, .. } = op {
        if len == 0 {
            return;
        }
        if let Some(DiffOp::Equal { len: last, .. }) = ops.last_mut() {
            *last += len;
            return;
        }
    }
    ops.push(op);
}

/// The unified diff of `ops` the way `similar` writes one with `context_radius(3)`.
fn render(name: &str, old: &[&str], new: &[&str], ops: Vec<DiffOp>) -> String {
    let mut out = String::new();
    for (k, hunk) in similar::group_diff_ops(ops, CONTEXT).iter().enumerate() {
        if k == 0 {
            let _ = writeln!(out, "--- a/{name}\n+++ b/{name}");
        }
        let (first, last) = (&hunk[0], &hunk[hunk.len() - 1]);
        let _ = writeln!(
            out,
            "@@ -{} +{} @@",
            HunkRange(first.old_range().start, last.old_range().end),
            HunkRange(first.new_range().start, last.new_range().end)
        );
        for op in hunk {
            for (tag, line) in op
                .old_range()
                .filter(|_| !matches!(op, DiffOp::Insert { .. }))
                .map(|i| (if matches!(op, DiffOp::Equal { .. }) { ' ' } else { '-' }, old[i]))
                .chain(
                    op.new_range()
                        .filter(|_| matches!(op, DiffOp::Insert { .. } | DiffOp::Replace { .. }))
                        .map(|i| ('+', new[i])),
                )
            {
                out.push(tag);
                out.push_str(line);
                if !line.ends_with(['\r', '\n']) {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

/// A hunk's line range as unified diffs write it: `start,len`, `start` alone for one line.
struct HunkRange(usize, usize);

impl std::fmt::Display for HunkRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = self.1.saturating_sub(self.0);
        match len {
            1 => write!(f, "{}", self.0 + 1),
            0 => write!(f, "{},0", self.0),
            _ => write!(f, "{},{}", self.0 + 1, len),
        }
    }
}

/// A unified diff of `old` and `new` with `name` in the headers (empty when equal).
#[must_use]
pub fn unified_diff(name: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let name = crate::printable::printable(name);
    let name = name.trim_start_matches('/');
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}

#[cfg(test)]
mod tests;
