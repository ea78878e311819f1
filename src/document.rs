//! An editor-facing document: the text of one open file as a rope that takes incremental LSP
//! changes, re-planned on demand, with outcomes and edits in LSP positions.
//!
//! Positions here are what the Language Server Protocol sends: 0-based lines and 0-based
//! characters counted in UTF-16 code units ([`Utf16Position`]). Lines break on `\n`, `\r\n` and
//! `\r` only, as Python's do (ropey's Unicode line breaks are turned off). The library's own
//! types ([`SourceFile`](crate::SourceFile), [`Plan`](crate::Plan)) work on byte offsets of a
//! `String`; a [`Document`] converts at the edge. Only these position types count lines from 0:
//! a plain line number ([`Document::line_range`], [`Location`]) is 1-based, as everywhere in
//! the library.
//!
//! Costs, for a text of `n` bytes: an incremental change of `m` bytes is O(m + log n); every
//! position conversion is O(log n); [`Document::text`] copies the rope into a `String` (O(n));
//! [`Document::plan`] and [`Document::revert_edits`] copy it and parse it once,
//! [`Document::apply_edits`] twice (the result is verified). Parsing dominates: re-planning a 150 KB
//! model file after a one-character change takes about 12 ms in a release build
//! (`crates/pysplice-bench/benches/replan.rs`).
//!
//! ```
//! use pysplice::{Document, Utf16Position, Utf16Range};
//! use pysplice::{Recipe, Status};
//!
//! let recipe = Recipe::from_toml("r.toml", r#"
//! [recipe]
//! id = "demo"
//! summary = "Count calls"
//! [[hook]]
//! id = "count"
//! summary = "Counted calls of Model.forward"
//! in = "Model.forward"
//! at = "start"
//! code = "self.calls = 1"
//! "#)?;
//! let mut doc = Document::new("m.py", "class Model:\n    def forward(self, x):\n        return x\n");
//! // The user renames `x` to `y` in the signature (line 1, UTF-16 characters 22..23).
//! let at = |character| Utf16Position::new(1, character);
//! doc.apply_change(Some(Utf16Range::new(at(22), at(23))), "y");
//! let plan = doc.plan(&recipe)?;
//! assert_eq!(plan.hooks[0].status, Status::Applied); // would be placed
//! assert_eq!(plan.hooks[0].range.start.line, 1); // on `def forward`
//! // The edits an editor applies to get the patched text; applying them, then reverting, is exact.
//! let edits = doc.apply_edits(&recipe)?;
//! for edit in edits.iter().rev() {
//!     doc.apply_change(Some(edit.range), &edit.new_text);
//! }
//! assert!(doc.text().contains("# >>> pysplice demo/count"));
//! assert_eq!(doc.marker_at(Utf16Position::new(2, 0)).map(|m| m.hook), Some("count".to_string()));
//! for edit in doc.revert_edits(&recipe)?.iter().rev() {
//!     doc.apply_change(Some(edit.range), &edit.new_text);
//! }
//! assert_eq!(doc.text(), "class Model:\n    def forward(self, y):\n        return x\n");
//! # Ok::<(), pysplice::Error>(())
//! ```

mod edits;
mod plan;

use std::sync::{Arc, Mutex};

use ropey::Rope;

use crate::location::Location;
use crate::marker;
use crate::outline::ParsedFile;
use crate::source::lines_inside_strings;

pub use plan::{DocumentHook, DocumentPlan, KeptPlan};

/// A position as LSP clients send it: 0-based line, 0-based character in UTF-16 code units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Utf16Position {
    /// 0-based line.
    pub line: u32,
    /// 0-based column, counted in UTF-16 code units.
    pub character: u32,
}

impl Utf16Position {
    /// The position at 0-based `line` and UTF-16 `character`.
    #[must_use]
    pub const fn new(line: u32, character: u32) -> Utf16Position {
        Utf16Position { line, character }
    }
}

/// A range between two [`Utf16Position`]s: `start` inclusive, `end` exclusive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Utf16Range {
    /// Where the range starts.
    pub start: Utf16Position,
    /// Where the range ends (exclusive).
    pub end: Utf16Position,
}

impl Utf16Range {
    /// The range from `start` to `end`.
    #[must_use]
    pub const fn new(start: Utf16Position, end: Utf16Position) -> Utf16Range {
        Utf16Range { start, end }
    }

    /// The empty range at `at`.
    #[must_use]
    pub const fn point(at: Utf16Position) -> Utf16Range {
        Utf16Range { start: at, end: at }
    }

    /// Whether the range covers nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.start >= self.end
    }

    /// Whether `at` lies in the range (the end counts, so an empty range contains its point).
    #[must_use]
    pub fn contains(&self, at: Utf16Position) -> bool {
        self.start <= at && at <= self.end
    }
}

/// One change an editor makes: replace `range` of the current text by `new_text` (LSP's
/// `TextEdit`). Edits of one batch refer to the text before any of them is made.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TextEdit {
    /// The range replaced, in the text before the batch.
    pub range: Utf16Range,
    /// What replaces it.
    pub new_text: String,
}

/// The recipe and hook a marker line names (see [`crate::marker`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MarkerRef {
    /// The recipe id.
    pub recipe: String,
    /// The hook id.
    pub hook: String,
}

/// The text of one open file, as an editor holds it.
///
/// `Send + Sync`, no global state: one per open file, re-planned whenever the embedder wants.
#[derive(Clone, Debug)]
pub struct Document {
    name: String,
    rope: Rope,
    version: i32,
    parses: LastParses,
}

/// Per recipe, the original text of the last plan and its parse: the next plan parses again
/// only the top-level statements an edit touched (any earlier version serves; the result is
/// always the tree of a whole parse).
#[derive(Default)]
struct LastParses(Mutex<Vec<(String, Arc<ParsedFile>)>>);

/// How many recipes' parses a document keeps.
const KEPT_PARSES: usize = 8;

impl LastParses {
    fn get(&self, recipe: &str) -> Option<Arc<ParsedFile>> {
        let kept = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.iter()
            .find(|(id, _)| id == recipe)
            .map(|(_, parsed)| Arc::clone(parsed))
    }

    fn put(&self, recipe: &str, parsed: Arc<ParsedFile>) {
        let mut kept = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.retain(|(id, _)| id != recipe);
        if kept.len() >= KEPT_PARSES {
            kept.remove(0);
        }
        kept.push((recipe.to_string(), parsed));
    }
}

impl Clone for LastParses {
    fn clone(&self) -> LastParses {
        let kept = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        LastParses(Mutex::new(kept.clone()))
    }
}

impl std::fmt::Debug for LastParses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        write!(f, "LastParses({} recipes)", kept.len())
    }
}

impl Document {
    /// A document named `name` (used in messages, and by [`Location`]s) holding `text`, at
    /// version 0. O(n).
    #[must_use]
    pub fn new(name: impl Into<String>, text: &str) -> Document {
        Document {
            name: name.into(),
            rope: Rope::from_str(text),
            version: 0,
            parses: LastParses::default(),
        }
    }

    /// The name given at creation.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The version: 0 at creation, plus one per [`Document::apply_change`], or what
    /// [`Document::set_version`] set (an LSP server mirrors the client's numbers).
    #[must_use]
    pub fn version(&self) -> i32 {
        self.version
    }

    /// Sets the version (LSP `didChange` carries the client's number).
    pub fn set_version(&mut self, version: i32) {
        self.version = version;
    }

    /// The whole text. O(n).
    #[must_use]
    pub fn text(&self) -> String {
        self.rope.to_string()
    }

    /// The length of the text in bytes. O(1).
    #[must_use]
    pub fn len_bytes(&self) -> usize {
        self.rope.len_bytes()
    }

    /// The number of lines, as editors count them: a text ending in a line break has an empty
    /// last line, an empty text has one line. O(1).
    #[must_use]
    pub fn line_count(&self) -> usize {
        self.rope.len_lines()
    }

    /// Applies one LSP content change: `range` replaced by `text`, or the whole text replaced
    /// when `range` is `None`. Then the version goes up by one. O(m + log n) for a ranged change
    /// of `m` bytes, O(m) for a whole replacement.
    ///
    /// Never fails: as LSP asks, a character past the end of its line means the end of the line
    /// (before the line break), and a line past the last line means the end of the text; a
    /// character inside a surrogate pair means the start of that character; a range whose end
    /// comes before its start is taken the other way round.
    pub fn apply_change(&mut self, range: Option<Utf16Range>, text: &str) {
        match range {
            None => self.rope = Rope::from_str(text),
            Some(range) => {
                let (a, b) = (self.char_of(range.start), self.char_of(range.end));
                let (start, end) = (a.min(b), a.max(b));
                self.rope.remove(start..end);
                self.rope.insert(start, text);
            }
        }
        self.version = self.version.wrapping_add(1);
    }

    /// The byte offset of `at` in [`Document::text`], clamped as in [`Document::apply_change`].
    /// O(log n).
    #[must_use]
    pub fn offset(&self, at: Utf16Position) -> usize {
        self.rope.char_to_byte(self.char_of(at))
    }

    /// The position of byte `offset` of [`Document::text`] (clamped to the text; an offset inside
    /// a character means that character). O(log n).
    #[must_use]
    pub fn position(&self, offset: usize) -> Utf16Position {
        let char_idx = self.rope.byte_to_char(offset.min(self.rope.len_bytes()));
        let line = self.rope.char_to_line(char_idx);
        let line_start = self.rope.line_to_char(line);
        let character = self.rope.char_to_utf16_cu(char_idx) - self.rope.char_to_utf16_cu(line_start);
        Utf16Position::new(saturate(line), saturate(character))
    }

    /// The range of 1-based `line` (as in [`SourceFile::line_range`](crate::SourceFile::line_range)
    /// and [`Location`]) without its line break, in LSP positions: the first line when `line`
    /// is 0, the last line when past the end. O(log n).
    #[must_use]
    pub fn line_range(&self, line: usize) -> Utf16Range {
        // The rope counts lines from 0, as LSP does.
        let line = line.saturating_sub(1).min(self.rope.len_lines() - 1);
        let start = self.rope.line_to_char(line);
        let end = self.line_end_char(line);
        let units = self.rope.char_to_utf16_cu(end) - self.rope.char_to_utf16_cu(start);
        Utf16Range::new(
            Utf16Position::new(saturate(line), 0),
            Utf16Position::new(saturate(line), saturate(units)),
        )
    }

    /// The line range of a [`Location`] of this document (an error's place), or `None` when the
    /// location names another file. O(log n).
    #[must_use]
    pub fn location_range(&self, location: &Location) -> Option<Utf16Range> {
        (location.file == self.name).then(|| self.line_range(location.line))
    }

    /// The recipe and hook named by the marker comment on the line of `at`, if that line is a
    /// marker line (`# >>> pysplice R/H ...`, `# <<< pysplice R/H`, `# ~~~ pysplice R/H ...`,
    /// see [`crate::marker`]); a line inside a string literal is none. O(log n + length of the
    /// line), O(n) where the line reads as a marker (to rule out a string literal).
    #[must_use]
    pub fn marker_at(&self, at: Utf16Position) -> Option<MarkerRef> {
        let line = usize::try_from(at.line).ok()?;
        if line >= self.rope.len_lines() {
            return None;
        }
        let text = self.rope.line(line).to_string();
        let marker = marker::parse_line(&text)?;
        // A marker-like line inside a string literal is text (the rule of `marker::grammar`);
        // only marker-like lines pay for the look at the whole text.
        if lines_inside_strings(&self.text()).binary_search(&(line + 1)).is_ok() {
            return None;
        }
        Some(MarkerRef {
            recipe: marker.recipe.to_string(),
            hook: marker.hook.to_string(),
        })
    }
}

impl Document {
    /// The char index of `at`, clamped (see [`Document::apply_change`]).
    fn char_of(&self, at: Utf16Position) -> usize {
        let line = at.line as usize;
        if line >= self.rope.len_lines() {
            return self.rope.len_chars();
        }
        let start = self.rope.line_to_char(line);
        let end = self.line_end_char(line);
        let start_units = self.rope.char_to_utf16_cu(start);
        let end_units = self.rope.char_to_utf16_cu(end);
        let units = start_units.saturating_add(at.character as usize).min(end_units);
        self.rope.utf16_cu_to_char(units)
    }

    /// The char index where 0-based `line` (which exists) ends, before its line break.
    fn line_end_char(&self, line: usize) -> usize {
        let start = self.rope.line_to_char(line);
        let slice = self.rope.line(line);
        let mut len = slice.len_chars();
        if len > 0 && slice.char(len - 1) == '\n' {
            len -= 1;
            if len > 0 && slice.char(len - 1) == '\r' {
                len -= 1;
            }
        } else if len > 0 && slice.char(len - 1) == '\r' {
            len -= 1;
        }
        start + len
    }

    /// The 1-based line of byte `offset`.
    fn line_of_byte(&self, offset: usize) -> usize {
        self.rope.byte_to_line(offset.min(self.rope.len_bytes())) + 1
    }
}

/// `usize` to `u32`, saturating (LSP positions are `u32`).
fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
