//! Marker comments: how pysplice frames what it inserted, so that applying again is a no-op,
//! a changed spec replaces its old blocks, hand edits are caught, and revert is exact. This is
//! the one module that knows markers: writing frames, reading them back (`scan`, in
//! `scan.rs`), checking their seals (`seal.rs`) and taking them out (`strip.rs`). Its
//! grammar part is the one place that spells marker lines out: what a line must look like,
//! which blanks, line breaks and positions are accepted, and marker-like text that recipes may
//! not contain.
//!
//! A block of inserted lines:
//! ```text
//!     # >>> pysplice RECIPE/HOOK sha256:HASH
//!     inserted code
//!     # <<< pysplice RECIPE/HOOK
//! ```
//! A block that displaced original text says so in its opening marker: ` was=JSON` when it took
//! the place of whole lines (a replaced statement; the frame runs from the opening marker's line
//! to the end of the closing marker), ` joined=JSON` when it split a line (a one-line suite
//! `def f(): return x` expanded into a block; the frame runs from the line break before the
//! opening marker, which took the place of the text after the colon). A joined frame may hold
//! the frames of the recipe's other hooks on that suite (their code at its start or end, the
//! suite's wrapped return).
//!
//! A change inside a statement (a wrapped return value) gets one marker line before the line
//! holding the change:
//! ```text
//!     # ~~~ pysplice RECIPE/HOOK sha256:HASH at=COLUMN len=LENGTH was=JSON
//!     return wrapped(value)
//! ```
//!
//! # The seal
//! `HASH` is the SHA-256 of everything revert relies on: the kind of frame, the recipe and hook
//! ids, the displaced text (`was`/`joined`), the inserted text and, inline, the column. A frame
//! whose seal does not match is a hand edit and is refused, so revert never writes displaced
//! text that a marker merely claims; 256 bits make a second text with the same seal infeasible
//! to find. The seal is not a signature: whoever can write the file can also write a matching
//! seal. So what revert puts back must also show in the code: a wrapped return keeps the value
//! it displaced, an expanded suite keeps the suite, and replaced statements must match the
//! recipe's `replace` pattern (checked by the engine). A marker cannot carry code of its own
//! beyond what a pattern's metavariables accept.
//!
//! # Older markers
//! Files patched before the seal carry an 8-digit hash of the inserted text alone. They are
//! read, with the same checks of the displaced text, and rewritten sealed by the next apply.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::source::SourceFile;

mod grammar;
pub(crate) mod reason;
mod scan;
mod seal;
mod strip;

use grammar::marker_lines;
pub use grammar::{carries, parse_line, MarkerKind, MarkerLine};
pub(crate) use grammar::{is_id, looks_like_marker, marker_like_offset};
pub use reason::MarkerError;
pub use scan::scan;
use seal::seal;
pub(crate) use strip::{strip, strip_with_anchors, to_framed};

/// What a frame is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameKind {
    /// A block of inserted lines.
    Insert,
    /// A block that took the place of whole lines (replaced statements, `was=`).
    Lines,
    /// A block that split a line (an expanded one-line suite, `joined=`).
    Joined,
    /// A change inside a line (a wrapped return).
    Inline,
}

/// One framed change found in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The recipe id in the marker.
    pub recipe: String,
    /// The hook id in the marker.
    pub hook: String,
    /// The seal in the marker (`sha256:...`, or an older marker's 8-digit hash).
    pub hash: String,
    /// The inserted text the seal covers (block content, or the changed text of an inline change).
    pub content: Range<usize>,
    /// The bytes revert replaces by [`Frame::was`]: the whole frame, marker lines included.
    pub removal: Vec<Range<usize>>,
    /// The original text the change displaced (empty for pure insertions).
    pub was: String,
    /// 1-based line of the opening marker.
    pub line: usize,
    /// What the frame is.
    pub kind: FrameKind,
}

impl Frame {
    /// The 1-based first and last line the frame occupies in `file` (the text it was read from),
    /// marker lines included.
    #[must_use]
    pub fn lines(&self, file: &SourceFile) -> (usize, usize) {
        let last = self
            .removal
            .iter()
            .map(|r| file.lines().line_of(r.end.saturating_sub(1).max(r.start)))
            .max()
            .unwrap_or(self.line);
        (self.line, last.max(self.line))
    }
}

/// Per hook, what each of its frames holds and where it sits in the text without the frames:
/// (seal, displaced text, offset). Two summaries that agree on a hook mean its blocks are the
/// same and in the same places; a block that is the same but moved counts as changed.
pub(crate) type ByHook<'a> = BTreeMap<&'a str, Vec<(&'a str, &'a str, usize)>>;

/// The frames grouped by hook (see [`ByHook`]); `anchors` are where each frame sits in the text
/// without the frames (see [`strip_with_anchors`]).
pub(crate) fn by_hook<'a>(frames: &'a [Frame], anchors: &[usize]) -> ByHook<'a> {
    let mut map: ByHook<'a> = BTreeMap::new();
    for (frame, &anchor) in frames.iter().zip(anchors) {
        map.entry(frame.hook.as_str())
            .or_default()
            .push((frame.hash.as_str(), frame.was.as_str(), anchor));
    }
    map
}

/// What a block frame took the place of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Displaced<'a> {
    /// Nothing: a pure insertion of whole lines.
    Nothing,
    /// Whole lines (from a line start to a line end, without the final line break).
    Lines(&'a str),
    /// The rest of a line, from after a colon to the line end: the frame starts with a line break.
    Joined(&'a str),
}

/// The text of a block frame. `lines` are the already indented code lines.
#[must_use]
pub fn block(
    recipe: &str,
    hook: &str,
    indent: &str,
    newline: &str,
    lines: &str,
    displaced: Displaced<'_>,
) -> BlockText {
    let (kind, was, attribute) = match displaced {
        Displaced::Nothing => ("insert", "", None),
        Displaced::Lines(was) => ("lines", was, Some(("was", was))),
        Displaced::Joined(was) => ("joined", was, Some(("joined", was))),
    };
    let hash = seal(kind, recipe, hook, was, lines, 0);
    let begin = grammar::begin_line(indent, recipe, hook, &hash, attribute, newline);
    let end = grammar::end_line(indent, recipe, hook);
    BlockText {
        content_offset: begin.len(),
        text: format!("{begin}{lines}{end}"),
        content_len: lines.len(),
    }
}

/// A rendered block frame without its final line break.
#[derive(Clone, Debug)]
pub struct BlockText {
    /// The frame's text: opening marker line, content lines, closing marker (no final break).
    pub text: String,
    /// Where the content starts within `text`.
    pub content_offset: usize,
    /// The content's length.
    pub content_len: usize,
}

/// The marker line (with its line break) for an inline change of `new_text` starting at byte
/// `column` (0-based) of the following line, which held `was` there.
#[must_use]
pub fn inline(
    recipe: &str,
    hook: &str,
    indent: &str,
    newline: &str,
    new_text: &str,
    column: usize,
    was: &str,
) -> String {
    let hash = seal("inline", recipe, hook, was, new_text, column);
    grammar::inline_line(indent, recipe, hook, &hash, (column, new_text.len()), was, newline)
}

/// The byte ranges of the block frames of every recipe in `file`, from the opening marker's
/// line to the end of the closing marker, sorted and merged where they nest: code that other
/// recipes inserted, as opposed to the file's own (an import another recipe added belongs to
/// that recipe, not to the file).
#[must_use]
pub(crate) fn block_ranges(file: &SourceFile) -> Vec<Range<usize>> {
    // One pass with the open blocks per id: linear even for a file full of unclosed markers.
    let mut open: std::collections::HashMap<(&str, &str), usize> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for found in marker_lines(file) {
        let id = (found.marker.recipe, found.marker.hook);
        match found.marker.kind {
            MarkerKind::Begin => {
                open.entry(id).or_insert(found.start);
            }
            MarkerKind::End => {
                if let Some(start) = open.remove(&id) {
                    out.push(start..file.line_range(found.line).end);
                }
            }
            MarkerKind::Inline => {}
        }
    }
    // Blocks of stacked recipes nest: keep their union, sorted and disjoint, for `covers`.
    out.sort_by_key(|range| range.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(out.len());
    for range in out {
        match merged.last_mut() {
            Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
            _ => merged.push(range),
        }
    }
    merged
}

/// Whether `range` lies inside one of `ranges` (sorted and disjoint, as [`block_ranges`] gives).
#[must_use]
pub(crate) fn covers(ranges: &[Range<usize>], range: &Range<usize>) -> bool {
    let after = ranges.partition_point(|r| r.start <= range.start);
    after > 0 && range.end <= ranges[after - 1].end
}

/// The id of another recipe whose changes sit inside a joined frame of `recipe` in `text`
/// (stacked on the one-line suite this recipe expanded), with the line of that frame's opening
/// marker. Read from the marker lines alone, before the frames are checked: the other recipe's
/// changes are what make this recipe's inline hashes differ.
#[must_use]
pub(crate) fn stacked_inside(file: &SourceFile, recipe: &str) -> Option<(String, usize)> {
    // Every joined frame's opening marker holds this text: most files skip the scan.
    if !file.text().contains(" joined=\"") {
        return None;
    }
    let mut open: Option<(&str, usize)> = None;
    for found in marker_lines(file) {
        let MarkerLine {
            kind, recipe: id, hook, ..
        } = found.marker;
        let mine = id == recipe;
        match open {
            None if mine && found.marker.opens_joined() => open = Some((hook, found.line)),
            Some((open_hook, _)) if mine && kind == MarkerKind::End && hook == open_hook => open = None,
            Some((_, at)) if !mine => return Some((id.to_string(), at)),
            _ => {}
        }
    }
    None
}

/// The offset of the line break that ends the line before `line_start` (or `line_start` itself
/// at the start of the text).
pub(crate) fn newline_before(text: &str, line_start: usize) -> usize {
    let before = &text.as_bytes()[..line_start];
    if before.ends_with(b"\r\n") {
        line_start - 2
    } else if before.ends_with(b"\n") || before.ends_with(b"\r") {
        line_start - 1
    } else {
        line_start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_ranges_are_merged_and_covers_finds_them() {
        let inner = block("b", "t", "", "\n", "y = 2\n", Displaced::Nothing).text;
        let outer = block("a", "s", "", "\n", &format!("x = 1\n{inner}\n"), Displaced::Nothing).text;
        let text = format!("import os\n{outer}\n# >>> pysplice c/u unclosed\nz = 3\n");
        let file = SourceFile::new("m.py", text.as_str());
        let ranges = block_ranges(&file);
        let start = text.find("# >>> pysplice a/s").unwrap();
        let end = text.find("# <<< pysplice a/s").unwrap() + "# <<< pysplice a/s".len();
        assert_eq!(ranges, vec![Range { start, end }]);
        let y = text.find("y = 2").unwrap();
        assert!(covers(&ranges, &(y..y + 5)));
        assert!(!covers(&ranges, &(0..9)));
        let z = text.find("z = 3").unwrap();
        assert!(!covers(&ranges, &(z..z + 5)));
    }

    #[test]
    fn offsets_of_the_stripped_text_map_back_to_the_framed_text() {
        let frame = block("r", "h", "", "\n", "x = 1\n", Displaced::Nothing).text;
        let text = format!("a = 1\n{frame}\nb = 2\n");
        let file = SourceFile::new("m.py", text.as_str());
        let frames = scan(&file, "r").unwrap();
        let stripped = strip(&text, &frames);
        assert_eq!(stripped, "a = 1\nb = 2\n");
        assert_eq!(to_framed(&frames, 0), 0);
        let b = stripped.find("b = 2").unwrap();
        assert_eq!(to_framed(&frames, b), text.find("b = 2").unwrap());
    }
}
