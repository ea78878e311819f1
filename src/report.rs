//! The text forms pysplice's programs print, for programs built on the library to print the
//! same: text from outside made safe for a terminal ([`printable`], [`printable_lines`], and
//! [`shown`] for a name inside a message), one line per hook outcome ([`outcome_line`],
//! [`check_status`]), the patch-script style report of an apply ([`applied_text`]) and
//! unified diffs ([`unified_diff`]).
//!
//! ```
//! use pysplice::{apply, report, Recipe, SourceFile};
//!
//! let recipe = Recipe::from_toml("r.toml", r#"
//! [recipe]
//! id = "r"
//! summary = "Imports os"
//! [[hook]]
//! id = "imports"
//! summary = "Imported os"
//! ensure-imports = ["os"]
//! "#)?;
//! let patched = apply(&recipe, SourceFile::new("m\u{1b}[2J.py", "x = 1\n"))?;
//! // The control character of the name is escaped, not sent to the terminal.
//! assert_eq!(
//!     report::applied_text(&patched),
//!     "Successfully patched m\\x1b[2J.py\n  - Imported os (lines 1-3)\n"
//! );
//! assert_eq!(report::outcome_line(&patched.outcomes()[0]), "Imported os (lines 1-3)");
//! # Ok::<(), pysplice::Error>(())
//! ```

use std::fmt::Write;

use crate::engine::{HookOutcome, Patched, Status};

pub use crate::diff::unified_diff;
pub use crate::printable::{counted, printable, printable_lines, shown};

/// The patch-script style report of an apply: `Successfully patched FILE` and one `  - summary`
/// line per hook placed; skipped hooks with their reason.
#[must_use]
pub fn applied_text(patched: &Patched) -> String {
    let mut out = String::new();
    if !patched.is_up_to_date() {
        let _ = writeln!(out, "Successfully patched {}", printable(patched.name()));
    } else {
        let _ = writeln!(out, "Already up to date: {}", printable(patched.name()));
    }
    for outcome in patched.outcomes() {
        let _ = writeln!(out, "  - {}", outcome_line(outcome));
    }
    out
}

/// One line for a hook outcome: its summary, with the status when it is not a fresh placement.
#[must_use]
pub fn outcome_line(outcome: &HookOutcome) -> String {
    let lines = outcome
        .lines
        .map(|(a, b)| format!(" (lines {a}-{b})"))
        .unwrap_or_default();
    match &outcome.status {
        Status::Applied => format!("{}{lines}", outcome.summary),
        Status::AlreadyApplied => format!("{} [already applied]{lines}", outcome.summary),
        Status::Updated => format!("{} [updated]{lines}", outcome.summary),
        Status::Skipped { reason } => format!("skipped `{}`: {reason}", outcome.hook),
        Status::Failed { reason } => format!("FAILED `{}`: {reason}", outcome.hook),
        Status::Reverted => format!("removed: {}", outcome.summary),
        Status::NotPresent => format!("not present: {}", outcome.summary),
        Status::WouldApply => format!("{} [would apply]", outcome.summary),
        Status::WouldUpdate => format!("{} [would update]", outcome.summary),
        Status::WouldRemove => format!("would remove: {}", outcome.summary),
    }
}

/// What `check` says of a hook: `missing`, `outdated`, `applied`, `skipped: why`, ... `check`
/// applies in memory and reports what it found as a plan does ([`Status::planned`]): a hook the
/// apply would place is `missing`, one in place and the same `applied`.
#[must_use]
pub fn check_status(outcome: &HookOutcome) -> String {
    match outcome.status.clone().planned() {
        Status::Skipped { reason } => format!("skipped: {reason}"),
        Status::Failed { reason } => format!("cannot be placed: {reason}"),
        Status::WouldApply | Status::Applied => "missing".to_string(),
        Status::AlreadyApplied => "applied".to_string(),
        Status::WouldUpdate | Status::Updated => "outdated".to_string(),
        Status::WouldRemove | Status::Reverted => "to be removed (no longer in the recipe)".to_string(),
        Status::NotPresent => "not present".to_string(),
    }
}
