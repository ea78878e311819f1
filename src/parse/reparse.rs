//! The syntax tree of a new version of a file (a patched output, a document after a keystroke)
//! without parsing all of it again: only the runs of top-level statements that hold an edit are
//! parsed, and the old version's other statements are reused, moved to where they sit now.
//!
//! Why this is the tree a whole parse gives: the text is cut only at the start of a line where
//! a top-level statement begins after the previous one ended, and the line before the cut does
//! not end in a backslash. There the tokenizer is at a line start, outside any bracket or
//! string, at indentation 0, and a module is a sequence of statements: a run that parses on its
//! own, between bytes that are the original's and parsed before, leaves the parse of the rest
//! as it was. When a run does not parse on its own, or a cut is not clean, the whole output is
//! parsed, so a failure reads exactly as a whole parse reports it.

use std::ops::Range;

mod nested;

use super::{parse_module, SyntaxError};
use crate::source::SourceFile;
use crate::syntax::{kind, Node, LIST};

/// The output's tree, and the parts that were parsed anew: (range in the original, range in
/// the output), sorted. Outside them the output's statements are the original's, moved.
pub(crate) struct Reparsed {
    /// The output's `Module` node.
    pub root: Node,
    /// The parts parsed anew; the whole file when it was parsed whole.
    pub regions: Vec<(Range<usize>, Range<usize>)>,
}

/// The tree of `output`, which is `original_text` (parsed as `original`) with the edits of
/// `spans` (original range, output range; disjoint) applied.
///
/// # Errors
/// A [`SyntaxError`] from a whole parse of `output` when it does not parse.
pub(crate) fn reparse(
    original: &Node,
    original_text: &str,
    output: &SourceFile,
    spans: &[(Range<usize>, Range<usize>)],
) -> Result<Reparsed, SyntaxError> {
    match spliced(original, original_text, output, spans) {
        Some(reparsed) => Ok(reparsed),
        None => whole(output, original_text.len()),
    }
}

/// The one span (old range, new range) outside which `old` and `new` are the same bytes: their
/// common prefix and suffix taken off. `None` when they are equal.
pub(crate) fn changed_span(old: &str, new: &str) -> Option<(Range<usize>, Range<usize>)> {
    if old == new {
        return None;
    }
    let prefix = old.bytes().zip(new.bytes()).take_while(|(a, b)| a == b).count();
    let room = old.len().min(new.len()) - prefix;
    let suffix = old
        .bytes()
        .rev()
        .zip(new.bytes().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    Some((prefix..old.len() - suffix, prefix..new.len() - suffix))
}

/// A whole parse of `output`.
fn whole(output: &SourceFile, old_len: usize) -> Result<Reparsed, SyntaxError> {
    let root = parse_module(output)?;
    Ok(Reparsed {
        regions: vec![(0..old_len, 0..output.text().len())],
        root,
    })
}

/// The spliced tree, or `None` where a whole parse must decide.
fn spliced(
    original: &Node,
    old: &str,
    output: &SourceFile,
    spans: &[(Range<usize>, Range<usize>)],
) -> Option<Reparsed> {
    let new = output.text();
    let body = original.children().first()?.children();
    let cuts = run_cuts(body, old, 0, old.len());
    let mut spans = spans.to_vec();
    spans.sort_by_key(|(old, _)| (old.start, old.end));
    let regions = widen(&cuts, &spans, old)?;
    let mut out_body = Vec::with_capacity(body.len() + 8);
    let mut pairs = Vec::with_capacity(regions.len());
    let (mut delta, mut next_span, mut next_stmt) = (0isize, 0, 0);
    for region in regions {
        let start = region.start.checked_add_signed(delta)?;
        let first_span = next_span;
        while let Some((range, to)) = spans.get(next_span).filter(|(r, _)| r.end <= region.end) {
            delta += to.len() as isize - range.len() as isize;
            next_span += 1;
        }
        let end = region.end.checked_add_signed(delta)?;
        let text = new.get(start..end)?;
        // The run must end where the next statement can start afresh (or at the end), and
        // must not begin with what only the start of a file may hold (a byte order mark).
        if (end < new.len() && !ends_cleanly(text)) || (start > 0 && text.starts_with('\u{feff}')) {
            return None;
        }
        while body.get(next_stmt).is_some_and(|s| extent(s).end <= region.start) {
            let shift = delta_before(&pairs);
            out_body.push(shift_or_clone(&body[next_stmt], shift));
            next_stmt += 1;
        }
        let first_stmt = next_stmt;
        while body.get(next_stmt).is_some_and(|s| extent(s).start < region.end) {
            next_stmt += 1;
        }
        // A run that is one class edited inside its body: only the body's edited runs.
        let class = match &body[first_stmt..next_stmt] {
            [stmt] if stmt.kind() == kind::CLASS_DEF => nested::class(
                stmt,
                old,
                new,
                &region,
                start,
                &spans[first_span..next_span],
                output.name(),
            ),
            _ => None,
        };
        if let Some(class) = class {
            out_body.push(class);
        } else {
            let module = parse_module(&SourceFile::new(output.name(), text)).ok()?;
            let at = start as isize;
            out_body.extend(module.children().first()?.children().iter().map(|s| s.shifted(at)));
        }
        pairs.push((region, start..end));
    }
    if next_span != spans.len() {
        return None;
    }
    let shift = delta_before(&pairs);
    out_body.extend(body[next_stmt..].iter().map(|s| shift_or_clone(s, shift)));
    let range = match (out_body.first(), out_body.last()) {
        (Some(first), Some(last)) => first.range().start..last.range().end,
        _ => new.len()..new.len(),
    };
    let list = Node::new(LIST, range, Some("body".into()), out_body);
    Some(Reparsed {
        root: Node::new(kind::MODULE, 0..new.len(), None, vec![list]),
        regions: pairs,
    })
}

/// How far the text after the regions so far has moved.
fn delta_before(pairs: &[(Range<usize>, Range<usize>)]) -> isize {
    pairs.last().map_or(0, |(old, new)| new.end as isize - old.end as isize)
}

fn shift_or_clone(node: &Node, delta: isize) -> Node {
    if delta == 0 {
        node.clone()
    } else {
        node.shifted(delta)
    }
}

/// Where the text of the statements `body` (of one block, from `from` to `to`) may be cut:
/// `from`, `to`, and the start of each line on which a statement begins after the previous one
/// ended, unless the line before ends in a backslash.
fn run_cuts(body: &[Node], text: &str, from: usize, to: usize) -> Vec<usize> {
    let mut cuts = vec![from];
    for pair in body.windows(2) {
        let start = extent(&pair[1]).start;
        let line = text[..start].rfind(['\n', '\r']).map_or(0, |i| i + 1);
        if line > from && line < to && extent(&pair[0]).end <= line && ends_cleanly(&text[..line]) {
            cuts.push(line);
        }
    }
    cuts.push(to);
    cuts.dedup();
    cuts
}

/// Each edit of `spans` (sorted) widened to the `cuts` around it; overlapping or touching ones
/// merged. `None` when an edit lies outside the cuts.
fn widen(cuts: &[usize], spans: &[(Range<usize>, Range<usize>)], old: &str) -> Option<Vec<Range<usize>>> {
    let mut regions: Vec<Range<usize>> = Vec::new();
    for (range, _) in spans {
        // The end of a text that does not end with a clean line break is no place to start a
        // run: what is inserted there continues the last statement.
        let open_end = !ends_cleanly(old);
        let start = cuts[..cuts.partition_point(|&c| c <= range.start)]
            .iter()
            .rev()
            .find(|&&c| c == 0 || c < old.len() || !open_end)
            .copied()?;
        let end = cuts.get(cuts.partition_point(|&c| c < range.end)).copied()?;
        // Runs that only touch stay apart: each is parsed on its own (a class edited inside its
        // body, next to another, is parsed a method at a time).
        match regions.last_mut() {
            Some(last) if start < last.end || (start == last.end && last.start == last.end) => {
                last.end = last.end.max(end);
            }
            _ => regions.push(start..end),
        }
    }
    Some(regions)
}

/// Whether `text` ends with a line break that no backslash continues.
fn ends_cleanly(text: &str) -> bool {
    let Some(rest) = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .or_else(|| text.strip_suffix('\r'))
    else {
        return false;
    };
    !rest.ends_with('\\')
}

/// A statement's bytes with its decorators and other children.
fn extent(node: &Node) -> Range<usize> {
    let mut range = node.range();
    for child in node.children() {
        let r = child.range();
        if r.start < r.end || child.kind() != LIST {
            range.start = range.start.min(r.start);
            range.end = range.end.max(r.end);
        }
    }
    range
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spliced tree is the tree of a whole parse, for edits at cuts, inside statements, at
    /// the start and at the end.
    #[test]
    fn spliced_tree_equals_a_whole_parse() {
        let old = "import os\n\n@dec\ndef f(x):\n    return x\n\nx = (1,\n     2); y = 3\nclass A:\n    def g(self):\n        pass\n# end\n";
        let cases: &[(usize, &str)] = &[
            (0, "import sys\n"),
            (old.find("@dec").unwrap(), "z = 1\n"),
            (old.find("    return").unwrap(), "    print(x)\n"),
            (old.find("        pass").unwrap(), "        q = [\n1]\n"),
            (old.len(), "\n\ndef h():\n    pass\n"),
            (old.find(" y = 3").unwrap(), " w = 4;"),
        ];
        let original = parse_module(&SourceFile::new("m.py", old)).unwrap();
        for &(at, code) in cases {
            let new = format!("{}{code}{}", &old[..at], &old[at..]);
            let out = SourceFile::new("m.py", new.as_str());
            let spans = vec![(at..at, at..at + code.len())];
            let reparsed = reparse(&original, old, &out, &spans).unwrap();
            let whole = parse_module(&out).unwrap();
            assert!(reparsed.root == whole, "{code:?}");
            assert!(reparsed.regions[0].0.len() < old.len(), "{code:?}: parsed whole");
        }
    }

    /// Runs that parse on their own only by leaving out their context are parsed whole: an
    /// `else` that joins the `if` before it, a byte order mark in the middle of the file.
    #[test]
    fn context_dependent_runs_are_parsed_whole() {
        let old = "if x:\n    pass\ny = 2\n";
        let original = parse_module(&SourceFile::new("m.py", old)).unwrap();
        let at = old.find("y = 2").unwrap();
        let code = "else:\n    pass\n";
        let new = format!("{}{code}{}", &old[..at], &old[at..]);
        let out = SourceFile::new("m.py", new.as_str());
        let reparsed = reparse(&original, old, &out, &[(at..at, at..at + code.len())]).unwrap();
        assert!(reparsed.root == parse_module(&out).unwrap());
        assert_eq!(reparsed.regions, vec![(0..old.len(), 0..new.len())]);

        let code = "\u{feff}z = 1\n";
        let new = format!("{}{code}{}", &old[..at], &old[at..]);
        let out = SourceFile::new("m.py", new.as_str());
        let spliced = reparse(&original, old, &out, &[(at..at, at..at + code.len())]);
        assert_eq!(
            spliced.map(|r| r.root).map_err(|e| e.to_string()),
            parse_module(&out).map_err(|e| e.to_string())
        );
    }

    /// A run that does not parse on its own falls back to a whole parse, which reports it.
    #[test]
    fn unparsable_output_reports_as_a_whole_parse() {
        let old = "x = 1\ny = 2\n";
        let original = parse_module(&SourceFile::new("m.py", old)).unwrap();
        let new = "x = 1\ny = (2\n";
        let out = SourceFile::new("m.py", new);
        let err = reparse(&original, old, &out, &[(8..9, 8..10)]).err().unwrap();
        let whole = parse_module(&out).unwrap_err();
        assert_eq!(err.to_string(), whole.to_string());
    }
}
