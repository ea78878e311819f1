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

use std::borrow::Cow;
use std::fmt::Write;

use similar::TextDiff;

use crate::engine::{HookOutcome, Patched, Status};
use crate::outcome::HookState;
pub use crate::suggest::shown;

/// `text` safe to print on a terminal: control characters (C0 with line breaks and tabs, DEL,
/// C1) and the bidirectional formatting characters (which reorder what a terminal or editor
/// shows) written as escapes (`\x1b`, `\n`, `\u{202e}`); anything else unchanged. For file
/// names and other text from outside in human-readable output: a name such as
/// `evil\x1b]0;PWNED\x07.py` can neither retitle the terminal nor fake a line.
///
/// ```
/// use pysplice::report::printable;
/// assert_eq!(printable("evil\u{1b}]0;PWNED\u{7}x.py"), "evil\\x1b]0;PWNED\\x07x.py");
/// assert_eq!(printable("a\nb\u{202e}c"), "a\\nb\\u{202e}c");
/// assert_eq!(printable("models/qwen2_moe.py"), "models/qwen2_moe.py");
/// ```
#[must_use]
pub fn printable(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// [`printable`], keeping line breaks (`\n`) as they are: for messages of several lines.
#[must_use]
pub fn printable_lines(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() && !(keep_newlines && c == '\n')) || is_bidi_control(c);
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
            continue;
        }
        let _ = match c {
            '\n' => write!(out, "\\n"),
            '\r' => write!(out, "\\r"),
            '\t' => write!(out, "\\t"),
            c if (c as u32) < 0x100 => write!(out, "\\x{:02x}", c as u32),
            c => write!(out, "\\u{{{:x}}}", c as u32),
        };
    }
    Cow::Owned(out)
}

/// The characters that change the display order of the text around them (Unicode's bidi
/// embeddings, overrides, isolates and marks).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

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

/// What `check` says of a hook: `missing`, `outdated`, `applied`, `skipped: why`, ...
#[must_use]
pub fn check_status(outcome: &HookOutcome) -> String {
    match (&outcome.status, outcome.status.state(true)) {
        (Status::Skipped { reason }, _) => format!("skipped: {reason}"),
        (Status::Failed { reason }, _) => format!("cannot be placed: {reason}"),
        (_, HookState::ToRemove) => "to be removed (no longer in the recipe)".to_string(),
        (_, HookState::NotPresent) => "not present".to_string(),
        (_, state) => state.word().to_string(),
    }
}

/// A unified diff of `old` and `new` with `name` in the headers (empty when equal).
#[must_use]
pub fn unified_diff(name: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let name = printable(name);
    let name = name.trim_start_matches('/');
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}
