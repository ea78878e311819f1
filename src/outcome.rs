//! Hook outcomes: the one rule that says what became (or would become) of each hook of a recipe
//! in one file, and whether the file is up to date.
//!
//! The plan says, per hook, whether it places edits, is skipped on purpose, or cannot be placed.
//! A hook that places edits is then classified by comparing its blocks in the file as found with
//! its blocks in the planned result. A block is known by three things: its seal (the code it
//! holds), the original text it displaced, and where it sits in the original text. So:
//!
//! - no blocks now: [`Status::Applied`] (placed by this apply);
//! - the same blocks, in the same places: [`Status::AlreadyApplied`];
//! - anything else, including the same code at another place (a recipe that moved a hook from
//!   `at = "start"` to `at = "end"`): [`Status::Updated`].
//!
//! Blocks in the file of hooks the recipe no longer has are taken out by the next apply: they
//! show as [`Status::Reverted`] after the recipe's own hooks.
//!
//! A file is up to date when applying would change nothing: no hook is [`Status::Applied`],
//! [`Status::Updated`] or [`Status::Reverted`] and the text stays the same ([`is_up_to_date`]).
//! `apply`, `check`, [`crate::Document::plan`] and the programs built on the crate all read
//! their statuses and verdicts from here.

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, ErrorKind};
use crate::marker::Frame;
use crate::spec::Recipe;

/// What happened (or would happen) to one hook in one file: the one hook state of plan, apply,
/// check and revert, each variant with one meaning. An apply (written or made in memory) says
/// what it did; a plan, and `check`, say what applying would do ([`Status::planned`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(tag = "status", rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum Status {
    /// Newly placed.
    Applied,
    /// Already there, identical.
    AlreadyApplied,
    /// There from an older spec; replaced.
    Updated,
    /// Not placed, on purpose (optional anchor absent, `when` not matched, nothing to do).
    Skipped {
        /// Why; for an optional hook that could not be placed, with the error.
        reason: OutcomeReason,
    },
    /// Could not be placed (a required hook): the file is left untouched.
    Failed {
        /// Why, with file:line:column, and the error.
        reason: OutcomeReason,
    },
    /// Removed by revert.
    Reverted,
    /// Revert found nothing of this hook.
    NotPresent,
    /// Before apply ([`crate::Plan::outcomes`]): would be placed.
    WouldApply,
    /// Before apply: there from an older spec; would be replaced.
    WouldUpdate,
    /// Before apply: a block of a hook the recipe no longer has; would be taken out.
    WouldRemove,
}

/// The outcome for one hook.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct HookOutcome {
    /// Hook id.
    pub hook: String,
    /// Hook summary.
    pub summary: String,
    /// What happened.
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub status: Status,
    /// 1-based first and last line the hook's text occupies in the output (markers included).
    pub lines: Option<(usize, usize)>,
}

/// Why a hook was skipped or failed: a line for people and, when an error is the cause, the
/// typed error (its kind, location and hook), so that no one has to read the line back.
///
/// Serialized as the line. Two reasons are equal when their lines are and their causes are
/// errors of the same kind at the same place (or both absent).
#[derive(Clone, Debug)]
pub struct OutcomeReason {
    text: String,
    cause: Option<Arc<Error>>,
    skip: Option<SkipReason>,
}

/// Why a hook had nothing to do here, with no error: the typed form of a
/// [`Status::Skipped`] reason that no [`Error`] caused ([`OutcomeReason::skip`]). Its text is the
/// reason's line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkipReason {
    /// A path of the hook's `requires` is not defined in the file.
    #[error("requires `{path}`, which this file does not define")]
    Requires {
        /// The path as written.
        path: String,
    },
    /// Nothing in the target matches the hook's `when` pattern.
    #[error("not applicable: nothing in the target matches `{pattern}`")]
    NotApplicable {
        /// The pattern as written.
        pattern: String,
    },
    /// Every import an `ensure-imports` hook lists is in the module already.
    #[error("already imported: {}", .imports.join(", "))]
    AlreadyImported {
        /// The imports found, as the module writes them.
        imports: Vec<String>,
    },
    /// The class defines the method an `add-forwarder` hook would add.
    #[error("already present: `{path}` (line {line})")]
    AlreadyPresent {
        /// The method's path.
        path: String,
        /// Its 1-based line.
        line: usize,
    },
}

impl From<SkipReason> for OutcomeReason {
    fn from(skip: SkipReason) -> OutcomeReason {
        OutcomeReason {
            text: skip.to_string(),
            cause: None,
            skip: Some(skip),
        }
    }
}

impl OutcomeReason {
    /// A reason without an error (`when` not matched, nothing to do).
    #[must_use]
    pub fn new(text: impl Into<String>) -> OutcomeReason {
        OutcomeReason {
            text: text.into(),
            cause: None,
            skip: None,
        }
    }

    /// The reason a required hook failed: `err`, with its message as the line.
    #[must_use]
    pub fn failed(err: Error) -> OutcomeReason {
        OutcomeReason {
            text: err.to_string(),
            cause: Some(Arc::new(err)),
            skip: None,
        }
    }

    /// The reason an optional hook that cannot be placed is skipped: `err`, with its message
    /// without the hook (the outcome names the hook already) as the line.
    #[must_use]
    pub fn skipped(err: Error) -> OutcomeReason {
        OutcomeReason {
            text: err.clone().without_hook().to_string(),
            cause: Some(Arc::new(err)),
            skip: None,
        }
    }

    /// The line for people.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The error behind it, if any.
    #[must_use]
    pub fn cause(&self) -> Option<&Error> {
        self.cause.as_deref()
    }

    /// Why the hook had nothing to do, when no error is the cause and the library knows why.
    #[must_use]
    pub fn skip(&self) -> Option<&SkipReason> {
        self.skip.as_ref()
    }
}

impl PartialEq for OutcomeReason {
    fn eq(&self, other: &OutcomeReason) -> bool {
        let key = |cause: &Option<Arc<Error>>| {
            cause.as_deref().map(|err| {
                (
                    std::mem::discriminant(err.kind()),
                    err.location().clone(),
                    err.hook().map(str::to_string),
                )
            })
        };
        self.text == other.text && key(&self.cause) == key(&other.cause) && self.skip == other.skip
    }
}

impl Eq for OutcomeReason {}

impl fmt::Display for OutcomeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::ops::Deref for OutcomeReason {
    type Target = str;

    fn deref(&self) -> &str {
        &self.text
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for OutcomeReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

#[cfg(feature = "serde")]
impl schemars::JsonSchema for OutcomeReason {
    fn schema_name() -> String {
        String::schema_name()
    }

    fn json_schema(generator: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        String::json_schema(generator)
    }
}

/// Per hook, the blocks it has in one text: (seal, displaced text, offset in the original text).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Blocks<'a>(crate::marker::ByHook<'a>);

impl<'a> Blocks<'a> {
    /// The blocks of `frames`, each anchored where [`crate::marker::strip_with_anchors`] put it.
    pub(crate) fn new(frames: &'a [Frame], anchors: &[usize]) -> Blocks<'a> {
        Blocks(crate::marker::by_hook(frames, anchors))
    }

    /// Whether `hook` has a block.
    pub(crate) fn has(&self, hook: &str) -> bool {
        self.0.contains_key(hook)
    }
}

/// The status of a hook the plan places, given its blocks before and after the apply.
fn placed(hook: &str, before: &Blocks<'_>, after: &Blocks<'_>) -> Status {
    match before.0.get(hook) {
        None => Status::Applied,
        Some(old) if after.0.get(hook) == Some(old) => Status::AlreadyApplied,
        Some(_) => Status::Updated,
    }
}

/// The outcomes of an apply: the planned ones (`Applied` for a hook that places edits) with
/// placed hooks classified by their blocks `before` and `after`, then one `Reverted` outcome
/// per hook whose blocks are in the file but which the recipe no longer has.
pub(crate) fn classify(
    recipe: &Recipe,
    planned: Vec<HookOutcome>,
    before: &Blocks<'_>,
    after: &Blocks<'_>,
) -> Vec<HookOutcome> {
    let mut outcomes: Vec<HookOutcome> = planned
        .into_iter()
        .map(|mut outcome| {
            if outcome.status == Status::Applied {
                outcome.status = placed(&outcome.hook, before, after);
            }
            outcome
        })
        .collect();
    outcomes.extend(stale(recipe, before));
    outcomes
}

/// The outcomes of a revert: `Reverted` for every hook with blocks, `NotPresent` for the
/// others, then the hooks the recipe no longer has.
pub(crate) fn reverted(recipe: &Recipe, before: &Blocks<'_>) -> Vec<HookOutcome> {
    let mut outcomes: Vec<HookOutcome> = recipe
        .hooks
        .iter()
        .map(|hook| HookOutcome {
            hook: hook.id.clone(),
            summary: hook.summary.clone(),
            status: if before.has(&hook.id) {
                Status::Reverted
            } else {
                Status::NotPresent
            },
            lines: None,
        })
        .collect();
    outcomes.extend(stale(recipe, before));
    outcomes
}

/// Outcomes for hooks whose blocks are in the file but which the recipe no longer has.
fn stale(recipe: &Recipe, present: &Blocks<'_>) -> Vec<HookOutcome> {
    present
        .0
        .keys()
        .filter(|id| !recipe.hooks.iter().any(|h| h.id == **id))
        .map(|hook| HookOutcome {
            hook: (*hook).to_string(),
            summary: format!("hook `{hook}` is no longer in the recipe"),
            status: Status::Reverted,
            lines: None,
        })
        .collect()
}

/// The planned outcomes when the edits of the placed hooks cannot be made or do not verify
/// (`err`): two hooks that edit overlapping text both fail, the others stay as planned; any
/// other error fails every hook that would have been placed.
pub(crate) fn failed(mut planned: Vec<HookOutcome>, err: &Error) -> Vec<HookOutcome> {
    let named = |hook: &str| match err.kind() {
        ErrorKind::Conflict { first, second, .. } => hook == first || hook == second,
        _ => true,
    };
    for outcome in &mut planned {
        if outcome.status == Status::Applied && named(&outcome.hook) {
            outcome.status = Status::Failed {
                reason: OutcomeReason::failed(err.clone()),
            };
        }
    }
    planned
}

/// The `check` rule: a file is up to date when no hook is pending ([`Status::is_pending`]) and applying
/// leaves the text as it is (`changed` is false).
#[must_use]
pub fn is_up_to_date(outcomes: &[HookOutcome], changed: bool) -> bool {
    !changed && !outcomes.iter().any(|o| o.status.is_pending())
}

impl Status {
    /// Whether applying does (or did) something for this hook: place it, update it, or take out
    /// the blocks of a hook the recipe no longer has. The `check` rule ([`Patched::is_up_to_date`](crate::Patched::is_up_to_date)) reads
    /// it from the outcomes of an apply in memory.
    ///
    /// ```
    /// use pysplice::Status;
    /// assert!(Status::WouldApply.is_pending() && Status::Applied.is_pending());
    /// assert!(!Status::AlreadyApplied.is_pending());
    /// ```
    #[must_use]
    pub fn is_pending(&self) -> bool {
        matches!(
            self,
            Status::Applied
                | Status::Updated
                | Status::Reverted
                | Status::WouldApply
                | Status::WouldUpdate
                | Status::WouldRemove
        )
    }

    /// This status as a plan says it, before anything is applied: what an apply places,
    /// replaces or takes out ([`Status::Applied`], [`Status::Updated`], [`Status::Reverted`])
    /// would be placed, replaced or taken out ([`Status::WouldApply`], [`Status::WouldUpdate`],
    /// [`Status::WouldRemove`]); every other status stays. [`crate::Plan::outcomes`], `check`
    /// and dry runs report an apply made in memory in these words, so that each status has one
    /// meaning in plan, apply and check.
    ///
    /// ```
    /// use pysplice::Status;
    /// assert_eq!(Status::Applied.planned(), Status::WouldApply);
    /// assert_eq!(Status::AlreadyApplied.planned(), Status::AlreadyApplied);
    /// ```
    #[must_use]
    pub fn planned(self) -> Status {
        match self {
            Status::Applied => Status::WouldApply,
            Status::Updated => Status::WouldUpdate,
            Status::Reverted => Status::WouldRemove,
            other => other,
        }
    }
}
