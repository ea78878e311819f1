//! Plans in LSP terms: per hook, its status, the line it concerns and its blocks.

use crate::engine::{self, HookPlans, OutcomeReason, Plan, Prepared, Status};
use crate::error::Error;
use crate::locate::Target;
use crate::location::Location;
use crate::marker::{self, Frame};
use crate::outcome;
use crate::source::SourceFile;
use crate::spec::Recipe;

use super::{Document, TextEdit, Utf16Range};

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

/// The parse and plan behind a [`DocumentPlan`] ([`Document::plan_keeping`]), kept for
/// [`Document::apply_edits_from`]: an editor that plans for its diagnostics applies that plan
/// when asked for the code action, without parsing and planning the text again.
#[derive(Debug)]
pub struct KeptPlan {
    recipe: String,
    version: i32,
    prepared: Prepared<'static>,
    hooks: HookPlans,
}

impl KeptPlan {
    /// The document version it was made for.
    #[must_use]
    pub fn version(&self) -> i32 {
        self.version
    }
}

impl Document {
    /// Plans `recipe` on the current text: per hook, its status, where it is or would go, and a
    /// message. Statuses are as planned, without the reparse that verifies an apply (that is
    /// [`Document::apply_edits`]'s job), so they are cheap enough to refresh on every change:
    /// one copy of the text, one parse, one marker scan of the text and of the planned result.
    ///
    /// # Errors
    /// [`Syntax`](crate::ErrorKind::Syntax) when the text is not valid Python (an editor's usual state while
    /// typing), [`Marker`](crate::ErrorKind::Marker) when a block of this recipe was edited by hand or a marker line
    /// is missing or another recipe sits on top of one ([`MarkerReason::Stacked`](crate::MarkerReason::Stacked)). Hooks that cannot
    /// be placed are not errors: they show as [`Status::Failed`].
    pub fn plan(&self, recipe: &Recipe) -> Result<DocumentPlan, Error> {
        self.plan_keeping(recipe).map(|(plan, _)| plan)
    }

    /// As [`Document::plan`], also giving the parse and plan it made, so that
    /// [`Document::apply_edits_from`] can apply the recipe at this version without parsing and
    /// planning again (an editor plans for diagnostics, then is asked for the code action).
    ///
    /// ```
    /// use pysplice::{Document, Recipe};
    ///
    /// let recipe = Recipe::from_toml("r.toml", r#"
    /// [recipe]
    /// id = "r"
    /// summary = "Imports os"
    /// [[hook]]
    /// id = "imports"
    /// summary = "Imported os"
    /// ensure-imports = ["os"]
    /// "#)?;
    /// let document = Document::new("m.py", "x = 1\n");
    /// let (plan, kept) = document.plan_keeping(&recipe)?;
    /// assert!(plan.pending);
    /// // Later, for the same text: the edits, without parsing and planning again.
    /// let edits = document.apply_edits_from(&recipe, kept)?;
    /// assert_eq!(edits.len(), 1);
    /// # Ok::<(), pysplice::Error>(())
    /// ```
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
        let plans = engine::plan_hooks(recipe, original);
        // A change whose marker line is gone is a damaged frame, like a hand edit.
        engine::check_orphans(recipe, &prepared, &plans)?;
        let edits = engine::edits_of(&plans);
        let frames_now = prepared.frames();
        let to_current = |offset: usize| marker::to_framed(frames_now, offset).min(current.text().len());
        // The planned result: its frames tell "already applied" from "updated" (a conflict
        // between hooks is reported on both of them, and leaves no result).
        let (outcomes, planned) = engine::preview(recipe, &prepared, &plans);
        let changed = planned.as_ref().is_some_and(|p| p.as_str() != current.text());
        let complete = !plans.iter().any(|(_, _, p)| matches!(p, engine::HookPlan::Failed(_)));
        let pending = planned.is_some() && complete && !outcome::is_up_to_date(&outcomes, changed);
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
                (Status::AlreadyApplied | Status::Updated, Some(block)) => Some(block.start.line as usize + 1),
                _ => reason_offset
                    .or_else(|| target.map(|d| d.range().start))
                    .or(first_edit)
                    .map(|offset| self.line_of_byte(to_current(offset))),
            };
            let range = self.line_range(anchor.unwrap_or(1));
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
            prepared,
            hooks: plans,
        };
        Ok((document_plan, kept))
    }

    /// [`Document::apply_edits`] from a plan [`Document::plan_keeping`] made: only the edits are
    /// applied and verified. A plan of another text or recipe is not used; the recipe is then
    /// planned afresh. The text itself is compared, not the version: an LSP client sets the
    /// version ([`Document::set_version`]) and may send a change without a new number.
    ///
    /// # Errors
    /// As [`Document::apply_edits`].
    pub fn apply_edits_from(&self, recipe: &Recipe, kept: KeptPlan) -> Result<Vec<TextEdit>, Error> {
        if kept.recipe != recipe.id || self.rope != kept.prepared.current().text() {
            return self.apply_edits(recipe);
        }
        let patched = Plan::from_parts(recipe, kept.prepared, kept.hooks).apply()?;
        Ok(self.diff(patched.input(), patched.output()))
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

    /// The lines a frame occupies in the current text, marker lines included.
    fn frame_range(&self, current: &SourceFile, frame: &Frame) -> Utf16Range {
        let (first, last) = frame.lines(current);
        let first = self.line_range(first);
        let last = self.line_range(last);
        Utf16Range::new(first.start, last.end)
    }
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
    let shown = |reason: &OutcomeReason, with_hook: bool| match reason.cause() {
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
        Status::WouldApply => format!("can be applied: {summary}"),
        Status::WouldUpdate => {
            format!("applied from an older version of the recipe; apply again to update: {summary}")
        }
        Status::WouldRemove => format!("would be removed: {summary}"),
    }
}
