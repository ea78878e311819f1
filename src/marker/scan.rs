//! Reading frames back: [`scan`] walks a recipe's marker lines in order, pairs opening and
//! closing markers, checks every seal and says what revert takes out and puts back.

use std::ops::Range;

use crate::location::Location;
use crate::source::SourceFile;

use super::grammar::{begin_fields, end_fields, inline_fields, marker_lines, BeginFields, Found, InlineFields, Seal};
use super::reason::{MarkerError, MarkerReason};
use super::seal::{Broken, Claim};
use super::{newline_before, strip, Frame, FrameKind, MarkerKind, MarkerLine};

/// Every frame of `recipe` in `file`, in order.
///
/// # Errors
/// A [`MarkerError`] naming the line and hook, with its [`MarkerReason`]: a frame of this recipe
/// damaged (an opening marker without its closing marker, a closing marker alone, a bad
/// attribute, a seal that no longer matches: edited by hand, a duplicated marker line, frames
/// that overlap), or [`MarkerReason::Stacked`] when another recipe changed a frame of this one
/// after it was applied: that recipe is on top and must be reverted first.
pub fn scan(file: &SourceFile, recipe: &str) -> Result<Vec<Frame>, MarkerError> {
    let found = marker_lines(file);
    let mut scan = Scan {
        file,
        recipe,
        found: &found,
        frames: Vec::new(),
        open: Vec::new(),
    };
    for (index, m) in found.iter().enumerate() {
        if m.marker.recipe != recipe {
            continue;
        }
        match m.marker.kind {
            MarkerKind::Begin => scan.begin(m)?,
            MarkerKind::End => scan.end(m)?,
            MarkerKind::Inline => scan.inline(index, m)?,
        }
    }
    if let Some(frame) = scan.open.pop() {
        let reason = MarkerReason::Unclosed {
            hook: frame.hook.clone(),
        };
        return Err(damaged_at(file.location(frame.begin_start), reason, &frame.hook));
    }
    let mut frames = scan.frames;
    join_frames_at_the_end(file.text(), &mut frames);
    check_overlaps(file, &frames)?;
    Ok(frames)
}

/// One pass over a recipe's marker lines: the frames read so far and the open ones.
struct Scan<'s> {
    file: &'s SourceFile,
    recipe: &'s str,
    /// Every marker line of every recipe, in order.
    found: &'s [Found<'s>],
    frames: Vec<Frame>,
    /// Open frames, innermost last: only a joined frame (an expanded one-line suite) holds
    /// others, the blocks of the recipe's other hooks on that suite.
    open: Vec<OpenFrame>,
}

impl Scan<'_> {
    /// A damaged marker line `m` of `hook`.
    fn damaged(&self, m: &Found<'_>, reason: MarkerReason, hook: &str) -> MarkerError {
        damaged_at(self.file.location(m.start), reason, hook)
    }

    /// Another recipe's marker line `top` changed the frame of `hook` at `at`.
    fn stacked(&self, at: usize, hook: &str, top: &Found<'_>) -> MarkerError {
        MarkerError {
            reason: Box::new(MarkerReason::Stacked {
                top: top.marker.recipe.into(),
                top_hook: top.marker.hook.into(),
                top_line: top.line,
            }),
            location: self.file.location(at),
            hook: hook.to_string(),
        }
    }

    /// An opening marker: a frame opens, inside an open joined frame at most.
    fn begin(&mut self, m: &Found<'_>) -> Result<(), MarkerError> {
        let MarkerLine { hook, fields, .. } = m.marker;
        if let Some(open) = self
            .open
            .last()
            .filter(|o| !o.displaced.as_ref().is_some_and(|(_, joined)| *joined))
        {
            return Err(self.damaged(
                m,
                MarkerReason::OpenBefore {
                    open: open.hook.clone(),
                },
                &open.hook,
            ));
        }
        let BeginFields { seal, displaced } =
            begin_fields(fields).map_err(|what| self.damaged(m, damaged(what), hook))?;
        let text = self.file.text();
        self.open.push(OpenFrame {
            hook: hook.to_string(),
            seal,
            displaced,
            line: m.line,
            begin_start: m.start,
            content_start: self.file.lines().line_start(m.line + 1).unwrap_or(text.len()),
        });
        Ok(())
    }

    /// A closing marker: the innermost open frame closes, its seal checked.
    fn end(&mut self, m: &Found<'_>) -> Result<(), MarkerError> {
        let MarkerLine { hook, fields, .. } = m.marker;
        let Some(frame) = self.open.pop() else {
            return Err(self.damaged(m, MarkerReason::CloseWithoutOpen, hook));
        };
        if frame.hook != hook {
            return Err(self.damaged(
                m,
                MarkerReason::CloseMismatch {
                    hook: hook.to_string(),
                    open: frame.hook.clone(),
                },
                hook,
            ));
        }
        end_fields(fields).map_err(|what| self.damaged(m, damaged(what), hook))?;
        let text = self.file.text();
        let range = self.file.line_range(m.line);
        let content = frame.content_start..range.start.max(frame.content_start);
        self.check_block(&frame, hook, &content)?;
        let line_end = self.file.lines().line_start(m.line + 1).unwrap_or(text.len());
        let kind = match &frame.displaced {
            None => FrameKind::Insert,
            Some((_, false)) => FrameKind::Lines,
            Some((_, true)) => FrameKind::Joined,
        };
        let (removal, was) = match frame.displaced {
            Some((was, false)) => (frame.begin_start..range.end, was),
            Some((joined, true)) => (newline_before(text, frame.begin_start)..range.end, joined),
            // At the very end of a text without a final line break the frame brought its own
            // line break, before it.
            None if line_end == range.end => (newline_before(text, frame.begin_start)..range.end, String::new()),
            None => (frame.begin_start..line_end, String::new()),
        };
        self.frames.push(Frame {
            recipe: self.recipe.to_string(),
            hook: hook.to_string(),
            hash: frame.seal.token().to_string(),
            content,
            removal: vec![removal],
            was,
            line: frame.line,
            kind,
        });
        Ok(())
    }

    /// Whether the seal of the block `frame` of `hook`, holding `content`, matches; if not,
    /// whether another recipe changed it later or it was edited by hand.
    fn check_block(&self, frame: &OpenFrame, hook: &str, content: &Range<usize>) -> Result<(), MarkerError> {
        let (text, recipe) = (self.file.text(), self.recipe);
        let (kind, was) = match &frame.displaced {
            None => ("insert", ""),
            Some((was, false)) => ("lines", was.as_str()),
            Some((joined, true)) => ("joined", joined.as_str()),
        };
        // Another recipe stacked on an expanded one-line suite places its changes inside
        // this frame: the seal covers this recipe's text without them.
        let sealed = if kind == "joined" {
            without_other_recipes(&text[content.clone()], recipe)?
        } else {
            text[content.clone()].to_string()
        };
        // The recipe's other hooks on an expanded suite sit inside it (a wrapped return,
        // code at its start): the suite shows once they are taken out.
        let shown = if kind == "joined" {
            let block = SourceFile::new("<block>", sealed.as_str());
            strip(&sealed, &scan(&block, recipe)?)
        } else {
            String::new()
        };
        let claim = Claim {
            kind,
            recipe,
            hook,
            displaced: was,
            content: &sealed,
            shown: if kind == "joined" { &shown } else { &sealed },
            column: 0,
        };
        let Err(broken) = claim.check(&frame.seal) else {
            return Ok(());
        };
        // Another recipe's marker inside the block: that recipe changed it later.
        if let Some(top) = self
            .found
            .iter()
            .find(|f| f.marker.recipe != recipe && content.contains(&f.start))
        {
            return Err(self.stacked(frame.begin_start, hook, top));
        }
        let reason = match broken {
            Broken::Edited => MarkerReason::BlockEdited { hook: hook.to_string() },
            Broken::Unchecked(what) => damaged(what),
        };
        Err(damaged_at(self.file.location(frame.begin_start), reason, hook))
    }

    /// An inline marker (the `index`th marker line): a change inside the line below it.
    fn inline(&mut self, index: usize, m: &Found<'_>) -> Result<(), MarkerError> {
        let MarkerLine { hook, fields, .. } = m.marker;
        let (text, recipe) = (self.file.text(), self.recipe);
        let bad = |what: &str| {
            let reason = MarkerReason::InlineDamaged { what: what.to_string() };
            self.damaged(m, reason, hook)
        };
        let InlineFields { seal, column, len, was } = inline_fields(fields).map_err(|what| bad(&what))?;
        let next_line = m.line + 1;
        let next = self
            .file
            .lines()
            .line_start(next_line)
            .filter(|&next| next < text.len())
            .ok_or_else(|| bad("no line follows it"))?;
        if let Some(after) = self.found.get(index + 1).filter(|f| f.line == next_line) {
            if after.marker.recipe != recipe {
                return Err(self.stacked(m.start, hook, after));
            }
            return Err(self.damaged(m, MarkerReason::InlineFollowed { hook: hook.to_string() }, hook));
        }
        let line_end = self.file.line_range(next_line).end;
        let content = next.saturating_add(column)..next.saturating_add(column).saturating_add(len);
        let changed = text
            .get(content.clone())
            .filter(|_| content.start <= line_end)
            .ok_or_else(|| bad("its column lies outside the next line"))?;
        let claim = Claim {
            kind: "inline",
            recipe,
            hook,
            displaced: &was,
            content: changed,
            shown: changed,
            column,
        };
        if let Err(broken) = claim.check(&seal) {
            return Err(self.damaged(
                m,
                match broken {
                    Broken::Edited => MarkerReason::LineEdited { hook: hook.to_string() },
                    Broken::Unchecked(what) => damaged(what),
                },
                hook,
            ));
        }
        self.frames.push(Frame {
            recipe: recipe.to_string(),
            hook: hook.to_string(),
            hash: seal.token().to_string(),
            removal: vec![m.start..next, content.clone()],
            content,
            was,
            line: m.line,
            kind: FrameKind::Inline,
        });
        Ok(())
    }
}

/// Frames of one recipe never share bytes; forged markers could make them, and revert would
/// then drop text silently.
fn check_overlaps(file: &SourceFile, frames: &[Frame]) -> Result<(), MarkerError> {
    let mut pieces: Vec<(&Range<usize>, &Frame)> = frames
        .iter()
        .flat_map(|frame| frame.removal.iter().map(move |range| (range, frame)))
        .collect();
    // Outer pieces first where two start together, so that a joined frame precedes what it holds.
    pieces.sort_by_key(|(range, _)| (range.start, std::cmp::Reverse(range.end)));
    // The only nesting allowed: a joined frame (an expanded one-line suite) holding the frames of
    // the recipe's other hooks on that suite, wholly inside it.
    let mut containers: Vec<&Range<usize>> = Vec::new();
    let mut previous: Option<(&Range<usize>, &Frame)> = None;
    for &(range, frame) in &pieces {
        while containers.last().is_some_and(|outer| outer.end <= range.start) {
            containers.pop();
        }
        let outer = containers.last().copied();
        // Crossing the end of the joined frame it starts in.
        let crosses = outer.is_some_and(|outer| range.end > outer.end);
        // Starting inside the piece before it, unless that piece is the joined frame holding it.
        let inside_previous = previous.is_some_and(|(before, _)| before.end > range.start && outer != Some(before));
        if crosses || inside_previous {
            let other = previous.map_or(frame, |(_, other)| other);
            let reason = MarkerReason::Overlap {
                first: other.hook.clone(),
                first_line: other.line,
                second: frame.hook.clone(),
                second_line: frame.line,
            };
            return Err(damaged_at(file.location(range.start), reason, &frame.hook));
        }
        if frame.kind == FrameKind::Joined {
            containers.push(range);
        }
        previous = Some((range, frame));
    }
    Ok(())
}

/// `content` (whole lines of a frame of `recipe`) without the frames of other recipes in it.
fn without_other_recipes(content: &str, recipe: &str) -> Result<String, MarkerError> {
    let block = SourceFile::new("<block>", content);
    let mut others: Vec<&str> = Vec::new();
    for found in marker_lines(&block) {
        let id = found.marker.recipe;
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
    seal: Seal,
    /// The displaced text, and whether it was joined to the line before.
    displaced: Option<(String, bool)>,
    line: usize,
    begin_start: usize,
    content_start: usize,
}

/// A marker line that cannot be read, for `what` reason.
/// A damaged frame of `hook` at `location`.
fn damaged_at(location: Location, reason: MarkerReason, hook: &str) -> MarkerError {
    MarkerError {
        reason: Box::new(reason),
        location,
        hook: hook.to_string(),
    }
}

fn damaged(what: &str) -> MarkerReason {
    MarkerReason::Damaged { what: what.to_string() }
}
