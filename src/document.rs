//! An editor-facing document: the text of one open file as a rope that takes incremental LSP
//! changes, re-planned on demand, with outcomes and edits in LSP positions.
//!
//! Positions here are what the Language Server Protocol sends: 0-based lines and 0-based
//! characters counted in UTF-16 code units ([`Utf16Position`]). Lines break on `\n`, `\r\n` and
//! `\r` only, as Python's do (ropey's Unicode line breaks are turned off). The library's own
//! types ([`SourceFile`], [`Plan`](crate::Plan)) work on byte offsets of a `String`; a
//! [`Document`] converts at the edge.
//!
//! Costs, for a text of `n` bytes: an incremental change of `m` bytes is O(m + log n); every
//! position conversion is O(log n); [`Document::text`] copies the rope into a `String` (O(n));
//! [`Document::plan`] and [`Document::revert_edits`] copy it and parse it once,
//! [`Document::apply_edits`] twice (the result is verified). Parsing dominates: re-planning SGLang's 150 KB
//! `deepseek_v2.py` after a one-character change takes about 12 ms in a release build
//! (`benches/replan.rs`).
//!
//! ```
//! use pysplice::document::{Document, Utf16Position, Utf16Range};
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

use std::ops::Range;
use std::sync::{Arc, Mutex};

use ropey::Rope;
use similar::{Algorithm, DiffOp};

use crate::engine::{self, Prepared, Reason, Status};
use crate::error::{Error, Location};
use crate::locate::Target;
use crate::marker::{self, Frame};
use crate::outcome;
use crate::outline::ParsedFile;
use crate::source::{lines_inside_strings, SourceFile};
use crate::spec::Recipe;

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

/// What a recipe would do to one document, hook by hook (see [`Document::plan`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DocumentPlan {
    /// The recipe id.
    pub recipe: String,
    /// The document version the plan was made for.
    pub version: i32,
    /// Whether the document carries markers of this recipe.
    pub patched: bool,
    /// Whether applying the recipe now would change the text (every required hook placed and
    /// the result differs from the text).
    pub pending: bool,
    /// Whether the recipe concerns this document: it carries the recipe's markers, or defines at
    /// least one of the definitions the hooks target or a class or function that should hold one
    /// (`Model` for `Model.forward`). Editors can stay quiet about the others.
    pub relevant: bool,
    /// One entry per hook, in recipe order.
    pub hooks: Vec<DocumentHook>,
}

impl DocumentPlan {
    /// Whether every required hook could be placed.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        !self.hooks.iter().any(|h| matches!(h.status, Status::Failed { .. }))
    }
}

/// One hook of a [`DocumentPlan`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DocumentHook {
    /// The hook id.
    pub id: String,
    /// The hook's summary.
    pub summary: String,
    /// As planned, not yet verified: [`Status::Applied`] (would be placed), [`Status::AlreadyApplied`]
    /// (its markers are there and match), [`Status::Updated`] (its markers are there from an older
    /// recipe; applying replaces them), [`Status::Skipped`] or [`Status::Failed`].
    pub status: Status,
    /// Where the hook is or would go, as one line: the opening marker line of its first block
    /// when the document carries it, else the `class`/`def` line of its target, else the line its
    /// first edit lands on; for a skipped or failed hook, the line its message points at.
    pub range: Utf16Range,
    /// The whole blocks (marker lines included) the hook has in the document, in order.
    pub blocks: Vec<Utf16Range>,
    /// One line for people: the status with the summary, or the reason (with the nearest
    /// candidates when a target is missing).
    pub message: String,
}

/// The parse and plan behind a [`DocumentPlan`], kept for [`Document::apply_edits_from`].
#[derive(Debug)]
pub struct KeptPlan {
    recipe: String,
    version: i32,
    prepared: Prepared,
    plan: engine::Plan,
}

impl KeptPlan {
    /// The document version it was made for.
    #[must_use]
    pub fn version(&self) -> i32 {
        self.version
    }
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

    /// The range of 0-based `line` without its line break (the last line when past the end).
    /// O(log n).
    #[must_use]
    pub fn line_range(&self, line: usize) -> Utf16Range {
        let line = line.min(self.rope.len_lines() - 1);
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
        (location.file == self.name).then(|| self.line_range(location.line.saturating_sub(1)))
    }

    /// The recipe and hook named by the marker comment on the line of `at`, if that line is a
    /// marker line (`# >>> pysplice R/H ...`, `# <<< pysplice R/H`, `# ~~~ pysplice R/H ...`,
    /// see [`marker::grammar`]); a line inside a string literal is none. O(log n + length of the
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

    /// Plans `recipe` on the current text: per hook, its status, where it is or would go, and a
    /// message. Statuses are as planned, without the reparse that verifies an apply (that is
    /// [`Document::apply_edits`]'s job), so they are cheap enough to refresh on every change:
    /// one copy of the text, one parse, one marker scan of the text and of the planned result.
    ///
    /// # Errors
    /// [`Syntax`](crate::ErrorKind::Syntax) when the text is not valid Python (an editor's usual
    /// state while typing), [`Marker`](crate::ErrorKind::Marker) when a block of this recipe was
    /// edited by hand or a marker line is missing, [`Stacked`](crate::ErrorKind::Stacked) when
    /// another recipe sits on top of one. Hooks that cannot be placed are not errors: they show as
    /// [`Status::Failed`].
    pub fn plan(&self, recipe: &Recipe) -> Result<DocumentPlan, Error> {
        self.plan_keeping(recipe).map(|(plan, _)| plan)
    }

    /// As [`Document::plan`], also giving the parse and plan it made, so that
    /// [`Document::apply_edits_from`] can apply the recipe at this version without parsing and
    /// planning again (an editor plans for diagnostics, then is asked for the code action).
    ///
    /// # Errors
    /// As [`Document::plan`].
    pub fn plan_keeping(&self, recipe: &Recipe) -> Result<(DocumentPlan, KeptPlan), Error> {
        let source = SourceFile::new(self.name.clone(), self.text());
        let previous = self.parses.get(&recipe.id);
        let prepared = Prepared::reusing(recipe, source, previous.as_deref())?;
        self.parses.put(&recipe.id, prepared.original_shared());
        let current = prepared.current();
        let original = prepared.original();
        let plan = engine::plan(recipe, original);
        // A change whose marker line is gone is a damaged frame, like a hand edit.
        engine::check_orphans(recipe, &prepared, &plan)?;
        let edits = plan.edits();
        let frames_now = prepared.frames();
        let to_current = |offset: usize| marker::to_framed(frames_now, offset).min(current.text().len());
        // The planned result: its frames tell "already applied" from "updated" (a conflict
        // between hooks is reported on both of them, and leaves no result).
        let (outcomes, planned) = engine::preview(recipe, &prepared, &plan);
        let changed = planned.as_ref().is_some_and(|p| p.as_str() != current.text());
        let pending = planned.is_some() && plan.is_complete() && !outcome::is_up_to_date(&outcomes, changed);
        let mut relevant = !frames_now.is_empty();
        let mut hooks = Vec::with_capacity(recipe.hooks.len());
        for (hook, outcome) in recipe.hooks.iter().zip(outcomes) {
            let target = match &hook.target {
                Target::Definition { path, ordinal } => {
                    let found = original.find_all(path);
                    // The target, or the class (or function) that should hold it.
                    relevant |= !found.is_empty()
                        || path
                            .match_indices('.')
                            .any(|(i, _)| !original.find_all(path[..i].trim_end_matches(".<locals>")).is_empty());
                    found.get(ordinal.unwrap_or(1).saturating_sub(1)).copied()
                }
                Target::Paths(paths) => {
                    let found: Vec<_> = paths.iter().filter_map(|p| original.locate(p).ok()).collect();
                    relevant |= !found.is_empty();
                    found.first().copied()
                }
                // Selections are resolved per file by the engine; the plan says whether they land.
                Target::Module | Target::Select { .. } => None,
            };
            let blocks: Vec<Utf16Range> = frames_now
                .iter()
                .filter(|f| f.hook == hook.id)
                .map(|f| self.frame_range(current, f))
                .collect();
            let status = outcome.status;
            let first_edit = edits.iter().find(|e| e.hook() == hook.id).map(|e| e.range().start);
            let reason_offset = match &status {
                Status::Skipped { reason } | Status::Failed { reason } => reason
                    .cause()
                    .and_then(|err| offset_of(original.source(), err.location())),
                _ => None,
            };
            let anchor = match (&status, blocks.first()) {
                (Status::AlreadyApplied | Status::Updated, Some(block)) => Some(block.start.line as usize),
                _ => reason_offset
                    .or_else(|| target.map(|d| d.range().start))
                    .or(first_edit)
                    .map(|offset| self.line_of_byte(to_current(offset))),
            };
            let range = self.line_range(anchor.unwrap_or(0));
            let message = message(&status, &hook.summary, original.source().name());
            hooks.push(DocumentHook {
                id: hook.id.clone(),
                summary: hook.summary.clone(),
                status,
                range,
                blocks,
                message,
            });
        }
        let document_plan = DocumentPlan {
            recipe: recipe.id.clone(),
            version: self.version,
            patched: prepared.is_patched(),
            pending,
            relevant,
            hooks,
        };
        let kept = KeptPlan {
            recipe: recipe.id.clone(),
            version: self.version,
            plan,
            prepared,
        };
        Ok((document_plan, kept))
    }

    /// [`Document::apply_edits`] from a plan [`Document::plan_keeping`] made: only the edits are
    /// applied and verified. A plan of another version or recipe is not used; the recipe is then
    /// planned afresh.
    ///
    /// # Errors
    /// As [`Document::apply_edits`].
    pub fn apply_edits_from(&self, recipe: &Recipe, kept: KeptPlan) -> Result<Vec<TextEdit>, Error> {
        if kept.version != self.version || kept.recipe != recipe.id {
            return self.apply_edits(recipe);
        }
        let patched = engine::apply_plan(recipe, &kept.prepared, kept.plan)?;
        Ok(self.diff(kept.prepared.current().text(), patched.output()))
    }

    /// The edits that turn the current text into the text with `recipe` applied and verified
    /// (see [`crate::apply`]): one per changed run of lines, in order, none overlapping, in the
    /// positions of the current text. Empty when the recipe is applied already.
    ///
    /// # Errors
    /// As [`crate::apply`]: the first required hook that cannot be placed, a conflict, damaged
    /// markers, a failed verification, or a text that is not valid Python.
    pub fn apply_edits(&self, recipe: &Recipe) -> Result<Vec<TextEdit>, Error> {
        let text = self.text();
        let patched = engine::apply(recipe, SourceFile::new(self.name.clone(), text.clone()))?;
        Ok(self.diff(&text, patched.output()))
    }

    /// The edits that take `recipe`'s changes out of the current text, giving back the original
    /// bytes (see [`crate::revert`]). Empty when the text carries none of them.
    ///
    /// # Errors
    /// As [`crate::revert`]: damaged markers, or a text that is not valid Python.
    pub fn revert_edits(&self, recipe: &Recipe) -> Result<Vec<TextEdit>, Error> {
        let text = self.text();
        let reverted = engine::revert(recipe, SourceFile::new(self.name.clone(), text.clone()))?;
        Ok(self.diff(&text, reverted.output()))
    }

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

    /// The 0-based line of byte `offset`.
    fn line_of_byte(&self, offset: usize) -> usize {
        self.rope.byte_to_line(offset.min(self.rope.len_bytes()))
    }

    /// The lines a frame occupies in the current text, marker lines included.
    fn frame_range(&self, current: &SourceFile, frame: &Frame) -> Utf16Range {
        let (first, last) = frame.lines(current);
        let first = self.line_range(first.saturating_sub(1));
        let last = self.line_range(last.saturating_sub(1));
        Utf16Range::new(first.start, last.end)
    }

    /// Line-based edits turning `old` (the current text) into `new`.
    fn diff(&self, old: &str, new: &str) -> Vec<TextEdit> {
        if old == new {
            return Vec::new();
        }
        let old_lines = split_lines(old);
        let new_lines = split_lines(new);
        let ops = similar::capture_diff_slices(Algorithm::Myers, &old_lines, &new_lines);
        // Byte offset of every old line start, and of the end.
        let mut old_starts = Vec::with_capacity(old_lines.len() + 1);
        let mut at = 0;
        for line in &old_lines {
            old_starts.push(at);
            at += line.len();
        }
        old_starts.push(at);
        let mut edits = Vec::new();
        let mut pending: Option<(Range<usize>, String)> = None;
        for op in ops {
            let (old_range, new_range) = match op {
                DiffOp::Equal { .. } => {
                    if let Some((range, text)) = pending.take() {
                        edits.push(self.line_edit(&old_starts, range, text));
                    }
                    continue;
                }
                DiffOp::Delete { old_index, old_len, .. } => (old_index..old_index + old_len, 0..0),
                DiffOp::Insert {
                    old_index,
                    new_index,
                    new_len,
                } => (old_index..old_index, new_index..new_index + new_len),
                DiffOp::Replace {
                    old_index,
                    old_len,
                    new_index,
                    new_len,
                } => (old_index..old_index + old_len, new_index..new_index + new_len),
            };
            let added: String = new_lines[new_range].concat();
            pending = Some(match pending.take() {
                Some((range, mut text)) => {
                    text.push_str(&added);
                    (range.start..old_range.end.max(range.end), text)
                }
                None => (old_range, added),
            });
        }
        if let Some((range, text)) = pending {
            edits.push(self.line_edit(&old_starts, range, text));
        }
        if let (Some(last), Some(line)) = (edits.last_mut(), old_lines.last()) {
            let end = old_starts[old_lines.len()];
            *last = self.inside_document(last, old, end, line_break(line));
        }
        edits
    }

    fn line_edit(&self, old_starts: &[usize], lines: Range<usize>, new_text: String) -> TextEdit {
        let start = self.position(old_starts[lines.start]);
        let end = self.position(old_starts[lines.end]);
        TextEdit {
            range: Utf16Range::new(start, end),
            new_text,
        }
    }

    /// The same change as `edit`, with no position past the file's final line break where that
    /// can be said: an edit ending at the very end (after the last line's break) is moved before
    /// that break. Clients disagree on the line after the last one (Neovim appends an extra empty
    /// line for an insertion there); positions inside the text mean the same to every client.
    fn inside_document(&self, edit: &TextEdit, old: &str, end: usize, last_break: &str) -> TextEdit {
        let b = last_break.len();
        let start = self.offset(edit.range.start);
        if b == 0 || self.offset(edit.range.end) != end || end != old.len() || start > end {
            return edit.clone();
        }
        let moved = |from: usize, to: usize, text: String| TextEdit {
            range: Utf16Range::new(self.position(from), self.position(to)),
            new_text: text,
        };
        match edit.new_text.strip_suffix(last_break) {
            // Insert (or replace the last lines with) text ending in the same break.
            Some(body) if start == end => moved(end - b, end - b, format!("{last_break}{body}")),
            Some(body) => moved(start, end - b, body.to_string()),
            // Delete the last lines: take the break before them instead of the final one.
            None if edit.new_text.is_empty() && start >= b && old[..start].ends_with(last_break) => {
                moved(start - b, end - b, String::new())
            }
            None => edit.clone(),
        }
    }
}

/// The line break that ends `line` (`\r\n`, `\n`, `\r`), or `""`.
fn line_break(line: &str) -> &str {
    if line.ends_with("\r\n") {
        "\r\n"
    } else if line.ends_with('\n') {
        "\n"
    } else if line.ends_with('\r') {
        "\r"
    } else {
        ""
    }
}

/// `usize` to `u32`, saturating (LSP positions are `u32`).
fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The lines of `text` with their line breaks (`\n`, `\r\n`, `\r`); no empty last line.
fn split_lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(&text[start..=i]);
                start = i + 1;
            }
            b'\r' => {
                let end = if bytes.get(i + 1) == Some(&b'\n') { i + 2 } else { i + 1 };
                lines.push(&text[start..end]);
                start = end;
                i = end - 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// The byte offset (in `file`) of `location`, when it is a place in `file`.
fn offset_of(file: &SourceFile, location: &Location) -> Option<usize> {
    if location.file != file.name() {
        return None;
    }
    let start = file.lines().line_start(location.line)?;
    Some((start + location.column.saturating_sub(1)).min(file.text().len()))
}

/// The people's line for a hook's status.
fn message(status: &Status, summary: &str, file: &str) -> String {
    // The diagnostic sits at the place the error names: its message goes without the place.
    let shown = |reason: &Reason, with_hook: bool| match reason.cause() {
        Some(err) if err.location().file == file && with_hook => err.message().to_string(),
        Some(err) if err.location().file == file => err.detail(),
        _ => reason.to_string(),
    };
    match status {
        Status::Applied => format!("can be applied: {summary}"),
        Status::AlreadyApplied => format!("applied: {summary}"),
        Status::Updated => format!("applied from an older version of the recipe; apply again to update: {summary}"),
        Status::Skipped { reason } => format!("skipped: {}", shown(reason, false)),
        Status::Failed { reason } => shown(reason, true),
        Status::Reverted => format!("removed: {summary}"),
        Status::NotPresent => format!("not present: {summary}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_on_python_newlines_only() {
        assert_eq!(
            split_lines("a\nb\r\nc\rd\x0ce\u{2028}f"),
            ["a\n", "b\r\n", "c\r", "d\x0ce\u{2028}f"]
        );
        assert_eq!(split_lines("a\n"), ["a\n"]);
        assert!(split_lines("").is_empty());
    }
}
