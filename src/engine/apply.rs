//! Applying a plan and reverting: the edits made, verified, and the result with its per-hook
//! outcomes.

use std::ops::Range;

use crate::edit::{apply_edits, Edit};
use crate::error::{Error, ErrorKind};
use crate::files::MAX_FILE_BYTES;
use crate::location::Location;
use crate::marker::reason::MarkerReason;
use crate::marker::{self, Frame};
use crate::outcome::{self, Blocks, HookOutcome, Status};
use crate::outline::ParsedFile;
use crate::source::{floor_char_boundary, SourceFile};
use crate::spec::{Action, Recipe};

use super::verify::verify;

use super::{edits_of, hook_definitions, planned_outcomes, HookPlan, HookPlans, Plan, Prepared};
use crate::template::Bindings;

/// A verified result of applying a recipe to one file.
#[derive(Clone, Debug)]
pub struct Patched {
    name: String,
    input: String,
    output: String,
    outcomes: Vec<HookOutcome>,
    /// The edits that made `output` from `input` (range in each), when known.
    changes: Option<Vec<(Range<usize>, Range<usize>)>>,
}

impl Patched {
    /// The file's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The text as it was.
    #[must_use]
    pub fn input(&self) -> &str {
        &self.input
    }

    /// The text as it is now (equal to the input when nothing changed).
    #[must_use]
    pub fn output(&self) -> &str {
        &self.output
    }

    /// Whether the output differs from the input.
    #[must_use]
    pub fn changed(&self) -> bool {
        self.input != self.output
    }

    /// Per-hook outcomes, in recipe order.
    #[must_use]
    pub fn outcomes(&self) -> &[HookOutcome] {
        &self.outcomes
    }

    /// For an apply: whether the file was up to date already, so that `check` passes: no hook
    /// was applied, updated or taken out ([`Status::is_pending`]) and the text is the same.
    #[must_use]
    pub fn is_up_to_date(&self) -> bool {
        crate::outcome::is_up_to_date(&self.outcomes, self.changed())
    }

    /// The unified diff of the input and the output (empty when equal), with the name (relative
    /// to `/` when absolute) in the `a/` and `b/` headers, three lines of context. It is made
    /// from the edits the patch knows where it knows them: only the lines around them are
    /// compared. Where a change could be shown in more than one place (it inserts or removes a
    /// copy of a neighbouring line), it may be shown in another of them.
    #[must_use]
    pub fn diff(&self) -> String {
        let name = crate::printable::printable(&self.name);
        let name = name.as_ref();
        let (old, new) = (self.input.as_str(), self.output.as_str());
        self.changes()
            .and_then(|changes| crate::diff::unified(name.trim_start_matches('/'), old, new, changes))
            .unwrap_or_else(|| crate::diff::unified_diff(name, old, new))
    }

    /// The same result under another name (a path relative to a folder, for the headers of
    /// [`Patched::diff`]).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Patched {
        self.name = name.into();
        self
    }

    /// The edits that made the output from the input (range in each), when known.
    pub(crate) fn changes(&self) -> Option<&[(Range<usize>, Range<usize>)]> {
        self.changes.as_deref()
    }
}

impl ParsedFile {
    /// What CPython's compiler (not only its parser) would refuse in this file, each as an
    /// [`ErrorKind::Syntax`] with its location, in source order: `return` outside a function or
    /// with a value in an async generator, `yield` outside a function, `await` / `async for` /
    /// `async with` outside `async def`, misplaced `break` / `continue`, `nonlocal` / `global`
    /// misuse, `from __future__` after other code, nesting deeper than CPython accepts. The
    /// checks are conservative: what CPython compiles is never reported. The verification of
    /// every apply runs them on the output.
    ///
    /// ```
    /// use pysplice::{ErrorKind, ParsedFile, SourceFile};
    ///
    /// let parsed = ParsedFile::parse(SourceFile::new("m.py", "x = 1\nreturn x\n"))?;
    /// let errors = parsed.compiler_errors();
    /// assert_eq!(errors.len(), 1);
    /// assert!(matches!(errors[0].kind(), ErrorKind::Syntax { .. }));
    /// assert_eq!(errors[0].location().line, 2);
    /// # Ok::<(), pysplice::Error>(())
    /// ```
    #[must_use]
    pub fn compiler_errors(&self) -> Vec<Error> {
        let source = self.source();
        crate::verify::check(self.root(), source.text())
            .problems
            .into_iter()
            .map(|problem| {
                ErrorKind::Syntax {
                    message: problem.message,
                }
                .at(source.location(problem.offset))
            })
            .collect()
    }
}

/// Applies `recipe` to `source` in memory and verifies the result.
///
/// ```
/// use pysplice::{apply, Recipe, SourceFile};
/// let recipe = Recipe::from_toml("r.toml", r#"
/// [recipe]
/// id = "demo"
/// summary = "Count calls"
/// [[hook]]
/// id = "count"
/// summary = "Counted calls of Model.forward"
/// in = "Model.forward"
/// at = "start"
/// code = "self.calls = getattr(self, 'calls', 0) + 1"
/// "#)?;
/// let file = SourceFile::new("m.py", "class Model:\n    def forward(self, x):\n        return x\n");
/// let patched = apply(&recipe, file)?;
/// assert!(patched.output().contains("        self.calls = getattr(self, 'calls', 0) + 1\n"));
/// // Applying again changes nothing; reverting gives back the original bytes.
/// let again = apply(&recipe, SourceFile::new("m.py", patched.output()))?;
/// assert!(!again.changed());
/// let reverted = pysplice::revert(&recipe, SourceFile::new("m.py", patched.output()))?;
/// assert_eq!(reverted.output(), "class Model:\n    def forward(self, x):\n        return x\n");
/// # Ok::<(), pysplice::Error>(())
/// ```
///
/// # Errors
/// The first failing required hook ([`ErrorKind::NotFound`], [`ErrorKind::Placement`]...), a conflict
/// between hooks, damaged markers, or a failed verification. Nothing is changed on error.
pub fn apply(recipe: &Recipe, source: SourceFile) -> Result<Patched, Error> {
    Plan::new(recipe, Prepared::new(recipe, source)?).apply()
}

/// What [`attempt`] found: the result of applying, and what became of every hook.
#[derive(Debug)]
#[non_exhaustive]
pub struct Attempt {
    /// The patched file, or why there is none.
    pub result: Result<Patched, Error>,
    /// Every hook's outcome, also on failure: the plan's outcomes when a hook cannot be placed;
    /// when the edits conflict, the two hooks concerned marked failed; when they do not verify,
    /// every hook that would have been placed. Empty only when the file
    /// cannot be prepared (damaged markers).
    pub outcomes: Vec<HookOutcome>,
    /// Whether every hook could be placed (a failure then came later: conflict, verification).
    pub planned: bool,
}

/// Applies like [`apply`], and says what became of every hook also when it fails: which hook
/// could not be placed and which were fine, the two hooks of a conflict, every hook placed when
/// the output does not verify. A program that reports per hook calls this instead of [`apply`].
///
/// ```
/// use pysplice::{attempt, Recipe, SourceFile, Status};
///
/// let recipe = Recipe::from_toml("r.toml", r#"
/// [recipe]
/// id = "demo"
/// summary = "Count calls"
/// [[hook]]
/// id = "imports"
/// summary = "Imported time"
/// ensure-imports = ["time"]
/// [[hook]]
/// id = "count"
/// summary = "Counted calls"
/// in = "Model.forward"
/// at = "start"
/// code = "self.calls += 1"
/// "#)?;
/// // No `Model.forward` here: nothing is applied, and the outcomes say which hook failed.
/// let tried = attempt(&recipe, SourceFile::new("m.py", "def forward(x):\n    return x\n"));
/// assert!(tried.result.is_err());
/// assert!(!tried.planned, "a hook could not be placed");
/// assert!(!matches!(tried.outcomes[0].status, Status::Failed { .. }), "the import could");
/// assert!(matches!(tried.outcomes[1].status, Status::Failed { .. }));
/// # Ok::<(), pysplice::Error>(())
/// ```
#[must_use]
pub fn attempt(recipe: &Recipe, source: SourceFile) -> Attempt {
    let prepared = match Prepared::new(recipe, source) {
        Ok(prepared) => prepared,
        Err(err) => {
            return Attempt {
                result: Err(err),
                outcomes: Vec::new(),
                planned: false,
            }
        }
    };
    let plan = Plan::new(recipe, prepared);
    let planned = plan.is_complete();
    // Without a verified result, the hooks are classified on the planned text, as a document is.
    let fallback = if planned { plan.planned() } else { plan.preview().0 };
    let (result, outcomes) = match plan.apply() {
        Ok(patched) => {
            let outcomes = patched.outcomes().to_vec();
            (Ok(patched), outcomes)
        }
        Err(err) if planned => {
            let failed = outcome::failed(fallback, &err);
            (Err(err), failed)
        }
        Err(err) => (Err(err), fallback),
    };
    Attempt {
        result,
        outcomes,
        planned,
    }
}

/// What `hooks`, planned on `prepared`, would make of it, unverified: every hook's outcome
/// (see [`crate::outcome`]; the two hooks of a conflict fail) and the planned text, `None` when
/// the edits conflict.
pub(crate) fn preview(
    recipe: &Recipe,
    prepared: &Prepared<'_>,
    hooks: &HookPlans,
) -> (Vec<HookOutcome>, Option<String>) {
    let source = prepared.original().source();
    match apply_edits(source, &edits_of(hooks)) {
        Err(err) => (outcome::failed(planned_outcomes(hooks), &err.into()), None),
        Ok((text, _)) => {
            // Only a hook with blocks now can be "already applied" or "updated": a file without
            // them needs no scan of the planned text.
            let frames = if prepared.is_patched() {
                marker::scan(&SourceFile::new(source.name(), text.as_str()), &recipe.id).unwrap_or_default()
            } else {
                Vec::new()
            };
            let anchors = if frames.is_empty() {
                Vec::new()
            } else {
                marker::strip_with_anchors(&text, &frames).1
            };
            let after = Blocks::new(&frames, &anchors);
            let outcomes = outcome::classify(recipe, planned_outcomes(hooks), &prepared.blocks(), &after);
            (outcomes, Some(text))
        }
    }
}

impl Plan<'_> {
    /// [`preview`] of this plan.
    pub(crate) fn preview(&self) -> (Vec<HookOutcome>, Option<String>) {
        preview(self.recipe(), self.prepared(), self.hooks())
    }

    /// [`check_orphans`] of this plan.
    pub(crate) fn check_orphans(&self) -> Result<(), Error> {
        check_orphans(self.recipe(), self.prepared(), self.hooks())
    }

    /// Applies the plan to the file it was made from and verifies the result; the
    /// [`Patched`] says per hook what happened ([`Patched::outcomes`]).
    ///
    /// # Errors
    /// As [`apply`]: the first failing required hook, a conflict between hooks, a change of the
    /// recipe already in the file without its marker, or a failed verification.
    pub fn apply(self) -> Result<Patched, Error> {
        if let Some(err) = self.first_failure() {
            return Err(err.clone());
        }
        let recipe = self.recipe();
        self.check_orphans()?;
        let prepared = self.prepared();
        let original = prepared.original();
        let edits = self.edits();
        let (output, map) = apply_edits(original.source(), &edits)?;
        too_large(recipe, prepared.current(), &edits, output.len())?;
        let out_file = SourceFile::new(original.source().name(), output);
        let (out_frames, out_anchors) = verify(recipe, original, &out_file, &map)?;
        let before = prepared.blocks();
        let after = Blocks::new(&out_frames, &out_anchors);
        let mut outcomes = outcome::classify(recipe, self.planned(), &before, &after);
        for outcome in &mut outcomes {
            if matches!(
                outcome.status,
                Status::Applied | Status::AlreadyApplied | Status::Updated
            ) {
                outcome.lines = frame_lines(&out_file, &out_frames, &outcome.hook);
            }
        }
        // The edits are of the original text: the input's own when it holds no frames.
        let changes = (prepared.current().text() == original.source().text()).then(|| {
            map.spans
                .iter()
                .map(|(old, new, _)| (old.clone(), new.clone()))
                .collect()
        });
        Ok(Patched {
            name: prepared.current().name().to_string(),
            input: prepared.current().text().to_string(),
            output: out_file.text().to_string(),
            outcomes,
            changes,
        })
    }

    /// [`Plan::apply`], for `file` as it is now (read again before writing, say): it must be
    /// the text the plan was made from, under the same name.
    ///
    /// # Errors
    /// [`ErrorKind::PlanMismatch`] at the first place where `file` differs from the text
    /// planned on (its start when only the name differs); otherwise as [`Plan::apply`].
    pub fn apply_to(self, file: &SourceFile) -> Result<Patched, Error> {
        let planned = self.source();
        let (old, new) = (planned.text().as_bytes(), file.text().as_bytes());
        let differs = old.iter().zip(new).position(|(a, b)| a != b);
        let at = differs.or_else(|| (old.len() != new.len()).then(|| old.len().min(new.len())));
        if at.is_some() || planned.name() != file.name() {
            // The start of the character the first difference splits.
            return Err(ErrorKind::PlanMismatch {
                planned: planned.name().to_string(),
            }
            .at(file.location(floor_char_boundary(file.text(), at.unwrap_or(0)))));
        }
        self.apply()
    }
}

/// Refuses an output that pysplice would refuse to read back ([`MAX_FILE_BYTES`]), naming the
/// hook that adds the most bytes.
fn too_large(recipe: &Recipe, file: &SourceFile, edits: &[Edit], size: usize) -> Result<(), Error> {
    let size = size as u64;
    if size <= MAX_FILE_BYTES {
        return Ok(());
    }
    let mut growth: Vec<(&str, i128)> = Vec::new();
    for edit in edits {
        let grown = edit.text().len() as i128 - edit.range().len() as i128;
        match growth.iter_mut().find(|(hook, _)| *hook == edit.hook()) {
            Some((_, total)) => *total += grown,
            None => growth.push((edit.hook(), grown)),
        }
    }
    let err = ErrorKind::OutputTooLarge {
        recipe: Some(recipe.id.clone()),
        size,
        limit: MAX_FILE_BYTES,
    }
    .at(Location::new(file.name(), 1, 1));
    Err(match growth.iter().max_by_key(|(_, grown)| *grown) {
        Some((hook, _)) => err.with_hook(hook),
        None => err,
    })
}

/// Refuses when the text without this recipe's frames already holds a change this recipe makes:
/// its marker line was deleted, so applying would make the change a second time (a return
/// wrapped twice) and revert would leave it behind. Found where the plan puts each change: a
/// return that is already the template around some value, a block next to its own code. Apply
/// and revert look at the same original text, so they agree: code that merely happens to be
/// what the recipe would add there is refused too (applying would duplicate it).
pub(crate) fn check_orphans(recipe: &Recipe, prepared: &Prepared<'_>, hooks: &HookPlans) -> Result<(), Error> {
    let file = prepared.original();
    let text = file.source().text();
    let current = prepared.current();
    let foreign = marker::block_ranges(file.source());
    for (id, _, planned) in hooks {
        let (HookPlan::Edits(edits), Some(hook)) = (planned, recipe.hooks.iter().find(|h| &h.id == id)) else {
            continue;
        };
        let definitions = hook_definitions(recipe, file, hook);
        for edit in edits {
            let range = edit.range();
            // The definition this edit lands in (a hook may target several).
            let def = definitions
                .iter()
                .filter(|def| def.range().contains(&range.start))
                .min_by_key(|def| def.range().len())
                .copied();
            let found = match &hook.action {
                Action::WrapReturns { template, .. } if !range.is_empty() => {
                    let params = def.map(|def| crate::params::parameters(file, def)).unwrap_or_default();
                    let captures = crate::captures::of_when(hook, file, def);
                    let bindings = Bindings {
                        value: None,
                        params: &params,
                        captures: &captures,
                        in_strings: hook.capture_in_string,
                    };
                    let value = text[range.clone()].strip_prefix("return ");
                    value
                        .and_then(|value| template.unrender(&recipe.vars, &bindings, value))
                        .map(|_| range.start)
                }
                _ if range.is_empty() => edit.inserted().first().and_then(|inserted| {
                    let code = &edit.text()[inserted.clone()];
                    let at = if code.trim().is_empty() {
                        None
                    } else if text[..range.start].ends_with(code) {
                        Some(range.start - code.len())
                    } else {
                        text[range.start..].starts_with(code).then_some(range.start)
                    };
                    // The same code inside another recipe's block is that recipe's (stacked
                    // recipes may add the same lines): marked, not orphaned.
                    at.filter(|&at| !marker::covers(&foreign, &(at..at + code.len())))
                }),
                _ => None,
            };
            if let Some(at) = found {
                let at = marker::to_framed(prepared.frames(), at);
                let line = current.lines().line_of(at);
                let reason = MarkerReason::Unmarked {
                    line,
                    hook: id.to_string(),
                };
                return Err(ErrorKind::Marker { reason }.at(current.location(at)).with_hook(id));
            }
        }
    }
    Ok(())
}

fn frame_lines(file: &SourceFile, frames: &[Frame], hook: &str) -> Option<(usize, usize)> {
    let spans = frames.iter().filter(|f| f.hook == hook).map(|f| f.lines(file));
    spans.reduce(|(first, last), (f, l)| (first.min(f), last.max(l)))
}

/// Removes this recipe's changes from `source`, giving back the original bytes.
///
/// # Errors
/// [`ErrorKind::Marker`] for damaged or hand-edited frames, [`ErrorKind::Syntax`] when the result does
/// not parse.
pub fn revert(recipe: &Recipe, source: SourceFile) -> Result<Patched, Error> {
    let plan = Plan::new(recipe, Prepared::new(recipe, source)?);
    // A change of this recipe whose marker line is gone would stay behind: refuse, as apply does.
    plan.check_orphans()?;
    let prepared = plan.prepared();
    let outcomes = outcome::reverted(recipe, &prepared.blocks());
    Ok(Patched {
        name: prepared.current().name().to_string(),
        input: prepared.current().text().to_string(),
        output: prepared.original().source().text().to_string(),
        outcomes,
        changes: None,
    })
}
