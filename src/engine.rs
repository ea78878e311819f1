//! Plan, apply, check and revert a recipe on one file, with verification.
//!
//! Planning never mutates; applying never decides. A file that already carries this recipe's
//! markers is first reverted in memory to its original text, the recipe is planned on that
//! original, and the result compared with what is there by [`crate::outcome`]: equal blocks are
//! "already applied", changed or moved ones "updated".
//!
//! The work is split by stage: [`plan()`] (here, placements in `plan.rs`) decides where each
//! hook goes and gives a [`Plan`] that holds the file it was made from; [`Plan::apply`],
//! [`apply()`] and [`revert`] (`apply.rs`) make the edits and return a [`Patched`]; `verify.rs`
//! checks every output before it is returned. This file holds the plan and the prepared file
//! (the text with this recipe's frames taken out).

mod apply;
mod plan;
mod verify;

use std::borrow::Cow;
use std::sync::Arc;

use crate::edit::Edit;
use crate::error::{Error, ErrorKind};
use crate::marker::reason::MarkerReason;
use crate::marker::{self, Frame, FrameKind};
use crate::outcome::Blocks;
pub use crate::outcome::{HookOutcome, OutcomeReason, SkipReason, Status};
use crate::outline::ParsedFile;
use crate::parse::parse_snippet;
use crate::source::SourceFile;
use crate::spec::{Action, Recipe};
pub(crate) use crate::suite::hook_definitions;
use crate::syntax::Node;
pub use apply::{apply, attempt, revert, Attempt, Patched};
pub(crate) use apply::{check_orphans, preview};
pub(crate) use plan::plan_hooks;

/// A hook's edits, or why it has none.
#[derive(Debug)]
pub(crate) enum HookPlan {
    Edits(Vec<Edit>),
    Skipped(OutcomeReason),
    Failed(Error),
}

/// Per hook of a recipe, in recipe order: its id, its summary and its plan.
pub(crate) type HookPlans = Vec<(String, String, HookPlan)>;

/// Plans `recipe` on `file`: per hook, its edits or the reason there are none. The plan holds
/// the file it was made from ([`Plan::source`]) and the recipe; [`Plan::outcomes`] says what
/// applying would do, [`Plan::apply`] does it.
///
/// A file that already carries the recipe's markers is planned on its original text (the
/// markers' blocks taken out, parsed again), and the plan knows the blocks that are there: a
/// hook whose block is there and the same is [`Status::AlreadyApplied`], one from an older
/// recipe [`Status::WouldUpdate`]. A file without them is not parsed again.
///
/// ```
/// use pysplice::{plan, ParsedFile, Recipe, SourceFile, Status};
///
/// let recipe = Recipe::from_toml("r.toml", r#"
/// [recipe]
/// id = "demo"
/// summary = "Count calls"
/// [[hook]]
/// id = "count"
/// summary = "Counted calls"
/// in = "f"
/// at = "start"
/// code = "count()"
/// "#)?;
/// let parsed = ParsedFile::parse(SourceFile::new("m.py", "def f():\n    pass\n"))?;
/// let planned = plan(&recipe, &parsed)?;
/// assert_eq!(planned.outcomes()[0].status, Status::WouldApply);
/// let patched = planned.apply()?;
/// assert_eq!(patched.outcomes()[0].status, Status::Applied);
///
/// let again = ParsedFile::parse(SourceFile::new("m.py", patched.output()))?;
/// assert_eq!(plan(&recipe, &again)?.outcomes()[0].status, Status::AlreadyApplied);
/// # Ok::<(), pysplice::Error>(())
/// ```
///
/// # Errors
/// As reading the recipe's markers in the file: [`ErrorKind::Marker`] for damaged or
/// hand-edited blocks, [`ErrorKind::Syntax`] when the text without them is not valid Python.
/// Hooks that cannot be placed are no error here: they fail in [`Plan::outcomes`] and
/// [`Plan::apply`].
pub fn plan<'a>(recipe: &'a Recipe, file: &'a ParsedFile) -> Result<Plan<'a>, Error> {
    Ok(Plan::new(recipe, Prepared::of_parsed(recipe, file)?))
}

/// The plan of a recipe for one file: per hook, edits or the reason there are none, with the
/// recipe and the file it was made from ([`plan()`]).
#[derive(Debug)]
pub struct Plan<'a> {
    recipe: &'a Recipe,
    prepared: Prepared<'a>,
    hooks: HookPlans,
}

impl<'a> Plan<'a> {
    /// The plan of `recipe` for the prepared file.
    pub(crate) fn new(recipe: &'a Recipe, prepared: Prepared<'a>) -> Plan<'a> {
        let hooks = plan_hooks(recipe, prepared.original());
        Plan::from_parts(recipe, prepared, hooks)
    }

    /// A plan made before ([`Plan::into_parts`]) of `prepared`, with `recipe`, whose id it was
    /// made for.
    pub(crate) fn from_parts(recipe: &'a Recipe, prepared: Prepared<'a>, hooks: HookPlans) -> Plan<'a> {
        Plan {
            recipe,
            prepared,
            hooks,
        }
    }

    /// Whether every hook could be placed or was skipped on purpose.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        !self.hooks.iter().any(|(_, _, p)| matches!(p, HookPlan::Failed(_)))
    }

    /// The first failure, if any.
    #[must_use]
    pub fn first_failure(&self) -> Option<&Error> {
        self.hooks.iter().find_map(|(_, _, p)| match p {
            HookPlan::Failed(err) => Some(err),
            _ => None,
        })
    }

    /// All edits in hook order, in byte ranges of the original text (the file as planned
    /// without the recipe's blocks; the file itself when it carries none).
    #[must_use]
    pub fn edits(&self) -> Vec<Edit> {
        edits_of(&self.hooks)
    }

    /// What applying this plan would do, per hook in recipe order, unverified:
    /// [`Status::WouldApply`], [`Status::AlreadyApplied`] (its blocks are there and the same),
    /// [`Status::WouldUpdate`] (its blocks are there from an older recipe), [`Status::Skipped`]
    /// or [`Status::Failed`] (also both hooks of two that edit overlapping text); then
    /// [`Status::WouldRemove`] for each hook whose blocks are there but that the recipe no
    /// longer has. After [`Plan::apply`], [`Patched::outcomes`] says what happened.
    #[must_use]
    pub fn outcomes(&self) -> Vec<HookOutcome> {
        let mut outcomes = self.preview().0;
        for outcome in &mut outcomes {
            outcome.status = std::mem::replace(&mut outcome.status, Status::NotPresent).planned();
        }
        outcomes
    }

    /// The recipe this plan is for.
    #[must_use]
    pub fn recipe(&self) -> &'a Recipe {
        self.recipe
    }

    /// The id of the recipe this plan is for.
    #[must_use]
    pub fn recipe_id(&self) -> &str {
        &self.recipe.id
    }

    /// The file the plan was made from, as it was given (markers included).
    #[must_use]
    pub fn source(&self) -> &SourceFile {
        self.prepared.current()
    }

    /// Per hook as planned, before the blocks are compared (see [`planned_outcomes`]).
    pub(crate) fn planned(&self) -> Vec<HookOutcome> {
        planned_outcomes(&self.hooks)
    }

    /// The prepared file the plan was made of.
    pub(crate) fn prepared(&self) -> &Prepared<'a> {
        &self.prepared
    }

    /// The hooks' plans.
    pub(crate) fn hooks(&self) -> &HookPlans {
        &self.hooks
    }
}

/// All edits of `hooks`, in hook order.
pub(crate) fn edits_of(hooks: &HookPlans) -> Vec<Edit> {
    hooks
        .iter()
        .flat_map(|(_, _, p)| match p {
            HookPlan::Edits(edits) => edits.clone(),
            _ => Vec::new(),
        })
        .collect()
}

/// Per hook as planned, before the blocks are compared: a hook that places edits shows as
/// [`Status::Applied`] (the input of [`crate::outcome::classify`]).
pub(crate) fn planned_outcomes(hooks: &HookPlans) -> Vec<HookOutcome> {
    hooks
        .iter()
        .map(|(id, summary, p)| HookOutcome {
            hook: id.clone(),
            summary: summary.clone(),
            status: match p {
                HookPlan::Edits(_) => Status::Applied,
                HookPlan::Skipped(reason) => Status::Skipped { reason: reason.clone() },
                HookPlan::Failed(err) => Status::Failed {
                    reason: OutcomeReason::failed(err.clone()),
                },
            },
            lines: None,
        })
        .collect()
}

/// The original text of a prepared file: the parsed file given (it carries no block of the
/// recipe), or a parse of its own, shared so that an editor's next keystroke can re-parse from
/// it (`Document`).
#[derive(Clone, Debug)]
enum Original<'a> {
    Borrowed(&'a ParsedFile),
    Shared(Arc<ParsedFile>),
}

/// A file as found, with this recipe's frames taken out.
#[derive(Clone, Debug)]
pub struct Prepared<'a> {
    current: Cow<'a, SourceFile>,
    frames: Vec<Frame>,
    /// Where each frame sits in the original text.
    anchors: Vec<usize>,
    original: Original<'a>,
}

impl Prepared<'static> {
    /// Reads this recipe's markers in `current` and reconstructs the original text.
    ///
    /// # Errors
    /// [`ErrorKind::Marker`] for damaged or hand-edited frames; [`ErrorKind::Syntax`] when the text is not
    /// valid Python.
    pub fn new(recipe: &Recipe, current: SourceFile) -> Result<Prepared<'static>, Error> {
        Prepared::reusing(recipe, current, None)
    }

    /// [`Prepared::new`], parsing the original text again only where it differs from
    /// `previous` (the original of an earlier version of the same file, for this recipe).
    pub(crate) fn reusing(
        recipe: &Recipe,
        current: SourceFile,
        previous: Option<&ParsedFile>,
    ) -> Result<Prepared<'static>, Error> {
        let parse = |source: SourceFile| match previous {
            Some(previous) => ParsedFile::reparse(source, previous),
            None => ParsedFile::parse(source),
        };
        let (frames, anchors, stripped) = read_frames(recipe, &current)?;
        let original = parse(stripped.unwrap_or_else(|| current.clone()))?;
        Ok(Prepared {
            current: Cow::Owned(current),
            frames,
            anchors,
            original: Original::Shared(Arc::new(original)),
        })
    }
}

impl<'a> Prepared<'a> {
    /// [`Prepared::new`] of a parsed file: parsed again only when it carries this recipe's
    /// blocks (from its own parse: only the statements around the blocks are parsed again).
    pub(crate) fn of_parsed(recipe: &Recipe, file: &'a ParsedFile) -> Result<Prepared<'a>, Error> {
        let current = file.source();
        let (frames, anchors, stripped) = read_frames(recipe, current)?;
        let original = match stripped {
            None => Original::Borrowed(file),
            Some(stripped) => Original::Shared(Arc::new(ParsedFile::reparse(stripped, file)?)),
        };
        Ok(Prepared {
            current: Cow::Borrowed(current),
            frames,
            anchors,
            original,
        })
    }

    /// The original, shared.
    pub(crate) fn original_shared(&self) -> Arc<ParsedFile> {
        match &self.original {
            Original::Borrowed(file) => Arc::new((*file).clone()),
            Original::Shared(file) => Arc::clone(file),
        }
    }

    /// The file as found.
    #[must_use]
    pub fn current(&self) -> &SourceFile {
        &self.current
    }

    /// The file without this recipe's changes.
    #[must_use]
    pub fn original(&self) -> &ParsedFile {
        match &self.original {
            Original::Borrowed(file) => file,
            Original::Shared(file) => file,
        }
    }

    /// This recipe's frames in the file as found.
    pub(crate) fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// Whether the recipe has frames in the file.
    #[must_use]
    pub fn is_patched(&self) -> bool {
        !self.frames.is_empty()
    }

    /// This recipe's blocks in the file as found.
    pub(crate) fn blocks(&self) -> Blocks<'_> {
        Blocks::new(&self.frames, &self.anchors)
    }
}

/// What [`read_frames`] finds: this recipe's frames, where each sits in the original text, and
/// the original text when it differs from the file's (`None`: no frames).
type FoundFrames = (Vec<Frame>, Vec<usize>, Option<SourceFile>);

/// This recipe's frames in `current` ([`FoundFrames`]).
fn read_frames(recipe: &Recipe, current: &SourceFile) -> Result<FoundFrames, Error> {
    if let Some((other, line)) = marker::stacked_inside(current, &recipe.id) {
        // Taking this recipe's expansion out would take the other recipe's changes with it.
        let offset = current.lines().line_start(line).unwrap_or(0);
        return Err(ErrorKind::Marker {
            reason: MarkerReason::StackedInsideSuite {
                other: other.to_string(),
            },
        }
        .at(current.location(offset)));
    }
    let frames = marker::scan(current, &recipe.id)?;
    check_replaced(recipe, current, &frames)?;
    if frames.is_empty() {
        return Ok((frames, Vec::new(), None));
    }
    let (text, anchors) = marker::strip_with_anchors(current.text(), &frames);
    Ok((frames, anchors, Some(SourceFile::new(current.name(), text))))
}

/// A frame that replaced statements puts them back on revert; they must be statements the
/// recipe's `replace` hook of that id matches, or a marker could carry code of its own (its
/// seal proves no more than that whoever wrote it could compute SHA-256).
fn check_replaced(recipe: &Recipe, current: &SourceFile, frames: &[Frame]) -> Result<(), Error> {
    for frame in frames.iter().filter(|f| f.kind == FrameKind::Lines) {
        let pattern = recipe
            .hooks
            .iter()
            .find(|h| h.id == frame.hook)
            .and_then(|h| match &h.action {
                Action::Replace { selector, .. } => Some(&selector.pattern),
                _ => None,
            });
        let matches = pattern.is_some_and(|pattern| {
            displaced_statements(&frame.was)
                .is_some_and(|stmts| !stmts.is_empty() && stmts.iter().all(|stmt| pattern.matches_statement(stmt)))
        });
        if !matches {
            let reason = match pattern {
                Some(pattern) => MarkerReason::PatternMismatch {
                    hook: frame.hook.clone(),
                    pattern: pattern.text().to_string(),
                },
                None => MarkerReason::NotAReplace {
                    hook: frame.hook.clone(),
                },
            };
            return Err(ErrorKind::Marker { reason }
                .at(current.location(frame.removal.first().map_or(0, |r| r.start)))
                .with_hook(&frame.hook));
        }
    }
    Ok(())
}

/// The statements of displaced whole lines, indented as they were in the file (inside an
/// `if` when indented, so that lines of a multi-line string keep their text).
fn displaced_statements(was: &str) -> Option<Vec<Node>> {
    if !was.starts_with([' ', '\t']) {
        return parse_snippet("<was>", was).ok();
    }
    let wrapped = parse_snippet("<was>", &format!("if True:\n{was}\n")).ok()?;
    let [stmt] = wrapped.as_slice() else { return None };
    Some(stmt.field("body")?.children().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_values_are_parenthesized_only_when_needed() {
        let spec = "[recipe]\nid = \"r\"\nsummary = \"s\"\n[[hook]]\nid = \"w\"\nsummary = \"w\"\nin = \"f\"\nwrap-returns = \"g({value})\"\n";
        let recipe = Recipe::from_toml("r.toml", spec).unwrap();
        let cases = [
            ("return (a, b), c", "return g(((a, b), c))"),
            ("return (a, b)", "return g((a, b))"),
            ("return a, b", "return g((a, b))"),
            ("return (x for x in y)", "return g((x for x in y))"),
            ("return a if c else b", "return g((a if c else b))"),
            ("return", "return g(None)"),
            ("return f(x)", "return g(f(x))"),
        ];
        for (before, after) in cases {
            let text = format!("def f():\n    {before}\n");
            let patched = apply(&recipe, SourceFile::new("t.py", text)).unwrap();
            assert!(
                patched.output().contains(&format!("\n    {after}\n")),
                "{before}: {}",
                patched.output()
            );
        }
    }

    /// The recursive passes over the tree (outline, patterns, verification) fit a 2 MiB thread
    /// stack in a debug build for the deepest tree the parser accepts.
    #[test]
    fn deepest_accepted_tree_fits_a_small_stack() {
        let spec = r#"
[recipe]
id = "deep"
summary = "s"
[[hook]]
id = "wrap"
summary = "w"
in = "f"
wrap-returns = "g({value})"
when = "return $X + 1"
[[hook]]
id = "after"
summary = "a"
in = "f"
at = { after = "y = $$$" }
code = "z = y + 1"
"#;
        let depth = crate::parse::MAX_DEPTH - 10;
        let text = format!(
            "def f():\n    y = 1{}\n    return y{}\n",
            " + 1".repeat(depth),
            " + 1".repeat(depth)
        );
        let recipe = Recipe::from_toml("deep.toml", spec).unwrap();
        let worker = std::thread::Builder::new().stack_size(2 << 20).spawn(move || {
            let patched = apply(&recipe, SourceFile::new("deep.py", text.clone())).unwrap();
            let back = revert(&recipe, SourceFile::new("deep.py", patched.output())).unwrap();
            assert_eq!(back.output(), text);
        });
        worker.unwrap().join().expect("no stack overflow");
    }
}
