//! Marker comments: how pysplice frames what it inserted, so that applying again is a no-op,
//! a changed spec replaces its old blocks, hand edits are caught, and revert is exact.
//!
//! A block of inserted lines:
//! ```text
//!     # >>> pysplice RECIPE/HOOK HASH
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
//!     # ~~~ pysplice RECIPE/HOOK HASH at=COLUMN len=LENGTH was=JSON
//!     return wrapped(value)
//! ```
//! `HASH` is a short hash of the inserted text, so an edited block is recognised.

use std::ops::Range;

use crate::error::{Error, HookRef};
use crate::source::{lines_inside_strings, SourceFile};

const BEGIN: &str = "# >>> pysplice ";
const END: &str = "# <<< pysplice ";
const INLINE: &str = "# ~~~ pysplice ";

/// A 64-bit FNV-1a hash of `text`, as 8 hex digits (the low 32 bits): short, stable across
/// platforms and releases, enough to recognise an edited block.
#[must_use]
pub fn short_hash(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:08x}", hash & 0xffff_ffff)
}

/// One framed change found in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The recipe id in the marker.
    pub recipe: String,
    /// The hook id in the marker.
    pub hook: String,
    /// The hash in the marker.
    pub hash: String,
    /// The inserted text the hash covers (block content, or the changed text of an inline change).
    pub content: Range<usize>,
    /// The bytes revert replaces by [`Frame::was`]: the whole frame, marker lines included.
    pub removal: Vec<Range<usize>>,
    /// The original text the change displaced (empty for pure insertions).
    pub was: String,
    /// 1-based line of the opening marker.
    pub line: usize,
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
    let hash = short_hash(lines);
    let was_attr = match displaced {
        Displaced::Nothing => String::new(),
        Displaced::Lines(was) => format!(" was={}", json_string(was)),
        Displaced::Joined(was) => format!(" joined={}", json_string(was)),
    };
    let begin = format!("{indent}{BEGIN}{recipe}/{hook} {hash}{was_attr}{newline}");
    let end = format!("{indent}{END}{recipe}/{hook}");
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
/// `column` (0-based) of the following line.
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
    let hash = short_hash(new_text);
    let len = new_text.len();
    let was = json_string(was);
    format!("{indent}{INLINE}{recipe}/{hook} {hash} at={column} len={len} was={was}{newline}")
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// Every frame of `recipe` in `file`, in order.
///
/// # Errors
/// [`Error::Marker`] naming the line when a frame of this recipe is damaged: an opening marker
/// without its closing marker, a closing marker alone, a bad attribute, or content whose hash no
/// longer matches (edited by hand).
pub fn scan(file: &SourceFile, recipe: &str) -> Result<Vec<Frame>, Error> {
    let text = file.text();
    let mut frames = Vec::new();
    // Open frames, innermost last: only a joined frame (an expanded one-line suite) holds others,
    // the blocks of the recipe's other hooks on that suite.
    let mut open: Vec<OpenFrame> = Vec::new();
    let lines = file.lines();
    let in_strings = lines_inside_strings(text);
    for line in 1..=lines.line_count() {
        if in_strings.binary_search(&line).is_ok() {
            continue;
        }
        let range = file.line_range(line);
        let start = file.code_start(line).min(range.end);
        let trimmed = text[start..range.end].trim_start();
        let damaged = |reason: String, hook: &str| Error::Marker {
            location: file.location(start),
            reason,
            hook: HookRef(Some(hook.to_string())),
        };
        if let Some(rest) = trimmed.strip_prefix(BEGIN) {
            let Some((hook, fields)) = parse_head(rest, recipe) else {
                continue;
            };
            if let Some(open) = open
                .last()
                .filter(|o| !o.displaced.as_ref().is_some_and(|(_, joined)| *joined))
            {
                return Err(damaged(
                    format!("the block of hook `{}` is not closed before this marker", open.hook),
                    &open.hook,
                ));
            }
            let json = |value: &str| {
                serde_json::from_str::<String>(value)
                    .map_err(|_| damaged("the displaced text in this marker is damaged".into(), &hook))
            };
            let (hash, displaced) = if let Some((hash, was)) = fields.split_once(" was=") {
                (hash, Some((json(was)?, false)))
            } else if let Some((hash, joined)) = fields.split_once(" joined=") {
                (hash, Some((json(joined)?, true)))
            } else {
                (fields, None)
            };
            open.push(OpenFrame {
                hook,
                hash: hash.to_string(),
                displaced,
                line,
                begin_start: start,
                content_start: lines.line_start(line + 1).unwrap_or(text.len()),
            });
        } else if let Some(rest) = trimmed.strip_prefix(END) {
            let Some((hook, _)) = parse_head(rest, recipe) else {
                continue;
            };
            let Some(frame) = open.pop() else {
                return Err(damaged("closing marker without an opening marker".into(), &hook));
            };
            if frame.hook != hook {
                return Err(damaged(
                    format!("closing marker for `{hook}` inside the block of `{}`", frame.hook),
                    &hook,
                ));
            }
            let content = frame.content_start..range.start.max(frame.content_start);
            // Another recipe stacked on an expanded one-line suite places its changes inside
            // this frame: the hash covers this recipe's text without them.
            let joined = frame.displaced.as_ref().is_some_and(|(_, joined)| *joined);
            let hashed = if joined {
                without_other_recipes(&text[content.clone()], recipe)?
            } else {
                text[content.clone()].to_string()
            };
            if short_hash(&hashed) != frame.hash {
                return Err(Error::Marker {
                    location: file.location(frame.begin_start),
                    reason: format!("the block of hook `{hook}` was edited by hand (its hash no longer matches)"),
                    hook: HookRef(Some(hook)),
                });
            }
            let line_end = lines.line_start(line + 1).unwrap_or(text.len());
            let (removal, was) = match frame.displaced {
                Some((was, false)) => (frame.begin_start..range.end, was),
                Some((joined, true)) => (newline_before(text, frame.begin_start)..range.end, joined),
                // At the very end of a text without a final line break the frame brought its own
                // line break, before it.
                None if line_end == range.end => (newline_before(text, frame.begin_start)..range.end, String::new()),
                None => (frame.begin_start..line_end, String::new()),
            };
            frames.push(Frame {
                recipe: recipe.to_string(),
                hook,
                hash: frame.hash,
                content,
                removal: vec![removal],
                was,
                line: frame.line,
            });
        } else if let Some(rest) = trimmed.strip_prefix(INLINE) {
            let Some((hook, fields)) = parse_head(rest, recipe) else {
                continue;
            };
            let bad = || damaged("this inline marker is damaged".into(), &hook);
            let (hash, rest) = fields.split_once(" at=").ok_or_else(bad)?;
            let (column, rest) = rest.split_once(" len=").ok_or_else(bad)?;
            let (len, was) = rest.split_once(" was=").ok_or_else(bad)?;
            let column: usize = column.parse().map_err(|_| bad())?;
            let len: usize = len.parse().map_err(|_| bad())?;
            let was: String = serde_json::from_str(was).map_err(|_| bad())?;
            let next = lines.line_start(line + 1).ok_or_else(bad)?;
            let content = next + column..next + column + len;
            if text.get(content.clone()).map(short_hash).as_deref() != Some(hash) {
                return Err(damaged(
                    format!("the line changed by hook `{hook}` was edited by hand (its hash no longer matches)"),
                    &hook,
                ));
            }
            frames.push(Frame {
                recipe: recipe.to_string(),
                hook,
                hash: hash.to_string(),
                removal: vec![start..next, content.clone()],
                content,
                was,
                line,
            });
        }
    }
    if let Some(frame) = open.pop() {
        return Err(Error::Marker {
            location: file.location(frame.begin_start),
            reason: format!("the opening marker of hook `{}` has no closing marker", frame.hook),
            hook: HookRef(Some(frame.hook)),
        });
    }
    join_frames_at_the_end(text, &mut frames);
    Ok(frames)
}

/// `content` (whole lines of a frame of `recipe`) without the frames of other recipes in it.
fn without_other_recipes(content: &str, recipe: &str) -> Result<String, Error> {
    let mut others: Vec<&str> = Vec::new();
    for line in content.lines() {
        let trimmed = line.trim_start();
        let rest = [BEGIN, INLINE].iter().find_map(|prefix| trimmed.strip_prefix(prefix));
        let Some(id) = rest.and_then(|r| r.split(['/', ' ']).next()) else {
            continue;
        };
        if id != recipe && !others.contains(&id) {
            others.push(id);
        }
    }
    let mut text = content.to_string();
    for other in others {
        let file = SourceFile::new("<block>", text.as_str());
        let frames = scan(&file, other)?;
        text = strip(&text, &frames);
    }
    Ok(text)
}

/// The id of another recipe whose changes sit inside a joined frame of `recipe` in `text`
/// (stacked on the one-line suite this recipe expanded), with the line of that frame's opening
/// marker. Read from the marker lines alone, before the frames are checked: the other recipe's
/// changes are what make this recipe's inline hashes differ.
#[must_use]
pub fn stacked_inside(text: &str, recipe: &str) -> Option<(String, usize)> {
    if !text.contains(" joined=\"") {
        return None;
    }
    let in_strings = lines_inside_strings(text);
    let mut open: Option<(String, usize)> = None;
    for (i, line) in text.split_inclusive(['\n']).enumerate() {
        let number = i + 1;
        if in_strings.binary_search(&number).is_ok() {
            continue;
        }
        let trimmed = line.trim_start_matches('\u{feff}').trim_start();
        let marker = [BEGIN, END, INLINE]
            .iter()
            .find_map(|prefix| trimmed.strip_prefix(prefix).map(|rest| (*prefix, rest)));
        let Some((prefix, rest)) = marker else { continue };
        let id = rest.split(' ').next().unwrap_or_default();
        let mine = id.split('/').next() == Some(recipe);
        match &open {
            None if mine && prefix == BEGIN && rest.contains(" joined=") => open = Some((id.to_string(), number)),
            Some((open_id, _)) if mine && prefix == END && id == open_id => open = None,
            Some((_, at)) if !mine => return Some((id.split('/').next().unwrap_or_default().to_string(), *at)),
            _ => {}
        }
    }
    None
}

/// Frames inserted one after another at the end of a text without a final line break each
/// brought their line break before them: the last one ends the text, and every frame right
/// before such a frame ends at its own closing marker too.
fn join_frames_at_the_end(text: &str, frames: &mut [Frame]) {
    if text.ends_with(['\n', '\r']) {
        return;
    }
    let mut tail_start = match frames.last().map(|f| f.removal.as_slice()) {
        Some([last]) if last.end == text.len() => last.start,
        _ => return,
    };
    for frame in frames.iter_mut().rev().skip(1) {
        let [removal] = frame.removal.as_mut_slice() else { break };
        if !frame.was.is_empty() || removal.end <= tail_start || removal.start >= tail_start {
            break;
        }
        *removal = newline_before(text, removal.start)..tail_start;
        tail_start = removal.start;
    }
}

/// An opening marker waiting for its closing marker.
struct OpenFrame {
    hook: String,
    hash: String,
    /// The displaced text, and whether it was joined to the line before.
    displaced: Option<(String, bool)>,
    line: usize,
    begin_start: usize,
    content_start: usize,
}

/// `RECIPE/HOOK rest` → (hook, rest) when the recipe is the one asked for.
fn parse_head<'a>(rest: &'a str, recipe: &str) -> Option<(String, &'a str)> {
    let (id, fields) = rest.split_once(' ').unwrap_or((rest, ""));
    let (marker_recipe, hook) = id.split_once('/')?;
    (marker_recipe == recipe).then(|| (hook.to_string(), fields.trim_end()))
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

/// The text with every frame removed and what it displaced put back.
#[must_use]
pub fn strip(text: &str, frames: &[Frame]) -> String {
    strip_with_anchors(text, frames).0
}

/// [`strip`], also giving for each frame the offset in the stripped text where it was.
#[must_use]
pub fn strip_with_anchors(text: &str, frames: &[Frame]) -> (String, Vec<usize>) {
    let mut pieces: Vec<(Range<usize>, &str, usize)> = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        match frame.removal.as_slice() {
            [whole] => pieces.push((whole.clone(), &frame.was, i)),
            [marker, changed] => {
                pieces.push((marker.clone(), "", i));
                pieces.push((changed.clone(), &frame.was, i));
            }
            _ => {}
        }
    }
    pieces.sort_by_key(|(range, _, _)| range.start);
    let mut out = String::with_capacity(text.len());
    let mut anchors = vec![0; frames.len()];
    let mut seen = vec![false; frames.len()];
    let mut at = 0;
    for (range, replacement, i) in pieces {
        if range.start < at {
            continue;
        }
        out.push_str(&text[at..range.start]);
        if !seen[i] {
            anchors[i] = out.len();
            seen[i] = true;
        }
        out.push_str(replacement);
        at = range.end;
    }
    out.push_str(&text[at..]);
    (out, anchors)
}
