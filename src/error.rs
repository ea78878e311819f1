//! Typed errors. Every error names where it happened (file, 1-based line and column) and, when a
//! hook was being placed, the hook's id; the message proposes a remedy where one exists.
//!
//! An [`Error`] is a kind ([`ErrorKind`]: what went wrong, its message without place or hook),
//! a [`Location`] and an optional hook id, so that every kind names its place and hook the same
//! way: `file:line:column: message [hook id]`. An error that wraps another keeps it as its
//! [`std::error::Error::source`].
//!
//! Errors live with the modules that raise them and compose here. The bottom of the library is
//! [`Location`] (`crate::location`) and `TooLong` (`crate::limits`); the modules below this one
//! raise their own types (`source::DecodeError`, `parse::SyntaxError`, `edit::Conflict`,
//! [`marker::MarkerError`](crate::marker::MarkerError) with [`MarkerReason`](crate::MarkerReason), and
//! `verify` owns [`VerifyReason`](crate::VerifyReason)) and never import this module, and
//! `from.rs` turns each into the [`ErrorKind`] that names it, so that `?` converts at the
//! boundary. The modules above (engine, document, batch, project, ...) return [`Error`].

use std::fmt;

use crate::limits::TooLong;

use crate::location::Location;

mod from;
mod reason;

use crate::marker::reason::MarkerReason;
use crate::verify::VerifyReason;
pub use reason::{BuilderReason, CodeFromProblem, PlacementReason, SelectionReason, SelectorProblem, SpecReason};

/// Everything that can go wrong in pysplice: where ([`Error::location`]), for which hook
/// ([`Error::hook`]) and what ([`Error::kind`]).
///
/// Shown as `file:line:column: message`, followed by ` [hook id]` when a hook is named.
/// `Clone`, so that a hook's outcome can carry the error that failed or skipped it while the
/// same error is returned (see [`crate::outcome::OutcomeReason`]).
#[derive(Clone, Debug)]
pub struct Error(Box<Parts>);

/// What an [`Error`] holds (boxed, so that a `Result` stays small).
#[derive(Clone, Debug)]
struct Parts {
    kind: ErrorKind,
    location: Location,
    hook: Option<String>,
}

/// What went wrong; its text is the message without location and hook.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The bytes of a file are not UTF-8 (the location is the first invalid byte).
    #[error("the file is not valid UTF-8 (byte {byte:#04x}); Python source must be UTF-8 encoded")]
    NotUtf8 {
        /// The first invalid byte.
        byte: u8,
    },

    /// The text is not valid Python (as far as the parser knows; the location is where the
    /// parser stopped).
    #[error("invalid Python: {message}")]
    Syntax {
        /// The parser's message.
        message: String,
    },

    /// A target path (`Class.method`) is not well formed (the location is the file searched).
    #[error("bad target path `{path}`: {reason}")]
    BadPath {
        /// The path as written.
        path: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A target path names nothing in the file (the location is the closest enclosing
    /// definition that exists).
    #[error("`{path}` is not defined in this file{}", not_found_hint(candidates, members))]
    NotFound {
        /// The path looked for.
        path: String,
        /// Paths that exist and are closest to the one asked for.
        candidates: Box<[String]>,
        /// When the enclosing class exists, the names of its members.
        members: Box<[String]>,
    },

    /// In a run of several files or a folder, a required hook's target is defined in none of
    /// the files (the location is the first folder given, or the first file).
    #[error("`{path}` is not defined in {} of this run{}", files_text(*files), crate::suggest::did_you_mean(candidates))]
    NotInFolder {
        /// The hook's target.
        path: String,
        /// How many `.py` files the folder run looked at.
        files: usize,
        /// The definition paths of those files closest to the target, best first.
        candidates: Box<[String]>,
    },

    /// A target path names several definitions and no ordinal picks one (the location is the
    /// first).
    #[error("`{path}` is defined {} times (lines {}); add an ordinal such as `{path}#1`", lines.len(), join_numbers(lines))]
    Ambiguous {
        /// The path looked for.
        path: String,
        /// The line of every occurrence.
        lines: Vec<usize>,
    },

    /// A hook spec is malformed (TOML syntax, unknown field, bad value).
    #[error("bad spec: {}", spec_text(reason, cause.as_deref()))]
    Spec {
        /// What is wrong ([`SpecReason::Value`] when the cause says it all).
        reason: SpecReason,
        /// The error of the spec's value itself (a pattern or code that does not parse, a bad
        /// target path), shown after the message.
        #[source]
        cause: Option<Box<Error>>,
    },

    /// A recipe built in code ([`crate::RecipeBuilder::build`]) is incomplete or has a value the
    /// rules of a recipe refuse. The message names the hook (or the recipe) and the builder call
    /// at fault; the location is [`Location::nowhere`], the hook is [`Error::hook`].
    #[error("{}", builder_text(reason, cause.as_deref()))]
    Builder {
        /// The recipe's id, as given to [`crate::Recipe::builder`].
        recipe: String,
        /// What is wrong.
        reason: BuilderReason,
        /// The error of the value itself (code that does not parse, a bad target path), shown
        /// after the message.
        #[source]
        cause: Option<Box<Error>>,
    },

    /// A required hook cannot be placed in the file (the location is the target, or the file
    /// start).
    #[error("cannot place hook: {reason}")]
    Placement {
        /// Why not.
        reason: PlacementReason,
    },

    /// Two hooks want to change overlapping text (the location is where the overlap starts).
    #[error("hooks `{first}` and `{second}` edit overlapping text; give one of them another anchor")]
    Conflict {
        /// One hook (also [`Error::hook`]).
        first: String,
        /// The other hook.
        second: String,
    },

    /// A marked block in the file does not match what pysplice inserted (edited by hand), or
    /// another recipe changed it after ([`MarkerReason::Stacked`]: that recipe must be reverted
    /// first). The location is the marker line.
    #[error("{reason}; {}", reason.remedy())]
    Marker {
        /// What does not match.
        reason: MarkerReason,
    },

    /// The result of an edit failed verification; nothing was written.
    #[error("verification failed: {reason}")]
    Verify {
        /// Which invariant broke.
        reason: VerifyReason,
    },

    /// Inserted code that runs when the module is imported uses a module-level name before the
    /// statement that binds it: the patched module would raise `NameError` on import; nothing
    /// was written.
    #[error(
        "verification failed: the inserted code uses `{name}` before line {bound_line} binds it: the module would raise NameError on import"
    )]
    EarlyNameUse {
        /// The name used too early.
        name: String,
        /// 1-based line of the statement that binds it.
        bound_line: usize,
    },

    /// The file changed on disk between reading and writing; nothing was written.
    #[error("the file changed on disk since it was read; nothing was written, run again")]
    Changed,

    /// In a folder run, the name of a file met in the walk no longer names the file walked
    /// (replaced by a symbolic link or another file, or removed) when it is read: nothing was
    /// read through it, and nothing of the run is written.
    #[error("the file was replaced (by a symbolic link or another file) or removed since its folder was walked; nothing was read through it, run again")]
    FileReplaced,

    /// A plan applied to another text than the one it was made from ([`crate::Plan::apply_to`]):
    /// its edits are of that text. The location is the first place where the two differ (the
    /// start when only the names differ); nothing was applied.
    #[error(
        "this is not the text the plan was made from (`{}` as planned); plan this text and apply that plan",
        crate::printable::printable(planned)
    )]
    PlanMismatch {
        /// The name of the file the plan was made from.
        planned: String,
    },

    /// The folder the file was read from is no longer at its path (moved away, or replaced by
    /// a link or another folder) when writing: nothing was written there or anywhere else.
    #[error("its folder {folder} is no longer the folder the file was read from (moved, or replaced by a link); nothing was written")]
    FolderReplaced {
        /// The folder's path.
        folder: String,
    },

    /// Applying would make the file larger than pysplice reads ([`crate::limits::MAX_FILE_BYTES`]),
    /// so that `check` and `revert` would then refuse it; nothing was written. The hook is the
    /// one that adds the most bytes.
    #[error("{} would make the file {size} bytes, more than the limit of {limit} bytes that pysplice reads; nothing was written", by_recipe(recipe.as_deref()))]
    OutputTooLarge {
        /// The recipe applied, when known.
        recipe: Option<String>,
        /// The size the output would have.
        size: u64,
        /// The most bytes a file may have.
        limit: u64,
    },

    /// Another process holds the lock on the file for too long; nothing was written.
    #[error("another process keeps the file locked; nothing was written, run again")]
    Locked,

    /// The path names a directory, FIFO, device or socket: pysplice reads and writes regular
    /// files only.
    #[error("{what}, not a regular file; pysplice reads and writes regular files only")]
    NotRegular {
        /// What it is (`a FIFO (named pipe)`, `a character device`, ...).
        what: String,
    },

    /// The file is larger than pysplice reads ([`crate::limits::MAX_FILE_BYTES`]).
    #[error("the file has {size} bytes, more than the limit of {limit} bytes; not read")]
    TooLarge {
        /// Its size (or how much was read before stopping).
        size: u64,
        /// The most bytes a file may have.
        limit: u64,
    },

    /// Code a recipe would write is longer than pysplice allows (each limit is documented where
    /// it is defined): a hook's code with its placeholders filled in
    /// ([`crate::template::MAX_RENDERED_BYTES`]), the code of a whole recipe
    /// ([`crate::limits::MAX_RECIPE_CODE_BYTES`]), or what the hooks add to one file. Checked before
    /// the text is built; nothing was written.
    #[error("{what} would be {}", TooLong { bytes: *bytes, limit: *limit })]
    Oversized {
        /// What would be too long (`the code of hook h`, ...).
        what: String,
        /// How long it would be; `None` when that does not fit a `usize`.
        bytes: Option<usize>,
        /// The limit.
        limit: usize,
    },

    /// Writing several files failed part way and putting back the ones already written failed
    /// too: `written` hold the new text, `restored` their old bytes again. The location is the
    /// cause's.
    #[error(
        "{}; putting back the files already written failed: {} hold the new text ({}){}",
        cause.message(),
        written.join(", "),
        failures.join("; "),
        if restored.is_empty() { String::new() } else { format!(", {} hold their old bytes again", restored.join(", ")) }
    )]
    PartialWrite {
        /// Why the write failed.
        #[source]
        cause: Box<Error>,
        /// The files that hold the new text.
        written: Box<[String]>,
        /// The files put back.
        restored: Box<[String]>,
        /// Why putting back failed, per file.
        failures: Box<[String]>,
    },

    /// A class asked for by name is not among those a recipe's selectors choose, or cannot be
    /// patched (the reason says why; the location is the package or file searched).
    #[error("{reason}")]
    Selection {
        /// What was asked and why it has no answer.
        reason: SelectionReason,
    },

    /// Reading or writing a file failed.
    #[error("{action}: {source}")]
    Io {
        /// What was being done (`cannot read`, `cannot write`).
        action: String,
        /// The operating system's error (shared, so that the error can be cloned).
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },
}

impl ErrorKind {
    /// The rule of a recipe this error breaks, whichever form the recipe has: the reason of a
    /// spec error, or of a builder error that breaks a rule of both forms
    /// ([`BuilderReason::Rule`], [`BuilderReason::Refused`]).
    #[must_use]
    pub fn spec_reason(&self) -> Option<&SpecReason> {
        match self {
            ErrorKind::Spec { reason, .. }
            | ErrorKind::Builder {
                reason: BuilderReason::Rule(reason) | BuilderReason::Refused { reason, .. },
                ..
            } => Some(reason),
            _ => None,
        }
    }

    /// This kind of error at `location`, naming no hook.
    #[must_use]
    pub fn at(self, location: Location) -> Error {
        Error::new(self, location)
    }
}

impl Error {
    /// An error of `kind` at `location`, naming no hook (see [`Error::with_hook`]).
    #[must_use]
    pub fn new(kind: ErrorKind, location: Location) -> Error {
        Error(Box::new(Parts {
            kind,
            location,
            hook: None,
        }))
    }

    /// What went wrong.
    #[must_use]
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// Where the error happened.
    #[must_use]
    pub fn location(&self) -> &Location {
        &self.0.location
    }

    /// Whether the input itself cannot be used (not UTF-8, not Python, a bad path or spec, a file
    /// that cannot be read), as opposed to a hook that cannot be placed in usable input.
    #[must_use]
    pub fn is_input_error(&self) -> bool {
        matches!(
            self.0.kind,
            ErrorKind::NotUtf8 { .. }
                | ErrorKind::Syntax { .. }
                | ErrorKind::BadPath { .. }
                | ErrorKind::Spec { .. }
                | ErrorKind::Builder { .. }
                | ErrorKind::Selection { .. }
                | ErrorKind::Io { .. }
                | ErrorKind::NotRegular { .. }
                | ErrorKind::TooLarge { .. }
                | ErrorKind::OutputTooLarge { .. }
                | ErrorKind::FolderReplaced { .. }
                | ErrorKind::FileReplaced
                | ErrorKind::Oversized { .. }
                | ErrorKind::PartialWrite { .. }
        )
    }

    /// The id of the hook concerned, if any (of two conflicting hooks, the first).
    #[must_use]
    pub fn hook(&self) -> Option<&str> {
        match &self.0.kind {
            ErrorKind::Conflict { first, .. } => Some(first),
            _ => self.0.hook.as_deref(),
        }
    }

    /// The same error attributed to `hook` (kept if one is already named).
    #[must_use]
    pub fn with_hook(mut self, id: &str) -> Error {
        if self.hook().is_none() {
            self.0.hook = Some(id.to_string());
        }
        self
    }

    /// The same error without its hook, for a message shown next to the hook's id already.
    /// (Two conflicting hooks stay named: they are part of the message.)
    #[must_use]
    pub fn without_hook(mut self) -> Error {
        self.0.hook = None;
        self
    }

    /// The message without its location and hook: the kind's text.
    #[must_use]
    pub fn detail(&self) -> String {
        self.0.kind.to_string()
    }

    /// The message without its leading `file:line:column: `, for showing at that location (an
    /// editor's diagnostic, a message nested in another): the kind's text and the hook.
    #[must_use]
    pub fn message(&self) -> impl fmt::Display + '_ {
        Message(self)
    }
}

/// An error's message without its location ([`Error::message`]).
#[derive(Clone, Copy, Debug)]
struct Message<'a>(&'a Error);

impl fmt::Display for Message<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A builder's error says first what was being built, as the builder's calls name it.
        if let ErrorKind::Builder { recipe, .. } = &self.0 .0.kind {
            return match &self.0 .0.hook {
                Some(id) => write!(f, "hook \"{}\": {}", crate::printable::shown(id), self.0 .0.kind),
                None => write!(f, "recipe \"{}\": {}", crate::printable::shown(recipe), self.0 .0.kind),
            };
        }
        write!(f, "{}", self.0 .0.kind)?;
        match &self.0 .0.hook {
            Some(id) => write!(f, " [hook {id}]"),
            None => Ok(()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.location.is_somewhere() {
            write!(f, "{}: {}", self.0.location, self.message())
        } else {
            write!(f, "{}", self.message())
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // The wrapped `Error` itself (not its box), so that a caller can downcast to it.
        match &self.0.kind {
            ErrorKind::Spec { cause: Some(cause), .. }
            | ErrorKind::Builder { cause: Some(cause), .. }
            | ErrorKind::PartialWrite { cause, .. } => Some(cause.as_ref()),
            kind => std::error::Error::source(kind),
        }
    }
}

/// `the one .py file`, `any of the 12 .py files`.
fn files_text(files: usize) -> String {
    match files {
        0 => "any .py file (there are none)".to_string(),
        1 => "the one .py file".to_string(),
        n => format!("any of the {n} .py files"),
    }
}

/// What made an output too large: the recipe applied, or the text given to write.
fn by_recipe(recipe: Option<&str>) -> String {
    match recipe {
        Some(id) => format!("applying recipe `{id}`"),
        None => "the new text".to_string(),
    }
}

/// A spec message and, when there is one, the message of the value's own error after it.
fn spec_text(reason: &SpecReason, cause: Option<&Error>) -> String {
    match cause {
        Some(cause) if *reason == SpecReason::Value => cause.message().to_string(),
        Some(cause) => format!("{reason}: {}", cause.message()),
        None => reason.to_string(),
    }
}

/// A builder's message and, when there is one, the message of the value's own error after it.
fn builder_text(reason: &BuilderReason, cause: Option<&Error>) -> String {
    match cause {
        Some(cause) => format!("{reason}: {}", cause.message()),
        None => reason.to_string(),
    }
}

fn not_found_hint(candidates: &[String], members: &[String]) -> String {
    let mut hint = crate::suggest::did_you_mean(candidates);
    if !members.is_empty() {
        hint.push_str(" The class defines: ");
        hint.push_str(&members.join(", "));
    }
    hint
}

fn join_numbers(lines: &[usize]) -> String {
    let parts: Vec<String> = lines.iter().map(ToString::to_string).collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One error of every kind, at `f.py:2:3`, naming hook `h`.
    fn every_kind() -> Vec<Error> {
        let at = || Location::new("f.py", 2, 3);
        let kinds = vec![
            ErrorKind::NotUtf8 { byte: 0xff },
            ErrorKind::Syntax { message: "m".into() },
            ErrorKind::BadPath {
                path: "p".into(),
                reason: "r".into(),
            },
            ErrorKind::NotFound {
                path: "p".into(),
                candidates: Box::new(["q".into()]),
                members: Box::new([]),
            },
            ErrorKind::NotInFolder {
                path: "p".into(),
                files: 2,
                candidates: Box::new(["q".into()]),
            },
            ErrorKind::Ambiguous {
                path: "p".into(),
                lines: vec![1, 2],
            },
            ErrorKind::Spec {
                reason: SpecReason::CodeMissing,
                cause: None,
            },
            ErrorKind::Placement {
                reason: PlacementReason::NeedsDefinition,
            },
            ErrorKind::Conflict {
                first: "h".into(),
                second: "i".into(),
            },
            ErrorKind::Marker {
                reason: MarkerReason::CloseWithoutOpen,
            },
            ErrorKind::Marker {
                reason: MarkerReason::Stacked {
                    top: "t".into(),
                    top_hook: "u".into(),
                    top_line: 9,
                },
            },
            ErrorKind::Verify {
                reason: VerifyReason::OutsideChanged,
            },
            ErrorKind::EarlyNameUse {
                name: "os".into(),
                bound_line: 9,
            },
            ErrorKind::Changed,
            ErrorKind::FileReplaced,
            ErrorKind::PlanMismatch { planned: "g.py".into() },
            ErrorKind::Locked,
            ErrorKind::NotRegular { what: "a FIFO".into() },
            ErrorKind::TooLarge { size: 2, limit: 1 },
            ErrorKind::OutputTooLarge {
                recipe: Some("r".into()),
                size: 2,
                limit: 1,
            },
            ErrorKind::FolderReplaced { folder: "d".into() },
            ErrorKind::Oversized {
                what: "the code".into(),
                bytes: None,
                limit: 1,
            },
            ErrorKind::PartialWrite {
                cause: Box::new(ErrorKind::Changed.at(at())),
                written: Box::new(["a".into()]),
                restored: Box::new([]),
                failures: Box::new(["x".into()]),
            },
            ErrorKind::Selection {
                reason: SelectionReason::CannotPatch {
                    name: "C".into(),
                    why: "w".into(),
                },
            },
            ErrorKind::Io {
                action: "cannot read".into(),
                source: std::sync::Arc::new(std::io::Error::other("gone")),
            },
        ];
        kinds.into_iter().map(|kind| kind.at(at()).with_hook("h")).collect()
    }

    #[test]
    fn a_message_is_its_location_its_kind_and_its_hook() {
        for err in every_kind() {
            let text = err.to_string();
            let hook = if matches!(err.kind(), ErrorKind::Conflict { .. }) {
                ""
            } else {
                " [hook h]"
            };
            assert_eq!(text, format!("f.py:2:3: {}{hook}", err.detail()));
            assert_eq!(format!("f.py:2:3: {}", err.message()), text);
            assert!(!err.detail().contains("[hook"), "{text}");
        }
    }

    #[test]
    fn the_hook_is_named_removed_and_set_again() {
        for err in every_kind() {
            assert_eq!(err.hook(), Some("h"));
            let without = err.clone().without_hook();
            assert!(!without.to_string().contains("[hook h]"), "{without}");
            let again = without.with_hook("k");
            let expected = if matches!(err.kind(), ErrorKind::Conflict { .. }) {
                "h"
            } else {
                "k"
            };
            assert_eq!(again.hook(), Some(expected), "{again}");
            assert_eq!(
                again.clone().with_hook("l").hook(),
                Some(expected),
                "a named hook is kept"
            );
        }
    }

    #[test]
    fn a_partial_write_keeps_its_cause_as_source() {
        let err = every_kind()
            .into_iter()
            .find(|e| matches!(e.kind(), ErrorKind::PartialWrite { .. }))
            .unwrap();
        let source = std::error::Error::source(&err).map(ToString::to_string);
        assert_eq!(
            source.as_deref(),
            Some("f.py:2:3: the file changed on disk since it was read; nothing was written, run again")
        );
    }

    #[test]
    fn a_spec_error_shows_its_cause_and_keeps_it_as_source() {
        let cause = ErrorKind::Syntax { message: "m".into() }.at(Location::new("<code>", 1, 2));
        let err = ErrorKind::Spec {
            reason: SpecReason::CodeUnparsable,
            cause: Some(Box::new(cause)),
        }
        .at(Location::new("s.toml", 3, 1))
        .with_hook("h");
        assert_eq!(
            err.to_string(),
            "s.toml:3:1: bad spec: code does not parse as Python: invalid Python: m [hook h]"
        );
        let source = std::error::Error::source(&err).and_then(|s| s.downcast_ref::<Error>());
        assert!(
            matches!(source.map(Error::kind), Some(ErrorKind::Syntax { .. })),
            "{source:?}"
        );
        assert_eq!(source.map(|s| s.location().line), Some(1));
    }
}
