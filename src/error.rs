//! Typed errors. Every error names where it happened (file, 1-based line and column) and, when a
//! hook was being placed, the hook's id; the message proposes a remedy where one exists.

use std::fmt;

/// A place in a file, for messages: `file:line:column`, 1-based, columns in UTF-8 bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct Location {
    /// The file's name as given to the library.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in UTF-8 bytes.
    pub column: usize,
}

impl Location {
    /// A location in `file` at 1-based `line` and `column`.
    #[must_use]
    pub fn new(file: impl Into<String>, line: usize, column: usize) -> Location {
        Location {
            file: file.into(),
            line,
            column,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// ` (hook X)` when a hook is known, for messages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct HookRef(pub Option<String>);

impl fmt::Display for HookRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(id) => write!(f, " [hook {id}]"),
            None => Ok(()),
        }
    }
}

/// Everything that can go wrong in pysplice.
///
/// `Clone`, so that a hook's outcome can carry the error that failed or skipped it while the
/// same error is returned (see [`crate::outcome::Reason`]).
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes of a file are not UTF-8.
    #[error("{location}: the file is not valid UTF-8 (byte {byte:#04x}); Python source must be UTF-8 encoded")]
    NotUtf8 {
        /// Where the first invalid byte is.
        location: Location,
        /// The first invalid byte.
        byte: u8,
    },

    /// The text is not valid Python (as far as the parser knows).
    #[error("{location}: invalid Python: {message}{hook}")]
    Syntax {
        /// Where the parser stopped.
        location: Location,
        /// The parser's message.
        message: String,
        /// The hook whose code or pattern failed to parse, if any.
        hook: HookRef,
    },

    /// A target path (`Class.method`) is not well formed.
    #[error("{location}: bad target path `{path}`: {reason}{hook}")]
    BadPath {
        /// The file searched (line 1, column 1).
        location: Location,
        /// The path as written.
        path: String,
        /// What is wrong with it.
        reason: String,
        /// The hook naming the path, if any.
        hook: HookRef,
    },

    /// A target path names nothing in the file.
    #[error(
        "{location}: `{path}` is not defined in this file{hook}{}",
        not_found_hint(candidates, members)
    )]
    NotFound {
        /// The file searched; line and column of the closest enclosing definition that exists.
        location: Location,
        /// The path looked for.
        path: String,
        /// Paths that exist and are closest to the one asked for.
        candidates: Box<[String]>,
        /// When the enclosing class exists, the names of its members.
        members: Box<[String]>,
        /// The hook naming the path, if any.
        hook: HookRef,
    },

    /// A target path names several definitions and no ordinal picks one.
    #[error("{location}: `{path}` is defined {} times (lines {}); add an ordinal such as `{path}#1`{hook}", lines.len(), join_numbers(lines))]
    Ambiguous {
        /// The first occurrence.
        location: Location,
        /// The path looked for.
        path: String,
        /// The line of every occurrence.
        lines: Vec<usize>,
        /// The hook naming the path, if any.
        hook: HookRef,
    },

    /// A hook spec is malformed (TOML syntax, unknown field, bad value).
    #[error("{location}: bad spec: {message}{hook}")]
    Spec {
        /// Where in the spec file.
        location: Location,
        /// What is wrong.
        message: String,
        /// The hook concerned, if known.
        hook: HookRef,
    },

    /// A required hook cannot be placed in the file.
    #[error("{location}: cannot place hook: {reason}{hook}")]
    Placement {
        /// Where in the Python file (the target, or the file start).
        location: Location,
        /// Why not.
        reason: String,
        /// The hook whose placement was refused.
        hook: HookRef,
    },

    /// Two hooks want to change overlapping text.
    #[error("{location}: hooks `{first}` and `{second}` edit overlapping text; give one of them another anchor")]
    Conflict {
        /// Where the overlap starts.
        location: Location,
        /// One hook.
        first: String,
        /// The other hook.
        second: String,
    },

    /// A marked block in the file does not match what pysplice inserted (edited by hand).
    #[error("{location}: {reason}{hook}; restore the block or remove it by hand, then run again")]
    Marker {
        /// The marker line.
        location: Location,
        /// What does not match.
        reason: String,
        /// The hook the marker names.
        hook: HookRef,
    },

    /// Another recipe changed a frame of this recipe after it was applied (its change sits on
    /// top of this one): that recipe must be reverted first.
    #[error("{location}: recipe `{top}` was applied on top of this change (its marker for hook `{top_hook}` is at line {top_line}); revert `{top}` first{hook}")]
    Stacked {
        /// This recipe's marker line.
        location: Location,
        /// The recipe on top.
        top: Box<str>,
        /// The hook of the recipe on top whose marker is in the way.
        top_hook: Box<str>,
        /// 1-based line of that marker.
        top_line: usize,
        /// The hook of this recipe whose change is covered.
        hook: HookRef,
    },

    /// The result of an edit failed verification; nothing was written.
    #[error("{location}: verification failed: {reason}{hook}")]
    Verify {
        /// Where the problem shows.
        location: Location,
        /// Which invariant broke.
        reason: String,
        /// The hook concerned, if known.
        hook: HookRef,
    },

    /// The file changed on disk between reading and writing; nothing was written.
    #[error("{location}: the file changed on disk since it was read; nothing was written, run again")]
    Changed {
        /// The file.
        location: Location,
    },

    /// Another process holds the lock on the file for too long; nothing was written.
    #[error("{location}: another process keeps the file locked; nothing was written, run again")]
    Locked {
        /// The file.
        location: Location,
    },

    /// The path names a directory, FIFO, device or socket: pysplice reads and writes regular
    /// files only.
    #[error("{location}: {kind}, not a regular file; pysplice reads and writes regular files only")]
    NotRegular {
        /// The file.
        location: Location,
        /// What it is (`a FIFO (named pipe)`, `a character device`, ...).
        kind: String,
    },

    /// The file is larger than pysplice reads ([`crate::files::MAX_FILE_BYTES`]).
    #[error("{location}: the file has {size} bytes, more than the limit of {limit} bytes; not read")]
    TooLarge {
        /// The file that is too large.
        location: Location,
        /// Its size (or how much was read before stopping).
        size: u64,
        /// The most bytes a file may have.
        limit: u64,
    },

    /// Writing several files failed part way and putting back the ones already written failed
    /// too: `written` hold the new text, `restored` their old bytes again.
    #[error(
        "{cause}; putting back the files already written failed: {} hold the new text ({}){}",
        written.join(", "),
        failures.join("; "),
        if restored.is_empty() { String::new() } else { format!(", {} hold their old bytes again", restored.join(", ")) }
    )]
    PartialWrite {
        /// Where the write failed.
        location: Location,
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
    /// patched (the reason says why).
    #[error("{location}: {message}")]
    Selection {
        /// The package or file searched (line 1, column 1).
        location: Location,
        /// What was asked and why it has no answer.
        message: String,
    },

    /// Reading or writing a file failed.
    #[error("{location}: {action}: {source}")]
    Io {
        /// The file.
        location: Location,
        /// What was being done (`cannot read`, `cannot write`).
        action: String,
        /// The operating system's error (shared, so that the error can be cloned).
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },
}

impl Error {
    /// Where the error happened.
    #[must_use]
    pub fn location(&self) -> &Location {
        self.parts().0
    }

    /// Whether the input itself cannot be used (not UTF-8, not Python, a bad path or spec, a file
    /// that cannot be read), as opposed to a hook that cannot be placed in usable input.
    #[must_use]
    pub fn is_input_error(&self) -> bool {
        matches!(
            self,
            Error::NotUtf8 { .. }
                | Error::Syntax { .. }
                | Error::BadPath { .. }
                | Error::Spec { .. }
                | Error::Selection { .. }
                | Error::Io { .. }
                | Error::NotRegular { .. }
                | Error::TooLarge { .. }
                | Error::PartialWrite { .. }
        )
    }

    /// The id of the hook concerned, if any.
    #[must_use]
    pub fn hook(&self) -> Option<&str> {
        match self {
            Error::Conflict { first, .. } => Some(first),
            _ => self.parts().1.and_then(|hook| hook.0.as_deref()),
        }
    }

    /// The same error attributed to `hook` (kept if one is already named).
    #[must_use]
    pub fn with_hook(mut self, id: &str) -> Error {
        if let Some(hook) = self.hook_mut().filter(|hook| hook.0.is_none()) {
            hook.0 = Some(id.to_string());
        }
        self
    }

    /// The same error without its hook, for a message shown next to the hook's id already.
    #[must_use]
    pub fn without_hook(mut self) -> Error {
        if let Some(hook) = self.hook_mut() {
            hook.0 = None;
        }
        self
    }

    /// The message without its leading `file:line:column: `, for showing at that location (an
    /// editor's diagnostic, a message nested in another). Every message starts with its
    /// location (`a_message_starts_with_its_location` checks each kind).
    #[must_use]
    pub fn detail(&self) -> String {
        let text = self.to_string();
        let prefix = format!("{}: ", self.location());
        match text.strip_prefix(&prefix) {
            Some(rest) => rest.to_string(),
            None => text,
        }
    }

    /// The location and the hook field (of the kinds that have one): the one table of which
    /// kind keeps them where. Exhaustive on purpose, so that a new kind must be added here.
    fn parts(&self) -> (&Location, Option<&HookRef>) {
        match self {
            Error::Syntax { location, hook, .. }
            | Error::BadPath { location, hook, .. }
            | Error::NotFound { location, hook, .. }
            | Error::Ambiguous { location, hook, .. }
            | Error::Spec { location, hook, .. }
            | Error::Placement { location, hook, .. }
            | Error::Marker { location, hook, .. }
            | Error::Stacked { location, hook, .. }
            | Error::Verify { location, hook, .. } => (location, Some(hook)),
            Error::NotUtf8 { location, .. }
            | Error::Conflict { location, .. }
            | Error::Changed { location }
            | Error::Locked { location }
            | Error::NotRegular { location, .. }
            | Error::TooLarge { location, .. }
            | Error::PartialWrite { location, .. }
            | Error::Selection { location, .. }
            | Error::Io { location, .. } => (location, None),
        }
    }

    /// The hook field, mutable (the kinds of [`Error::parts`] that have one).
    fn hook_mut(&mut self) -> Option<&mut HookRef> {
        match self {
            Error::Syntax { hook, .. }
            | Error::BadPath { hook, .. }
            | Error::NotFound { hook, .. }
            | Error::Ambiguous { hook, .. }
            | Error::Spec { hook, .. }
            | Error::Placement { hook, .. }
            | Error::Marker { hook, .. }
            | Error::Stacked { hook, .. }
            | Error::Verify { hook, .. } => Some(hook),
            Error::NotUtf8 { .. }
            | Error::Conflict { .. }
            | Error::Changed { .. }
            | Error::Locked { .. }
            | Error::NotRegular { .. }
            | Error::TooLarge { .. }
            | Error::PartialWrite { .. }
            | Error::Selection { .. }
            | Error::Io { .. } => None,
        }
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

    /// One error of every kind, at `f.py:2:3`, naming hook `h` where the kind has a hook.
    fn every_kind() -> Vec<Error> {
        let location = || Location::new("f.py", 2, 3);
        let hook = || HookRef(Some("h".into()));
        vec![
            Error::NotUtf8 {
                location: location(),
                byte: 0xff,
            },
            Error::Syntax {
                location: location(),
                message: "m".into(),
                hook: hook(),
            },
            Error::BadPath {
                location: location(),
                path: "p".into(),
                reason: "r".into(),
                hook: hook(),
            },
            Error::NotFound {
                location: location(),
                path: "p".into(),
                candidates: Box::new(["q".into()]),
                members: Box::new([]),
                hook: hook(),
            },
            Error::Ambiguous {
                location: location(),
                path: "p".into(),
                lines: vec![1, 2],
                hook: hook(),
            },
            Error::Spec {
                location: location(),
                message: "m".into(),
                hook: hook(),
            },
            Error::Placement {
                location: location(),
                reason: "r".into(),
                hook: hook(),
            },
            Error::Conflict {
                location: location(),
                first: "h".into(),
                second: "i".into(),
            },
            Error::Marker {
                location: location(),
                reason: "r".into(),
                hook: hook(),
            },
            Error::Stacked {
                location: location(),
                top: "t".into(),
                top_hook: "u".into(),
                top_line: 9,
                hook: hook(),
            },
            Error::Verify {
                location: location(),
                reason: "r".into(),
                hook: hook(),
            },
            Error::Changed { location: location() },
            Error::Locked { location: location() },
            Error::NotRegular {
                location: location(),
                kind: "a FIFO".into(),
            },
            Error::TooLarge {
                location: location(),
                size: 2,
                limit: 1,
            },
            Error::PartialWrite {
                location: location(),
                cause: Box::new(Error::Changed { location: location() }),
                written: Box::new(["a".into()]),
                restored: Box::new([]),
                failures: Box::new(["x".into()]),
            },
            Error::Selection {
                location: location(),
                message: "m".into(),
            },
            Error::Io {
                location: location(),
                action: "cannot read".into(),
                source: std::sync::Arc::new(std::io::Error::other("gone")),
            },
        ]
    }

    #[test]
    fn a_message_starts_with_its_location() {
        for err in every_kind() {
            let text = err.to_string();
            assert!(text.starts_with("f.py:2:3: "), "{text}");
            assert_eq!(format!("f.py:2:3: {}", err.detail()), text);
        }
    }

    #[test]
    fn the_hook_is_named_removed_and_set_through_one_table() {
        for err in every_kind() {
            let named = err.hook().map(str::to_string);
            let text = err.to_string();
            assert_eq!(
                named.is_some(),
                text.contains("[hook h]") || text.contains("hooks `h`"),
                "{text}"
            );
            let without = err.clone().without_hook();
            assert!(!without.to_string().contains("[hook h]"), "{without}");
            let again = without.with_hook("k");
            if matches!(err, Error::Conflict { .. }) {
                assert_eq!(again.hook(), Some("h"));
            } else {
                assert_eq!(again.hook().is_some(), named.is_some(), "{again}");
            }
        }
    }

    #[test]
    fn a_partial_write_keeps_its_cause_as_source() {
        let err = every_kind().remove(15);
        let source = std::error::Error::source(&err).map(ToString::to_string);
        assert_eq!(
            source.as_deref(),
            Some("f.py:2:3: the file changed on disk since it was read; nothing was written, run again")
        );
    }
}
