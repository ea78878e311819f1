//! Spec warnings: what a recipe may say but likely does not mean. The recipe still compiles;
//! the warnings stay on it ([`Recipe::warnings`](super::Recipe::warnings)) for a program to show.

use std::fmt;

use crate::location::Location;

/// A warning about one hook of a recipe, where in the spec it is written.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct SpecWarning {
    /// What is wrong.
    pub kind: SpecWarningKind,
    /// Where in the spec (file, line and column of the placeholder); [`Location::nowhere`] for a
    /// recipe built in code.
    pub location: Location,
    /// The id of the hook.
    pub hook: String,
}

/// What a [`SpecWarning`] is about.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub enum SpecWarningKind {
    /// `{$NAME}` inside a string literal of the code where it is not escaped (a raw literal, or
    /// the hook says `capture-in-string = "refuse"`): where the captured source text holds a
    /// quote, a backslash or a line break, the hook is refused; `{$NAME!r}` writes it as a
    /// literal of its own.
    CaptureInString {
        /// The capture's name, without `$`.
        name: String,
    },
    /// `{$NAME}` inside a comment of the code, for a capture that may span lines: its second
    /// line would be code; `{$NAME!r}` keeps it on one line.
    CaptureInComment {
        /// The capture's name, without `$`.
        name: String,
    },
}

impl fmt::Display for SpecWarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecWarningKind::CaptureInString { name } => write!(
                f,
                "`{{${name}}}` is inside a string literal of the code where it is not escaped (a raw \
                 string, or `capture-in-string = \"refuse\"`): where the captured text holds a quote, a \
                 backslash or a line break, the hook is refused; write `{{${name}!r}}` for the capture \
                 as a string literal of its own"
            ),
            SpecWarningKind::CaptureInComment { name } => write!(
                f,
                "`{{${name}}}` is inside a comment of the code: a capture that spans lines would go on \
                 as code after the comment's line; write `{{${name}!r}}` to keep it on one line"
            ),
        }
    }
}

impl fmt::Display for SpecWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.location.is_somewhere() {
            write!(f, "{}: warning: {} [hook {}]", self.location, self.kind, self.hook)
        } else {
            write!(f, "hook {:?}: warning: {}", self.hook, self.kind)
        }
    }
}
