//! A place in a file, as every error and warning names it: the bottom of the library, so that
//! every module that raises an error can say where without knowing the crate's [`crate::Error`].

use std::fmt;

/// A place in a file, for messages: `file:line:column`, 1-based, columns in UTF-8 bytes. Line
/// 0 is a path as a whole ([`Location::whole`]: a folder), or, with no file either, no place at
/// all ([`Location::nowhere`]: a recipe built in code).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, schemars::JsonSchema))]
pub struct Location {
    /// The file's name as given to the library.
    pub file: String,
    /// 1-based line; 0 for what has no line (a folder, a file as a whole: [`Location::whole`]).
    pub line: usize,
    /// 1-based column, in UTF-8 bytes; 0 with line 0.
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

    /// A path as a whole (a folder, a file that is not read), with no line or column.
    #[must_use]
    pub fn whole(file: impl Into<String>) -> Location {
        Location::new(file, 0, 0)
    }
}

impl Location {
    /// No place in a text: the location of an error about something built in code
    /// ([`ErrorKind::Builder`](crate::ErrorKind::Builder)); an [`Error`](crate::Error) there is shown without it.
    #[must_use]
    pub fn nowhere() -> Location {
        Location::new("", 0, 0)
    }

    /// Whether this names a path or a place in a text (not [`Location::nowhere`]).
    #[must_use]
    pub fn is_somewhere(&self) -> bool {
        self.line != 0 || !self.file.is_empty()
    }
}

impl fmt::Display for Location {
    /// `file:line:column` (`file` alone at line 0), the file's name with control characters
    /// escaped ([`crate::printable::printable`]): a name from outside cannot fake a line or drive a
    /// terminal.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return write!(f, "{}", crate::printable::printable(&self.file));
        }
        write!(
            f,
            "{}:{}:{}",
            crate::printable::printable(&self.file),
            self.line,
            self.column
        )
    }
}
