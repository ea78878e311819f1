//! Marker comments: how pysplice frames what it inserted, so that applying again is a no-op,
//! a changed spec replaces its old blocks, hand edits are caught, and revert is exact. This is
//! the one module that knows the marker grammar: writing markers, reading them, and telling
//! marker-like text apart (recipes may not contain any).
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

use std::ops::Range;

use sha2::{Digest, Sha256};

use crate::error::{Error, HookRef};
use crate::parse::parse_snippet;
use crate::source::{file_lines_inside_strings, lines_inside_strings, SourceFile};
use crate::syntax::ABSENT;

const BEGIN: &str = "# >>> pysplice ";
const END: &str = "# <<< pysplice ";
const INLINE: &str = "# ~~~ pysplice ";
const SEAL: &str = "sha256:";
/// Bumped when what the seal covers changes, so an old seal never verifies new content.
const SEAL_VERSION: &str = "pysplice-marker-2";

/// The kind of a marker line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerKind {
    /// `# >>> pysplice`: opens a block.
    Begin,
    /// `# <<< pysplice`: closes a block.
    End,
    /// `# ~~~ pysplice`: describes a change in the line below it.
    Inline,
}

impl MarkerKind {
    fn prefix(self) -> &'static str {
        match self {
            MarkerKind::Begin => BEGIN,
            MarkerKind::End => END,
            MarkerKind::Inline => INLINE,
        }
    }
}

/// A marker line as read: kind, recipe and hook ids, and the rest of the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkerLine<'a> {
    /// Which marker.
    pub kind: MarkerKind,
    /// The recipe id.
    pub recipe: &'a str,
    /// The hook id.
    pub hook: &'a str,
    /// What follows `RECIPE/HOOK` (seal and attributes), without surrounding blanks.
    pub fields: &'a str,
}

/// Reads the code of one line (indentation allowed, no line break) as a marker line.
#[must_use]
pub fn parse_line(code: &str) -> Option<MarkerLine<'_>> {
    let code = code.trim_start_matches('\u{feff}').trim_start();
    let (kind, rest) = [MarkerKind::Begin, MarkerKind::End, MarkerKind::Inline]
        .into_iter()
        .find_map(|kind| code.strip_prefix(kind.prefix()).map(|rest| (kind, rest)))?;
    let rest = rest.trim_end();
    let (id, fields) = rest.split_once(' ').unwrap_or((rest, ""));
    let (recipe, hook) = id.split_once('/')?;
    // Ids are what recipes may declare; anything else (control characters that would reach a
    // terminal, a second `/`) is not a marker.
    if !is_id(recipe) || !is_id(hook) {
        return None;
    }
    Some(MarkerLine {
        kind,
        recipe,
        hook,
        fields: fields.trim(),
    })
}

/// Whether `id` can be a recipe or hook id: non-empty ASCII letters, digits, `-`, `_`, `.`.
#[must_use]
pub fn is_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The marker prefix (`# >>> pysplice ` ...) and the `RECIPE/HOOK` word of a marker line, for
/// placement, which only needs to step over markers.
pub(crate) fn prefix_and_id(code: &str) -> Option<(&'static str, &str)> {
    let line = parse_line(code)?;
    let prefix = line.kind.prefix();
    let code = code.trim_start_matches('\u{feff}').trim_start();
    code.get(prefix.len()..prefix.len() + line.recipe.len() + 1 + line.hook.len())
        .map(|id| (prefix, id))
}

/// Whether `line` looks like a marker line, also with other spacing or repeated `#` (`#>>>
/// pysplice`): text that recipes must never write, since the next scan would take it for one.
#[must_use]
pub fn looks_like_marker(line: &str) -> bool {
    let code = line.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    let Some(rest) = code.strip_prefix('#') else {
        return false;
    };
    let rest = rest.trim_start_matches(|c: char| c == '#' || c.is_whitespace());
    [">>>", "<<<", "~~~"].iter().any(|arrow| {
        rest.strip_prefix(arrow)
            .is_some_and(|r| r.trim_start().starts_with("pysplice"))
    })
}

/// The seal of a frame: SHA-256 over the kind, ids, displaced text, inserted text and column,
/// each field length-prefixed so no two different frames hash the same input.
fn seal(kind: &str, recipe: &str, hook: &str, displaced: &str, content: &str, column: usize) -> String {
    use std::fmt::Write;
    let mut hasher = Sha256::new();
    let column = column.to_string();
    for field in [SEAL_VERSION, kind, recipe, hook, displaced, content, &column] {
        hasher.update((field.len() as u64).to_le_bytes());
        hasher.update(field.as_bytes());
    }
    let mut out = String::with_capacity(SEAL.len() + 64);
    out.push_str(SEAL);
    for byte in hasher.finalize() {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// The hash older markers carry: the low 32 bits of the 64-bit FNV-1a of the inserted text.
fn legacy_hash(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:08x}", hash & 0xffff_ffff)
}

/// A seal as read from a marker.
#[derive(Clone, Debug)]
enum Seal {
    /// `sha256:` and 64 hex digits.
    Current(String),
    /// 8 hex digits, written before the seal covered the displaced text.
    Legacy(String),
}

impl Seal {
    fn read(token: &str) -> Option<Seal> {
        let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        match token.strip_prefix(SEAL) {
            Some(digits) if hex(digits, 64) => Some(Seal::Current(token.to_string())),
            None if hex(token, 8) => Some(Seal::Legacy(token.to_string())),
            _ => None,
        }
    }

    fn token(&self) -> &str {
        match self {
            Seal::Current(token) | Seal::Legacy(token) => token,
        }
    }
}

/// What a frame says about itself, checked against its seal.
struct Claim<'a> {
    kind: &'static str,
    recipe: &'a str,
    hook: &'a str,
    displaced: &'a str,
    content: &'a str,
    /// The code a reader sees in place of the displaced text: `content`, or for an expanded
    /// one-line suite, its content without the recipe's other hooks framed inside it.
    shown: &'a str,
    column: usize,
}

/// Why a frame cannot be trusted.
enum Broken {
    /// The seal does not match: the frame was edited.
    Edited,
    /// An older marker whose displaced text cannot be checked.
    Unchecked(&'static str),
}

impl Claim<'_> {
    /// The seal first (an edit of anything revert relies on), then whether the displaced text
    /// is visible in the code the frame holds: a marker cannot carry code of its own that
    /// revert would write (see [`displaced_fits`]).
    fn check(&self, seal: &Seal) -> Result<(), Broken> {
        let sealed = match seal {
            Seal::Current(token) => {
                *token
                    == self::seal(
                        self.kind,
                        self.recipe,
                        self.hook,
                        self.displaced,
                        self.content,
                        self.column,
                    )
            }
            Seal::Legacy(token) => *token == legacy_hash(self.content),
        };
        if !sealed {
            return Err(Broken::Edited);
        }
        if displaced_fits(self.kind, self.displaced, self.shown) {
            Ok(())
        } else {
            Err(Broken::Unchecked(
                "the text this marker would put back does not appear in the code it frames (was the marker forged?)",
            ))
        }
    }
}

/// Whether the displaced text of a frame shows in its inserted text, so that revert writes
/// nothing a reader of the code could not see: a wrapped return keeps the returned value (or
/// `None` for a bare `return`), an expanded one-line suite keeps the suite. Pure insertions
/// displace nothing; replaced statements are checked against the recipe's pattern by the
/// engine, which knows the recipe.
fn displaced_fits(kind: &str, displaced: &str, content: &str) -> bool {
    match kind {
        "inline" => {
            // Compared as syntax: the value may sit in parentheses, after comments, on several
            // lines of the displaced statement.
            let value_of = |text: &str| {
                let stmts = parse_snippet("<marker>", text).ok()?;
                match stmts.as_slice() {
                    [stmt] if stmt.kind() == "Return" => stmt.children().first().cloned(),
                    _ => None,
                }
            };
            let (Some(old), Some(new)) = (value_of(displaced), value_of(content)) else {
                return false;
            };
            if old.kind() == ABSENT {
                return content.contains("None");
            }
            let mut found = false;
            new.walk(&mut |node| {
                found |= node.same_shape(&old);
                !found
            });
            found
        }
        "joined" => content.split(['\n', '\r']).any(|line| line.trim() == displaced.trim()),
        _ => true,
    }
}

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
    let (kind, was, was_attr) = match displaced {
        Displaced::Nothing => ("insert", "", String::new()),
        Displaced::Lines(was) => ("lines", was, format!(" was={}", json_string(was))),
        Displaced::Joined(was) => ("joined", was, format!(" joined={}", json_string(was))),
    };
    let hash = seal(kind, recipe, hook, was, lines, 0);
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
    let len = new_text.len();
    let was = json_string(was);
    format!("{indent}{INLINE}{recipe}/{hook} {hash} at={column} len={len} was={was}{newline}")
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// A marker line of any recipe, where it is.
struct Found<'a> {
    marker: MarkerLine<'a>,
    /// 1-based line.
    line: usize,
    /// Offset of the line's start (after a BOM).
    start: usize,
}

/// Every marker line of every recipe in `file`, in order; lines inside string literals are text,
/// never markers.
fn marker_lines(file: &SourceFile) -> Vec<Found<'_>> {
    let text = file.text();
    // Every marker prefix holds " pysplice ": a file without it (most files) has none, and a
    // substring search is far cheaper than reading its strings and lines.
    if !text.contains(" pysplice ") {
        return Vec::new();
    }
    let in_strings = file_lines_inside_strings(file);
    let mut found = Vec::new();
    for line in 1..=file.lines().line_count() {
        let range = file.line_range(line);
        let start = file.code_start(line).min(range.end);
        let code = &text[start..range.end];
        if !code.trim_start().starts_with('#') || in_strings.binary_search(&line).is_ok() {
            continue;
        }
        if let Some(marker) = parse_line(code) {
            found.push(Found { marker, line, start });
        }
    }
    found
}

/// The byte ranges of the block frames of every recipe in `file`, from the opening marker's
/// line to the end of the closing marker, sorted and merged where they nest: code that other
/// recipes inserted, as opposed to the file's own (an import another recipe added belongs to
/// that recipe, not to the file).
#[must_use]
pub fn block_ranges(file: &SourceFile) -> Vec<Range<usize>> {
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
pub fn covers(ranges: &[Range<usize>], range: &Range<usize>) -> bool {
    let after = ranges.partition_point(|r| r.start <= range.start);
    after > 0 && range.end <= ranges[after - 1].end
}

/// Every frame of `recipe` in `file`, in order.
///
/// # Errors
/// [`Error::Marker`] naming the line and hook when a frame of this recipe is damaged: an
/// opening marker without its closing marker, a closing marker alone, a bad attribute, a seal
/// that no longer matches (edited by hand), a duplicated marker line, frames that overlap.
/// [`Error::Stacked`] when another recipe changed a frame of this one after it was applied:
/// that recipe is on top and must be reverted first.
pub fn scan(file: &SourceFile, recipe: &str) -> Result<Vec<Frame>, Error> {
    let text = file.text();
    let lines = file.lines();
    let found = marker_lines(file);
    let mut frames = Vec::new();
    // Open frames, innermost last: only a joined frame (an expanded one-line suite) holds others,
    // the blocks of the recipe's other hooks on that suite.
    let mut open: Vec<OpenFrame> = Vec::new();
    let stacked = |at: usize, hook: &str, top: &Found<'_>| Error::Stacked {
        location: file.location(at),
        top: top.marker.recipe.into(),
        top_hook: top.marker.hook.into(),
        top_line: top.line,
        hook: HookRef(Some(hook.to_string())),
    };
    for (index, m) in found.iter().enumerate() {
        let MarkerLine { kind, hook, fields, .. } = m.marker;
        if m.marker.recipe != recipe {
            continue;
        }
        let damaged = |reason: String, hook: &str| Error::Marker {
            location: file.location(m.start),
            reason,
            hook: HookRef(Some(hook.to_string())),
        };
        match kind {
            MarkerKind::Begin => {
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
                        .map_err(|_| damaged("the displaced text in this marker is damaged".into(), hook))
                };
                // The seal first, then at most one attribute, whose JSON runs to the line end
                // (and may itself contain ` was=`).
                let (token, attribute) = fields.split_once(' ').unwrap_or((fields, ""));
                let displaced = if attribute.is_empty() {
                    None
                } else if let Some(was) = attribute.strip_prefix("was=") {
                    Some((json(was)?, false))
                } else if let Some(joined) = attribute.strip_prefix("joined=") {
                    Some((json(joined)?, true))
                } else {
                    return Err(damaged("this marker has an unknown attribute".into(), hook));
                };
                let seal =
                    Seal::read(token).ok_or_else(|| damaged("the seal of this marker is damaged".into(), hook))?;
                open.push(OpenFrame {
                    hook: hook.to_string(),
                    seal,
                    displaced,
                    line: m.line,
                    begin_start: m.start,
                    content_start: lines.line_start(m.line + 1).unwrap_or(text.len()),
                });
            }
            MarkerKind::End => {
                let Some(frame) = open.pop() else {
                    return Err(damaged("closing marker without an opening marker".into(), hook));
                };
                if frame.hook != hook {
                    return Err(damaged(
                        format!("closing marker for `{hook}` inside the block of `{}`", frame.hook),
                        hook,
                    ));
                }
                if !fields.is_empty() {
                    return Err(damaged("this closing marker is damaged".into(), hook));
                }
                let range = file.line_range(m.line);
                let content = frame.content_start..range.start.max(frame.content_start);
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
                if let Err(broken) = claim.check(&frame.seal) {
                    // Another recipe's marker inside the block: that recipe changed it later.
                    if let Some(top) = found
                        .iter()
                        .find(|f| f.marker.recipe != recipe && content.contains(&f.start))
                    {
                        return Err(stacked(frame.begin_start, hook, top));
                    }
                    let reason = match broken {
                        Broken::Edited => {
                            format!("the block of hook `{hook}` was edited by hand (its seal no longer matches)")
                        }
                        Broken::Unchecked(reason) => reason.to_string(),
                    };
                    return Err(Error::Marker {
                        location: file.location(frame.begin_start),
                        reason,
                        hook: HookRef(Some(hook.to_string())),
                    });
                }
                let line_end = lines.line_start(m.line + 1).unwrap_or(text.len());
                let (removal, was) = match frame.displaced {
                    Some((was, false)) => (frame.begin_start..range.end, was),
                    Some((joined, true)) => (newline_before(text, frame.begin_start)..range.end, joined),
                    // At the very end of a text without a final line break the frame brought its own
                    // line break, before it.
                    None if line_end == range.end => {
                        (newline_before(text, frame.begin_start)..range.end, String::new())
                    }
                    None => (frame.begin_start..line_end, String::new()),
                };
                frames.push(Frame {
                    recipe: recipe.to_string(),
                    hook: hook.to_string(),
                    hash: frame.seal.token().to_string(),
                    content,
                    removal: vec![removal],
                    was,
                    line: frame.line,
                    kind: match kind {
                        "lines" => FrameKind::Lines,
                        "joined" => FrameKind::Joined,
                        _ => FrameKind::Insert,
                    },
                });
            }
            MarkerKind::Inline => {
                let bad = |what: &str| damaged(format!("this inline marker is damaged ({what})"), hook);
                // `SEAL at=N len=N was=JSON`, in this order; the JSON runs to the line end.
                let mut words = fields.splitn(4, ' ');
                let mut next = |key: &str| {
                    words
                        .next()
                        .and_then(|word| word.strip_prefix(key))
                        .ok_or_else(|| bad(&format!("no `{key}`")))
                };
                let (token, column, len, was) = (next("")?, next("at=")?, next("len=")?, next("was=")?);
                let seal = Seal::read(token).ok_or_else(|| bad("bad seal"))?;
                let column: usize = column.parse().map_err(|_| bad("bad column"))?;
                let len: usize = len.parse().map_err(|_| bad("bad length"))?;
                let was: String = serde_json::from_str(was).map_err(|_| bad("bad `was=`"))?;
                let next_line = m.line + 1;
                let next = lines
                    .line_start(next_line)
                    .filter(|&next| next < text.len())
                    .ok_or_else(|| bad("no line follows it"))?;
                if let Some(after) = found.get(index + 1).filter(|f| f.line == next_line) {
                    if after.marker.recipe != recipe {
                        return Err(stacked(m.start, hook, after));
                    }
                    return Err(damaged(
                        format!("the inline marker of hook `{hook}` is followed by another marker line of this recipe (a marker line was duplicated or moved)"),
                        hook,
                    ));
                }
                let line_end = file.line_range(next_line).end;
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
                    return Err(damaged(
                        match broken {
                            Broken::Edited => format!(
                                "the line changed by hook `{hook}` was edited by hand (its seal no longer matches)"
                            ),
                            Broken::Unchecked(reason) => reason.to_string(),
                        },
                        hook,
                    ));
                }
                frames.push(Frame {
                    recipe: recipe.to_string(),
                    hook: hook.to_string(),
                    hash: seal.token().to_string(),
                    removal: vec![m.start..next, content.clone()],
                    content,
                    was,
                    line: m.line,
                    kind: FrameKind::Inline,
                });
            }
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
    check_overlaps(file, &frames)?;
    Ok(frames)
}

/// Frames of one recipe never share bytes; forged markers could make them, and revert would
/// then drop text silently.
fn check_overlaps(file: &SourceFile, frames: &[Frame]) -> Result<(), Error> {
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
            return Err(Error::Marker {
                location: file.location(range.start),
                reason: format!(
                    "the frames of hooks `{}` (line {}) and `{}` (line {}) overlap",
                    other.hook, other.line, frame.hook, frame.line
                ),
                hook: HookRef(Some(frame.hook.clone())),
            });
        }
        if frame.kind == FrameKind::Joined {
            containers.push(range);
        }
        previous = Some((range, frame));
    }
    Ok(())
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
    seal: Seal,
    /// The displaced text, and whether it was joined to the line before.
    displaced: Option<(String, bool)>,
    line: usize,
    begin_start: usize,
    content_start: usize,
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
    let mut out = String::with_capacity(text.len());
    let mut anchors = vec![0; frames.len()];
    let mut seen = vec![false; frames.len()];
    let mut at = 0;
    for (range, replacement, i) in pieces(frames) {
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

/// Where `offset` of the stripped text (see [`strip`]) is in the text with the frames: for
/// messages about the original that must name lines of the file as it is.
#[must_use]
pub fn to_framed(frames: &[Frame], offset: usize) -> usize {
    let (mut at, mut shift) = (0, 0isize);
    for (range, replacement, _) in pieces(frames) {
        if range.start < at {
            continue;
        }
        let start = range.start.saturating_add_signed(-shift);
        if offset < start {
            break;
        }
        if offset < start + replacement.len() {
            return range.start;
        }
        shift += range.len() as isize - replacement.len() as isize;
        at = range.end;
    }
    offset.saturating_add_signed(shift)
}

/// What [`strip`] replaces: (range of the framed text, its replacement, frame index), in order.
fn pieces(frames: &[Frame]) -> Vec<(Range<usize>, &str, usize)> {
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
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_lines_need_valid_ids() {
        let line = parse_line("    # ~~~ pysplice r/h sha256:00 at=1").unwrap();
        assert_eq!(
            (line.kind, line.recipe, line.hook, line.fields),
            (MarkerKind::Inline, "r", "h", "sha256:00 at=1")
        );
        assert!(parse_line("# >>> pysplice r/h\u{1b}[2J x").is_none());
        assert!(parse_line("# >>> pysplice r/h/x y").is_none());
        assert!(parse_line("# >>> pysplice rh y").is_none());
        assert!(parse_line("x = 1  # >>> pysplice r/h").is_none());
    }

    #[test]
    fn marker_like_text_is_recognised_loosely() {
        for line in [
            "# >>> pysplice r/h",
            "  #>>>pysplice",
            "## <<<  pysplice x",
            "\t# ~~~ pysplice",
        ] {
            assert!(looks_like_marker(line), "{line}");
        }
        for line in [
            "x = 1  # >>> pysplice",
            "# >> pysplice",
            "# >>> other",
            "'# >>> pysplice'",
        ] {
            assert!(!looks_like_marker(line), "{line}");
        }
    }

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
